//! This adapter's own errors, and how each maps into the core's kinds (the cause stays
//! reachable as the source).

use std::path::{Path, PathBuf};

use memory_core::MemoryError;

pub(crate) const BACKEND: &str = "fs";

/// What can go wrong reading or writing files.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FsError {
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A blocking directory scan panicked or was cancelled.
    #[error("a directory scan failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

impl From<FsError> for MemoryError {
    fn from(error: FsError) -> Self {
        match &error {
            FsError::Io { path, source } if source.kind() == std::io::ErrorKind::NotFound => {
                MemoryError::not_found("file", path.display().to_string())
            }
            FsError::Io { source, .. }
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::Interrupted
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::WouldBlock
                ) =>
            {
                MemoryError::transient(BACKEND, error)
            }
            _ => MemoryError::backend(BACKEND, error),
        }
    }
}

/// An I/O error with the path it happened on.
pub(crate) fn io(path: &Path, error: std::io::Error) -> MemoryError {
    FsError::Io {
        path: path.to_owned(),
        source: error,
    }
    .into()
}

/// A blocking task that failed.
pub(crate) fn task(error: tokio::task::JoinError) -> MemoryError {
    FsError::Task(error).into()
}
