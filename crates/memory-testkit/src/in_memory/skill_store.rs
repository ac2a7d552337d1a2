use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::{SkillStore, SkillSummary};

use super::lock;

/// A [`SkillStore`] in a sorted map.
#[derive(Default)]
pub struct InMemorySkillStore {
    skills: Mutex<BTreeMap<String, (String, Option<String>)>>,
}

impl InMemorySkillStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl SkillStore for InMemorySkillStore {
    async fn list(&self) -> Result<Vec<SkillSummary>> {
        Ok(lock(&self.skills)
            .iter()
            .map(|(key, (_, description))| SkillSummary {
                key: key.clone(),
                description: description.clone(),
            })
            .collect())
    }

    async fn get(&self, key: &str) -> Result<Option<String>> {
        Ok(lock(&self.skills).get(key).map(|(c, _)| c.clone()))
    }

    async fn put(&self, key: &str, content: &str, description: Option<String>) -> Result<()> {
        lock(&self.skills).insert(key.to_owned(), (content.to_owned(), description));
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result<bool> {
        Ok(lock(&self.skills).remove(key).is_some())
    }
}
