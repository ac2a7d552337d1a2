//! The int8 BERT forward pass on ONNX Runtime, mean pooling and L2 normalisation.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use memory_core::ports::Embedder;
use memory_core::{MemoryError, Result};
use ort::environment::Environment;
use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::Tensor;
use tokenizers::Tokenizer;

use crate::error::OnnxError;
use crate::model_dir::{ModelFiles, default_model_dir};
use crate::windows;

/// The model id recorded with every vector this embedder makes (not the float model's: the
/// int8 weights give close but different vectors).
pub const MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2@onnx-int8";

/// The model's window: longer texts are split ([`crate`] states the rule).
const MAX_TOKENS: usize = 256;
/// Windows per forward pass, sorted by length first. Small batches pad least: on LoCoMo
/// turns in calls of 64, batches of 8 ran 1.6x faster than batches of 32 on this runtime.
const BATCH: usize = 8;

/// all-MiniLM-L6-v2 with int8 weights (384 dimensions) on the CPU, through ONNX Runtime.
///
/// Cheap to clone; the model is shared. Embedding runs on a blocking thread so it never stalls
/// the async runtime; ONNX Runtime spreads one forward pass over every core.
#[derive(Clone)]
pub struct OnnxEmbedder {
    inner: Arc<Inner>,
}

struct Inner {
    session: Mutex<Session>,
    /// The graph's output holding the last hidden state.
    output: String,
    /// Whether the graph takes `token_type_ids` (some exports leave it out).
    token_types: bool,
    tokenizer: Tokenizer,
    cls: u32,
    sep: u32,
    dimensions: usize,
}

impl std::fmt::Debug for OnnxEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxEmbedder")
            .field("model", &MODEL_ID)
            .field("dimensions", &self.inner.dimensions)
            .finish()
    }
}

fn backend(err: impl Into<OnnxError>) -> MemoryError {
    err.into().into()
}

fn tokenizer_error(err: tokenizers::Error) -> MemoryError {
    OnnxError::Tokenizer(err).into()
}

/// The process's one ONNX Runtime environment, loaded from the first library asked for.
static ENVIRONMENT: Mutex<Option<(PathBuf, Environment)>> = Mutex::new(None);

/// The lock of `mutex`, also after a panic elsewhere (what it guards stays consistent: a
/// session between runs, or the environment slot, which is written once).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn environment(runtime: &Path) -> Result<Environment> {
    // An absolute path: the runtime resolves a relative one beside the executable instead.
    let runtime = &std::fs::canonicalize(runtime).map_err(|err| {
        MemoryError::backend(
            crate::error::BACKEND,
            format!("ONNX Runtime's library {}: {err}", runtime.display()),
        )
    })?;
    let mut slot = lock(&ENVIRONMENT);
    if let Some((loaded, environment)) = slot.as_ref() {
        if loaded != runtime {
            tracing::warn!(
                loaded = %loaded.display(),
                asked = %runtime.display(),
                "ONNX Runtime is loaded once per process; the library loaded first is used"
            );
        }
        return Ok(environment.clone());
    }
    let environment = ort::init_from(runtime)
        .map_err(backend)?
        .with_name("agent-memory")
        .build()
        .map_err(backend)?;
    *slot = Some((runtime.to_owned(), environment.clone()));
    Ok(environment)
}

impl OnnxEmbedder {
    /// `MEMORY_ONNX_MODEL_DIR`, else `~/.cache/memory-models/all-minilm-l6-v2-int8` (where
    /// `scripts/setup-onnx.sh` puts the files).
    pub fn default_model_dir() -> PathBuf {
        default_model_dir()
    }

    /// Loads the model from the default directory, or `Ok(None)` when the files are not there
    /// (the caller then says what to install).
    pub fn discover() -> Result<Option<Self>> {
        let dir = default_model_dir();
        match ModelFiles::in_dir(&dir) {
            Ok(files) => Self::from_files(&files).map(Some),
            Err(err) if err.is_not_found() => {
                tracing::info!(dir = %dir.display(), "int8 embedding model not installed");
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
        let mut tokenizer = Tokenizer::from_file(&files.tokenizer).map_err(tokenizer_error)?;
        // Windows and padding are made below: the tokenizer only splits into word pieces.
        tokenizer.with_padding(None);
        tokenizer.with_truncation(None).map_err(tokenizer_error)?;
        let special = |token: &str| {
            tokenizer.token_to_id(token).ok_or_else(|| {
                MemoryError::serialization(format!(
                    "{}: no {token} token",
                    files.tokenizer.display()
                ))
            })
        };
        let (cls, sep) = (special("[CLS]")?, special("[SEP]")?);
        let environment = environment(&files.runtime)?;
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        let session = Session::builder(&environment)
            .map_err(backend)?
            .with_optimization_level(GraphOptimizationLevel::Level3)
            .map_err(|e| backend(ort::Error::from(e)))?
            .with_intra_threads(threads)
            .map_err(|e| backend(ort::Error::from(e)))?
            .commit_from_file(&files.model)
            .map_err(backend)?;
        let output = hidden_state_output(&session)?;
        let token_types = session
            .inputs()
            .iter()
            .any(|input| input.name() == "token_type_ids");
        for needed in ["input_ids", "attention_mask"] {
            if !session.inputs().iter().any(|input| input.name() == needed) {
                return Err(backend(OnnxError::Output(format!(
                    "{} takes no {needed} input",
                    files.model.display()
                ))));
            }
        }
        let mut inner = Inner {
            session: Mutex::new(session),
            output,
            token_types,
            tokenizer,
            cls,
            sep,
            dimensions: 0,
        };
        // The width of the vectors is read from the model itself.
        let probe = inner.forward(&[&[cls, sep][..]])?;
        inner.dimensions = probe.first().map_or(0, Vec::len);
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// Embeds synchronously (what [`Embedder::embed`] runs on a blocking thread).
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.inner.embed(texts.to_vec())
    }
}

impl Inner {
    fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>> {
        let count = texts.len();
        let encodings = self
            .tokenizer
            .encode_batch(texts, false)
            .map_err(tokenizer_error)?;
        let pieces: Vec<Vec<u32>> = encodings.iter().map(|e| e.get_ids().to_vec()).collect();
        let windows = windows::split(&pieces, self.cls, self.sep, MAX_TOKENS);
        let mut order: Vec<usize> = (0..windows.len()).collect();
        order.sort_by_key(|&i| windows[i].ids.len());
        let mut means = vec![Vec::new(); windows.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&[u32]> = chunk.iter().map(|&i| windows[i].ids.as_slice()).collect();
            for (&i, mean) in chunk.iter().zip(self.forward(&batch)?) {
                means[i] = mean;
            }
        }
        Ok(windows::combine(count, &windows, &means))
    }

    /// The mean-pooled (not yet normalised) last hidden state of each input.
    fn forward(&self, batch: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let width = batch.iter().map(|ids| ids.len()).max().unwrap_or(0).max(1);
        let rows = batch.len();
        let mut ids = vec![0_i64; rows * width];
        let mut mask = vec![0_i64; rows * width];
        for (row, input) in batch.iter().enumerate() {
            for (col, &id) in input.iter().enumerate() {
                ids[row * width + col] = i64::from(id);
                mask[row * width + col] = 1;
            }
        }
        let tensor = |data: Vec<i64>| Tensor::from_array(([rows, width], data)).map_err(backend);
        let mut inputs = ort::inputs! {
            "input_ids" => tensor(ids)?,
            "attention_mask" => tensor(mask)?,
        };
        if self.token_types {
            inputs.push((
                "token_type_ids".into(),
                tensor(vec![0_i64; rows * width])?.into(),
            ));
        }
        let mut session = lock(&self.session);
        let outputs = session.run(inputs).map_err(backend)?;
        let output = outputs
            .get(&self.output)
            .ok_or_else(|| backend(OnnxError::Output(format!("no {:?} output", self.output))))?;
        let (shape, hidden) = output.try_extract_tensor::<f32>().map_err(backend)?;
        let dims: Vec<i64> = shape.iter().copied().collect();
        let dimensions = match dims.as_slice() {
            [r, w, d] if *r as usize == rows && *w as usize == width && *d > 0 => *d as usize,
            _ => 0,
        };
        if dimensions == 0 || hidden.len() != rows * width * dimensions {
            return Err(backend(OnnxError::Output(format!(
                "shape {dims:?} ({} values) for {rows} inputs of {width} tokens",
                hidden.len()
            ))));
        }
        Ok(mean_pool(hidden, batch, width, dimensions))
    }
}

/// The output holding the last hidden state: `last_hidden_state` (or `token_embeddings`) by
/// name, else the graph's only output.
fn hidden_state_output(session: &Session) -> Result<String> {
    let outputs = session.outputs();
    let named = outputs
        .iter()
        .find(|o| matches!(o.name(), "last_hidden_state" | "token_embeddings"));
    match (named, outputs) {
        (Some(output), _) | (None, [output]) => Ok(output.name().to_owned()),
        _ => Err(backend(OnnxError::Output(format!(
            "no last_hidden_state among the outputs {:?}",
            outputs.iter().map(|o| o.name()).collect::<Vec<_>>()
        )))),
    }
}

/// The mean over each row's real tokens: the first `batch[row].len()` positions (the rest is
/// padding, masked out of attention).
fn mean_pool(hidden: &[f32], batch: &[&[u32]], width: usize, dimensions: usize) -> Vec<Vec<f32>> {
    batch
        .iter()
        .enumerate()
        .map(|(row, input)| {
            let tokens = input.len().max(1);
            let start = row * width * dimensions;
            let mut sum = vec![0.0_f32; dimensions];
            for token in hidden[start..start + tokens * dimensions].chunks_exact(dimensions) {
                sum.iter_mut().zip(token).for_each(|(s, h)| *s += h);
            }
            sum.iter_mut().for_each(|s| *s /= tokens as f32);
            sum
        })
        .collect()
}

#[async_trait]
impl Embedder for OnnxEmbedder {
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
        tokio::task::spawn_blocking(move || inner.embed(texts))
            .await
            .map_err(backend)?
    }
}
