use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::Embedder;

use super::tokenize;

/// A deterministic [`Embedder`]: stemmed words hashed (FNV-1a) into a fixed number of buckets,
/// L2-normalised. Texts sharing words are close; no model needed.
#[derive(Debug, Clone)]
pub struct HashingEmbedder {
    dimensions: usize,
    model_id: String,
}

impl HashingEmbedder {
    /// An embedder of `dimensions` buckets.
    pub fn new(dimensions: usize) -> Self {
        Self {
            dimensions: dimensions.max(1),
            model_id: format!("hashing-{dimensions}"),
        }
    }

    fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dimensions];
        for token in tokenize(text) {
            let mut hash: u64 = 0xcbf29ce484222325;
            for byte in token.bytes() {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x100000001b3);
            }
            v[(hash % self.dimensions as u64) as usize] += 1.0;
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
}

#[async_trait]
impl Embedder for HashingEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }
}
