//! Built-in block providers, each over a port (so any adapter plugs in unchanged) or over
//! plain Rust values.

use std::sync::Arc;

use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::{
    ContextProvider, KeyValueStore, SearchableContextProvider, SkillProvider, SkillStore,
    TextDocument, TextIndex, TextQuery, WritableContextProvider,
};

/// A read-only block with fixed text.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use memory_core::ports::ContextProvider;
/// use memory_engine::context::TextBlock;
/// assert_eq!(TextBlock::new("You are kind.").get().await.unwrap().as_deref(), Some("You are kind."));
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct TextBlock(String);

impl TextBlock {
    /// A block showing `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }
}

#[async_trait]
impl ContextProvider for TextBlock {
    async fn get(&self) -> Result<Option<String>> {
        Ok(Some(self.0.clone()))
    }
}

/// A read-only block computed by a closure on every load (the time, the user's plan, ...).
pub struct FnBlock<F>(F);

impl<F: Fn() -> Option<String> + Send + Sync> FnBlock<F> {
    /// A block whose content `f` returns.
    pub fn new(f: F) -> Self {
        Self(f)
    }
}

#[async_trait]
impl<F: Fn() -> Option<String> + Send + Sync> ContextProvider for FnBlock<F> {
    async fn get(&self) -> Result<Option<String>> {
        Ok((self.0)())
    }
}

/// A writable block stored under one key of a [`KeyValueStore`].
pub struct KvBlock {
    kv: Arc<dyn KeyValueStore>,
    key: String,
}

impl KvBlock {
    /// The block stored at `key`.
    pub fn new(kv: Arc<dyn KeyValueStore>, key: impl Into<String>) -> Self {
        Self {
            kv,
            key: key.into(),
        }
    }
}

#[async_trait]
impl ContextProvider for KvBlock {
    async fn get(&self) -> Result<Option<String>> {
        self.kv.get(&self.key).await
    }
}

#[async_trait]
impl WritableContextProvider for KvBlock {
    async fn set(&self, content: &str) -> Result<()> {
        self.kv.set(&self.key, content).await
    }

    async fn compare_and_set(&self, expected: Option<&str>, content: &str) -> Result<bool> {
        self.kv
            .compare_and_set(&self.key, expected.map(str::to_owned), content)
            .await
    }
}

/// Searchable keyed entries in one namespace of a [`TextIndex`] (BM25 on SQLite FTS5 with
/// the SQLite adapter). `get` is `"<n> entries indexed."`; search hits are `[key]\ncontent`
/// joined by a blank line, at most 10.
pub struct IndexedEntries {
    index: Arc<dyn TextIndex>,
    namespace: String,
}

impl IndexedEntries {
    /// Entries in `namespace` of `index`.
    pub fn new(index: Arc<dyn TextIndex>, namespace: impl Into<String>) -> Self {
        Self {
            index,
            namespace: namespace.into(),
        }
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }
}

#[async_trait]
impl ContextProvider for IndexedEntries {
    async fn get(&self) -> Result<Option<String>> {
        let count = self.index.count(&self.namespace).await?;
        Ok((count > 0).then(|| format!("{count} entries indexed.")))
    }
}

#[async_trait]
impl SearchableContextProvider for IndexedEntries {
    async fn search(&self, query: &str) -> Result<Option<String>> {
        let hits = self
            .index
            .search(&self.namespace, &TextQuery::new(query, 10))
            .await?;
        if hits.is_empty() {
            return Ok(None);
        }
        Ok(Some(
            hits.iter()
                .map(|h| format!("[{}]\n{}", h.id, h.text))
                .collect::<Vec<_>>()
                .join("\n\n"),
        ))
    }

    async fn set_entry(&self, key: &str, content: &str) -> Result<()> {
        let doc = TextDocument::new(key, content);
        self.index.upsert(&self.namespace, vec![doc]).await
    }
}

/// Skills from any [`SkillStore`]: the listing is `- key: description` lines.
pub struct StoredSkills {
    store: Arc<dyn SkillStore>,
}

impl StoredSkills {
    /// Skills of `store`.
    pub fn new(store: Arc<dyn SkillStore>) -> Self {
        Self { store }
    }
}

#[async_trait]
impl ContextProvider for StoredSkills {
    async fn get(&self) -> Result<Option<String>> {
        let skills = self.store.list().await?;
        if skills.is_empty() {
            return Ok(None);
        }
        let lines: Vec<String> = skills
            .iter()
            .map(
                |s| match s.description.as_deref().filter(|d| !d.is_empty()) {
                    Some(d) => format!("- {}: {d}", s.key),
                    None => format!("- {}", s.key),
                },
            )
            .collect();
        Ok(Some(lines.join("\n")))
    }
}

#[async_trait]
impl SkillProvider for StoredSkills {
    async fn load(&self, key: &str) -> Result<Option<String>> {
        self.store.get(key).await
    }

    async fn set_skill(&self, key: &str, content: &str, description: Option<String>) -> Result<()> {
        self.store.put(key, content, description).await
    }
}
