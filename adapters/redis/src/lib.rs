//! # memory-redis
//!
//! The session tier and hot state, on Redis (the `redis` crate, tokio, one
//! multiplexed self-reconnecting connection). Every key lives under the deployment's prefix
//! ([`RedisConfig::key_prefix`]), so several deployments or tenants share one server without
//! touching each other's keys. The same file names as `memory-sqlite` and
//! `memory-postgres`. Each type passes the shared contract suite against a real server:
//! - [`RedisMessageStore`]: each session's tree in eight keys (nodes, contents, linear runs
//!   as one lexicographic sorted set, children, overlays); optimistic atomic appends planned
//!   by `memory_core::append_plan` and written by one Lua script if nothing moved; a path of
//!   any length in two round trips. No full-text search: the engine pairs it with a text
//!   index;
//! - [`RedisSkillStore`]: skills in a hash, descriptions in another (listing reads only
//!   those);
//! - [`RedisSessionRegistry`]: a hash per session and one ordered index, changed together
//!   in Lua scripts;
//! - [`RedisKeyValueStore`]: values with a sorted index of their keys (prefix listings in
//!   byte order, without scanning the keyspace), compare-and-set in Lua;
//! - [`RedisJobQueue`]: a hash per job with its lease token, the claimable jobs in sorted
//!   sets, claims and lease-checked writes in Lua (times from the caller, as the port
//!   requires).
//!
//! One Redis server (or a primary with replicas): the Lua scripts touch several keys of the
//! deployment, which Redis Cluster would refuse across slots.
//!
//! Durability is the server's: [`RedisDatabase::connect`] reads its persistence settings
//! and warns when acknowledged writes can be lost in a crash ([`Durability`]).
//!
//! `memory-compose` opens it for `[storage] sessions = "redis"`, `kv = "redis"` and
//! `jobs = "redis"`. Long-term records (profiles) are not here: they stay on SQLite or
//! PostgreSQL.
//!
//! ```no_run
//! # async fn demo() -> memory_core::Result<()> {
//! use memory_core::ports::KeyValueStore;
//! use memory_redis::{RedisConfig, RedisDatabase, RedisKeyValueStore};
//! let db = RedisDatabase::connect(RedisConfig::new("redis://127.0.0.1:6379/").key_prefix("memory:")).await?;
//! let kv = RedisKeyValueStore::new(db);
//! kv.set("greeting", "hello").await?;
//! # Ok(()) }
//! ```

mod append;
mod config;
mod database;
mod error;
mod job_queue;
mod key_value_store;
mod message_store;
mod path;
mod session_registry;
mod skill_store;

pub use config::RedisConfig;
pub use database::{Durability, RedisDatabase};
pub use error::RedisAdapterError;
pub use job_queue::RedisJobQueue;
pub use key_value_store::RedisKeyValueStore;
pub use message_store::RedisMessageStore;
pub use session_registry::RedisSessionRegistry;
pub use skill_store::RedisSkillStore;

/// The largest message (stored JSON bytes) and the largest skill or key-value value this
/// adapter accepts, on every write path, declared through
/// `StoreCapabilities::max_message_bytes`: the same bound as the SQLite and PostgreSQL
/// adapters, so a deployment can move between them (and far below what would stall the
/// single-threaded server).
pub const MAX_MESSAGE_BYTES: u64 = memory_core::size::MAX_ITEM_BYTES;
