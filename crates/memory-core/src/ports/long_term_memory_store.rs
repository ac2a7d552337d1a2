use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::ports::VectorIndex;
use crate::{Result, SearchHit, Timestamp};

/// The type of a long-term memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryKind {
    /// Something true about the world or the user; keyed, superseded by newer facts.
    Fact,
    /// Something that happened at a time.
    Event,
    /// How the agent should behave; keyed, superseded.
    Instruction,
    /// Something to do.
    Task,
}

/// A raw message of a profile, content-addressed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawMessage {
    /// Content address (hex).
    pub id: String,
    /// Conversation it came from.
    pub session_id: String,
    /// Speaker.
    pub role: String,
    /// Text.
    pub content: String,
    /// When it was said.
    pub created_at: Timestamp,
}

/// Counts of an insert-or-ignore of raw messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RawMessageInsert {
    /// Newly stored.
    pub inserted: u64,
    /// Already known.
    pub existing: u64,
}

/// A typed memory with provenance, two clocks and a supersession pointer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryRecord {
    /// Identifier.
    pub id: String,
    /// Type.
    pub kind: MemoryKind,
    /// The memory itself.
    pub content: String,
    /// Normalised topic key (facts and instructions).
    pub key: Option<String>,
    /// Questions this memory answers (used for retrieval).
    pub questions: Vec<String>,
    /// Source session.
    pub session_id: Option<String>,
    /// Source raw message ids.
    pub source_message_ids: Vec<String>,
    /// First and last transcript line (0-based) of the ingest it was extracted from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_lines: Option<[u32; 2]>,
    /// When it was recorded.
    pub recorded_at: Timestamp,
    /// When it was true, if known.
    pub valid_at: Option<Timestamp>,
    /// The memory that replaced this one.
    pub superseded_by: Option<String>,
    /// Why and when it was forgotten.
    pub forgotten: Option<ForgetRequest>,
}

/// A forget marker: the memory leaves recall but is kept for audit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForgetRequest {
    /// Why.
    pub reason: String,
    /// When.
    pub at: Timestamp,
}

/// Filters for listing memories.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MemoryFilter {
    /// Only this type.
    pub kind: Option<MemoryKind>,
    /// Only this key.
    pub key: Option<String>,
    /// Only this session.
    pub session_id: Option<String>,
    /// Recorded at or after.
    pub from: Option<Timestamp>,
    /// Recorded before.
    pub to: Option<Timestamp>,
    /// Include superseded versions.
    pub include_superseded: bool,
    /// Include forgotten memories.
    pub include_forgotten: bool,
}

/// A page of memories with the cursor of the next page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryPage {
    /// The memories.
    pub memories: Vec<MemoryRecord>,
    /// Pass to the next `list` call; `None` at the end.
    pub next_cursor: Option<String>,
}

/// A durable background job of a profile: its status and an opaque JSON body that the
/// engine checkpoints after every stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Identifier.
    pub id: String,
    /// Status name (`queued`, `extracting`, ..., `done`, `failed`).
    pub status: String,
    /// The engine's checkpoint.
    pub body: serde_json::Value,
    /// When it was queued.
    pub created_at: Timestamp,
    /// Last checkpoint.
    pub updated_at: Timestamp,
}

/// One profile's long-term memory: raw messages and typed memories.
///
/// # Contract
/// - `insert_raw` is insert-or-ignore by id and reports the counts.
/// - `supersede(old, new)` sets the forward pointer; nothing is deleted; `versions(key)`
///   returns the chain oldest first.
/// - `forget` hides from `list` (unless asked) and from `search_memories`; `purge` erases.
#[async_trait]
pub trait LongTermMemoryStore: Send + Sync {
    /// Stores raw messages, ignoring known ids.
    async fn insert_raw(&self, messages: Vec<RawMessage>) -> Result<RawMessageInsert>;
    /// A page of raw messages in insertion order: at most `limit` after `cursor`, and the
    /// cursor of the next page (`None` at the end).
    async fn raw_page(
        &self,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<(Vec<RawMessage>, Option<String>)>;
    /// The raw messages with these ids that exist, in the order of `ids`.
    async fn raw_by_ids(&self, ids: &[String]) -> Result<Vec<RawMessage>>;
    /// Up to `radius` raw messages before and after each given one in the same session (in
    /// insertion order), excluding the given ones: the conversational context of a hit.
    async fn raw_neighbors(&self, ids: &[String], radius: usize) -> Result<Vec<RawMessage>>;
    /// Full-text search over raw messages: any of the query's words may match, ranked by
    /// BM25 with stemming (query syntax in the text is inert).
    async fn search_raw(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>>;
    /// Stores a memory.
    async fn insert_memory(&self, memory: MemoryRecord) -> Result<()>;
    /// One memory.
    async fn get_memory(&self, id: &str) -> Result<Option<MemoryRecord>>;
    /// The current (not superseded, not forgotten) memory with this kind and key.
    async fn current_by_key(&self, kind: MemoryKind, key: &str) -> Result<Option<MemoryRecord>>;
    /// Points `old_id` at `new_id`.
    async fn supersede(&self, old_id: &str, new_id: &str) -> Result<()>;
    /// Every version of a key, oldest first.
    async fn versions(&self, kind: MemoryKind, key: &str) -> Result<Vec<MemoryRecord>>;
    /// A filtered page.
    async fn list(
        &self,
        filter: &MemoryFilter,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<MemoryPage>;
    /// Full-text search over current memories (content and search questions), any word,
    /// ranked by BM25: `(id, score)` pairs, best first.
    async fn search_memories(&self, query: &str, limit: usize) -> Result<Vec<(String, f64)>>;
    /// Marks a memory forgotten.
    async fn forget(&self, id: &str, request: ForgetRequest) -> Result<()>;
    /// Erases a memory.
    async fn purge(&self, id: &str) -> Result<bool>;
    /// Erases raw messages (right to erasure); returns how many existed.
    async fn purge_raw(&self, ids: &[String]) -> Result<u64>;
    /// Inserts or replaces a job (durably: a crash after this returns loses nothing).
    async fn put_job(&self, job: JobRecord) -> Result<()>;
    /// One job.
    async fn get_job(&self, id: &str) -> Result<Option<JobRecord>>;
    /// Every job, oldest first.
    async fn list_jobs(&self) -> Result<Vec<JobRecord>>;
}

/// Named, isolated memory profiles.
///
/// # Contract
/// - Profiles share nothing; `delete` removes every trace of one, vectors included.
/// - `vectors(name)` is the profile's own vector index, beside its data.
#[async_trait]
pub trait MemoryProfiles: Send + Sync {
    /// Opens (creating if needed) a profile.
    async fn open(&self, name: &str) -> Result<Arc<dyn LongTermMemoryStore>>;
    /// The profile's vector index (opening the profile if needed).
    async fn vectors(&self, name: &str) -> Result<Arc<dyn VectorIndex>>;
    /// Profile names, sorted.
    async fn list(&self) -> Result<Vec<String>>;
    /// Deletes a profile; true if it existed.
    async fn delete(&self, name: &str) -> Result<bool>;
}
