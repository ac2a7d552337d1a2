//! This adapter's own errors, mapped into the core's kinds (the cause stays reachable as the
//! source).

use memory_core::MemoryError;

pub(crate) const BACKEND: &str = "candle";

/// What can go wrong loading or running the local model.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CandleError {
    /// A model file could not be read.
    #[error("reading the model: {0}")]
    Io(#[from] std::io::Error),
    /// The tensor library failed.
    #[error(transparent)]
    Tensor(#[from] candle_core::Error),
    /// The tokenizer failed.
    #[error("the tokenizer: {0}")]
    Tokenizer(#[source] tokenizers::Error),
    /// The blocking inference task panicked or was cancelled.
    #[error("the inference task: {0}")]
    Task(#[from] tokio::task::JoinError),
}

impl From<CandleError> for MemoryError {
    fn from(error: CandleError) -> Self {
        MemoryError::backend(BACKEND, error)
    }
}
