use std::path::Path;

use memory_core::MemoryError;

pub(crate) const BACKEND: &str = "fs";

/// An I/O error with the path it happened on.
pub(crate) fn io(path: &Path, error: std::io::Error) -> MemoryError {
    if error.kind() == std::io::ErrorKind::NotFound {
        return MemoryError::not_found("file", path.display().to_string());
    }
    MemoryError::backend(BACKEND, format!("{}: {error}", path.display()))
}
