use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{Metadata, MetadataFilter, Result, Timestamp};

/// A raw message of a profile, content-addressed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawMessage {
    /// Content address (hex).
    pub id: String,
    /// Conversation it came from.
    pub session_id: String,
    /// Speaker.
    pub role: String,
    /// Text.
    pub content: String,
    /// When it was said.
    pub created_at: Timestamp,
    /// The builder's metadata, given when it was ingested (what is extracted from it carries
    /// it too).
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
}

/// Counts of an insert-or-ignore of raw messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RawMessageInsert {
    /// Newly stored.
    pub inserted: u64,
    /// Already known.
    pub existing: u64,
}

/// A profile's raw messages: what was said, content-addressed, kept as it was said.
///
/// # Contract
/// (asserted by `memory_testkit::contract::long_term_memory`)
/// - `insert_raw` is insert-or-ignore by id and reports the counts.
/// - Pages follow insertion order; cursors are opaque strings a caller passes back unchanged.
/// - `purge_raw` erases: the text is gone from the store (and, where the backend can promise
///   it, from its files).
/// - Metadata is kept as given, and `raw_matching` selects by it exactly as
///   [`MetadataFilter::matches`] does.
#[async_trait]
pub trait RawMessageStore: Send + Sync {
    /// Stores raw messages, ignoring known ids.
    async fn insert_raw(&self, messages: Vec<RawMessage>) -> Result<RawMessageInsert>;
    /// A page of raw messages in insertion order: at most `limit` after `cursor`, and the
    /// cursor of the next page (`None` at the end).
    async fn raw_page(
        &self,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<(Vec<RawMessage>, Option<String>)>;
    /// The raw messages with these ids that exist, in the order of `ids`.
    async fn raw_by_ids(&self, ids: &[String]) -> Result<Vec<RawMessage>>;
    /// Up to `radius` raw messages before and after each given one in the same session (in
    /// insertion order), excluding the given ones: the conversational context of a hit.
    async fn raw_neighbors(&self, ids: &[String], radius: usize) -> Result<Vec<RawMessage>>;
    /// For each given id, in the order of `ids`, what `raw_neighbors(&[id], radius)` returns:
    /// each hit's own context, in one call (recall asks it for every raw hit near the top).
    /// The provided body asks once per id; a backend that can answer in one round trip
    /// overrides it.
    async fn raw_neighbors_each(
        &self,
        ids: &[String],
        radius: usize,
    ) -> Result<Vec<Vec<RawMessage>>> {
        let mut each = Vec::with_capacity(ids.len());
        for id in ids {
            each.push(self.raw_neighbors(std::slice::from_ref(id), radius).await?);
        }
        Ok(each)
    }
    /// Erases raw messages (right to erasure); returns how many existed.
    async fn purge_raw(&self, ids: &[String]) -> Result<u64>;
    /// The ids of the raw messages whose metadata satisfies `filter`, a page at a time in
    /// insertion order (at most `limit` after `cursor`, and the next page's cursor).
    async fn raw_matching(
        &self,
        filter: &MetadataFilter,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<(Vec<String>, Option<String>)>;
}
