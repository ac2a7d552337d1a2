use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{Result, SearchMode};

/// A document in a [`SearchIndex`] namespace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexDocument {
    /// Unique within the namespace.
    pub id: String,
    /// The text to index and return.
    pub text: String,
}

/// A search result of a [`SearchIndex`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexHit {
    /// Document id.
    pub id: String,
    /// Document text.
    pub text: String,
    /// Relevance, higher is better.
    pub score: f64,
}

/// Full-text search over keyed documents, partitioned into namespaces (a searchable context
/// block, a memory profile's raw messages, ...).
///
/// # Contract
/// - `upsert` replaces a document with the same id; `delete` removes it from results at once.
/// - Namespaces are isolated.
/// - Query words are matched literally (no query syntax); an empty query gives no hits.
#[async_trait]
pub trait SearchIndex: Send + Sync {
    /// Inserts or replaces documents.
    async fn upsert(&self, namespace: &str, documents: Vec<IndexDocument>) -> Result<()>;
    /// Removes documents; returns how many existed.
    async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64>;
    /// Ranked matches, at most `limit`.
    async fn search(
        &self,
        namespace: &str,
        query: &str,
        mode: SearchMode,
        limit: usize,
    ) -> Result<Vec<IndexHit>>;
    /// Number of documents in the namespace.
    async fn count(&self, namespace: &str) -> Result<u64>;
    /// Removes the whole namespace.
    async fn clear(&self, namespace: &str) -> Result<()>;
}
