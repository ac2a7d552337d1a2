use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{MemoryError, Result, Timestamp};

/// What a blob store can do beyond the required surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobCapabilities {
    /// [`PutMode::Create`] is atomic (S3 `If-None-Match: *`, a hard link on a file system);
    /// without it a create-only put is [`MemoryError::NotSupported`], never a silent
    /// overwrite.
    pub create_only: bool,
}

/// How a put treats an existing blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutMode {
    /// Replace it.
    Overwrite,
    /// Store only if no blob has the key (atomic where [`BlobCapabilities::create_only`]).
    Create,
}

/// A stored blob's key, size and time of its last write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobMeta {
    /// The key.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// When it was last written, when the backend says.
    pub modified: Option<Timestamp>,
}

/// A page of a listing, with the cursor of the next page.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BlobPage {
    /// The blobs, in key order.
    pub blobs: Vec<BlobMeta>,
    /// Pass back unchanged for the next page; `None` at the end. Opaque.
    pub next_cursor: Option<String>,
}

/// A streaming write, for artefacts too large to hold in memory (backups, exports). Nothing
/// is visible under the key until [`finish`](Self::finish); [`abort`](Self::abort) (or a
/// failure) leaves nothing behind.
#[async_trait]
pub trait BlobUpload: Send {
    /// Appends a chunk.
    async fn write(&mut self, chunk: Vec<u8>) -> Result<()>;
    /// Makes the blob visible under its key (replacing one there); returns its size.
    async fn finish(self: Box<Self>) -> Result<u64>;
    /// Discards what was written.
    async fn abort(self: Box<Self>) -> Result<()>;
}

/// A streaming read.
#[async_trait]
pub trait BlobDownload: Send {
    /// The blob's size in bytes.
    fn size(&self) -> u64;
    /// The next chunk, in order; `None` after the last.
    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>>;
}

/// Whole artefacts by key: skills, exports, backups, archived sessions. Object storage (S3,
/// R2) or a directory.
///
/// Keys are `/`-separated paths ([`validate_blob_key`]); a listing's prefix is a plain string
/// prefix of the key.
///
/// # Contract
/// (asserted by `memory_testkit::contract::blob_store`)
/// - A put replaces the blob whole (readers never see a part of it); [`PutMode::Create`]
///   returns `false` and changes nothing when the key exists, or is
///   [`MemoryError::NotSupported`] when the backend cannot make it atomic.
/// - `get` and `head` of an absent key are `None`; `delete` of an absent key is fine.
/// - `list` returns the blobs whose key starts with the prefix, in byte order of the key,
///   at most `limit` per page, every blob exactly once across the pages of one listing.
/// - An upload is invisible until finished and leaves nothing when aborted; a download
///   yields the blob's bytes in order, `size` of them.
/// - An invalid key is [`MemoryError::InvalidInput`] on every operation, before any I/O.
#[async_trait]
pub trait BlobStore: Send + Sync {
    /// The adapter's name, for errors and logs.
    fn backend_name(&self) -> &'static str;

    /// What it can do.
    fn capabilities(&self) -> BlobCapabilities;

    /// Stores `body` under `key`; `false` only for [`PutMode::Create`] on an existing key.
    async fn put(&self, key: &str, body: Vec<u8>, mode: PutMode) -> Result<bool>;

    /// The whole blob.
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>>;

    /// The blob's size and time, without its bytes.
    async fn head(&self, key: &str) -> Result<Option<BlobMeta>>;

    /// One page of the blobs under `prefix`, after `cursor` (from the previous page).
    async fn list(&self, prefix: &str, cursor: Option<String>, limit: usize) -> Result<BlobPage>;

    /// Removes the blob if it exists.
    async fn delete(&self, key: &str) -> Result<()>;

    /// Starts a streaming write of `key`.
    async fn upload(&self, key: &str) -> Result<Box<dyn BlobUpload>>;

    /// Starts a streaming read of `key`; `None` when absent.
    async fn download(&self, key: &str) -> Result<Option<Box<dyn BlobDownload>>>;
}

/// Conveniences over [`BlobStore`], implemented for every store.
#[async_trait]
pub trait BlobStoreExt: BlobStore {
    /// Every blob under `prefix`, through every page.
    async fn list_all(&self, prefix: &str) -> Result<Vec<BlobMeta>> {
        let mut out = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.list(prefix, cursor, 1_000).await?;
            out.extend(page.blobs);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(out),
            }
        }
    }
}

impl<T: BlobStore + ?Sized> BlobStoreExt for T {}

/// Checks a blob key: 1 to 1024 bytes of `/`-separated segments, none empty, none starting
/// with `.` (no `.`, `..` or hidden names: a key is also a relative path on a file system),
/// no backslash and no control characters.
///
/// ```
/// use memory_core::ports::validate_blob_key;
/// assert!(validate_blob_key("backups/2026-11-23/memory.db").is_ok());
/// for bad in ["", "/abs", "a//b", "../up", "a/./b", "dir/", "a\\b", ".hidden"] {
///     assert!(validate_blob_key(bad).is_err(), "{bad}");
/// }
/// ```
pub fn validate_blob_key(key: &str) -> Result<()> {
    let bad = |why: &str| Err(MemoryError::invalid(format!("blob key {key:?} {why}")));
    if key.is_empty() || key.len() > 1024 {
        return bad("must be 1 to 1024 bytes");
    }
    if key.chars().any(|c| c.is_control() || c == '\\') {
        return bad("must not contain control characters or backslashes");
    }
    if key
        .split('/')
        .any(|segment| segment.is_empty() || segment.starts_with('.'))
    {
        return bad("must be '/'-separated names, none empty and none starting with '.'");
    }
    Ok(())
}

/// Checks a listing prefix: empty (everything), or a key's beginning that
/// [`validate_blob_key`] would accept once completed.
pub fn validate_blob_prefix(prefix: &str) -> Result<()> {
    if prefix.is_empty() {
        return Ok(());
    }
    // "a/b/" and "a/b" are valid prefixes: complete them to a key and check that.
    validate_blob_key(&format!("{prefix}x"))
}
