//! A cross-encoder reranker on ONNX Runtime: each (query, document) pair read together in one
//! pass, its relevance the sigmoid of the model's logit.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::Reranker;
use ort::session::Session;
use ort::value::Tensor;
use tokenizers::{Encoding, Tokenizer, TruncationParams, TruncationStrategy};

use crate::catalogue::RerankerModel;
use crate::error::OnnxError;
use crate::model_dir::ModelFiles;
use crate::runtime::{SessionPool, backend};
use crate::tokens::{tokenizer_error, word_pieces};

/// A cross-encoder of the [`crate::catalogue`] (`ms-marco-MiniLM-L-6-v2`,
/// `bge-reranker-base`): scores documents against a query by reading each pair together,
/// which ranks better than comparing two vectors and costs one forward pass per document.
///
/// Cheap to clone; the model is shared. Pairs are spread over one session per core (at most
/// four), each pair a pass of its own, on a blocking thread. A pair longer than the model's
/// window is cut, the longer of its two texts first.
///
/// ```no_run
/// # async fn demo() -> memory_core::Result<()> {
/// use memory_core::ports::Reranker;
/// use memory_onnx::{OnnxReranker, catalogue};
/// let model = catalogue::reranker("ms-marco-MiniLM-L-6-v2").unwrap();
/// let dir = std::path::Path::new("models/ms-marco-MiniLM-L-6-v2");
/// let reranker = OnnxReranker::from_catalogue(model, dir, &dir.join("libonnxruntime.so"))?;
/// let scores = reranker
///     .score("where do they live", &["They moved to Lisbon.".into(), "It rained.".into()])
///     .await?;
/// assert!(scores[0] > scores[1]);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct OnnxReranker {
    inner: Arc<Inner>,
}

struct Inner {
    sessions: SessionPool,
    model_id: String,
    /// The graph's output holding the logits.
    output: String,
    /// Whether the graph takes `token_type_ids` (XLM-R exports may not).
    token_types: bool,
    tokenizer: Tokenizer,
}

impl std::fmt::Debug for OnnxReranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxReranker")
            .field("model", &self.inner.model_id)
            .finish()
    }
}

impl OnnxReranker {
    /// Loads the catalogue's `model` from `dir` (its files as [`RerankerModel::files`] name
    /// them) on the ONNX Runtime library `runtime`; fails naming a missing file.
    pub fn from_catalogue(model: &RerankerModel, dir: &Path, runtime: &Path) -> Result<Self> {
        let files = ModelFiles::of_catalogue(dir, model.graph, runtime)?;
        let mut tokenizer = word_pieces(&files.tokenizer)?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: model.max_tokens,
                strategy: TruncationStrategy::LongestFirst,
                ..TruncationParams::default()
            }))
            .map_err(tokenizer_error)?;
        let sessions = SessionPool::load(&files.model, &files.runtime)?;
        for needed in ["input_ids", "attention_mask"] {
            if !sessions.takes(needed) {
                return Err(backend(OnnxError::Output(format!(
                    "{} takes no {needed} input",
                    files.model.display()
                ))));
            }
        }
        let output = logits_output(&sessions.first())?;
        let inner = Inner {
            token_types: sessions.takes("token_type_ids"),
            sessions,
            model_id: model.model_id(),
            output,
            tokenizer,
        };
        // A pass now, so a graph that is not a cross-encoder fails here, not in a recall.
        let probe = inner
            .tokenizer
            .encode(("a", "b"), true)
            .map_err(tokenizer_error)?;
        inner.forward(&mut inner.sessions.first(), &probe)?;
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// Scores synchronously (what [`Reranker::score`] runs on a blocking thread).
    pub fn score_blocking(&self, query: &str, documents: &[String]) -> Result<Vec<f32>> {
        self.inner.score(query, documents)
    }
}

impl Inner {
    fn score(&self, query: &str, documents: &[String]) -> Result<Vec<f32>> {
        if documents.is_empty() {
            return Ok(Vec::new());
        }
        let pairs: Vec<(String, String)> = documents
            .iter()
            .map(|d| (query.to_owned(), d.clone()))
            .collect();
        let encodings = self
            .tokenizer
            .encode_batch(pairs, true)
            .map_err(tokenizer_error)?;
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(encodings[i].get_ids().len()));
        self.sessions
            .run_all(&order, |session, i| self.forward(session, &encodings[i]))
    }

    /// The relevance of one encoded pair: the sigmoid of its logit (or, for a graph with two
    /// classes, the second class's probability).
    fn forward(&self, session: &mut Session, pair: &Encoding) -> Result<f32> {
        let width = pair.get_ids().len().max(1);
        let column = |values: &[u32]| -> Result<Tensor<i64>> {
            let data: Vec<i64> = values.iter().map(|&v| i64::from(v)).collect();
            Tensor::from_array(([1, width], data)).map_err(backend)
        };
        let mut inputs = ort::inputs! {
            "input_ids" => column(pair.get_ids())?,
            "attention_mask" => column(pair.get_attention_mask())?,
        };
        if self.token_types {
            inputs.push(("token_type_ids".into(), column(pair.get_type_ids())?.into()));
        }
        let outputs = session.run(inputs).map_err(backend)?;
        let output = outputs
            .get(&self.output)
            .ok_or_else(|| backend(OnnxError::Output(format!("no {:?} output", self.output))))?;
        let (shape, logits) = output.try_extract_tensor::<f32>().map_err(backend)?;
        match logits {
            [logit] => Ok(sigmoid(*logit)),
            [no, yes] => Ok(sigmoid(yes - no)),
            _ => Err(backend(OnnxError::Output(format!(
                "logits of shape {:?} for one pair",
                shape.iter().collect::<Vec<_>>()
            )))),
        }
    }
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// The output holding the logits: `logits` by name, else the graph's only output.
fn logits_output(session: &Session) -> Result<String> {
    let outputs = session.outputs();
    match (outputs.iter().find(|o| o.name() == "logits"), outputs) {
        (Some(output), _) | (None, [output]) => Ok(output.name().to_owned()),
        _ => Err(backend(OnnxError::Output(format!(
            "no logits among the outputs {:?}",
            outputs.iter().map(|o| o.name()).collect::<Vec<_>>()
        )))),
    }
}

#[async_trait]
impl Reranker for OnnxReranker {
    fn model_id(&self) -> &str {
        &self.inner.model_id
    }

    async fn score(&self, query: &str, documents: &[String]) -> Result<Vec<f32>> {
        if documents.is_empty() {
            return Ok(Vec::new());
        }
        let inner = Arc::clone(&self.inner);
        let (query, documents) = (query.to_owned(), documents.to_vec());
        tokio::task::spawn_blocking(move || inner.score(&query, &documents))
            .await
            .map_err(backend)?
    }
}
