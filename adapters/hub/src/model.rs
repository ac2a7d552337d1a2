//! What to fetch: a repository at a pinned revision, and its files with their checksums.

use std::path::Path;

/// One file of a model: its path in the repository, its size and its SHA-256 (lower-case
/// hex), both checked before it is put in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubFile {
    /// The path in the repository (and in the local directory), e.g. `config.json`.
    pub path: String,
    /// Its size in bytes, when it is known (the SHA-256 is checked either way).
    pub size: Option<u64>,
    /// Its SHA-256, lower-case hex.
    pub sha256: String,
}

impl HubFile {
    /// A file of `size` bytes whose SHA-256 is `sha256`.
    pub fn new(path: impl Into<String>, size: u64, sha256: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            size: Some(size),
            sha256: sha256.into().to_ascii_lowercase(),
        }
    }

    /// A file whose SHA-256 is pinned but whose size is not known beforehand: only the
    /// checksum is checked (a progress bar cannot show its share).
    pub fn of_unknown_size(path: impl Into<String>, sha256: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            size: None,
            sha256: sha256.into().to_ascii_lowercase(),
        }
    }

    /// Whether the file is in `dir` with its size, where known (its checksum was checked when
    /// it was put there: nothing unchecked is ever put in place).
    pub fn is_in(&self, dir: &Path) -> bool {
        std::fs::metadata(dir.join(&self.path))
            .is_ok_and(|m| m.is_file() && self.size.is_none_or(|size| m.len() == size))
    }
}

/// A model on the hub: a repository, the revision it is pinned to (a commit, so the bytes
/// never change under a checksum) and the files a local model reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubModel {
    /// `owner/name`, e.g. `sentence-transformers/all-MiniLM-L6-v2`.
    pub repo: String,
    /// A commit of the repository.
    pub revision: String,
    /// The files to fetch.
    pub files: Vec<HubFile>,
}

impl HubModel {
    /// Whether every file is in `dir`.
    pub fn is_in(&self, dir: &Path) -> bool {
        self.files.iter().all(|file| file.is_in(dir))
    }

    /// The bytes of the files not yet in `dir` (those of unknown size count as none).
    pub fn missing_bytes(&self, dir: &Path) -> u64 {
        self.files
            .iter()
            .filter(|file| !file.is_in(dir))
            .filter_map(|file| file.size)
            .sum()
    }
}
