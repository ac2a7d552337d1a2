use async_trait::async_trait;

use crate::Result;

/// Scores how well each document answers a query, reading the two together (a cross-encoder),
/// to reorder what recall's channels found.
///
/// # Contract
/// - `score` returns exactly one score per document, in order; a higher score is a better
///   answer. Scores of one call are comparable with each other; they are in `0..=1` (a
///   probability of relevance).
/// - An empty `documents` is an empty answer, without a model call.
/// - [`model_id`](Self::model_id) names the model.
#[async_trait]
pub trait Reranker: Send + Sync {
    /// The model's identifier.
    fn model_id(&self) -> &str;
    /// Scores each of `documents` against `query`.
    async fn score(&self, query: &str, documents: &[String]) -> Result<Vec<f32>>;
}
