//! Why a fetch failed, mapped into the one public error.

use std::path::PathBuf;

use memory_core::MemoryError;

/// The name errors give this adapter.
pub(crate) const BACKEND: &str = "model hub";

/// A fetch's failure.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HubError {
    #[error("{file} is not in {dir} and HF_HUB_OFFLINE is set, so it was not fetched")]
    Offline { file: String, dir: PathBuf },
    #[error("could not reach {url}: {source}")]
    Unreachable {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{url} answered {status}")]
    Status {
        url: String,
        status: reqwest::StatusCode,
    },
    #[error("{url} ended after {got} of {} bytes", expected.map_or_else(|| "its".to_owned(), |e| e.to_string()))]
    Truncated {
        url: String,
        got: u64,
        expected: Option<u64>,
    },
    #[error("{url} sent more than the {expected} bytes {file} has")]
    TooLong {
        url: String,
        file: String,
        expected: u64,
    },
    #[error(
        "{url} does not have the pinned checksum of {file}: expected sha256 {expected}, got {actual}"
    )]
    Checksum {
        url: String,
        file: String,
        expected: String,
        actual: String,
    },
    #[error("the archive {archive} cannot be unpacked: {reason}")]
    Archive { archive: String, reason: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl From<HubError> for MemoryError {
    fn from(error: HubError) -> Self {
        match error {
            HubError::Unreachable { .. } | HubError::Truncated { .. } => {
                MemoryError::transient(BACKEND, error)
            }
            HubError::Status { status, .. } if status.is_server_error() => {
                MemoryError::transient(BACKEND, error)
            }
            other => MemoryError::backend(BACKEND, other),
        }
    }
}
