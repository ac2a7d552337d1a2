//! This adapter's own errors, and how each maps into the core's kinds (the cause stays
//! reachable as the source).

use memory_core::MemoryError;

pub(crate) const BACKEND: &str = "postgres";

/// What can go wrong talking to PostgreSQL.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PostgresError {
    /// A statement or the connection failed.
    #[error("postgres error: {0}")]
    Database(#[source] sqlx::Error),
    /// Migrating the schema failed.
    #[error("migrating the schema: {0}")]
    Migrate(#[source] sqlx::migrate::MigrateError),
    /// A schema name that is not a plain identifier.
    #[error(
        "schema name {0:?} must be 1-63 lowercase letters, digits or '_', starting with a letter"
    )]
    SchemaName(String),
    /// pgvector is missing and could not be created.
    #[error(
        "the server lacks pgvector (CREATE EXTENSION vector failed; install pgvector or let an administrator create the extension): {0}"
    )]
    Pgvector(#[source] sqlx::Error),
    /// The adapter's own data broke one of its invariants.
    #[error("postgres adapter invariant broken: {0}")]
    Invariant(&'static str),
}

/// SQLSTATE codes that may pass on a retry: serialization failure, deadlock, the server
/// shutting down or restarting, too many connections.
const TRANSIENT_STATES: &[&str] = &[
    "40001", "40P01", "57P01", "57P02", "57P03", "53300", "08006", "08001", "08004",
];

fn is_transient(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => true,
        sqlx::Error::Database(db) => db
            .code()
            .is_some_and(|code| TRANSIENT_STATES.contains(&code.as_ref())),
        _ => false,
    }
}

impl From<PostgresError> for MemoryError {
    fn from(error: PostgresError) -> Self {
        let transient = match &error {
            PostgresError::Database(e) => is_transient(e),
            PostgresError::Migrate(sqlx::migrate::MigrateError::Execute(e)) => is_transient(e),
            _ => false,
        };
        match error {
            PostgresError::SchemaName(_) => MemoryError::invalid(error.to_string()),
            _ if transient => MemoryError::transient(BACKEND, error),
            _ => MemoryError::backend(BACKEND, error),
        }
    }
}

/// Converts a statement error.
pub(crate) fn db(error: sqlx::Error) -> MemoryError {
    PostgresError::Database(error).into()
}

/// A broken invariant of the adapter's own data.
pub(crate) fn invariant(what: &'static str) -> MemoryError {
    PostgresError::Invariant(what).into()
}

/// True when the error is a unique-constraint violation.
pub(crate) fn is_unique_violation(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(e) if e.is_unique_violation())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_timeouts_are_transient_and_keep_their_cause() {
        let error = db(sqlx::Error::PoolTimedOut);
        assert!(error.is_transient());
        assert!(std::error::Error::source(&error).is_some());
        assert!(!db(sqlx::Error::RowNotFound).is_transient());
    }
}
