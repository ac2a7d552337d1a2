//! The matching rules shared by the filters of the index ports ([`super::TextFilter`],
//! [`super::VectorFilter`]): an exact value, and a time range.

use crate::Timestamp;

/// True when `want` is unset or `have` equals it.
pub(crate) fn value_matches(want: &Option<String>, have: &Option<String>) -> bool {
    want.as_ref().is_none_or(|w| have.as_ref() == Some(w))
}

/// True when `time` is in `[from, to)`; an unset bound restricts nothing, and a missing time
/// fails any bound.
pub(crate) fn time_matches(
    from: Option<Timestamp>,
    to: Option<Timestamp>,
    time: Option<Timestamp>,
) -> bool {
    from.is_none_or(|f| time.is_some_and(|t| t >= f))
        && to.is_none_or(|to| time.is_some_and(|t| t < to))
}
