//! Exports and imports through a bucket: a location `s3://bucket/key` instead of a file, so
//! a session or a profile moves between deployments through object storage. The bucket is
//! reached like `[storage.s3]` (endpoint, region, credentials). The file is staged in a
//! temporary file and streamed in chunks, never held in memory whole.

use std::path::Path;

use memory_compose::Deployment;
use memory_core::ports::BlobStore;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::CliError;

/// Bytes per chunk of an upload.
const CHUNK: usize = 8 * 1024 * 1024;

/// The `s3://` location a path names, if it names one.
pub fn location(path: &Path) -> Option<&str> {
    path.to_str().filter(|p| p.starts_with("s3://"))
}

/// Uploads the finished file `file` to `location`.
pub async fn upload(deployment: &Deployment, location: &str, file: &Path) -> Result<(), CliError> {
    let (blobs, key) = remote(deployment, location).await?;
    let mut source = tokio::fs::File::open(file)
        .await
        .map_err(|e| CliError::io(format!("reading {}", file.display()), e))?;
    let mut upload = blobs.upload(&key).await?;
    loop {
        let mut buffer = vec![0; CHUNK];
        let n = read_full(&mut source, &mut buffer)
            .await
            .map_err(|e| CliError::io(format!("reading {}", file.display()), e))?;
        if n == 0 {
            break;
        }
        buffer.truncate(n);
        if let Err(e) = upload.write(buffer).await {
            let _ = upload.abort().await;
            return Err(e.into());
        }
    }
    let size = upload.finish().await?;
    eprintln!("uploaded {size} bytes to {location}");
    Ok(())
}

/// Downloads `location` into a temporary file (deleted when dropped).
pub async fn download(
    deployment: &Deployment,
    location: &str,
) -> Result<tempfile::NamedTempFile, CliError> {
    let (blobs, key) = remote(deployment, location).await?;
    let mut download = blobs
        .download(&key)
        .await?
        .ok_or_else(|| CliError::Input(format!("{location}: no such object")))?;
    let staged =
        tempfile::NamedTempFile::new().map_err(|e| CliError::io("creating a temporary file", e))?;
    let mut out = tokio::fs::File::create(staged.path())
        .await
        .map_err(|e| CliError::io("writing a temporary file", e))?;
    while let Some(chunk) = download.next_chunk().await? {
        out.write_all(&chunk)
            .await
            .map_err(|e| CliError::io("writing a temporary file", e))?;
    }
    out.flush()
        .await
        .map_err(|e| CliError::io("writing a temporary file", e))?;
    Ok(staged)
}

async fn remote(
    deployment: &Deployment,
    location: &str,
) -> Result<(std::sync::Arc<dyn BlobStore>, String), CliError> {
    deployment
        .remote_blob(location)
        .await?
        .ok_or_else(|| CliError::Input(format!("{location} is not an s3:// location")))
}

async fn read_full(file: &mut tokio::fs::File, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        let n = file.read(&mut buffer[filled..]).await?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    Ok(filled)
}
