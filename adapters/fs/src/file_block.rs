use std::path::PathBuf;

use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::ContextProvider;

use crate::error::io;

/// A read-only block whose content is a file, read on every load (edit the file, refresh
/// the prompt). A missing file is a `NotFound` error naming the path.
#[derive(Debug, Clone)]
pub struct FileBlock {
    path: PathBuf,
}

impl FileBlock {
    /// A block showing the file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }
}

#[async_trait]
impl ContextProvider for FileBlock {
    async fn get(&self) -> Result<Option<String>> {
        let text = tokio::fs::read_to_string(&self.path)
            .await
            .map_err(|e| io(&self.path, e))?;
        Ok(Some(text.trim_end().to_owned()))
    }
}
