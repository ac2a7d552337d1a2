//! Full-text search over conversation history.

use serde::{Deserialize, Serialize};

use crate::ports::{
    TextFilter, TextHit, TextIndex, TextQuery, namespaces, split_message_document_id,
};
use crate::{MemoryError, Result, Role, SessionId};

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

/// The most words a query searches for: the rest are dropped, so a pasted page or a word
/// repeated thousands of times costs what a normal query costs.
pub const MAX_SEARCH_TERMS: usize = 32;

fn words(text: &str) -> impl Iterator<Item = &str> {
    // Control characters (NUL included) separate words: they are never part of a term, so
    // they cannot reach a query language as syntax.
    text.split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| w.chars().any(char::is_alphanumeric))
}

/// The words of `text` that can match: separated by whitespace or control characters,
/// keeping only words with at least one letter or digit, each word once (case ignored), at
/// most [`MAX_SEARCH_TERMS`].
///
/// ```
/// use memory_core::search_terms;
/// assert_eq!(search_terms("Alpha alpha, beta\u{0}gamma !!"), ["Alpha", "beta", "gamma"]);
/// assert_eq!(search_terms(&"deploy ".repeat(1_000)), ["deploy"]);
/// ```
pub fn search_terms(text: &str) -> Vec<&str> {
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for word in words(text) {
        // The key an index sees: letters and digits, lowercase ("Alpha," and "alpha" match
        // the same documents).
        let key: String = word
            .to_lowercase()
            .chars()
            .map(|c| if c.is_alphanumeric() { c } else { ' ' })
            .collect();
        let key = key.trim().to_owned();
        if !seen.contains(&key) {
            seen.push(key);
            out.push(word);
            if out.len() == MAX_SEARCH_TERMS {
                break;
            }
        }
    }
    out
}

/// The words of a phrase, in order and repeats kept (a phrase is a sequence), at most
/// [`MAX_SEARCH_TERMS`].
pub fn phrase_terms(text: &str) -> Vec<&str> {
    words(text).take(MAX_SEARCH_TERMS).collect()
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

impl SearchQuery {
    /// The same query on the `messages` namespace of a
    /// [`TextIndex`](crate::ports::TextIndex): limit applied, session as a filter.
    pub fn to_text_query(&self) -> TextQuery {
        TextQuery {
            text: self.text.clone(),
            mode: self.mode,
            limit: self.effective_limit(),
            filter: TextFilter {
                session: self.session.as_ref().map(|s| s.as_str().to_owned()),
                ..TextFilter::default()
            },
        }
    }
}

impl SearchHit {
    /// A hit of the `messages` namespace as a message hit (the document id names the session
    /// and the message; the role comes from the fields).
    pub fn from_text_hit(hit: TextHit) -> Result<Self> {
        let (session, message_id) = split_message_document_id(&hit.id).ok_or_else(|| {
            MemoryError::serialization(format!("not a message document id: {:?}", hit.id))
        })?;
        let role = hit.fields.role.as_deref().ok_or_else(|| {
            MemoryError::serialization(format!("message document {:?} has no role", hit.id))
        })?;
        Ok(Self {
            session_id: SessionId::new(session)?,
            message_id: message_id.to_owned(),
            role: Role::parse(role)?,
            content: hit.text,
            score: hit.score,
        })
    }
}

/// Searches conversation history in the `messages` namespace of `index`.
pub async fn search_messages(index: &dyn TextIndex, query: &SearchQuery) -> Result<Vec<SearchHit>> {
    if query.is_empty() {
        return Ok(Vec::new());
    }
    index
        .search(namespaces::MESSAGES, &query.to_text_query())
        .await?
        .into_iter()
        .map(SearchHit::from_text_hit)
        .collect()
}
