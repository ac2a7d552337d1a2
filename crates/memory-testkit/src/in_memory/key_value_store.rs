use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::KeyValueStore;

use super::lock;

/// A [`KeyValueStore`] in a sorted map.
#[derive(Default)]
pub struct InMemoryKeyValueStore {
    map: Mutex<BTreeMap<String, String>>,
}

impl InMemoryKeyValueStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl KeyValueStore for InMemoryKeyValueStore {
    async fn get(&self, key: &str) -> Result<Option<String>> {
        Ok(lock(&self.map).get(key).cloned())
    }

    async fn set(&self, key: &str, value: &str) -> Result<()> {
        lock(&self.map).insert(key.to_owned(), value.to_owned());
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result<bool> {
        Ok(lock(&self.map).remove(key).is_some())
    }

    async fn keys(&self, prefix: &str) -> Result<Vec<String>> {
        Ok(lock(&self.map)
            .range(prefix.to_owned()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, _)| k.clone())
            .collect())
    }

    async fn compare_and_set(
        &self,
        key: &str,
        expected: Option<String>,
        value: &str,
    ) -> Result<bool> {
        let mut map = lock(&self.map);
        if map.get(key) != expected.as_ref() {
            return Ok(false);
        }
        map.insert(key.to_owned(), value.to_owned());
        Ok(true)
    }

    async fn delete_prefix(&self, prefix: &str) -> Result<u64> {
        let mut map = lock(&self.map);
        let before = map.len();
        map.retain(|k, _| !k.starts_with(prefix));
        Ok((before - map.len()) as u64)
    }
}
