//! Each long-term profile's vectors: a LanceDB database of its own under a root (a directory
//! or a bucket prefix).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use memory_core::ports::{VectorIndex, VectorIndexes};
use memory_core::{Result, validate_profile_name};

use crate::{LanceOptions, LanceVectorIndex};

/// [`VectorIndexes`] on LanceDB: `<root>/<profile>` per profile, connected once per process.
#[derive(Debug)]
pub struct LanceVectorIndexes {
    root: String,
    options: LanceOptions,
    open: tokio::sync::Mutex<HashMap<String, LanceVectorIndex>>,
}

impl LanceVectorIndexes {
    /// Profile databases under `root` (a directory path, or `s3://bucket/prefix`).
    pub fn new(root: impl Into<String>, options: LanceOptions) -> Self {
        Self {
            root: root.into().trim_end_matches('/').to_owned(),
            options,
            open: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    async fn index(&self, profile: &str) -> Result<LanceVectorIndex> {
        validate_profile_name(profile)?;
        let mut open = self.open.lock().await;
        if let Some(index) = open.get(profile) {
            return Ok(index.clone());
        }
        let uri = format!("{}/{profile}", self.root);
        let index = LanceVectorIndex::connect(&uri, self.options.clone()).await?;
        open.insert(profile.to_owned(), index.clone());
        Ok(index)
    }
}

#[async_trait]
impl VectorIndexes for LanceVectorIndexes {
    async fn vector_index(&self, profile: &str) -> Result<Arc<dyn VectorIndex>> {
        Ok(Arc::new(self.index(profile).await?))
    }

    async fn delete_vector_index(&self, profile: &str) -> Result<()> {
        let index = self.index(profile).await?;
        index.drop_all().await
    }
}
