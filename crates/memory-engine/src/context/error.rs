//! Why a context block refused a write: the engine's own rules, reported through
//! [`MemoryError::Refused`] with this as the source.

use memory_core::MemoryError;

/// A write a context block refused; nothing was written. The messages are the reference
/// implementation's, byte for byte (agents read them as tool output).
///
/// ```
/// use memory_engine::context::BlockError;
/// let error = BlockError::read_only("soul");
/// assert_eq!(error.to_string(), "Block \"soul\" is readonly");
/// assert!(matches!(BlockError::of(&error), Some(BlockError::ReadOnly { .. })));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlockError {
    /// A write to a read-only (or unknown) block.
    #[error("Block \"{label}\" is readonly")]
    ReadOnly {
        /// The block's label.
        label: String,
    },
    /// A write that would take a block over its token budget.
    #[error("Block \"{label}\" exceeds maxTokens: {tokens} > {max_tokens}")]
    OverBudget {
        /// The block's label.
        label: String,
        /// Tokens the content would have.
        tokens: usize,
        /// The block's limit.
        max_tokens: usize,
    },
}

impl BlockError {
    /// The error of a write to the read-only block `label`.
    pub fn read_only(label: &str) -> MemoryError {
        MemoryError::refused(Self::ReadOnly {
            label: label.to_owned(),
        })
    }

    /// The block rule behind `error`, if a block refused the write.
    pub fn of(error: &MemoryError) -> Option<&BlockError> {
        match error {
            MemoryError::Refused { source } => source.downcast_ref(),
            _ => None,
        }
    }
}
