//! Full-text search over conversation history.

use serde::{Deserialize, Serialize};

use crate::{Role, SessionId};

/// The default number of hits.
pub const DEFAULT_SEARCH_LIMIT: usize = 20;
/// The most hits one query may ask for.
pub const MAX_SEARCH_LIMIT: usize = 1_000;

/// How the query text is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    /// Every word must match (each word is quoted, so query syntax in user input is inert).
    #[default]
    AllWords,
    /// The words must appear together, in order.
    Phrase,
    /// Any word may match; hits are ranked by BM25, so documents with more (and rarer) query
    /// words rank first. What recall uses over natural-language questions.
    AnyWords,
}

/// A full-text query.
///
/// ```
/// use memory_core::{SearchMode, SearchQuery};
/// let q = SearchQuery::new("deploy AND rollback").limit(5);
/// assert_eq!(q.terms(), vec!["deploy", "AND", "rollback"]);
/// assert_eq!(q.effective_limit(), 5);
/// assert_eq!(SearchQuery::new("x").limit(50_000).effective_limit(), 1_000);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchQuery {
    /// The user's words.
    pub text: String,
    /// Restrict to one session; `None` searches every session.
    pub session: Option<SessionId>,
    /// Word or phrase matching.
    pub mode: SearchMode,
    /// Maximum hits (default 20, capped at 1,000).
    pub limit: Option<usize>,
}

impl SearchQuery {
    /// A query over every session with default mode and limit.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            session: None,
            mode: SearchMode::AllWords,
            limit: None,
        }
    }

    /// Restricts the query to one session.
    pub fn in_session(mut self, session: SessionId) -> Self {
        self.session = Some(session);
        self
    }

    /// Sets the matching mode.
    pub fn mode(mut self, mode: SearchMode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets the limit.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// The limit actually applied: default 20, at most 1,000.
    pub fn effective_limit(&self) -> usize {
        self.limit
            .unwrap_or(DEFAULT_SEARCH_LIMIT)
            .min(MAX_SEARCH_LIMIT)
    }

    /// The words that can match: whitespace-separated, keeping only words with at least one
    /// letter or digit (a word of punctuation alone can never match a token).
    pub fn terms(&self) -> Vec<&str> {
        search_terms(&self.text)
    }

    /// True when the query can match nothing (empty after dropping punctuation-only words, or
    /// a zero limit). Adapters return an empty result without touching storage.
    pub fn is_empty(&self) -> bool {
        self.terms().is_empty() || self.effective_limit() == 0
    }
}

/// The words of `text` that can match: whitespace-separated, keeping only words with at
/// least one letter or digit.
pub fn search_terms(text: &str) -> Vec<&str> {
    text.split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .collect()
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    /// The session the message belongs to.
    pub session_id: SessionId,
    /// The message id.
    pub message_id: String,
    /// The message's role.
    pub role: Role,
    /// The indexed text of the message (its text parts joined by newlines).
    pub content: String,
    /// Relevance; higher is better. Comparable only within one result list.
    pub score: f64,
}
