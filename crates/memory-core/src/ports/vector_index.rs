use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::Result;

/// A vector with the model that made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VectorRecord {
    /// Unique within the namespace.
    pub id: String,
    /// The embedding.
    pub vector: Vec<f32>,
    /// The embedding model's id.
    pub model: String,
}

/// A nearest-neighbour result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VectorHit {
    /// Record id.
    pub id: String,
    /// Cosine similarity, higher is closer.
    pub score: f32,
}

/// Nearest-neighbour search over embeddings, partitioned into namespaces.
///
/// # Contract
/// - All vectors of a namespace share one model and one dimension: an upsert with another
///   model or length is [`crate::MemoryError::InvalidInput`] until the namespace is cleared.
/// - `query` with a vector of the wrong length is `InvalidInput`; an empty namespace gives no
///   hits.
#[async_trait]
pub trait VectorIndex: Send + Sync {
    /// Inserts or replaces records.
    async fn upsert(&self, namespace: &str, records: Vec<VectorRecord>) -> Result<()>;
    /// Removes records; returns how many existed.
    async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64>;
    /// The `k` closest records by cosine similarity.
    async fn query(&self, namespace: &str, vector: &[f32], k: usize) -> Result<Vec<VectorHit>>;
    /// The stored records with these ids (as given, not normalised), in the order of `ids`.
    async fn get(&self, namespace: &str, ids: &[String]) -> Result<Vec<VectorRecord>>;
    /// The model of the namespace's vectors, if any.
    async fn model(&self, namespace: &str) -> Result<Option<String>>;
    /// Removes the whole namespace.
    async fn clear(&self, namespace: &str) -> Result<()>;
}

/// The vector index of each long-term memory profile, from whatever backend the deployment
/// chose (independent of where the profile's records live).
///
/// # Contract
/// - `vector_index` returns the same logical index for the same profile; profiles share
///   nothing.
/// - The one-model-per-namespace check of [`VectorIndex`] is atomic: two writers (two
///   instances, two processes) can never leave two models in one namespace.
/// - `delete_vector_index` removes every vector of the profile (idempotent).
#[async_trait]
pub trait VectorIndexes: Send + Sync {
    /// The profile's index (created on first use).
    async fn vector_index(&self, profile: &str) -> Result<Arc<dyn VectorIndex>>;
    /// Removes the profile's vectors.
    async fn delete_vector_index(&self, profile: &str) -> Result<()>;
}
