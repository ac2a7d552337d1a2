//! Tantivy's errors mapped into the one public error: I/O the system may recover from is
//! `Transient`, everything else `Backend`, with the cause kept as the source.

use memory_core::MemoryError;

pub(crate) const BACKEND: &str = "tantivy";

/// The public error of a Tantivy failure.
pub(crate) fn tantivy_error(error: tantivy::TantivyError) -> MemoryError {
    match &error {
        tantivy::TantivyError::IoError(io)
            if matches!(
                io.kind(),
                std::io::ErrorKind::Interrupted
                    | std::io::ErrorKind::WouldBlock
                    | std::io::ErrorKind::TimedOut
            ) =>
        {
            MemoryError::transient(BACKEND, error)
        }
        _ => MemoryError::backend(BACKEND, error),
    }
}
