//! The ports: one trait per file, each with a `# Contract` its adapters must honour.
//!
//! | port | what it owns | adapters today |
//! |---|---|---|
//! | [`MessageStore`] | the history tree, overlay records, message search | in-memory, SQLite |
//! | [`SessionRegistry`] | session metadata and usage | in-memory, SQLite |
//! | [`KeyValueStore`] | small named values (blocks, cached prompts) | in-memory, SQLite |
//! | [`ContextProvider`] and kin | what a context block reads and writes | in-memory |
//! | [`SearchIndex`] | keyed documents with full-text search | in-memory |
//! | [`VectorIndex`] | embeddings with nearest-neighbour search | in-memory |
//! | [`SkillStore`] | loadable documents with descriptions | in-memory |
//! | [`LongTermMemoryStore`] | a profile's raw messages and typed memories | in-memory |
//! | [`LanguageModel`] | chat completion, structured JSON output | scripted fake |
//! | [`Embedder`] | batch text embedding | deterministic fake |
//! | [`TokenCounter`] | text to token counts | fixed ratio |
//! | [`Clock`] | the current time | system, manual |
//! | [`CompactionObserver`] | receives compacted ranges | (engine callers) |

mod clock;
mod compaction_observer;
mod context_provider;
mod embedder;
mod key_value_store;
mod language_model;
mod long_term_memory_store;
mod message_store;
mod search_index;
mod session_registry;
mod skill_store;
mod token_counter;
mod vector_index;

pub use clock::{Clock, SystemClock};
pub use compaction_observer::{CompactionEvent, CompactionObserver};
pub use context_provider::{
    BlockProvider, ContextProvider, SearchableContextProvider, SkillProvider,
    WritableContextProvider,
};
pub use embedder::Embedder;
pub use key_value_store::KeyValueStore;
pub use language_model::{
    ChatMessage, ChatRequest, ChatResponse, ChatRole, LanguageModel, ResponseFormat, TokenUsage,
};
pub use long_term_memory_store::{
    ForgetRequest, JobRecord, LongTermMemoryStore, MemoryFilter, MemoryKind, MemoryPage,
    MemoryProfiles, MemoryRecord, RawMessage, RawMessageInsert,
};
pub use message_store::{MessageStore, MessageStoreExt, StoreCapabilities};
pub use search_index::{IndexDocument, IndexHit, SearchIndex};
pub use session_registry::SessionRegistry;
pub use skill_store::{SkillStore, SkillSummary};
pub use token_counter::TokenCounter;
pub use vector_index::{VectorHit, VectorIndex, VectorRecord};
