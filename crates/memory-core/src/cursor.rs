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

/// The `LIMIT` that fetches a page of `limit` items and one more, which tells whether a next
/// page exists (see [`page_of`]).
///
/// ```
/// assert_eq!(memory_core::cursor::one_more(10), 11);
/// assert_eq!(memory_core::cursor::one_more(usize::MAX), i64::MAX);
/// ```
pub fn one_more(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(1)
}

/// A page from `rows` fetched in position order with [`one_more`]: the first `limit` rows
/// made into items, and the cursor of the next page (the position of the page's last row)
/// when a row beyond the page was fetched, else `None`.
///
/// ```
/// use memory_core::cursor::{page_of, position};
/// let rows = [(1, "a"), (4, "b"), (9, "c")];
/// let (items, next) = page_of(&rows, 2, |r| r.0, |r| Ok(r.1)).unwrap();
/// assert_eq!((items, next), (vec!["a", "b"], Some(position(4))));
/// let (items, next) = page_of(&rows, 3, |r| r.0, |r| Ok(r.1)).unwrap();
/// assert_eq!((items.len(), next), (3, None));
/// ```
pub fn page_of<R, T>(
    rows: &[R],
    limit: usize,
    position_of: impl Fn(&R) -> i64,
    mut item: impl FnMut(&R) -> Result<T>,
) -> Result<(Vec<T>, Option<String>)> {
    let page = &rows[..rows.len().min(limit)];
    let items = page.iter().map(&mut item).collect::<Result<Vec<T>>>()?;
    let next = match page.last() {
        Some(last) if rows.len() > limit => Some(position(position_of(last))),
        _ => None,
    };
    Ok((items, next))
}
