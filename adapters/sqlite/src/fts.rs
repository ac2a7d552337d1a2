//! FTS5 query building shared by every full-text table: user words are always quoted, so
//! query syntax in input is inert and can never raise an error.

use memory_core::{SearchMode, search_terms};

/// The MATCH expression for `text` over `column`, optionally restricted to a scope token
/// (an indexed one-token column that partitions the table).
pub(crate) fn match_expression(
    text: &str,
    mode: SearchMode,
    column: &str,
    scope: Option<String>,
) -> String {
    let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let terms = search_terms(text);
    let body = match mode {
        SearchMode::AllWords => terms.iter().map(|t| quote(t)).collect::<Vec<_>>().join(" "),
        SearchMode::Phrase => quote(&terms.join(" ")),
        SearchMode::AnyWords => terms
            .iter()
            .map(|t| quote(t))
            .collect::<Vec<_>>()
            .join(" OR "),
    };
    match scope {
        Some(token) => format!("scope : \"{token}\" AND {column} : ({body})"),
        None => format!("{column} : ({body})"),
    }
}
