//! # memory-tiktoken
//!
//! A real tokenizer for OpenAI-family models as a
//! [`TokenCounter`](memory_core::ports::TokenCounter). The BPE ranks ship inside
//! `tiktoken-rs`, so it works offline with no download.
//!
//! ```
//! use memory_core::ports::TokenCounter;
//! use memory_tiktoken::TiktokenCounter;
//! let counter = TiktokenCounter::for_model("gpt-4o").unwrap();
//! assert_eq!(counter.count("hello world"), 2);
//! ```

use memory_core::ports::TokenCounter;
use memory_core::{MemoryError, Result};
use tiktoken_rs::CoreBPE;

/// Counts tokens with a tiktoken encoding (loaded once per process and shared).
#[derive(Clone)]
pub struct TiktokenCounter {
    bpe: &'static CoreBPE,
    encoding: &'static str,
}

impl std::fmt::Debug for TiktokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiktokenCounter")
            .field("encoding", &self.encoding)
            .finish()
    }
}

impl TiktokenCounter {
    /// The encoding a model uses (`gpt-4o`, `gpt-4.1`, `o3`: o200k_base; `gpt-4`,
    /// `gpt-3.5-turbo`: cl100k_base). Unknown models are an error naming the model.
    pub fn for_model(model: &str) -> Result<Self> {
        let bpe = tiktoken_rs::bpe_for_model(model).map_err(|e| {
            MemoryError::invalid(format!("no tiktoken encoding for model {model:?}: {e}"))
        })?;
        let encoding = match tiktoken_rs::tokenizer::get_tokenizer(model) {
            Some(tiktoken_rs::tokenizer::Tokenizer::O200kBase) => "o200k_base",
            Some(tiktoken_rs::tokenizer::Tokenizer::Cl100kBase) => "cl100k_base",
            Some(_) => "other",
            None => "unknown",
        };
        Ok(Self { bpe, encoding })
    }

    /// The o200k_base encoding (GPT-4o and later).
    pub fn o200k() -> Self {
        Self {
            bpe: tiktoken_rs::o200k_base_singleton(),
            encoding: "o200k_base",
        }
    }

    /// The cl100k_base encoding (GPT-4, GPT-3.5).
    pub fn cl100k() -> Self {
        Self {
            bpe: tiktoken_rs::cl100k_base_singleton(),
            encoding: "cl100k_base",
        }
    }

    /// The encoding's name.
    pub fn encoding(&self) -> &'static str {
        self.encoding
    }
}

impl TokenCounter for TiktokenCounter {
    fn count(&self, text: &str) -> usize {
        self.bpe.encode_with_special_tokens(text).len()
    }
}
