use std::str::FromStr;

use memory_core::Result;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{ConnectOptions, Sqlite, Transaction};
use tracing::debug;

use crate::config::{SqliteConfig, Synchronous};
use crate::error::{db, migrate};

/// An exclusive advisory lock (`flock`) on the database file, held while a process creates
/// and migrates it. SQLite's own locks are `fcntl` locks, which `flock` does not touch, and
/// sqlx's migrator takes no lock on SQLite: without this, two processes migrating a new file
/// at once both ran migration 1 and the loser failed with "table already exists".
struct MigrationLock(std::fs::File);

impl MigrationLock {
    async fn acquire(path: &std::path::Path) -> Result<Self> {
        let owned = path.to_owned();
        let opened = tokio::task::spawn_blocking(move || {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&owned)?;
            file.lock()?;
            Ok::<_, std::io::Error>(file)
        })
        .await
        .map_err(|e| crate::error::io(path, std::io::Error::other(e)))?;
        opened.map(Self).map_err(|e| crate::error::io(path, e))
    }
}

impl Drop for MigrationLock {
    fn drop(&mut self) {
        // Closing the file releases the lock as well; unlocking first makes it immediate.
        let _ = self.0.unlock();
    }
}

/// Which tables a database file holds.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Schema {
    /// Every table (`./migrations`): sessions, messages, text, vectors, jobs and a profile's.
    Full,
    /// A long-term profile's tables only (`./profile_migrations`), in pages of `page_size`
    /// bytes when the file is new. A profile file made before this schema existed holds the
    /// full one and keeps it.
    Profile { page_size: u32 },
}

/// An open database: one writer connection and a pool of readers. Cheap to clone.
#[derive(Debug, Clone)]
pub struct SqliteDatabase {
    pub(crate) writer: SqlitePool,
    pub(crate) reader: crate::readers::Readers,
    /// Freed pages are zeroed, and erasures clear their traces (see `erase_traces`).
    pub(crate) secure_delete: bool,
    /// The database file (derived files, such as vector graph snapshots, sit beside it).
    pub(crate) path: std::path::PathBuf,
    /// Small writes of concurrent callers, committed together on the writer.
    pub(crate) group: crate::group_commit::GroupCommit,
}

impl SqliteDatabase {
    /// Opens (creating if needed) the database and applies pending migrations. Processes that
    /// open one new database at once take turns: the first migrates, the others wait for it
    /// and find the schema done.
    pub async fn open(config: SqliteConfig) -> Result<Self> {
        Self::open_with(config, Schema::Full).await
    }

    /// Opens (creating if needed) a database of `schema`.
    pub(crate) async fn open_with(config: SqliteConfig, schema: Schema) -> Result<Self> {
        if let Some(dir) = config.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| crate::error::io(dir, e))?;
        }
        let migrating = MigrationLock::acquire(&config.path).await?;
        let mut base = SqliteConnectOptions::from_str("sqlite:")
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
            )
            // sqlx warns about every statement over a second by default; a long delete or a
            // cold-cache scan is normal here, so that goes to debug.
            .log_slow_statements(log::LevelFilter::Debug, std::time::Duration::from_secs(1));
        if let Schema::Profile { page_size } = schema {
            // Set before the journal mode (sqlx orders its pragmas so): it takes effect only
            // on a file with no table yet, and is a no-op on any other.
            base = base.page_size(page_size);
        }
        // No ping before each use: a SQLite connection is a file handle that does not go
        // stale, and sqlx's ping is a round trip to the connection's thread before every
        // statement taken from the pool (two thread hand-offs where one does).
        let writer = SqlitePoolOptions::new()
            .test_before_acquire(false)
            .max_connections(1)
            .min_connections(1)
            .connect_with(base.clone().create_if_missing(true))
            .await
            .map_err(db)?;
        migrate_schema(&writer, schema).await?;
        drop(migrating);
        let reader = crate::readers::Readers::new(base.read_only(true), config.readers);
        debug!(path = %config.path.display(), "opened sqlite database");
        Ok(Self {
            group: crate::group_commit::GroupCommit::new(writer.clone(), config.group_commit),
            writer,
            reader,
            secure_delete: config.secure_delete,
            path: config.path,
        })
    }

    /// After an erasure: FTS5 keeps deleted tokens in old segments until they are merged, and
    /// the WAL keeps old page images until a checkpoint. `optimize` merges the index (freed
    /// pages are zeroed under `secure_delete`), and a truncating checkpoint empties the WAL,
    /// so no copy of the erased text is left in any file of the database.
    pub(crate) async fn erase_traces(&self, fts_table: &'static str) -> Result<()> {
        use sqlx::Row;
        let optimize = format!("INSERT INTO {fts_table}({fts_table}) VALUES ('optimize')");
        sqlx::query(sqlx::AssertSqlSafe(optimize))
            .execute(&self.writer)
            .await
            .map_err(db)?;
        for attempt in 0..50 {
            let busy: i64 = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .fetch_one(&self.writer)
                .await
                .map_err(db)?
                .get(0);
            if busy == 0 {
                return Ok(());
            }
            tracing::debug!(attempt, "WAL checkpoint blocked by a reader; retrying");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        Err(crate::error::wal_busy())
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

/// Applies the pending migrations of `schema`. A profile file that already holds the full
/// schema (made before profiles had their own) is migrated as a full one.
async fn migrate_schema(writer: &SqlitePool, schema: Schema) -> Result<()> {
    let full = match schema {
        Schema::Full => true,
        Schema::Profile { .. } => sqlx::query_scalar::<_, bool>(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' \
             AND name = 'session_keys')",
        )
        .fetch_one(writer)
        .await
        .map_err(db)?,
    };
    let migrated = if full {
        crate::migrations::full().run(writer).await
    } else {
        crate::migrations::profile().run(writer).await
    };
    migrated.map_err(migrate)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    /// This workspace compiles SQLite without the page cache every connection shares behind
    /// one mutex, and without counting allocations behind another (`.cargo/config.toml`):
    /// a build that lost the setting fails here rather than reading slower unnoticed.
    #[tokio::test]
    async fn sqlite_is_compiled_without_the_shared_page_cache() {
        let dir = tempfile::tempdir().unwrap();
        let db = SqliteDatabase::open(SqliteConfig::new(dir.path().join("o.db")))
            .await
            .unwrap();
        let options: Vec<String> = sqlx::query_scalar("PRAGMA compile_options")
            .fetch_all(&mut *db.reader.acquire().await.unwrap())
            .await
            .unwrap();
        assert!(
            !options.iter().any(|o| o == "ENABLE_MEMORY_MANAGEMENT"),
            "{options:?}"
        );
        assert!(
            options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"),
            "{options:?}"
        );
    }
}
