//! # memory-redis
//!
//! The storage ports that hot session state needs, on Redis (the `redis` crate, tokio, one
//! multiplexed self-reconnecting connection). Every key lives under the deployment's prefix
//! ([`RedisConfig::key_prefix`]), so several deployments or tenants share one server without
//! touching each other's keys. The same file names as `memory-sqlite` and
//! `memory-postgres`. Each type passes the shared contract suite against a real server:
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
//! `memory-compose` opens it for `[storage] kv = "redis"` and `jobs = "redis"`. Not here
//! yet (issue 14 continues): the message tree.
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

mod config;
mod database;
mod error;
mod job_queue;
mod key_value_store;
mod session_registry;

pub use config::RedisConfig;
pub use database::{Durability, RedisDatabase};
pub use error::RedisAdapterError;
pub use job_queue::RedisJobQueue;
pub use key_value_store::RedisKeyValueStore;
pub use session_registry::RedisSessionRegistry;
