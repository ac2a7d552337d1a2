//! Each long-term profile's text index: its own Tantivy index in its own directory, in the
//! deployment's language or the profile's own.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use memory_core::ports::{TextIndex, TextIndexes};
use memory_core::{MemoryError, Result, TextLanguage, validate_profile_name};

use crate::error::BACKEND;
use crate::{TantivyOptions, TantivyTextIndex};

/// [`TextIndexes`] on Tantivy: `<root>/<profile>/`, opened once per process (the index's
/// writer lock is held while it is open) and kept open.
///
/// ```no_run
/// # fn demo() {
/// use memory_core::TextLanguage;
/// use memory_tantivy::{TantivyOptions, TantivyTextIndexes};
/// let indexes = TantivyTextIndexes::new("data/tantivy/profiles")
///     .with_options(TantivyOptions::default())
///     .with_profile_language("kenji", TextLanguage::Cjk);
/// # }
/// ```
#[derive(Debug)]
pub struct TantivyTextIndexes {
    root: PathBuf,
    options: TantivyOptions,
    languages: HashMap<String, TextLanguage>,
    open: tokio::sync::Mutex<HashMap<String, TantivyTextIndex>>,
}

impl TantivyTextIndexes {
    /// Profile indexes under `root`, in English, erased before a delete returns, each
    /// written by one indexing thread (a deployment may hold many profiles open).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            options: TantivyOptions::default().writer_threads(1),
            languages: HashMap::new(),
            open: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Options every profile's index opens with (its language unless the profile has its
    /// own).
    pub fn with_options(mut self, options: TantivyOptions) -> Self {
        self.options = options;
        self
    }

    /// Analyzes `profile`'s text as `language`.
    pub fn with_profile_language(
        mut self,
        profile: impl Into<String>,
        language: TextLanguage,
    ) -> Self {
        self.languages.insert(profile.into(), language);
        self
    }

    /// The language `profile`'s index is made in.
    pub fn language(&self, profile: &str) -> TextLanguage {
        self.languages
            .get(profile)
            .copied()
            .unwrap_or(self.options.language)
    }

    async fn index(&self, profile: &str) -> Result<TantivyTextIndex> {
        validate_profile_name(profile)?;
        let mut open = self.open.lock().await;
        if let Some(index) = open.get(profile) {
            return Ok(index.clone());
        }
        let path = self.root.join(profile);
        let options = self.options.clone().language(self.language(profile));
        let index = tokio::task::spawn_blocking(move || TantivyTextIndex::open_with(path, options))
            .await
            .map_err(|e| MemoryError::backend(BACKEND, e.to_string()))??;
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
