use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::field_filter::{time_matches, value_matches};
use crate::{Result, SearchMode, TextLanguage, Timestamp, search::search_terms};

/// The fields a document carries beside its text, for filtering and for showing a hit.
///
/// Which fields are set depends on what is indexed: a message has a session, a role and a
/// time; a long-term memory has a kind, a key and a time; a context-block entry has none.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TextFields {
    /// The session (conversation) the document belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The speaker's role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// A type name (a memory's kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// A topic key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// When it was said or recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<Timestamp>,
}

/// A document of a [`TextIndex`] namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextDocument {
    /// Unique within the namespace.
    pub id: String,
    /// The text to index and return.
    pub text: String,
    /// Filterable fields.
    #[serde(default)]
    pub fields: TextFields,
}

impl TextDocument {
    /// A document without fields.
    pub fn new(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            text: text.into(),
            fields: TextFields::default(),
        }
    }

    /// Sets the fields.
    pub fn with_fields(mut self, fields: TextFields) -> Self {
        self.fields = fields;
        self
    }
}

/// Restrictions on the documents a query may return; every set field must match exactly
/// (`from` inclusive, `to` exclusive, on [`TextFields::time`]).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TextFilter {
    /// Only this session.
    pub session: Option<String>,
    /// Only this role.
    pub role: Option<String>,
    /// Only this kind.
    pub kind: Option<String>,
    /// Only this key.
    pub key: Option<String>,
    /// At or after.
    pub from: Option<Timestamp>,
    /// Before.
    pub to: Option<Timestamp>,
}

impl TextFilter {
    /// True when `fields` pass the filter (what an index without native filters checks).
    pub fn matches(&self, fields: &TextFields) -> bool {
        value_matches(&self.session, &fields.session)
            && value_matches(&self.role, &fields.role)
            && value_matches(&self.kind, &fields.kind)
            && value_matches(&self.key, &fields.key)
            && time_matches(self.from, self.to, fields.time)
    }
}

/// A full-text query of a [`TextIndex`].
///
/// ```
/// use memory_core::SearchMode;
/// use memory_core::ports::TextQuery;
/// let q = TextQuery::new("deploy OR \"rollback\"", 5).mode(SearchMode::AnyWords);
/// assert_eq!(q.terms(), vec!["deploy", "OR", "\"rollback\""]);
/// assert!(TextQuery::new("  ?! ", 5).is_empty());
/// assert!(TextQuery::new("deploy", 0).is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextQuery {
    /// The user's words (never query syntax).
    pub text: String,
    /// How the words match.
    pub mode: SearchMode,
    /// Maximum hits.
    pub limit: usize,
    /// Restrictions on fields.
    pub filter: TextFilter,
}

impl TextQuery {
    /// A query in [`SearchMode::AllWords`] without filters.
    pub fn new(text: impl Into<String>, limit: usize) -> Self {
        Self {
            text: text.into(),
            mode: SearchMode::AllWords,
            limit,
            filter: TextFilter::default(),
        }
    }

    /// Sets the matching mode.
    pub fn mode(mut self, mode: SearchMode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets the filter.
    pub fn filter(mut self, filter: TextFilter) -> Self {
        self.filter = filter;
        self
    }

    /// The words that can match (see [`crate::SearchQuery::terms`]).
    pub fn terms(&self) -> Vec<&str> {
        search_terms(&self.text)
    }

    /// True when the query can match nothing: indexes return no hits without touching
    /// storage.
    pub fn is_empty(&self) -> bool {
        self.limit == 0 || self.terms().is_empty()
    }
}

/// A hit of a [`TextIndex`]: enough to show it without another read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextHit {
    /// Document id.
    pub id: String,
    /// Document text.
    pub text: String,
    /// Document fields.
    pub fields: TextFields,
    /// Relevance, higher is better; comparable only within one result list.
    pub score: f64,
}

/// A hit's id and score without its text and fields: what ranking needs (see
/// [`TextIndex::search_ids`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredId {
    /// Document id.
    pub id: String,
    /// Relevance, as [`TextHit::score`].
    pub score: f64,
}

impl From<TextHit> for ScoredId {
    fn from(hit: TextHit) -> Self {
        Self {
            id: hit.id,
            score: hit.score,
        }
    }
}

/// How an index matches and ranks, declared so that callers (and the contract suite) need
/// not guess from behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextIndexCapabilities {
    /// Inflected forms match (`deploys` finds `deploy`).
    pub stemming: bool,
    /// Very common words (`the`, `or`) are dropped from documents and queries.
    pub stop_words: bool,
    /// [`SearchMode::Phrase`] matches words in order; without it a phrase query is
    /// [`crate::MemoryError::NotSupported`].
    pub phrase: bool,
    /// Rarer matching words weigh more (BM25 or similar).
    pub rarity_ranking: bool,
    /// The index is written by the store that holds the rows, in the same transaction (it
    /// cannot lose a document); its own writes are `NotSupported`, and the engine does not
    /// write it. When false, the engine writes it after the store, through a durable outbox.
    pub written_by_store: bool,
    /// The language text is analyzed as (what [`Self::stemming`] and [`Self::stop_words`]
    /// apply to).
    pub language: TextLanguage,
}

/// Full-text search over documents with fields, partitioned into namespaces (message history,
/// a profile's raw messages and memories, a searchable context block).
///
/// # Contract
/// (asserted by `memory_testkit::contract::text_index`, which reads the capabilities)
/// - `upsert` replaces a document with the same id; a deleted document is never found again.
/// - Namespaces are isolated; an unknown namespace is empty.
/// - User input is never query syntax and never raises a syntax error; a query that can match
///   nothing ([`TextQuery::is_empty`]) returns no hits.
/// - [`SearchMode::AllWords`] requires every word, [`SearchMode::AnyWords`] any word (more
///   matching words rank first), [`SearchMode::Phrase`] the words in order.
/// - Hits carry id, text and fields, best first, at most `limit`; the filter is exact.
/// - [`TextIndex::search_ids`] gives the same ids and scores as `search`, in the same order.
#[async_trait]
pub trait TextIndex: Send + Sync {
    /// The adapter's name, for errors and logs.
    fn backend_name(&self) -> &'static str;
    /// How it matches and ranks.
    fn capabilities(&self) -> TextIndexCapabilities;
    /// Inserts or replaces documents.
    async fn upsert(&self, namespace: &str, documents: Vec<TextDocument>) -> Result<()>;
    /// Removes documents; returns how many existed.
    async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64>;
    /// Ranked matches.
    async fn search(&self, namespace: &str, query: &TextQuery) -> Result<Vec<TextHit>>;
    /// The ids and scores of [`Self::search`]'s hits, in its order: for callers that rank
    /// and read the documents elsewhere. An index that can answer without reading the hits'
    /// stored text overrides it.
    async fn search_ids(&self, namespace: &str, query: &TextQuery) -> Result<Vec<ScoredId>> {
        Ok(self
            .search(namespace, query)
            .await?
            .into_iter()
            .map(ScoredId::from)
            .collect())
    }
    /// Number of documents in the namespace.
    async fn count(&self, namespace: &str) -> Result<u64>;
    /// Removes the whole namespace.
    async fn clear(&self, namespace: &str) -> Result<()>;
}

/// The text index of each long-term memory profile, from whatever backend the deployment
/// chose (independent of where the profile's records live).
///
/// # Contract
/// - `text_index` returns the same logical index for the same profile; profiles share
///   nothing.
/// - `delete_text_index` removes every document of the profile (idempotent). An index
///   written by the profile's store goes with the store's records.
#[async_trait]
pub trait TextIndexes: Send + Sync {
    /// The profile's index (created on first use).
    async fn text_index(&self, profile: &str) -> Result<Arc<dyn TextIndex>>;
    /// Removes the profile's index.
    async fn delete_text_index(&self, profile: &str) -> Result<()>;
}

/// The namespaces the engine indexes, which an index written by its store serves.
pub mod namespaces {
    /// Conversation messages of every session (document id: [`super::message_document_id`]).
    pub const MESSAGES: &str = "messages";
    /// A long-term profile's raw messages (document id: the content address).
    pub const RAW: &str = "raw";
    /// A long-term profile's current memories (document id: the memory id; text: content and
    /// search questions). Superseded and forgotten memories are not in it.
    pub const MEMORIES: &str = "memories";
}

/// The document id of a conversation message: unique across sessions (a message id is
/// unique only within its session), and reversible with [`split_message_document_id`].
///
/// ```
/// use memory_core::ports::{message_document_id, split_message_document_id};
/// let id = message_document_id("trip/1", "m:2");
/// assert_eq!(split_message_document_id(&id), Some(("trip/1", "m:2")));
/// ```
pub fn message_document_id(session: &str, message_id: &str) -> String {
    format!("{}:{session}{message_id}", session.len())
}

/// The `(session, message id)` of a [`message_document_id`].
pub fn split_message_document_id(id: &str) -> Option<(&str, &str)> {
    let (len, rest) = id.split_once(':')?;
    let len: usize = len.parse().ok()?;
    (rest.is_char_boundary(len) && len <= rest.len()).then(|| rest.split_at(len))
}
