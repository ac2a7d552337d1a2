//! # memory-postgres
//!
//! Every storage port on PostgreSQL (sqlx) with pgvector, shared safely by any number of
//! processes. Every table lives in one schema of the deployment's choice
//! ([`PostgresConfig::schema`]), created and migrated on connect (two processes starting at
//! once do not race: advisory locks). The same file names as `memory-sqlite`: a newcomer who
//! knows one finds their way in the other. Each type passes the shared contract suite against
//! a real server:
//! - [`PostgresMessageStore`]: the message tree (linear runs; appends serialize on the
//!   session's row) and [`PostgresMessageIndex`], its store-written `messages` index;
//! - [`PostgresSessionRegistry`], [`PostgresKeyValueStore`] (keys in byte order) and
//!   [`PostgresSkillStore`];
//! - [`PostgresTextIndex`]: the general text index (`tsvector`, GIN, English stemming and
//!   stop words; words bound as parameters, never parsed as query syntax), and
//!   [`PostgresTextIndexes`], one scope of it per long-term profile;
//! - [`PostgresProfiles`] and [`PostgresLongTermMemory`]: long-term records, a profile key
//!   on every row;
//! - [`PostgresVectorIndex`] and [`PostgresVectorIndexes`]: pgvector, a partial HNSW index
//!   (cosine) per namespace of [`HNSW_FROM_VECTORS`] vectors or more (smaller ones are
//!   scanned exactly), one model per namespace checked in the write's transaction;
//! - [`PostgresJobQueue`]: the job queue (claims `FOR UPDATE SKIP LOCKED` under leases).
//!
//! Transient failures (a lost connection, a restart, a serialization failure) are
//! [`memory_core::MemoryError::Transient`]; reads and idempotent writes retry them for
//! [`PostgresConfig::retry_for`].
//!
//! ```no_run
//! # async fn demo() -> memory_core::Result<()> {
//! use memory_core::ports::KeyValueStore;
//! use memory_postgres::{PostgresConfig, PostgresDatabase, PostgresKeyValueStore};
//! let url = std::env::var("MEMORY_POSTGRES_URL").unwrap_or_default();
//! let db = PostgresDatabase::connect(PostgresConfig::new(url).schema("memory")).await?;
//! let kv = PostgresKeyValueStore::new(db);
//! kv.set("greeting", "hello").await?;
//! # Ok(()) }
//! ```

mod append;
mod config;
mod database;
mod error;
mod job_queue;
mod key_value_store;
mod long_term_memory;
mod message_index;
mod message_store;
mod metadata_filter;
mod migrations;
mod session_registry;
mod skill_store;
mod text_index;
mod vector_index;

pub use config::PostgresConfig;
pub use database::PostgresDatabase;
pub use job_queue::PostgresJobQueue;
pub use key_value_store::PostgresKeyValueStore;
pub use long_term_memory::{PostgresLongTermMemory, PostgresProfiles};
pub use message_index::PostgresMessageIndex;
pub use message_store::PostgresMessageStore;
pub use session_registry::PostgresSessionRegistry;
pub use skill_store::PostgresSkillStore;
pub use text_index::{PostgresTextIndex, PostgresTextIndexes};
pub use vector_index::{HNSW_FROM_VECTORS, PostgresVectorIndex, PostgresVectorIndexes};

/// The largest message (stored JSON bytes) this adapter accepts, on every write path, declared
/// through `StoreCapabilities::max_message_bytes` (the same bound as the SQLite adapter, so a
/// deployment can move between them).
pub const MAX_MESSAGE_BYTES: u64 = memory_core::size::MAX_ITEM_BYTES;
