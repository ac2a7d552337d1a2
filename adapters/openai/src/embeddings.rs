//! The [`Embedder`] over an OpenAI-compatible `/embeddings` endpoint.

use async_trait::async_trait;
use memory_core::ports::Embedder;
use memory_core::{MemoryError, Result};
use serde_json::{Value, json};

use crate::config::OpenAiConfig;
use crate::http::Endpoint;

/// Inputs per request unless configured otherwise.
pub const DEFAULT_EMBEDDING_BATCH: usize = 128;

/// Embeddings from `/embeddings`, in batches, with the client's retries.
///
/// ```no_run
/// # async fn demo() -> memory_core::Result<()> {
/// use memory_core::ports::Embedder;
/// use memory_openai::{OpenAiConfig, OpenAiEmbedder};
/// let config = OpenAiConfig::new("https://api.openai.com/v1", "text-embedding-3-small")
///     .api_key_from_env("OPENAI_API_KEY");
/// let embedder = OpenAiEmbedder::new(config, 1536)?;
/// let vectors = embedder.embed(&["hello".to_owned()]).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiEmbedder {
    endpoint: Endpoint,
    dimensions: usize,
    batch: usize,
    model_id: String,
}

impl OpenAiEmbedder {
    /// An embedder for `config.model`, whose vectors have `dimensions` entries (checked on
    /// every reply).
    pub fn new(config: OpenAiConfig, dimensions: usize) -> Result<Self> {
        if dimensions == 0 {
            return Err(MemoryError::invalid(
                "embedding dimensions must be positive",
            ));
        }
        let model_id = config.model.clone();
        Ok(Self {
            endpoint: Endpoint::new(config)?,
            dimensions,
            batch: DEFAULT_EMBEDDING_BATCH,
            model_id,
        })
    }

    /// Inputs per request (at least 1).
    pub fn batch_size(mut self, batch: usize) -> Self {
        self.batch = batch.max(1);
        self
    }

    async fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let body = json!({"model": self.model_id, "input": texts, "encoding_format": "float"});
        let reply = self
            .endpoint
            .post("embeddings", &body, &[], self.endpoint.deadline())
            .await?
            .body;
        let malformed = |what: &str| crate::error::malformed("/embeddings reply", what);
        let data = reply
            .get("data")
            .and_then(Value::as_array)
            .ok_or_else(|| malformed("no data array"))?;
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for (position, item) in data.iter().enumerate() {
            let index = item
                .get("index")
                .and_then(Value::as_u64)
                .map_or(position, |i| i as usize);
            let vector: Vec<f32> = item
                .get("embedding")
                .and_then(Value::as_array)
                .ok_or_else(|| malformed("an item has no embedding"))?
                .iter()
                .map(|x| x.as_f64().map(|x| x as f32))
                .collect::<Option<_>>()
                .ok_or_else(|| malformed("an embedding holds a non-number"))?;
            if vector.len() != self.dimensions {
                return Err(malformed(&format!(
                    "{} dimensions, expected {}",
                    vector.len(),
                    self.dimensions
                )));
            }
            let slot = out
                .get_mut(index)
                .ok_or_else(|| malformed(&format!("index {index} out of range")))?;
            *slot = Some(vector);
        }
        out.into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| malformed("fewer embeddings than inputs"))
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.batch) {
            out.extend(self.embed_batch(batch).await?);
        }
        Ok(out)
    }
}
