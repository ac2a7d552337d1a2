//! Each long-term profile's text index: its own Tantivy index in its own directory.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use memory_core::ports::{TextIndex, TextIndexes};
use memory_core::{Result, validate_profile_name};

use crate::TantivyTextIndex;

/// [`TextIndexes`] on Tantivy: `<root>/<profile>/`, opened once per process (the index's
/// writer lock is held while it is open) and kept open.
#[derive(Debug)]
pub struct TantivyTextIndexes {
    root: PathBuf,
    open: tokio::sync::Mutex<HashMap<String, TantivyTextIndex>>,
}

impl TantivyTextIndexes {
    /// Profile indexes under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            open: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    async fn index(&self, profile: &str) -> Result<TantivyTextIndex> {
        validate_profile_name(profile)?;
        let mut open = self.open.lock().await;
        if let Some(index) = open.get(profile) {
            return Ok(index.clone());
        }
        let path = self.root.join(profile);
        let index = tokio::task::spawn_blocking(move || TantivyTextIndex::open(path))
            .await
            .map_err(|e| memory_core::MemoryError::backend("tantivy", e.to_string()))??;
        open.insert(profile.to_owned(), index.clone());
        Ok(index)
    }
}

#[async_trait]
impl TextIndexes for TantivyTextIndexes {
    async fn text_index(&self, profile: &str) -> Result<Arc<dyn TextIndex>> {
        Ok(Arc::new(self.index(profile).await?))
    }

    async fn delete_text_index(&self, profile: &str) -> Result<()> {
        validate_profile_name(profile)?;
        if !self.root.join(profile).exists() {
            return Ok(());
        }
        self.index(profile).await?.clear_all().await
    }
}
