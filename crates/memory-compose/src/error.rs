//! What can stop a composition.

use memory_config::{Backend, ConfigError, Role};
use memory_core::MemoryError;

/// Why a deployment could not be composed.
#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    /// `memory.toml` is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A backend failed while opening.
    #[error(transparent)]
    Memory(#[from] MemoryError),
    /// The configuration names an adapter this binary was built without.
    #[error(
        "storage.{} = \"{backend}\" needs the `{backend}` adapter, which this build leaves out \
         (rebuild with `--features {backend}`)",
        role.key()
    )]
    NotBuilt {
        /// The role.
        role: Role,
        /// The backend.
        backend: Backend,
    },
    /// The configuration names a backend no adapter serves yet, or a pairing that cannot work.
    #[error("storage.{} = \"{backend}\": {reason}", role.key())]
    NotAvailable {
        /// The role.
        role: Role,
        /// The backend.
        backend: Backend,
        /// Why.
        reason: &'static str,
    },
    /// A setting is missing or inconsistent (an `[llm]` the embedder needs, ...).
    #[error("{0}")]
    Invalid(String),
}

/// The result of composing.
pub type Result<T, E = ComposeError> = std::result::Result<T, E>;
