//! Shared helpers of the SQLite benchmarks: deterministic text, messages and raw pools.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::Path;
use std::str::FromStr;

use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

pub use memory_testkit::corpus::{Rng, message, vocabulary};

/// A raw sqlx pool on the same file with the adapter's pragmas.
pub async fn raw_pool(path: &Path) -> SqlitePool {
    let options = SqliteConnectOptions::from_str("sqlite:")
        .unwrap()
        .filename(path)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .foreign_keys(true)
        .pragma("cache_size", "-32768");
    SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .unwrap()
}
