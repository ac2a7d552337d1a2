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

use crate::Deployment;
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
    /// `files` (copies of the SQLite databases, restored into a data directory) or `logical`
    /// (every session and profile as export lines, for deployments with roles off SQLite,
    /// restored into an empty deployment of any backends).
    #[serde(default = "files_mode")]
    pub mode: String,
    /// Its files.
    pub files: Vec<BackupFile>,
}

fn files_mode() -> String {
    "files".into()
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

/// Uploads `path` to `key`, streamed, as backup file `kind`/`name` with its SHA-256.
async fn upload_file(
    blobs: &dyn BlobStore,
    path: &Path,
    key: String,
    kind: &str,
    name: &str,
) -> Result<BackupFile> {
    let mut file = tokio::fs::File::open(path)
        .await
        .map_err(|e| io(path.display(), e))?;
    let mut upload = HashedUpload::start(blobs, &key).await?;
    let sent: Result<()> = async {
        let mut buffer = vec![0; CHUNK];
        loop {
            let n = file
                .read(&mut buffer)
                .await
                .map_err(|e| io(path.display(), e))?;
            if n == 0 {
                return Ok(());
            }
            upload.write(&buffer[..n]).await?;
        }
    }
    .await;
    match sent {
        Ok(()) => upload.finish(kind, name, key).await,
        Err(e) => {
            // Nothing half-written stays behind.
            upload.abort().await;
            Err(e)
        }
    }
}

/// Takes a backup of the deployment into its blob store, then keeps the newest `keep`: file
/// copies when every role is on SQLite (the profiles' text may be on Tantivy: it is rebuilt
/// from the records after a restore), else a logical backup through the export lines.
pub(crate) async fn backup(deployment: &Deployment, keep: Option<usize>) -> Result<BackupManifest> {
    let blobs = deployment.blob_store().await.map_err(into_memory)?;
    let blobs = blobs.as_ref();
    let storage = deployment.storage();
    // Every role on SQLite but the profiles' text, which may be a Tantivy index beside the
    // files: derived from the records, it is left out and rebuilt after a restore.
    let as_files = [
        Role::Records,
        Role::Sessions,
        Role::Text,
        Role::SessionText,
        Role::Vectors,
        Role::Jobs,
        Role::Kv,
    ]
    .into_iter()
    .all(|role| storage.backend(role) == Backend::Sqlite)
        && matches!(storage.profile_text, Backend::Sqlite | Backend::Tantivy);
    let created_at = memory_core::ports::SystemClock.now().millis();
    let id = format!(
        "{created_at:013}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let (mode, files) = if as_files {
        (
            "files",
            file_copies(blobs, storage, deployment.data_dir(), &id).await?,
        )
    } else {
        ("logical", logical_copy(deployment, blobs, &id).await?)
    };
    let manifest = BackupManifest {
        id: id.clone(),
        format: FORMAT,
        created_at,
        mode: mode.into(),
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

fn into_memory(error: crate::ComposeError) -> MemoryError {
    match error {
        crate::ComposeError::Memory(e) => e,
        other => MemoryError::invalid(other.to_string()),
    }
}

/// Copies every SQLite database (`VACUUM INTO`) and uploads it.
async fn file_copies(
    blobs: &dyn BlobStore,
    storage: &memory_config::StorageConfig,
    scratch: &Path,
    id: &str,
) -> Result<Vec<BackupFile>> {
    let work = tempfile::Builder::new()
        .prefix(".backup-")
        .tempdir_in(scratch)
        .map_err(|e| io(scratch.display(), e))?;
    let mut files = Vec::new();
    for (kind, name, path) in database_files(&storage.sqlite.path, &storage.sqlite.profiles)? {
        let copy = work.path().join(format!("{kind}-{name}"));
        memory_sqlite::snapshot(&path, &copy).await?;
        let key = format!("{ROOT}{id}/files/{kind}/{name}");
        let file = upload_file(blobs, &copy, key, &kind, &name).await?;
        tokio::fs::remove_file(&copy)
            .await
            .map_err(|e| io(copy.display(), e))?;
        tracing::info!(key = %file.key, size = file.size, "backed up");
        files.push(file);
    }
    Ok(files)
}

/// Streams bytes into a blob in chunks, hashing them on the way.
struct HashedUpload {
    upload: Box<dyn memory_core::ports::BlobUpload>,
    hasher: Sha256,
    size: u64,
    buffer: Vec<u8>,
}

impl HashedUpload {
    async fn start(blobs: &dyn BlobStore, key: &str) -> Result<Self> {
        Ok(Self {
            upload: blobs.upload(key).await?,
            hasher: Sha256::new(),
            size: 0,
            buffer: Vec::new(),
        })
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.hasher.update(bytes);
        self.size += bytes.len() as u64;
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= CHUNK {
            self.upload.write(std::mem::take(&mut self.buffer)).await?;
        }
        Ok(())
    }

    /// Discards what was sent (best effort: the upload is invisible until finished).
    async fn abort(self) {
        let _ = self.upload.abort().await;
    }

    async fn finish(mut self, kind: &str, name: &str, key: String) -> Result<BackupFile> {
        if !self.buffer.is_empty() {
            self.upload.write(std::mem::take(&mut self.buffer)).await?;
        }
        self.upload.finish().await?;
        Ok(BackupFile {
            kind: kind.into(),
            name: name.into(),
            key,
            size: self.size,
            sha256: hex(&self.hasher.finalize()),
        })
    }
}

/// Every session (with its overlays and blocks) and every profile as export lines.
async fn logical_copy(
    deployment: &Deployment,
    blobs: &dyn BlobStore,
    id: &str,
) -> Result<Vec<BackupFile>> {
    let manager = deployment.session_manager().await.map_err(into_memory)?;
    let mut files = Vec::new();
    let key = format!("{ROOT}{id}/logical/sessions.jsonl");
    let mut sessions = HashedUpload::start(blobs, &key).await?;
    let mut offset = 0;
    loop {
        let page = manager.list(1_000, offset).await?;
        if page.is_empty() {
            break;
        }
        offset += page.len();
        for info in page {
            sessions
                .write(manager.session_snapshot(&info.id).await?.as_bytes())
                .await?;
        }
    }
    files.push(sessions.finish("sessions", "sessions.jsonl", key).await?);
    let key = format!("{ROOT}{id}/logical/shared.jsonl");
    let mut shared = HashedUpload::start(blobs, &key).await?;
    if let Some(kv) = &manager.context_wiring().kv {
        for entry in manager.context_wiring().shared_keys() {
            if let Some(value) = kv.get(&entry).await? {
                let line = serde_json::json!({ "key": entry, "value": value });
                shared.write(format!("{line}\n").as_bytes()).await?;
            }
        }
    }
    files.push(shared.finish("shared", "shared.jsonl", key).await?);
    let (memory, _) = deployment.memory_service().await.map_err(into_memory)?;
    for profile in memory.list_profiles().await? {
        let key = format!("{ROOT}{id}/logical/profiles/{profile}.jsonl");
        let mut out = HashedUpload::start(blobs, &key).await?;
        let mut cursor = None;
        loop {
            let page = memory.export_page(&profile, true, cursor).await?;
            for line in &page.lines {
                out.write(format!("{line}\n").as_bytes()).await?;
            }
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        files.push(out.finish("profile", &profile, key).await?);
    }
    Ok(files)
}

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
    if manifest.mode == "logical" {
        restore_logical(blobs, &manifest, into).await?;
        return Ok(manifest);
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
    if manifest.files.iter().any(|f| f.kind == "profiles") {
        discard_profile_text(into).await;
    }
    Ok(manifest)
}

/// After a file restore into `into`: each profile's text index that the engine writes (a
/// search engine's, never in the files) is emptied and rebuilt from the restored records
/// when a process first opens the profile, whatever an index directory there held before.
/// Best effort: the files are in place whatever happens here, and a missing index is
/// rebuilt at first open anyway (an older one left beside them is not).
async fn discard_profile_text(into: &Path) {
    let discarded: Result<()> = async {
        let target = Deployment::open(into).map_err(into_memory)?;
        let backends = target.long_term_backends().await.map_err(into_memory)?;
        for profile in backends.records.list().await? {
            backends.discard_text_index(&profile).await?;
        }
        drop(backends);
        target.close().await;
        Ok(())
    }
    .await;
    if let Err(e) = discarded {
        tracing::warn!(error = %e, into = %into.display(), "could not empty the restored profiles' text indexes; an older index there may be searched until `memory reindex`");
    }
}

/// Downloads a logical backup file whole, checking its size and SHA-256.
async fn fetch_checked(blobs: &dyn BlobStore, file: &BackupFile) -> Result<String> {
    let bytes = blobs
        .get(&file.key)
        .await?
        .ok_or_else(|| MemoryError::not_found("backup file", file.key.as_str()))?;
    let sha256 = hex(&Sha256::digest(&bytes));
    if bytes.len() as u64 != file.size || sha256 != file.sha256 {
        return Err(MemoryError::backend(
            "backup",
            format!("{} does not match its manifest", file.key),
        ));
    }
    String::from_utf8(bytes).map_err(|e| MemoryError::serialization(format!("{}: {e}", file.key)))
}

/// Restores a logical backup into the deployment configured in `into` (its `memory.toml`
/// names the target backends), which must hold no session and no profile yet.
async fn restore_logical(
    blobs: &dyn BlobStore,
    manifest: &BackupManifest,
    into: &Path,
) -> Result<()> {
    let target = Deployment::open(into).map_err(into_memory)?;
    let manager = target.session_manager().await.map_err(into_memory)?;
    let (memory, _) = target.memory_service().await.map_err(into_memory)?;
    if !manager.list(1, 0).await?.is_empty() || !memory.list_profiles().await?.is_empty() {
        return Err(MemoryError::AlreadyExists {
            kind: "data (restore only into an empty deployment)",
            id: into.display().to_string(),
        });
    }
    // Every checksum first: nothing is written from a damaged backup.
    let mut texts = Vec::with_capacity(manifest.files.len());
    for file in &manifest.files {
        texts.push((file, fetch_checked(blobs, file).await?));
    }
    for (file, text) in &texts {
        match file.kind.as_str() {
            "sessions" => {
                // One session's lines run from its header to the next header.
                let mut current: Option<(memory_core::SessionId, String)> = None;
                for line in text.lines() {
                    let header: Option<serde_json::Value> =
                        serde_json::from_str::<serde_json::Value>(line)
                            .ok()
                            .and_then(|v| v.get("header").cloned());
                    if let Some(header) = header {
                        if let Some((id, lines)) = current.take() {
                            manager.restore_snapshot(&id, &lines, &file.key).await?;
                        }
                        let session =
                            header
                                .get("session")
                                .and_then(|s| s.as_str())
                                .ok_or_else(|| {
                                    MemoryError::invalid(format!(
                                        "{}: a header without a session",
                                        file.key
                                    ))
                                })?;
                        current = Some((memory_core::SessionId::new(session)?, String::new()));
                    }
                    if let Some((_, lines)) = current.as_mut() {
                        lines.push_str(line);
                        lines.push('\n');
                    }
                }
                if let Some((id, lines)) = current.take() {
                    manager.restore_snapshot(&id, &lines, &file.key).await?;
                }
            }
            "shared" => {
                if let Some(kv) = &manager.context_wiring().kv {
                    for line in text.lines() {
                        let entry: serde_json::Value = serde_json::from_str(line)?;
                        if let (Some(key), Some(value)) =
                            (entry["key"].as_str(), entry["value"].as_str())
                        {
                            kv.set(key, value).await?;
                        }
                    }
                }
            }
            "profile" => {
                let lines: Vec<String> = text.lines().map(str::to_owned).collect();
                memory.import(&file.name, &lines).await?;
            }
            other => {
                return Err(MemoryError::invalid(format!(
                    "unknown backup file kind {other:?}"
                )));
            }
        }
    }
    target.close().await;
    Ok(())
}
