//! This adapter's own errors, mapped into the core's kinds (the cause stays reachable as the
//! source).

use memory_core::MemoryError;

pub(crate) const BACKEND: &str = "onnx";

/// What can go wrong loading or running the local model.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OnnxError {
    /// ONNX Runtime's library could not be loaded.
    #[error("loading ONNX Runtime: {0}")]
    Load(#[from] ort::LoadDynamicError),
    /// ONNX Runtime failed.
    #[error(transparent)]
    Runtime(#[from] ort::Error),
    /// The tokenizer failed.
    #[error("the tokenizer: {0}")]
    Tokenizer(#[source] tokenizers::Error),
    /// An embedding worker thread panicked.
    #[error("an embedding worker panicked")]
    Worker,
    /// The model answered something other than `[batch, tokens, 384]`.
    #[error("the model's output: {0}")]
    Output(String),
    /// The blocking inference task panicked or was cancelled.
    #[error("the inference task: {0}")]
    Task(#[from] tokio::task::JoinError),
}

impl From<OnnxError> for MemoryError {
    fn from(error: OnnxError) -> Self {
        MemoryError::backend(BACKEND, error)
    }
}
