//! Context block providers built on the other in-memory ports.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use memory_core::ports::IndexDocument;
use memory_core::ports::{
    ContextProvider, SearchIndex, SearchableContextProvider, SkillProvider, SkillStore,
    WritableContextProvider,
};
use memory_core::{Result, SearchMode};

use super::lock;

/// A read-only block with fixed content.
#[derive(Debug, Clone)]
pub struct StaticBlock(pub Option<String>);

#[async_trait]
impl ContextProvider for StaticBlock {
    async fn get(&self) -> Result<Option<String>> {
        Ok(self.0.clone())
    }
}

/// A writable block held in memory.
#[derive(Debug, Default)]
pub struct InMemoryBlock(Mutex<Option<String>>);

impl InMemoryBlock {
    /// A block with initial content.
    pub fn new(initial: Option<String>) -> Self {
        Self(Mutex::new(initial))
    }
}

#[async_trait]
impl ContextProvider for InMemoryBlock {
    async fn get(&self) -> Result<Option<String>> {
        Ok(lock(&self.0).clone())
    }
}

#[async_trait]
impl WritableContextProvider for InMemoryBlock {
    async fn set(&self, content: &str) -> Result<()> {
        *lock(&self.0) = Some(content.to_owned());
        Ok(())
    }
}

/// Searchable keyed entries over any [`SearchIndex`] namespace.
pub struct IndexedEntries {
    index: Arc<dyn SearchIndex>,
    namespace: String,
}

impl IndexedEntries {
    /// Entries stored in `namespace` of `index`.
    pub fn new(index: Arc<dyn SearchIndex>, namespace: impl Into<String>) -> Self {
        Self {
            index,
            namespace: namespace.into(),
        }
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
            .search(&self.namespace, query, SearchMode::AllWords, 10)
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
        self.index
            .upsert(
                &self.namespace,
                vec![IndexDocument {
                    id: key.to_owned(),
                    text: content.to_owned(),
                }],
            )
            .await
    }
}

/// Skills over any [`SkillStore`].
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
        Ok(Some(
            skills
                .iter()
                .map(|s| match &s.description {
                    Some(d) => format!("- {}: {d}", s.key),
                    None => format!("- {}", s.key),
                })
                .collect::<Vec<_>>()
                .join("\n"),
        ))
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
