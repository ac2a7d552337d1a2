//! Blobs as files under a directory: the key is the relative path. Every write goes to a
//! temporary file under `.uploads/` (no key can name it: key segments never start with
//! `.`), is synced, and then renamed into place (a replace) or hard-linked (a create-only
//! put, which fails atomically when the key exists), so a reader never sees a partial blob.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use memory_core::ports::{
    BlobCapabilities, BlobDownload, BlobMeta, BlobPage, BlobStore, BlobUpload, PutMode,
    validate_blob_key, validate_blob_prefix,
};
use memory_core::{Result, Timestamp};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::error::{BACKEND, io, task};

/// Bytes per chunk of a download.
const CHUNK: usize = 1024 * 1024;
/// The directory of writes in progress, under the root.
const UPLOADS: &str = ".uploads";

/// A [`BlobStore`] over a directory (`[storage] blobs = "fs"`, the default).
#[derive(Debug, Clone)]
pub struct FsBlobStore {
    root: PathBuf,
}

impl FsBlobStore {
    /// Blobs under `root` (created on the first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    fn path(&self, key: &str) -> Result<PathBuf> {
        validate_blob_key(key)?;
        Ok(self.root.join(key))
    }

    /// A fresh temporary file for a write.
    async fn temporary(&self) -> Result<(PathBuf, tokio::fs::File)> {
        let dir = self.root.join(UPLOADS);
        tokio::fs::create_dir_all(&dir)
            .await
            .map_err(|e| io(&dir, e))?;
        let path = dir.join(format!("{}.part", uuid::Uuid::new_v4().simple()));
        let file = tokio::fs::File::create_new(&path)
            .await
            .map_err(|e| io(&path, e))?;
        Ok((path, file))
    }
}

/// Moves a finished temporary file to `target` (replacing) or links it there (only if
/// absent); the temporary file is gone afterwards either way. False when `Create` found the
/// key taken.
async fn publish(temporary: &Path, target: &Path, mode: PutMode) -> Result<bool> {
    if let Some(parent) = target.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| io(parent, e))?;
    }
    let outcome = match mode {
        PutMode::Overwrite => tokio::fs::rename(temporary, target)
            .await
            .map(|()| true)
            .map_err(|e| io(target, e)),
        PutMode::Create => match tokio::fs::hard_link(temporary, target).await {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(io(target, e)),
        },
    };
    if mode == PutMode::Create || outcome.is_err() {
        let _ = tokio::fs::remove_file(temporary).await;
    }
    outcome
}

struct FsUpload {
    temporary: PathBuf,
    file: tokio::fs::File,
    target: PathBuf,
    size: u64,
}

#[async_trait]
impl BlobUpload for FsUpload {
    async fn write(&mut self, chunk: Vec<u8>) -> Result<()> {
        self.file
            .write_all(&chunk)
            .await
            .map_err(|e| io(&self.temporary, e))?;
        self.size += chunk.len() as u64;
        Ok(())
    }

    async fn finish(mut self: Box<Self>) -> Result<u64> {
        self.file
            .sync_all()
            .await
            .map_err(|e| io(&self.temporary, e))?;
        publish(&self.temporary, &self.target, PutMode::Overwrite).await?;
        Ok(self.size)
    }

    async fn abort(self: Box<Self>) -> Result<()> {
        drop(self.file);
        tokio::fs::remove_file(&self.temporary)
            .await
            .map_err(|e| io(&self.temporary, e))
    }
}

struct FsDownload {
    file: tokio::fs::File,
    size: u64,
    path: PathBuf,
}

#[async_trait]
impl BlobDownload for FsDownload {
    fn size(&self) -> u64 {
        self.size
    }

    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>> {
        let mut buffer = vec![0; CHUNK];
        let mut filled = 0;
        while filled < CHUNK {
            let n = self
                .file
                .read(&mut buffer[filled..])
                .await
                .map_err(|e| io(&self.path, e))?;
            if n == 0 {
                break;
            }
            filled += n;
        }
        buffer.truncate(filled);
        Ok((filled > 0).then_some(buffer))
    }
}

fn meta(key: String, metadata: &std::fs::Metadata) -> BlobMeta {
    let modified = metadata
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| Timestamp(d.as_millis() as i64));
    BlobMeta {
        key,
        size: metadata.len(),
        modified,
    }
}

/// Every blob under `root` whose key starts with `prefix`, sorted by key.
fn scan(root: &Path, prefix: &str) -> Result<Vec<BlobMeta>> {
    let mut out = Vec::new();
    let mut pending = vec![(root.to_owned(), String::new())];
    while let Some((dir, key_prefix)) = pending.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(&dir, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| io(&dir, e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if name.starts_with('.') {
                continue;
            }
            let key = format!("{key_prefix}{name}");
            let metadata = entry.metadata().map_err(|e| io(&entry.path(), e))?;
            if metadata.is_dir() {
                // Only descend where a key under the prefix can be.
                let below = format!("{key}/");
                if below.starts_with(prefix) || prefix.starts_with(&below) {
                    pending.push((entry.path(), below));
                }
            } else if key.starts_with(prefix) {
                out.push(meta(key, &metadata));
            }
        }
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}

#[async_trait]
impl BlobStore for FsBlobStore {
    fn backend_name(&self) -> &'static str {
        BACKEND
    }

    fn capabilities(&self) -> BlobCapabilities {
        BlobCapabilities { create_only: true }
    }

    async fn put(&self, key: &str, body: Vec<u8>, mode: PutMode) -> Result<bool> {
        let target = self.path(key)?;
        let (temporary, mut file) = self.temporary().await?;
        let written = async {
            file.write_all(&body).await?;
            file.sync_all().await
        }
        .await;
        drop(file);
        if let Err(e) = written {
            let _ = tokio::fs::remove_file(&temporary).await;
            return Err(io(&temporary, e));
        }
        publish(&temporary, &target, mode).await
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let path = self.path(key)?;
        match tokio::fs::read(&path).await {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(&path, e)),
        }
    }

    async fn head(&self, key: &str) -> Result<Option<BlobMeta>> {
        let path = self.path(key)?;
        match tokio::fs::metadata(&path).await {
            Ok(m) if m.is_file() => Ok(Some(meta(key.to_owned(), &m))),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(&path, e)),
        }
    }

    async fn list(&self, prefix: &str, cursor: Option<String>, limit: usize) -> Result<BlobPage> {
        validate_blob_prefix(prefix)?;
        let (root, owned) = (self.root.clone(), prefix.to_owned());
        let all = tokio::task::spawn_blocking(move || scan(&root, &owned))
            .await
            .map_err(task)??;
        let limit = limit.max(1);
        let mut page: Vec<BlobMeta> = all
            .into_iter()
            .filter(|b| cursor.as_ref().is_none_or(|c| b.key.as_str() > c.as_str()))
            .take(limit + 1)
            .collect();
        let more = page.len() > limit;
        page.truncate(limit);
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
        let path = self.path(key)?;
        match tokio::fs::remove_file(&path).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io(&path, e)),
        }
    }

    async fn upload(&self, key: &str) -> Result<Box<dyn BlobUpload>> {
        let target = self.path(key)?;
        let (temporary, file) = self.temporary().await?;
        Ok(Box::new(FsUpload {
            temporary,
            file,
            target,
            size: 0,
        }))
    }

    async fn download(&self, key: &str) -> Result<Option<Box<dyn BlobDownload>>> {
        let path = self.path(key)?;
        let file = match tokio::fs::File::open(&path).await {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(&path, e)),
        };
        let metadata = file.metadata().await.map_err(|e| io(&path, e))?;
        if !metadata.is_file() {
            return Ok(None);
        }
        Ok(Some(Box::new(FsDownload {
            file,
            size: metadata.len(),
            path,
        })))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn fs_blob_store_passes_the_contract() {
        let dir = tempfile::tempdir().unwrap();
        let store = FsBlobStore::new(dir.path().join("blobs"));
        memory_testkit::contract::blob_store::run_all(&store, "").await;
        memory_testkit::contract::blob_store::run_all(&store, "nested/root/").await;
        let uploads = dir.path().join("blobs").join(UPLOADS);
        let left = std::fs::read_dir(&uploads).unwrap().count();
        assert_eq!(left, 0, "no temporary file is left behind");
    }
}
