use async_trait::async_trait;

use crate::Result;

/// Turns texts into vectors.
///
/// # Contract
/// - `embed` returns exactly one vector per input, in order, each of length
///   [`dimensions`](Self::dimensions).
/// - [`model_id`](Self::model_id) names the model; vectors of two models are never mixed in one
///   index.
#[async_trait]
pub trait Embedder: Send + Sync {
    /// The model's identifier.
    fn model_id(&self) -> &str;
    /// The vector length.
    fn dimensions(&self) -> usize;
    /// Embeds a batch of texts.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>>;
}
