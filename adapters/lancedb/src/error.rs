//! LanceDB's errors mapped into the one public error: storage that may recover is
//! `Transient`, bad input `InvalidInput`, everything else `Backend`, the cause kept.

use memory_core::MemoryError;

pub(crate) const BACKEND: &str = "lancedb";

/// The public error of a LanceDB failure.
pub(crate) fn lance_error(error: lancedb::Error) -> MemoryError {
    match error {
        lancedb::Error::InvalidInput { message } => MemoryError::invalid(message),
        lancedb::Error::ObjectStore { .. } | lancedb::Error::Timeout { .. } => {
            MemoryError::transient(BACKEND, error)
        }
        // Another writer committed first; the operation may simply be tried again.
        lancedb::Error::Lance {
            source:
                lance::Error::RetryableCommitConflict { .. }
                | lance::Error::CommitConflict { .. }
                | lance::Error::IO { .. },
        } => MemoryError::transient(BACKEND, error),
        other => MemoryError::backend(BACKEND, other),
    }
}

/// The public error of an Arrow failure (building or reading a batch).
pub(crate) fn arrow_error(error: arrow_schema::ArrowError) -> MemoryError {
    MemoryError::backend(BACKEND, error)
}
