//! The one error type every port returns.

use std::error::Error as StdError;

/// Result alias used by every port and service.
pub type Result<T, E = MemoryError> = std::result::Result<T, E>;

/// What went wrong, in kinds a caller can branch on.
///
/// Adapters keep their own rich error enums and convert into these kinds; the cause stays
/// reachable through [`std::error::Error::source`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// The named thing does not exist.
    #[error("{kind} not found: {id}")]
    NotFound {
        /// What was looked up ("session", "message", ...).
        kind: &'static str,
        /// The identifier that was not found.
        id: String,
    },
    /// The thing already exists and the operation does not overwrite.
    #[error("{kind} already exists: {id}")]
    AlreadyExists {
        /// What already exists.
        kind: &'static str,
        /// Its identifier.
        id: String,
    },
    /// The caller's input is invalid; nothing was written.
    #[error("invalid input: {message}")]
    InvalidInput {
        /// A sentence saying what is wrong and what would be right.
        message: String,
    },
    /// A service's own rule refused the request (a read-only context block, a token budget,
    /// ...); nothing was written. The service's typed reason is the source, e.g.
    /// `memory_engine::context::BlockError`, and the message is its message.
    #[error("{source}")]
    Refused {
        /// The service's reason.
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    /// The item is larger than anything may be stored ([`crate::size::MAX_ITEM_BYTES`]);
    /// nothing was written.
    #[error("{what} is {bytes} bytes; at most {limit} bytes may be stored")]
    TooLarge {
        /// What was refused ("memory", "message \"m1\"", "block \"notes\"", ...).
        what: String,
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// A concurrent change or a violated precondition.
    #[error("conflict: {message}")]
    Conflict {
        /// What conflicted.
        message: String,
    },
    /// This backend cannot do this operation.
    #[error("{backend} does not support {operation}")]
    NotSupported {
        /// The operation that was asked for.
        operation: &'static str,
        /// The adapter that cannot do it.
        backend: &'static str,
    },
    /// Stored data could not be decoded or encoded.
    #[error("serialization error: {message}")]
    Serialization {
        /// What could not be (de)serialized.
        message: String,
    },
    /// A failure that may pass if the same call is retried later: a lost connection, a
    /// timeout, a busy or locked database, a serialization failure between concurrent
    /// transactions, a rate limit. Nothing was changed by the failed call, or the change is
    /// safe to repeat (every write of the ports is idempotent or atomic).
    #[error("{backend} is temporarily unavailable: {source}")]
    Transient {
        /// The adapter that failed.
        backend: &'static str,
        /// The underlying cause.
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    /// Any other failure of the backend (I/O, driver, network).
    #[error("{backend} error: {source}")]
    Backend {
        /// The adapter that failed.
        backend: &'static str,
        /// The underlying cause.
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
}

impl MemoryError {
    /// A [`MemoryError::NotFound`].
    pub fn not_found(kind: &'static str, id: impl Into<String>) -> Self {
        Self::NotFound {
            kind,
            id: id.into(),
        }
    }

    /// A [`MemoryError::InvalidInput`].
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidInput {
            message: message.into(),
        }
    }

    /// A [`MemoryError::Backend`], for `map_err(|e| MemoryError::backend("sqlite", e))`.
    pub fn backend(
        backend: &'static str,
        source: impl Into<Box<dyn StdError + Send + Sync>>,
    ) -> Self {
        Self::Backend {
            backend,
            source: source.into(),
        }
    }

    /// A [`MemoryError::Transient`], for failures a caller may retry.
    pub fn transient(
        backend: &'static str,
        source: impl Into<Box<dyn StdError + Send + Sync>>,
    ) -> Self {
        Self::Transient {
            backend,
            source: source.into(),
        }
    }

    /// True for [`MemoryError::Transient`]: retrying the same call later may succeed.
    ///
    /// ```
    /// use memory_core::MemoryError;
    /// assert!(MemoryError::transient("postgres", "connection reset").is_transient());
    /// assert!(!MemoryError::invalid("bad id").is_transient());
    /// ```
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Transient { .. })
    }

    /// A [`MemoryError::Refused`] with the service's typed reason.
    pub fn refused(reason: impl StdError + Send + Sync + 'static) -> Self {
        Self::Refused {
            source: Box::new(reason),
        }
    }

    /// A [`MemoryError::Serialization`].
    pub fn serialization(message: impl Into<String>) -> Self {
        Self::Serialization {
            message: message.into(),
        }
    }

    /// True for [`MemoryError::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }
}

impl From<serde_json::Error> for MemoryError {
    fn from(error: serde_json::Error) -> Self {
        Self::serialization(error.to_string())
    }
}
