//! The BERT forward pass, mean pooling and L2 normalisation.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config, DTYPE};
use memory_core::ports::Embedder;
use memory_core::{MemoryError, Result};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use crate::error::CandleError;
use crate::model_dir::{ModelFiles, default_model_dir};

/// The model id recorded with every vector this embedder makes.
pub const MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// The sentence-transformers setting for this model: longer inputs are truncated.
const MAX_TOKENS: usize = 256;
/// Texts per forward pass; inputs are sorted by length first so a batch pads little.
const BATCH: usize = 32;

/// all-MiniLM-L6-v2 (384 dimensions) on the CPU.
///
/// Cheap to clone; the model is shared. Embedding runs on a blocking thread so it never stalls
/// the async runtime.
#[derive(Clone)]
pub struct LocalEmbedder {
    inner: Arc<Inner>,
}

struct Inner {
    model: BertModel,
    tokenizer: Tokenizer,
    dimensions: usize,
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("model", &MODEL_ID)
            .field("dimensions", &self.inner.dimensions)
            .finish()
    }
}

fn backend(err: impl Into<CandleError>) -> MemoryError {
    err.into().into()
}

fn tokenizer_error(err: tokenizers::Error) -> MemoryError {
    CandleError::Tokenizer(err).into()
}

impl LocalEmbedder {
    /// `MEMORY_MODEL_DIR`, else `~/.cache/memory-models/all-minilm-l6-v2` (where
    /// `scripts/setup-model.sh` puts the files).
    pub fn default_model_dir() -> PathBuf {
        default_model_dir()
    }

    /// Loads the model from the default directory, or `Ok(None)` when the files are not there
    /// (the caller then runs without vector channels and says so).
    pub fn discover() -> Result<Option<Self>> {
        let dir = default_model_dir();
        match ModelFiles::in_dir(&dir) {
            Ok(files) => Self::from_files(&files).map(Some),
            Err(err) if err.is_not_found() => {
                tracing::info!(dir = %dir.display(), "local embedding model not installed");
                Ok(None)
            }
            Err(err) => Err(err),
        }
    }

    /// Loads the model from `dir`.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self> {
        Self::from_files(&ModelFiles::in_dir(dir.as_ref())?)
    }

    /// Loads the model from explicit files.
    pub fn from_files(files: &ModelFiles) -> Result<Self> {
        let config_text = std::fs::read_to_string(&files.config).map_err(backend)?;
        let config: Config = serde_json::from_str(&config_text).map_err(|err| {
            MemoryError::serialization(format!("{}: {err}", files.config.display()))
        })?;
        let mut tokenizer = Tokenizer::from_file(&files.tokenizer).map_err(tokenizer_error)?;
        // The shipped tokenizer pads every input to 128 tokens; padding is done per batch
        // below, with the attention mask honoured in the pooling.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(tokenizer_error)?;
        let device = Device::Cpu;
        // Read into memory rather than memory-mapped: this crate forbids `unsafe`.
        let weights = std::fs::read(&files.weights).map_err(backend)?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DTYPE, &device).map_err(backend)?;
        let model = BertModel::load(vb, &config).map_err(backend)?;
        Ok(Self {
            inner: Arc::new(Inner {
                model,
                tokenizer,
                dimensions: config.hidden_size,
            }),
        })
    }

    /// Embeds synchronously (what [`Embedder::embed`] runs on a blocking thread).
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.inner.embed(texts)
    }
}

impl Inner {
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(tokenizer_error)?;
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|&i| encodings[i].get_ids().len());
        let mut out = vec![Vec::new(); encodings.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&tokenizers::Encoding> = chunk.iter().map(|&i| &encodings[i]).collect();
            let vectors = self.forward(&batch)?;
            for (&i, vector) in chunk.iter().zip(vectors) {
                out[i] = vector;
            }
        }
        Ok(out)
    }

    fn forward(&self, batch: &[&tokenizers::Encoding]) -> Result<Vec<Vec<f32>>> {
        let width = batch
            .iter()
            .map(|e| e.get_ids().len())
            .max()
            .unwrap_or(0)
            .max(1);
        let rows = batch.len();
        let mut ids = vec![0u32; rows * width];
        let mut mask = vec![0u32; rows * width];
        for (row, encoding) in batch.iter().enumerate() {
            for (col, &id) in encoding.get_ids().iter().enumerate() {
                ids[row * width + col] = id;
                mask[row * width + col] = 1;
            }
        }
        let device = &self.model.device;
        let ids = Tensor::from_vec(ids, (rows, width), device).map_err(backend)?;
        let mask = Tensor::from_vec(mask, (rows, width), device).map_err(backend)?;
        let token_types = ids.zeros_like().map_err(backend)?;
        let hidden = self
            .model
            .forward(&ids, &token_types, Some(&mask))
            .map_err(backend)?;
        mean_pool_normalised(&hidden, &mask)
    }
}

/// Mean over the real (unmasked) tokens, then L2 normalisation.
fn mean_pool_normalised(hidden: &Tensor, mask: &Tensor) -> Result<Vec<Vec<f32>>> {
    let pooled = (|| {
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norms = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
        mean.broadcast_div(&norms)?.to_vec2::<f32>()
    })();
    pooled.map_err(backend)
}

#[async_trait]
impl Embedder for LocalEmbedder {
    fn model_id(&self) -> &str {
        MODEL_ID
    }

    fn dimensions(&self) -> usize {
        self.inner.dimensions
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let inner = Arc::clone(&self.inner);
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || inner.embed(&texts))
            .await
            .map_err(backend)?
    }
}
