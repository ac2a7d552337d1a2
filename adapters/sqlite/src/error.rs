//! This adapter's own errors, and how each maps into the core's kinds (the cause stays
//! reachable as the source).

use std::path::PathBuf;

use memory_core::MemoryError;

pub(crate) const BACKEND: &str = "sqlite";

/// What can go wrong inside the SQLite adapter.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SqliteError {
    /// The driver failed (SQL error, I/O, pool).
    #[error(transparent)]
    Driver(#[from] sqlx::Error),
    /// The embedded migrations could not run.
    #[error("migrating the schema: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A file or directory of the adapter could not be read, written or removed.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An invariant of the adapter's own data was broken.
    #[error("{0}")]
    Invariant(&'static str),
    /// A blocking task (a vector scan) panicked or was cancelled.
    #[error("a background scan failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// The approximate vector graph (usearch) refused an operation.
    #[error("vector graph: {what}: {message}")]
    Graph {
        /// What was being done.
        what: &'static str,
        /// usearch's message.
        message: String,
    },
    /// Readers kept the write-ahead log from being truncated after an erasure.
    #[error("erasure: readers kept the WAL from being truncated; retry the purge")]
    WalBusy,
}

/// SQLite's primary result codes for a database another connection holds.
const SQLITE_BUSY: &str = "5";
const SQLITE_LOCKED: &str = "6";

impl From<SqliteError> for MemoryError {
    fn from(error: SqliteError) -> Self {
        match &error {
            SqliteError::Driver(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                MemoryError::Conflict {
                    message: e.message().to_owned(),
                }
            }
            SqliteError::Driver(sqlx::Error::Database(e))
                if e.code().is_some_and(|c| {
                    let primary = c.parse::<u32>().map(|c| (c & 0xff).to_string());
                    primary
                        .as_deref()
                        .is_ok_and(|p| p == SQLITE_BUSY || p == SQLITE_LOCKED)
                }) =>
            {
                MemoryError::transient(BACKEND, error)
            }
            SqliteError::Driver(
                sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_),
            )
            | SqliteError::WalBusy => MemoryError::transient(BACKEND, error),
            _ => MemoryError::backend(BACKEND, error),
        }
    }
}

/// Converts a driver error.
pub(crate) fn db(error: sqlx::Error) -> MemoryError {
    SqliteError::Driver(error).into()
}

/// Converts a migration error.
pub(crate) fn migrate(error: sqlx::migrate::MigrateError) -> MemoryError {
    SqliteError::Migrate(error).into()
}

/// Converts an I/O error on a path.
pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> MemoryError {
    SqliteError::Io {
        path: path.into(),
        source,
    }
    .into()
}

/// A broken invariant of the adapter's own data.
pub(crate) fn invariant(what: &'static str) -> MemoryError {
    SqliteError::Invariant(what).into()
}

/// A blocking task that failed.
pub(crate) fn task_failed(error: tokio::task::JoinError) -> MemoryError {
    SqliteError::Task(error).into()
}

/// The vector graph failed while `what` (its library's message kept).
pub(crate) fn graph(what: &'static str, message: String) -> MemoryError {
    SqliteError::Graph { what, message }.into()
}

/// Readers kept the WAL from being truncated (a retry may succeed).
pub(crate) fn wal_busy() -> MemoryError {
    SqliteError::WalBusy.into()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn pool_timeouts_are_transient_and_keep_their_cause() {
        let error: MemoryError = db(sqlx::Error::PoolTimedOut);
        assert!(error.is_transient(), "{error}");
        assert!(std::error::Error::source(&error).is_some());
        assert!(!invariant("x").is_transient());
        assert!(wal_busy().is_transient());
    }
}
