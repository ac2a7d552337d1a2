//! Mapping of sqlx errors into the core's kinds.

use memory_core::MemoryError;

pub(crate) const BACKEND: &str = "sqlite";

/// Converts a driver error, keeping it as the source.
pub(crate) fn db(error: sqlx::Error) -> MemoryError {
    match &error {
        sqlx::Error::Database(e) if e.is_unique_violation() => MemoryError::Conflict {
            message: e.message().to_owned(),
        },
        _ => MemoryError::backend(BACKEND, error),
    }
}

/// Converts a migration error.
pub(crate) fn migrate(error: sqlx::migrate::MigrateError) -> MemoryError {
    MemoryError::backend(BACKEND, error)
}
