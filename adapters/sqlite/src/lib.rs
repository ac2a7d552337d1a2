//! # memory-sqlite
//!
//! The embedded default adapter: one SQLite file (WAL, foreign keys, FTS5) behind the
//! [`MessageStore`](memory_core::ports::MessageStore),
//! [`SessionRegistry`](memory_core::ports::SessionRegistry) and
//! [`KeyValueStore`](memory_core::ports::KeyValueStore),
//! [`SearchIndex`](memory_core::ports::SearchIndex) and
//! [`SkillStore`](memory_core::ports::SkillStore) ports, and per-profile long-term memory
//! ([`SqliteProfiles`]) with its [`VectorIndex`](memory_core::ports::VectorIndex) in the same file.
//!
//! ```no_run
//! # async fn demo() -> memory_core::Result<()> {
//! use memory_sqlite::{SqliteConfig, SqliteDatabase, SqliteMessageStore};
//! let db = SqliteDatabase::open(SqliteConfig::new("./memory-data/memory.db")).await?;
//! let messages = SqliteMessageStore::new(db.clone());
//! # Ok(()) }
//! ```
//!
//! One writer connection serialises writes (each batch is one `BEGIN IMMEDIATE`
//! transaction); a pool of read-only connections serves reads concurrently.

mod append;
mod config;
mod database;
mod error;
mod fts;
mod key_value_store;
mod long_term_memory;
mod message_store;
mod search_index;
mod session_registry;
mod skill_store;
mod vector_index;
mod vector_matrix;

pub use config::{SqliteConfig, Synchronous};
pub use database::SqliteDatabase;
pub use key_value_store::SqliteKeyValueStore;
pub use long_term_memory::{SqliteLongTermMemory, SqliteProfiles};
pub use message_store::SqliteMessageStore;
pub use search_index::SqliteSearchIndex;
pub use session_registry::SqliteSessionRegistry;
pub use skill_store::SqliteSkillStore;
pub use vector_index::SqliteVectorIndex;

/// The largest message (stored JSON bytes) this adapter accepts: SQLite's default
/// `SQLITE_MAX_LENGTH` is 1,000,000,000 bytes; we keep well under it.
pub const MAX_MESSAGE_BYTES: u64 = 256 * 1024 * 1024;
