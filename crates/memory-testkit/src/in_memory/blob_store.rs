use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::{
    BlobCapabilities, BlobDownload, BlobMeta, BlobPage, BlobStore, BlobUpload, PutMode,
    validate_blob_key, validate_blob_prefix,
};

use super::lock;

type Blobs = Arc<Mutex<BTreeMap<String, Vec<u8>>>>;

/// A [`BlobStore`] in a sorted map (create-only puts are atomic under its lock).
#[derive(Default, Clone)]
pub struct InMemoryBlobStore {
    blobs: Blobs,
}

impl InMemoryBlobStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

struct Upload {
    key: String,
    buffer: Vec<u8>,
    blobs: Blobs,
}

#[async_trait]
impl BlobUpload for Upload {
    async fn write(&mut self, chunk: Vec<u8>) -> Result<()> {
        self.buffer.extend(chunk);
        Ok(())
    }

    async fn finish(self: Box<Self>) -> Result<u64> {
        let size = self.buffer.len() as u64;
        lock(&self.blobs).insert(self.key, self.buffer);
        Ok(size)
    }

    async fn abort(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

struct Download {
    chunks: std::vec::IntoIter<Vec<u8>>,
    size: u64,
}

#[async_trait]
impl BlobDownload for Download {
    fn size(&self) -> u64 {
        self.size
    }

    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>> {
        Ok(self.chunks.next())
    }
}

#[async_trait]
impl BlobStore for InMemoryBlobStore {
    fn backend_name(&self) -> &'static str {
        "in-memory"
    }

    fn capabilities(&self) -> BlobCapabilities {
        BlobCapabilities { create_only: true }
    }

    async fn put(&self, key: &str, body: Vec<u8>, mode: PutMode) -> Result<bool> {
        validate_blob_key(key)?;
        let mut blobs = lock(&self.blobs);
        if mode == PutMode::Create && blobs.contains_key(key) {
            return Ok(false);
        }
        blobs.insert(key.to_owned(), body);
        Ok(true)
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        validate_blob_key(key)?;
        Ok(lock(&self.blobs).get(key).cloned())
    }

    async fn head(&self, key: &str) -> Result<Option<BlobMeta>> {
        validate_blob_key(key)?;
        Ok(lock(&self.blobs).get(key).map(|body| BlobMeta {
            key: key.to_owned(),
            size: body.len() as u64,
            modified: None,
        }))
    }

    async fn list(&self, prefix: &str, cursor: Option<String>, limit: usize) -> Result<BlobPage> {
        validate_blob_prefix(prefix)?;
        let blobs = lock(&self.blobs);
        let mut page: Vec<BlobMeta> = blobs
            .range(cursor.clone().unwrap_or_else(|| prefix.to_owned())..)
            .filter(|(key, _)| Some(*key) != cursor.as_ref())
            .take_while(|(key, _)| key.starts_with(prefix))
            .take(limit.max(1) + 1)
            .map(|(key, body)| BlobMeta {
                key: key.clone(),
                size: body.len() as u64,
                modified: None,
            })
            .collect();
        let more = page.len() > limit.max(1);
        page.truncate(limit.max(1));
        Ok(BlobPage {
            next_cursor: if more {
                page.last().map(|b| b.key.clone())
            } else {
                None
            },
            blobs: page,
        })
    }

    async fn delete(&self, key: &str) -> Result<()> {
        validate_blob_key(key)?;
        lock(&self.blobs).remove(key);
        Ok(())
    }

    async fn upload(&self, key: &str) -> Result<Box<dyn BlobUpload>> {
        validate_blob_key(key)?;
        Ok(Box::new(Upload {
            key: key.to_owned(),
            buffer: Vec::new(),
            blobs: Arc::clone(&self.blobs),
        }))
    }

    async fn download(&self, key: &str) -> Result<Option<Box<dyn BlobDownload>>> {
        validate_blob_key(key)?;
        Ok(lock(&self.blobs).get(key).map(|body| {
            let chunks: Vec<Vec<u8>> = body.chunks(64 * 1024).map(<[u8]>::to_vec).collect();
            Box::new(Download {
                chunks: chunks.into_iter(),
                size: body.len() as u64,
            }) as Box<dyn BlobDownload>
        }))
    }
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn in_memory_blob_store_passes_the_contract() {
        crate::contract::blob_store::run_all(&super::InMemoryBlobStore::new(), "").await;
    }
}
