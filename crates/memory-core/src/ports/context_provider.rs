use std::sync::Arc;

use async_trait::async_trait;

use crate::Result;

/// A read-only source of a context block's content.
///
/// # Contract
/// - `get` returns `None` when there is no content (distinct from `Some("")`).
#[async_trait]
pub trait ContextProvider: Send + Sync {
    /// The block's current content.
    async fn get(&self) -> Result<Option<String>>;
}

/// A block the model may overwrite.
///
/// # Contract
/// - After `set(c)`, `get()` returns `Some(c)`.
#[async_trait]
pub trait WritableContextProvider: ContextProvider {
    /// Replaces the content.
    async fn set(&self, content: &str) -> Result<()>;

    /// Replaces the content only if the stored content is still `expected` (`None`: never
    /// written); true when replaced. A read-modify-write (an append) uses it so that two
    /// writers of a shared block cannot lose an update. A provider that cannot compare
    /// answers [`crate::MemoryError::NotSupported`].
    async fn compare_and_set(&self, expected: Option<&str>, content: &str) -> Result<bool> {
        let _ = (expected, content);
        Err(crate::MemoryError::NotSupported {
            operation: "compare_and_set",
            backend: "this block provider",
        })
    }
}

/// A block of keyed entries the model searches; `get` returns a summary.
///
/// # Contract
/// - `search` returns `None` when nothing matches; query syntax in `query` is inert.
/// - `set_entry` with an existing key replaces that entry; a provider that cannot write returns
///   [`crate::MemoryError::NotSupported`].
#[async_trait]
pub trait SearchableContextProvider: ContextProvider {
    /// Matching entries, formatted for the model.
    async fn search(&self, query: &str) -> Result<Option<String>>;
    /// Inserts or replaces the entry under `key`.
    async fn set_entry(&self, key: &str, content: &str) -> Result<()>;
}

/// A collection of loadable documents; `get` returns the listing (`- key: description`).
///
/// # Contract
/// - `load` returns `None` for an unknown key.
/// - `set_skill` inserts or replaces; a provider that cannot write returns
///   [`crate::MemoryError::NotSupported`].
#[async_trait]
pub trait SkillProvider: ContextProvider {
    /// The document under `key`.
    async fn load(&self, key: &str) -> Result<Option<String>>;
    /// Stores a document with an optional one-line description.
    async fn set_skill(&self, key: &str, content: &str, description: Option<String>) -> Result<()>;
}

/// A block's provider, by capability: the kind of block is decided by which variant the
/// caller builds, so it is checked at compile time rather than by duck typing.
#[derive(Clone)]
pub enum BlockProvider {
    /// Read-only content.
    ReadOnly(Arc<dyn ContextProvider>),
    /// Writable content.
    Writable(Arc<dyn WritableContextProvider>),
    /// Searchable keyed entries.
    Searchable(Arc<dyn SearchableContextProvider>),
    /// Loadable skills.
    Skill(Arc<dyn SkillProvider>),
}

impl BlockProvider {
    /// Reads the block's content (or summary / listing) whatever its kind.
    pub async fn get(&self) -> Result<Option<String>> {
        match self {
            BlockProvider::ReadOnly(p) => p.get().await,
            BlockProvider::Writable(p) => p.get().await,
            BlockProvider::Searchable(p) => p.get().await,
            BlockProvider::Skill(p) => p.get().await,
        }
    }
}

impl std::fmt::Debug for BlockProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            BlockProvider::ReadOnly(_) => "ReadOnly",
            BlockProvider::Writable(_) => "Writable",
            BlockProvider::Searchable(_) => "Searchable",
            BlockProvider::Skill(_) => "Skill",
        };
        f.debug_tuple("BlockProvider").field(&kind).finish()
    }
}
