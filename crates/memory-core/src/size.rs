//! One size rule for everything a user can store (a message, a memory, an ingested message,
//! a context block, a skill): at most [`MAX_ITEM_BYTES`], checked before any write, on every
//! backend, refused with [`MemoryError::TooLarge`] (413 over HTTP). Metadata has its own,
//! smaller bound ([`crate::Metadata`]).

use crate::{MemoryError, Result};

/// The most bytes of one stored item (8 MiB: the row bound every store declares).
pub const MAX_ITEM_BYTES: u64 = 8 * 1024 * 1024;

/// `Ok` when `bytes` fit the rule; [`MemoryError::TooLarge`] naming `what` otherwise.
///
/// ```
/// use memory_core::size::{MAX_ITEM_BYTES, check_item_size};
/// assert!(check_item_size("memory", 10).is_ok());
/// let refused = check_item_size("memory", MAX_ITEM_BYTES as usize + 1).unwrap_err();
/// assert!(refused.to_string().starts_with("memory is 8388609 bytes"));
/// ```
pub fn check_item_size(what: &str, bytes: usize) -> Result<()> {
    let bytes = bytes as u64;
    if bytes > MAX_ITEM_BYTES {
        return Err(MemoryError::TooLarge {
            what: what.to_owned(),
            bytes,
            limit: MAX_ITEM_BYTES,
        });
    }
    Ok(())
}
