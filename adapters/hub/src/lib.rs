//! Model files from the Hugging Face hub, fetched once on first use, as `fastembed`,
//! `sentence-transformers` and `chromadb` do.
//!
//! A [`HubModel`] names a repository, a pinned revision and the files a local model reads,
//! each with its size and SHA-256. [`fetch`] downloads the files missing from a directory
//! from `<endpoint>/<repo>/resolve/<revision>/<file>`, verifies each one's size and checksum
//! while it streams to a temporary file beside its place, and renames it into place only
//! when both match: a truncated or altered download never becomes a model file, and two
//! processes fetching at once each write their own temporary file. [`HubSettings`] follows
//! the hub clients' conventions (`HF_ENDPOINT` for a mirror, `HF_HUB_OFFLINE=1`), and every
//! request has bounded timeouts, so an unreachable hub is a clear error, never a hang.
//!
//! A run-time library a model needs (ONNX Runtime's) is an [`ArchivedFile`]: one file of a
//! wheel on PyPI's file host, fetched the same way by [`fetch_archived`] (the wheel and the
//! file each checked against their pinned size and SHA-256, the file renamed into place).
//!
//! ```no_run
//! # async fn demo() -> memory_core::Result<()> {
//! use memory_hub::{HubFile, HubModel, HubSettings, fetch};
//! let model = HubModel {
//!     repo: "sentence-transformers/all-MiniLM-L6-v2".into(),
//!     revision: "1110a243fdf4706b3f48f1d95db1a4f5529b4d41".into(),
//!     files: vec![HubFile::new(
//!         "config.json",
//!         612,
//!         "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
//!     )],
//! };
//! let report = fetch(&model, "models/minilm".as_ref(), &HubSettings::from_env()).await?;
//! println!("{} files fetched", report.fetched.len());
//! # Ok(()) }
//! ```

mod archive;
mod error;
mod fetch;
mod model;
mod settings;

pub use archive::{ArchivedFile, fetch_archived, fetch_archived_blocking};
pub use fetch::{FetchReport, fetch, fetch_blocking};
pub use model::{HubFile, HubModel};
pub use settings::{DEFAULT_ENDPOINT, DEFAULT_PACKAGES_ENDPOINT, HubSettings, Progress};
