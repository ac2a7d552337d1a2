//! The tokenizer as the models use it: loaded without its own padding and truncation (the
//! windows are made here), and the tokens that open and close an input.

use std::path::Path;

use memory_core::{MemoryError, Result};
use tokenizers::Tokenizer;

use crate::error::OnnxError;

pub(crate) fn tokenizer_error(err: tokenizers::Error) -> MemoryError {
    OnnxError::Tokenizer(err).into()
}

/// The tokenizer in `path`, splitting into tokens only (no padding, no truncation).
pub(crate) fn word_pieces(path: &Path) -> Result<Tokenizer> {
    let mut tokenizer = Tokenizer::from_file(path).map_err(tokenizer_error)?;
    tokenizer.with_padding(None);
    tokenizer.with_truncation(None).map_err(tokenizer_error)?;
    Ok(tokenizer)
}

/// The tokens that open and close an input: BERT's `[CLS]` and `[SEP]`, or RoBERTa's and
/// XLM-R's `<s>` and `</s>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Specials {
    /// `[CLS]` or `<s>`.
    pub start: u32,
    /// `[SEP]` or `</s>`.
    pub end: u32,
}

impl Specials {
    /// The tokenizer's own, or an error naming the file.
    pub(crate) fn of(tokenizer: &Tokenizer, path: &Path) -> Result<Self> {
        let find = |names: [&str; 2]| {
            names
                .iter()
                .find_map(|name| tokenizer.token_to_id(name))
                .ok_or_else(|| {
                    MemoryError::serialization(format!(
                        "{}: neither {} nor {} is a token",
                        path.display(),
                        names[0],
                        names[1]
                    ))
                })
        };
        Ok(Self {
            start: find(["[CLS]", "<s>"])?,
            end: find(["[SEP]", "</s>"])?,
        })
    }
}
