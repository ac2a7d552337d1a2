use std::str::FromStr;

use memory_core::Result;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Sqlite, Transaction};
use tracing::debug;

use crate::config::{SqliteConfig, Synchronous};
use crate::error::{db, migrate};

/// An open database: one writer connection and a pool of readers. Cheap to clone.
#[derive(Debug, Clone)]
pub struct SqliteDatabase {
    pub(crate) writer: SqlitePool,
    pub(crate) reader: SqlitePool,
}

impl SqliteDatabase {
    /// Opens (creating if needed) the database and applies pending migrations.
    pub async fn open(config: SqliteConfig) -> Result<Self> {
        if let Some(dir) = config.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| crate::error::io(dir, e))?;
        }
        let base = SqliteConnectOptions::from_str("sqlite:")
            .map_err(db)?
            .filename(&config.path)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(match config.synchronous {
                Synchronous::Normal => SqliteSynchronous::Normal,
                Synchronous::Full => SqliteSynchronous::Full,
            })
            .foreign_keys(true)
            .busy_timeout(config.busy_timeout)
            .pragma("cache_size", "-32768")
            .pragma("temp_store", "memory")
            .pragma(
                "secure_delete",
                if config.secure_delete { "ON" } else { "OFF" },
            );
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .connect_with(base.clone().create_if_missing(true))
            .await
            .map_err(db)?;
        sqlx::migrate!("./migrations")
            .run(&writer)
            .await
            .map_err(migrate)?;
        let reader = SqlitePoolOptions::new()
            .max_connections(config.readers.max(1))
            .connect_with(base.read_only(true))
            .await
            .map_err(db)?;
        debug!(path = %config.path.display(), "opened sqlite database");
        Ok(Self { writer, reader })
    }

    /// Starts a write transaction that takes the write lock at once.
    pub(crate) async fn write(&self) -> Result<Transaction<'static, Sqlite>> {
        self.writer.begin_with("BEGIN IMMEDIATE").await.map_err(db)
    }

    /// Closes every connection (checkpointing the WAL).
    pub async fn close(&self) {
        self.reader.close().await;
        self.writer.close().await;
    }
}
