//! # memory-sqlite
//!
//! The embedded default adapter: one SQLite file (WAL, foreign keys, FTS5) behind the
//! [`MessageStore`](memory_core::ports::MessageStore) (with [`SqliteMessageIndex`], the FTS5
//! index it writes in the same transaction),
//! [`SessionRegistry`](memory_core::ports::SessionRegistry),
//! [`KeyValueStore`](memory_core::ports::KeyValueStore),
//! [`TextIndex`](memory_core::ports::TextIndex) ([`SqliteTextIndex`]),
//! [`SkillStore`](memory_core::ports::SkillStore) and
//! [`JobQueue`](memory_core::ports::JobQueue) ports, and per-profile long-term memory
//! ([`SqliteProfiles`]: records, their text index and their vectors in one file per profile).
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
//!
//! ## How SQLite is compiled
//!
//! The bundled SQLite (`libsqlite3-sys`, under sqlx) is compiled by default with one page
//! cache shared by every connection behind one mutex, and with every allocation counted
//! behind another. Reads on several connections at once (recall's channels run in parallel)
//! then wait on each other. This workspace's `.cargo/config.toml` compiles it without both
//! (`LIBSQLITE3_FLAGS = "-USQLITE_ENABLE_MEMORY_MANAGEMENT -DSQLITE_DEFAULT_MEMSTATUS=0"`),
//! for 0.77x the CPU per recall; an application that depends on this crate from its own
//! workspace sets the same there to get the same speed. Nothing here depends on either.

mod append;
mod config;
mod database;
mod error;
mod fts;
mod graph_snapshot;
mod group_commit;
mod job_queue;
mod key_value_store;
mod long_term_memory;
mod message_index;
mod message_store;
mod metadata_filter;
mod migrations;
mod profile_fts;
mod profile_index;
mod profiles;
mod readers;
mod session_registry;
mod skill_store;
mod snapshot;
mod store_written_index;
mod text_index;
mod vector_graph;
mod vector_index;
mod vector_matrix;
mod version_reads;

pub use config::{SqliteConfig, Synchronous};
pub use database::SqliteDatabase;
pub use job_queue::SqliteJobQueue;
pub use key_value_store::SqliteKeyValueStore;
pub use long_term_memory::SqliteLongTermMemory;
pub use message_index::SqliteMessageIndex;
pub use message_store::SqliteMessageStore;
pub use profile_index::SqliteProfileIndex;
pub use profiles::SqliteProfiles;
pub use session_registry::SqliteSessionRegistry;
pub use skill_store::SqliteSkillStore;
pub use snapshot::snapshot;
pub use text_index::SqliteTextIndex;
pub use vector_index::{ApproximateSearch, SqliteVectorIndex};

/// The largest message (stored JSON bytes) this adapter accepts, on every write path (append,
/// update, import), declared through `StoreCapabilities::max_message_bytes` so the engine
/// fits oversized tool outputs under it first. A bound on memory use per message: a 50 MB
/// message cost 939 MB of RSS to store and came back whole from a search.
pub const MAX_MESSAGE_BYTES: u64 = memory_core::size::MAX_ITEM_BYTES;
