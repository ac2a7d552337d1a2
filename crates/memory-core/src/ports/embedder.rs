use async_trait::async_trait;

use crate::Result;

/// Turns texts into vectors.
///
/// # Contract
/// - `embed` returns exactly one vector per input, in order, each of length
///   [`dimensions`](Self::dimensions).
/// - [`embed_queries`](Self::embed_queries) does the same for search queries; a model trained
///   with a query prefix (e5's `query: `, bge's instruction) adds it there and its document
///   prefix in `embed`. By default the two are the same.
/// - [`model_id`](Self::model_id) names the model; vectors of two models are never mixed in one
///   index.
#[async_trait]
pub trait Embedder: Send + Sync {
    /// The model's identifier.
    fn model_id(&self) -> &str;
    /// The vector length.
    fn dimensions(&self) -> usize;
    /// Embeds a batch of texts to be stored and searched (documents).
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>>;
    /// Embeds a batch of search queries (by default as [`embed`](Self::embed) does).
    async fn embed_queries(&self, queries: &[String]) -> Result<Vec<Vec<f32>>> {
        self.embed(queries).await
    }
}
