//! # memory-hashing
//!
//! [`HashingEmbedder`]: the [`Embedder`] port without a model. Words are lowercased,
//! stemmed and hashed (FNV-1a) into a fixed number of buckets, then L2-normalised, so texts
//! that share words are close. It is deterministic and instant: what the benchmarks use to
//! measure vector search at scale, and what tests use when the meaning of a vector does not
//! matter. It is not a semantic model: use `memory-candle` or `memory-openai` for recall
//! quality.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use memory_core::ports::Embedder;
//! use memory_hashing::HashingEmbedder;
//! let embedder = HashingEmbedder::new(64);
//! let v = embedder.embed(&["Deploys run on Fridays".into()]).await.unwrap();
//! assert_eq!(v[0].len(), 64);
//! assert_eq!(embedder.model_id(), "hashing-64");
//! # });
//! ```

use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::Embedder;
use rust_stemmers::{Algorithm, Stemmer};

/// Splits text into lowercase alphanumeric tokens and stems them (English).
///
/// ```
/// use memory_hashing::tokenize;
/// assert_eq!(tokenize("Deploying the Rollbacks!"), vec!["deploy", "the", "rollback"]);
/// ```
pub fn tokenize(text: &str) -> Vec<String> {
    let stemmer = Stemmer::create(Algorithm::English);
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| stemmer.stem(&w.to_lowercase()).into_owned())
        .collect()
}

/// A deterministic [`Embedder`]: stemmed words hashed (FNV-1a) into a fixed number of
/// buckets, L2-normalised. Texts sharing words are close; no model needed.
#[derive(Debug, Clone)]
pub struct HashingEmbedder {
    dimensions: usize,
    model_id: String,
}

impl HashingEmbedder {
    /// An embedder of `dimensions` buckets (at least one).
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
