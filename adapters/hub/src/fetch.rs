//! Downloading a model's missing files into place.

use std::path::{Path, PathBuf};

use memory_core::{MemoryError, Result};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use tracing::info;

use crate::error::{BACKEND, HubError};
use crate::model::{HubFile, HubModel};
use crate::settings::{HubSettings, Progress};

/// What a fetch did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchReport {
    /// The directory that holds the model.
    pub dir: PathBuf,
    /// The files downloaded now (none when all were there).
    pub fetched: Vec<String>,
    /// Their bytes.
    pub bytes: u64,
}

/// Downloads the files of `model` missing from `dir` (see the crate's documentation): each
/// is streamed into a temporary file beside its place, checked for its size and SHA-256,
/// and renamed into place. Files already there are left as they are. Offline, an
/// unreachable hub, a refusal, a truncated body or a wrong checksum fail with the file's
/// URL in the message, and leave no file in its place.
pub async fn fetch(model: &HubModel, dir: &Path, settings: &HubSettings) -> Result<FetchReport> {
    let missing: Vec<&HubFile> = model.files.iter().filter(|f| !f.is_in(dir)).collect();
    let mut report = FetchReport {
        dir: dir.to_owned(),
        fetched: Vec::new(),
        bytes: 0,
    };
    let Some(first) = missing.first() else {
        return Ok(report);
    };
    if settings.offline {
        return Err(HubError::Offline {
            file: first.path.clone(),
            dir: dir.to_owned(),
        }
        .into());
    }
    let client = client(settings)?;
    let total: u64 = missing.iter().filter_map(|f| f.size).sum();
    let bar = progress_bar(settings, total, &model.repo);
    for file in missing {
        let url = format!(
            "{}/{}/resolve/{}/{}",
            settings.endpoint, model.repo, model.revision, file.path
        );
        if bar.is_none() {
            info!(%url, bytes = ?file.size, "fetching a model file (once)");
        }
        let fetched_bytes = match download(&client, &url, file, dir, bar.as_ref()).await {
            Ok(bytes) => bytes,
            Err(e) => {
                if let Some(bar) = &bar {
                    bar.abandon();
                }
                return Err(e.into());
            }
        };
        report.fetched.push(file.path.clone());
        report.bytes += fetched_bytes;
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    info!(
        dir = %dir.display(),
        files = report.fetched.len(),
        bytes = report.bytes,
        "model files fetched and verified"
    );
    Ok(report)
}

/// The HTTP client every fetch uses: bounded timeouts, this crate's user agent.
pub(crate) fn client(settings: &HubSettings) -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .connect_timeout(settings.connect_timeout)
        .read_timeout(settings.read_timeout)
        .user_agent(concat!("agent-memory/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| MemoryError::backend(BACKEND, e))
}

/// A progress bar of `total` bytes labelled with `what`, when progress is shown as one.
pub(crate) fn progress_bar(
    settings: &HubSettings,
    total: u64,
    what: &str,
) -> Option<indicatif::ProgressBar> {
    match settings.progress {
        Progress::Bar => {
            let bar = indicatif::ProgressBar::new(total);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{msg} {bar:30} {bytes}/{total_bytes} ({eta})",
            ) {
                bar.set_style(style);
            }
            bar.set_message(format!("fetching {what}"));
            Some(bar)
        }
        Progress::Log => None,
    }
}

/// Runs `work` on a thread of its own with a current-thread runtime of its own, and waits.
pub(crate) fn block_on_own_thread<T: Send + 'static>(
    work: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    let worker = std::thread::Builder::new()
        .name("model-fetch".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| MemoryError::backend(BACKEND, e))?;
            runtime.block_on(work)
        })
        .map_err(|e| MemoryError::transient(BACKEND, e))?;
    worker
        .join()
        .map_err(|_| MemoryError::backend(BACKEND, "the model fetch thread panicked"))?
}

/// [`fetch`] for a caller that is not async (or is inside a runtime it must not block on):
/// runs on a thread of its own with a runtime of its own, and waits for it.
pub fn fetch_blocking(model: &HubModel, dir: &Path, settings: &HubSettings) -> Result<FetchReport> {
    let (model, dir, settings) = (model.clone(), dir.to_owned(), settings.clone());
    block_on_own_thread(async move { fetch(&model, &dir, &settings).await })
}

/// A digest as lower-case hex, the form checksums are pinned in.
pub(crate) fn lower_hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Removes a temporary file unless it was renamed into place.
pub(crate) struct Partial {
    pub(crate) path: PathBuf,
    pub(crate) placed: bool,
}

impl Drop for Partial {
    fn drop(&mut self) {
        if !self.placed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

pub(crate) fn io(path: &Path) -> impl Fn(std::io::Error) -> HubError + '_ {
    move |source| HubError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Streams `url` into a temporary file beside `file`'s place in `dir`, checks its size (where
/// known) and checksum, and renames it into place. Returns its size.
pub(crate) async fn download(
    client: &reqwest::Client,
    url: &str,
    file: &HubFile,
    dir: &Path,
    bar: Option<&indicatif::ProgressBar>,
) -> std::result::Result<u64, HubError> {
    let target = dir.join(&file.path);
    let parent = target.parent().unwrap_or(dir).to_owned();
    tokio::fs::create_dir_all(&parent)
        .await
        .map_err(io(&parent))?;
    let name = target
        .file_name()
        .map_or_else(|| file.path.clone(), |n| n.to_string_lossy().into_owned());
    let mut partial = Partial {
        path: parent.join(format!(".{name}.part-{}", std::process::id())),
        placed: false,
    };
    let unreachable = |source| HubError::Unreachable {
        url: url.to_owned(),
        source,
    };
    let mut response = client.get(url).send().await.map_err(unreachable)?;
    if !response.status().is_success() {
        return Err(HubError::Status {
            url: url.to_owned(),
            status: response.status(),
        });
    }
    let mut out = tokio::fs::File::create(&partial.path)
        .await
        .map_err(io(&partial.path))?;
    let mut hasher = Sha256::new();
    let mut got: u64 = 0;
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            // The body ended early (or stalled past the read timeout).
            Err(_) => {
                return Err(HubError::Truncated {
                    url: url.to_owned(),
                    got,
                    expected: file.size,
                });
            }
        };
        got += chunk.len() as u64;
        if let Some(expected) = file.size.filter(|&size| got > size) {
            return Err(HubError::TooLong {
                url: url.to_owned(),
                file: file.path.clone(),
                expected,
            });
        }
        hasher.update(&chunk);
        out.write_all(&chunk).await.map_err(io(&partial.path))?;
        if let Some(bar) = bar {
            bar.inc(chunk.len() as u64);
        }
    }
    if file.size.is_some_and(|size| got != size) {
        return Err(HubError::Truncated {
            url: url.to_owned(),
            got,
            expected: file.size,
        });
    }
    let actual = lower_hex(&hasher.finalize());
    if actual != file.sha256 {
        return Err(HubError::Checksum {
            url: url.to_owned(),
            file: file.path.clone(),
            expected: file.sha256.clone(),
            actual,
        });
    }
    out.sync_all().await.map_err(io(&partial.path))?;
    drop(out);
    tokio::fs::rename(&partial.path, &target)
        .await
        .map_err(io(&target))?;
    partial.placed = true;
    // The rename is durable once the directory is synced (best effort: not every file
    // system lets a directory be opened for it).
    if let Ok(directory) = std::fs::File::open(&parent) {
        let _ = directory.sync_all();
    }
    Ok(got)
}
