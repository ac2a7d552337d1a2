//! The ports: one trait per file, each with a `# Contract` its adapters must honour.
//!
//! | port | what it owns | adapters today |
//! |---|---|---|
//! | [`MessageStore`] | the history tree and overlay records | in-memory, SQLite, PostgreSQL, Redis |
//! | [`SessionRegistry`] | session metadata and usage | in-memory, SQLite, PostgreSQL, Redis |
//! | [`KeyValueStore`] | small named values (blocks, cached prompts, index outbox) | in-memory, SQLite, PostgreSQL, Redis |
//! | [`ContextProvider`] and kin | what a context block reads and writes | engine providers over ports |
//! | [`TextIndex`] / [`TextIndexes`] | full-text search over documents with fields | in-memory, SQLite, PostgreSQL, Tantivy |
//! | [`VectorIndex`] / [`VectorIndexes`] | embeddings with filtered nearest-neighbour search and counts | in-memory, SQLite, PostgreSQL (pgvector), LanceDB |
//! | [`BlobStore`] | whole artefacts by key (skills, exports, backups), streamed when large | in-memory, directory, S3/R2 |
//! | [`SkillStore`] | loadable documents with descriptions | in-memory, SQLite, PostgreSQL, Redis, Markdown files |
//! | [`RawMessageStore`] + [`MemoryRecordStore`] ([`MemoryProfiles`]) | a profile's raw messages and typed memories | in-memory, SQLite, PostgreSQL |
//! | [`JobQueue`] | durable background jobs with leases | in-memory, SQLite, PostgreSQL, Redis |
//! | [`LanguageModel`] | chat completion, structured JSON output | OpenAI-compatible, scripted fake |
//! | [`Embedder`] | batch text embedding (documents and queries) | local ONNX catalogue, local MiniLM (candle), OpenAI-compatible, hashing fake |
//! | [`Reranker`] | a cross-encoder's relevance of documents to a query | local ONNX catalogue, word-overlap fake |
//! | [`TokenCounter`] | text to token counts | heuristic, tiktoken, fixed ratio |
//! | [`Clock`] | the current time | system, manual |
//! | [`CompactionObserver`] | receives compacted ranges | (engine callers) |

mod blob_store;
mod clock;
mod compaction_observer;
mod context_provider;
mod embedder;
mod field_filter;
mod job_queue;
mod key_value_store;
mod language_model;
mod long_term_memory_store;
mod memory_record_store;
mod message_store;
mod raw_message_store;
mod reranker;
mod session_registry;
mod skill_store;
mod text_index;
mod token_counter;
mod vector_index;

pub use blob_store::{
    BlobCapabilities, BlobDownload, BlobMeta, BlobPage, BlobStore, BlobStoreExt, BlobUpload,
    PutMode, validate_blob_key, validate_blob_prefix,
};
pub use clock::{Clock, SystemClock};
pub use compaction_observer::{CompactionEvent, CompactionObserver};
pub use context_provider::{
    BlockProvider, ContextProvider, SearchableContextProvider, SkillProvider,
    WritableContextProvider,
};
pub use embedder::Embedder;
pub use job_queue::{JobFilter, JobLease, JobPage, JobQueue, JobRecord, JobState, NewJob};
pub use key_value_store::KeyValueStore;
pub use language_model::{
    ChatMessage, ChatRequest, ChatResponse, ChatRole, FinishReason, LanguageModel, ResponseFormat,
    TokenUsage,
};
pub use long_term_memory_store::{LongTermMemoryStore, MemoryProfiles};
pub use memory_record_store::{
    ForgetRequest, MemoryFilter, MemoryKind, MemoryMerge, MemoryPage, MemoryRecord,
    MemoryRecordStore, MergeNote,
};
pub use message_store::{MessageStore, MessageStoreExt, StoreCapabilities};
pub use raw_message_store::{RawMessage, RawMessageInsert, RawMessageStore};
pub use reranker::Reranker;
pub use session_registry::SessionRegistry;
pub use skill_store::{SkillStore, SkillSummary};
pub use text_index::{
    ScoredId, TextDocument, TextFields, TextFilter, TextHit, TextIndex, TextIndexCapabilities,
    TextIndexes, TextQuery, message_document_id, namespaces, split_message_document_id,
};
pub use token_counter::TokenCounter;
pub use vector_index::{
    VectorFields, VectorFilter, VectorHit, VectorIndex, VectorIndexes, VectorQuery, VectorRecord,
};
