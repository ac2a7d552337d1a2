//! Backups of an embedded deployment into its blob store, and restores from them.
//!
//! A backup is a consistent copy of every SQLite database of the deployment (the sessions
//! database and each file under the profiles directory, each copied with `VACUUM INTO` while
//! the deployment runs: never a torn copy of a live file), uploaded streamed under
//! `backups/<id>/files/...` with its SHA-256, then a manifest at `backups/<id>/manifest.json`,
//! written last and create-only: a backup without its manifest is incomplete and never
//! listed. The files are consistent one by one, not as a set: a write that lands between two
//! copies is in the later file only.

use std::path::{Path, PathBuf};

use memory_config::{Backend, Role};
use memory_core::ports::{BlobStore, BlobStoreExt, PutMode};
use memory_core::{MemoryError, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Bytes per chunk of an upload.
const CHUNK: usize = 8 * 1024 * 1024;
/// The manifest format this version writes and reads.
const FORMAT: u32 = 1;
/// Where backups live in the blob store.
const ROOT: &str = "backups/";

/// One database file of a backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupFile {
    /// `sessions` (the sessions database) or `profiles` (a file of the profiles directory).
    pub kind: String,
    /// The file's name in its directory.
    pub name: String,
    /// The blob holding it.
    pub key: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its SHA-256, hex.
    pub sha256: String,
}

/// What a backup holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupManifest {
    /// The backup's id (sorts by time).
    pub id: String,
    /// The manifest format.
    pub format: u32,
    /// When it was taken (Unix milliseconds).
    pub created_at: i64,
    /// Its files.
    pub files: Vec<BackupFile>,
}

/// The database files of an embedded deployment: `(kind, name, path)`.
fn database_files(sessions: &Path, profiles: &Path) -> Result<Vec<(String, String, PathBuf)>> {
    let mut files = Vec::new();
    if sessions.is_file() {
        let name = file_name(sessions)?;
        files.push(("sessions".to_owned(), name, sessions.to_owned()));
    }
    let entries = match std::fs::read_dir(profiles) {
        Ok(entries) => entries.collect::<std::io::Result<Vec<_>>>(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
    .map_err(|e| MemoryError::backend("fs", e))?;
    let mut names: Vec<(String, PathBuf)> = entries
        .into_iter()
        .filter(|e| e.path().is_file())
        .filter_map(|e| Some((e.file_name().to_str()?.to_owned(), e.path())))
        .filter(|(name, _)| name.ends_with(".db") || name.ends_with(".sqlite"))
        .collect();
    names.sort();
    for (name, path) in names {
        files.push(("profiles".to_owned(), name, path));
    }
    Ok(files)
}

fn file_name(path: &Path) -> Result<String> {
    path.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .ok_or_else(|| MemoryError::invalid(format!("{} has no file name", path.display())))
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn io(what: impl std::fmt::Display, error: std::io::Error) -> MemoryError {
    MemoryError::backend("fs", format!("{what}: {error}"))
}

/// Uploads `path` to `key`, streamed; returns its size and SHA-256.
async fn upload_file(blobs: &dyn BlobStore, path: &Path, key: &str) -> Result<(u64, String)> {
    let mut file = tokio::fs::File::open(path)
        .await
        .map_err(|e| io(path.display(), e))?;
    let mut upload = blobs.upload(key).await?;
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let sent: Result<()> = async {
        loop {
            let mut buffer = vec![0; CHUNK];
            let mut filled = 0;
            while filled < CHUNK {
                let n = file
                    .read(&mut buffer[filled..])
                    .await
                    .map_err(|e| io(path.display(), e))?;
                if n == 0 {
                    break;
                }
                filled += n;
            }
            if filled == 0 {
                return Ok(());
            }
            buffer.truncate(filled);
            hasher.update(&buffer);
            size += filled as u64;
            upload.write(buffer).await?;
        }
    }
    .await;
    match sent {
        Ok(()) => {
            upload.finish().await?;
        }
        Err(e) => {
            // Nothing half-written stays behind.
            let _ = upload.abort().await;
            return Err(e);
        }
    }
    Ok((size, hex(&hasher.finalize())))
}

/// Takes a backup of the embedded databases into `blobs`, then keeps the newest `keep`.
pub(crate) async fn backup(
    blobs: &dyn BlobStore,
    storage: &memory_config::StorageConfig,
    scratch: &Path,
    keep: Option<usize>,
) -> Result<BackupManifest> {
    let foreign: Vec<&str> = [
        Role::Records,
        Role::Sessions,
        Role::Text,
        Role::Vectors,
        Role::Jobs,
        Role::Kv,
    ]
    .into_iter()
    .filter(|role| storage.backend(*role) != Backend::Sqlite)
    .map(Role::key)
    .collect();
    if !foreign.is_empty() {
        return Err(MemoryError::NotSupported {
            operation: "a file backup of roles not on SQLite (move them with the export streams)",
            backend: "backup",
        });
    }
    let created_at = memory_core::ports::SystemClock.now().millis();
    let id = format!(
        "{created_at:013}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let work = tempfile::Builder::new()
        .prefix(".backup-")
        .tempdir_in(scratch)
        .map_err(|e| io(scratch.display(), e))?;
    let mut files = Vec::new();
    for (kind, name, path) in database_files(&storage.sqlite.path, &storage.sqlite.profiles)? {
        let copy = work.path().join(format!("{kind}-{name}"));
        memory_sqlite::snapshot(&path, &copy).await?;
        let key = format!("{ROOT}{id}/files/{kind}/{name}");
        let (size, sha256) = upload_file(blobs, &copy, &key).await?;
        tokio::fs::remove_file(&copy)
            .await
            .map_err(|e| io(copy.display(), e))?;
        tracing::info!(%key, size, "backed up");
        files.push(BackupFile {
            kind,
            name,
            key,
            size,
            sha256,
        });
    }
    let manifest = BackupManifest {
        id: id.clone(),
        format: FORMAT,
        created_at,
        files,
    };
    let written = blobs
        .put(
            &format!("{ROOT}{id}/manifest.json"),
            serde_json::to_vec_pretty(&manifest)?,
            PutMode::Create,
        )
        .await;
    match written {
        Ok(true) => {}
        Ok(false) => {
            return Err(MemoryError::AlreadyExists { kind: "backup", id });
        }
        // A store without atomic create: the id is fresh (time and randomness), so a plain
        // put cannot replace another backup's manifest.
        Err(MemoryError::NotSupported { .. }) => {
            blobs
                .put(
                    &format!("{ROOT}{id}/manifest.json"),
                    serde_json::to_vec_pretty(&manifest)?,
                    PutMode::Overwrite,
                )
                .await?;
        }
        Err(e) => return Err(e),
    }
    if let Some(keep) = keep {
        prune(blobs, keep.max(1)).await?;
    }
    Ok(manifest)
}

use memory_core::ports::Clock as _;

/// Every complete backup, oldest first.
pub(crate) async fn list(blobs: &dyn BlobStore) -> Result<Vec<BackupManifest>> {
    let mut out = Vec::new();
    for blob in blobs.list_all(ROOT).await? {
        if !blob.key.ends_with("/manifest.json") {
            continue;
        }
        if let Some(bytes) = blobs.get(&blob.key).await? {
            let manifest: BackupManifest = serde_json::from_slice(&bytes).map_err(|e| {
                MemoryError::serialization(format!("backup manifest {}: {e}", blob.key))
            })?;
            out.push(manifest);
        }
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

/// Deletes all but the newest `keep` complete backups (manifest first, so a half-deleted
/// backup is never listed as complete).
async fn prune(blobs: &dyn BlobStore, keep: usize) -> Result<()> {
    let backups = list(blobs).await?;
    let excess = backups.len().saturating_sub(keep);
    for old in &backups[..excess] {
        let root = format!("{ROOT}{}/", old.id);
        blobs.delete(&format!("{root}manifest.json")).await?;
        for blob in blobs.list_all(&root).await? {
            blobs.delete(&blob.key).await?;
        }
        tracing::info!(id = %old.id, "old backup deleted");
    }
    Ok(())
}

/// Restores backup `id` (the newest when `None`) into the data directory `into`: the
/// sessions database as `into/<name>`, profile files under `into/profiles/`. Refuses to
/// overwrite any file; every file's checksum is verified before it is put in place.
pub(crate) async fn restore(
    blobs: &dyn BlobStore,
    id: Option<&str>,
    into: &Path,
) -> Result<BackupManifest> {
    let backups = list(blobs).await?;
    let manifest = match id {
        Some(id) => backups.into_iter().find(|b| b.id == id),
        None => backups.into_iter().next_back(),
    }
    .ok_or_else(|| MemoryError::not_found("backup", id.unwrap_or("(latest)")))?;
    if manifest.format != FORMAT {
        return Err(MemoryError::invalid(format!(
            "backup {} has format {}; this version reads {FORMAT}",
            manifest.id, manifest.format
        )));
    }
    let target = |file: &BackupFile| -> Result<PathBuf> {
        if file.name.contains('/') || file.name.starts_with('.') {
            return Err(MemoryError::invalid(format!(
                "bad file name {:?}",
                file.name
            )));
        }
        match file.kind.as_str() {
            "sessions" => Ok(into.join(&file.name)),
            "profiles" => Ok(into.join("profiles").join(&file.name)),
            other => Err(MemoryError::invalid(format!(
                "unknown backup file kind {other:?}"
            ))),
        }
    };
    for file in &manifest.files {
        let path = target(file)?;
        if path.exists() {
            return Err(MemoryError::AlreadyExists {
                kind: "file (restore only into an empty data directory)",
                id: path.display().to_string(),
            });
        }
    }
    for file in &manifest.files {
        let path = target(file)?;
        let dir = path.parent().unwrap_or(into);
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|e| io(dir.display(), e))?;
        let partial = dir.join(format!(".{}.restoring", file.name));
        let mut download = blobs
            .download(&file.key)
            .await?
            .ok_or_else(|| MemoryError::not_found("backup file", file.key.as_str()))?;
        let mut out = tokio::fs::File::create(&partial)
            .await
            .map_err(|e| io(partial.display(), e))?;
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        while let Some(chunk) = download.next_chunk().await? {
            hasher.update(&chunk);
            size += chunk.len() as u64;
            out.write_all(&chunk)
                .await
                .map_err(|e| io(partial.display(), e))?;
        }
        out.sync_all().await.map_err(|e| io(partial.display(), e))?;
        drop(out);
        let sha256 = hex(&hasher.finalize());
        if size != file.size || sha256 != file.sha256 {
            let _ = tokio::fs::remove_file(&partial).await;
            return Err(MemoryError::backend(
                "backup",
                format!(
                    "{} does not match its manifest ({size} bytes, sha256 {sha256}; expected {} bytes, {})",
                    file.key, file.size, file.sha256
                ),
            ));
        }
        tokio::fs::rename(&partial, &path)
            .await
            .map_err(|e| io(path.display(), e))?;
    }
    Ok(manifest)
}
