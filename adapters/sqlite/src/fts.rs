//! FTS5 query building shared by every full-text table: user words are always quoted, so
//! query syntax in input is inert and can never raise an error.
//!
//! Top by score: the unfiltered searches ask for `bm25(…) AS score … ORDER BY score LIMIT n`,
//! not for FTS5's `ORDER BY rank LIMIT n`. Both rank the same rows the same way, but FTS5
//! serves `ORDER BY rank` by sorting every match in a statement of its own, whatever the
//! limit, while an ordinary `ORDER BY` with a `LIMIT` keeps only the best `n` as the matches
//! go by: with thousands of matches, about a third of the search's CPU (`docs/benchmarks.md`,
//! issue 34's fifth step). The `bm25` weights are the table's configured `rank`. A filtered
//! search keeps `rank`: there the join filters first, and scoring before it costs more.

use memory_core::{SearchMode, phrase_terms, search_terms};

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
        SearchMode::Phrase => quote(&phrase_terms(text).join(" ")),
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

/// Test text: sentences over a small vocabulary, so that queries match most rows and scores
/// tie (`state` is an xorshift state, never 0).
#[cfg(test)]
pub(crate) fn sentence(state: &mut u64, words: usize) -> String {
    const VOCABULARY: [&str; 12] = [
        "lisbon", "flat", "cello", "river", "garden", "piano", "train", "harbour", "market",
        "violin", "bridge", "lantern",
    ];
    (0..words)
        .map(|_| {
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            VOCABULARY[(*state % 12) as usize]
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A word repeated hundreds of times is searched once (it made search super-linear).
    #[test]
    fn repeated_words_become_one_term() {
        let expression = match_expression(&"alpha ".repeat(200), SearchMode::AllWords, "c", None);
        assert_eq!(expression, "c : (\"alpha\")");
        let long: String = (0..5_000).map(|i| format!("w{i} ")).collect();
        let expression = match_expression(&long, SearchMode::AnyWords, "c", None);
        assert_eq!(
            expression.matches(" OR ").count(),
            memory_core::MAX_SEARCH_TERMS - 1
        );
    }

    /// A NUL or another control character separates words; it never reaches FTS5 inside a
    /// quoted string (where it ended the string: "unterminated string").
    #[test]
    fn control_characters_never_reach_the_query() {
        let expression = match_expression("a\u{0}b\u{7}c", SearchMode::Phrase, "c", None);
        assert_eq!(expression, "c : (\"a b c\")");
        assert!(!expression.chars().any(char::is_control));
    }
}
