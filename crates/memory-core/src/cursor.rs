//! Page cursors. Callers treat every cursor as an opaque string and pass it back unchanged;
//! adapters choose its form. These helpers serve adapters whose cursor is an integer
//! position (a rowid, a per-session counter), so they all reject a bad cursor alike.

use crate::{MemoryError, Result};

/// The cursor of an integer position.
///
/// ```
/// use memory_core::cursor::{parse_position, position};
/// assert_eq!(parse_position(Some(&position(42))).unwrap(), Some(42));
/// assert_eq!(parse_position(None).unwrap(), None);
/// assert!(parse_position(Some("not a cursor")).is_err());
/// ```
pub fn position(position: i64) -> String {
    position.to_string()
}

/// The position in a cursor made by [`position`]; `None` for no cursor (the first page), and
/// [`MemoryError::InvalidInput`] for anything else.
pub fn parse_position(cursor: Option<&str>) -> Result<Option<i64>> {
    cursor
        .map(|c| {
            c.parse().map_err(|_| {
                MemoryError::invalid(format!(
                    "invalid cursor {c:?}: pass back the cursor of the previous page unchanged"
                ))
            })
        })
        .transpose()
}
