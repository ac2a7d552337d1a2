//! The blob port on S3: one object per blob under the deployment's prefix.

use async_trait::async_trait;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use memory_core::ports::{
    BlobCapabilities, BlobDownload, BlobMeta, BlobPage, BlobStore, BlobUpload, PutMode,
    validate_blob_key, validate_blob_prefix,
};
use memory_core::{MemoryError, Result, Timestamp};

use crate::bucket::S3Bucket;
use crate::error::{BACKEND, corrupt, s3, status};

/// Bytes per part of a multipart upload (S3's minimum is 5 MiB, except for the last part).
const PART_BYTES: usize = 8 * 1024 * 1024;
/// Most keys one listing request returns (S3's own maximum).
const MAX_LIST: usize = 1_000;

/// [`BlobStore`] on an S3 bucket.
#[derive(Debug, Clone)]
pub struct S3BlobStore {
    bucket: S3Bucket,
}

impl S3BlobStore {
    /// The blobs of `bucket` (under its prefix).
    pub fn new(bucket: S3Bucket) -> Self {
        Self { bucket }
    }
}

/// Stores one object; false when `Create` found the key taken (HTTP 412).
pub(crate) async fn put_object(
    bucket: &S3Bucket,
    object: &str,
    body: Vec<u8>,
    mode: PutMode,
) -> Result<bool> {
    let mut request = bucket
        .client
        .put_object()
        .bucket(&bucket.bucket)
        .key(object)
        .body(ByteStream::from(body));
    if mode == PutMode::Create {
        if !bucket.conditional_writes {
            return Err(MemoryError::NotSupported {
                operation: "create-only put (this bucket is configured without conditional writes)",
                backend: BACKEND,
            });
        }
        request = request.if_none_match("*");
    }
    match request.send().await {
        Ok(_) => Ok(true),
        Err(e) if mode == PutMode::Create && matches!(status(&e), Some(412 | 409)) => Ok(false),
        Err(e) => Err(s3("PutObject", e)),
    }
}

/// One object's bytes; `None` when absent.
pub(crate) async fn get_object(bucket: &S3Bucket, object: &str) -> Result<Option<Vec<u8>>> {
    let output = match bucket
        .client
        .get_object()
        .bucket(&bucket.bucket)
        .key(object)
        .send()
        .await
    {
        Ok(output) => output,
        // NoSuchKey (and any other 404): absent.
        Err(e) if status(&e) == Some(404) => return Ok(None),
        Err(e) => return Err(s3("GetObject", e)),
    };
    let bytes = output
        .body
        .collect()
        .await
        .map_err(|e| MemoryError::transient(BACKEND, e))?;
    Ok(Some(bytes.into_bytes().to_vec()))
}

fn millis(time: Option<&aws_sdk_s3::primitives::DateTime>) -> Option<Timestamp> {
    time.and_then(|t| t.to_millis().ok()).map(Timestamp)
}

struct S3Upload {
    bucket: S3Bucket,
    object: String,
    buffer: Vec<u8>,
    upload_id: Option<String>,
    parts: Vec<CompletedPart>,
    size: u64,
}

impl S3Upload {
    /// Sends the buffer as the next part (starting the multipart upload on the first).
    async fn send_part(&mut self) -> Result<()> {
        let upload_id = match &self.upload_id {
            Some(id) => id.clone(),
            None => {
                let created = self
                    .bucket
                    .client
                    .create_multipart_upload()
                    .bucket(&self.bucket.bucket)
                    .key(&self.object)
                    .send()
                    .await
                    .map_err(|e| s3("CreateMultipartUpload", e))?;
                let id = created
                    .upload_id()
                    .ok_or_else(|| corrupt("multipart upload", "no upload id"))?
                    .to_owned();
                self.upload_id = Some(id.clone());
                id
            }
        };
        let number = i32::try_from(self.parts.len() + 1)
            .map_err(|_| MemoryError::invalid("an upload of more than 2^31 parts"))?;
        let body = std::mem::take(&mut self.buffer);
        let part = self
            .bucket
            .client
            .upload_part()
            .bucket(&self.bucket.bucket)
            .key(&self.object)
            .upload_id(&upload_id)
            .part_number(number)
            .body(ByteStream::from(body))
            .send()
            .await
            .map_err(|e| s3("UploadPart", e))?;
        self.parts.push(
            CompletedPart::builder()
                .part_number(number)
                .set_e_tag(part.e_tag().map(str::to_owned))
                .build(),
        );
        Ok(())
    }

    async fn abort_started(&self) -> Result<()> {
        if let Some(id) = &self.upload_id {
            self.bucket
                .client
                .abort_multipart_upload()
                .bucket(&self.bucket.bucket)
                .key(&self.object)
                .upload_id(id)
                .send()
                .await
                .map_err(|e| s3("AbortMultipartUpload", e))?;
        }
        Ok(())
    }
}

#[async_trait]
impl BlobUpload for S3Upload {
    async fn write(&mut self, chunk: Vec<u8>) -> Result<()> {
        self.size += chunk.len() as u64;
        self.buffer.extend(chunk);
        while self.buffer.len() >= PART_BYTES {
            let rest = self.buffer.split_off(PART_BYTES);
            if let Err(e) = self.send_part().await {
                let _ = self.abort_started().await;
                return Err(e);
            }
            self.buffer = rest;
        }
        Ok(())
    }

    async fn finish(mut self: Box<Self>) -> Result<u64> {
        if self.upload_id.is_none() {
            // Small: one plain put.
            let body = std::mem::take(&mut self.buffer);
            put_object(&self.bucket, &self.object, body, PutMode::Overwrite).await?;
            return Ok(self.size);
        }
        if !self.buffer.is_empty()
            && let Err(e) = self.send_part().await
        {
            let _ = self.abort_started().await;
            return Err(e);
        }
        let id = self.upload_id.clone().unwrap_or_default();
        let completed = self
            .bucket
            .client
            .complete_multipart_upload()
            .bucket(&self.bucket.bucket)
            .key(&self.object)
            .upload_id(&id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(std::mem::take(&mut self.parts)))
                    .build(),
            )
            .send()
            .await;
        if let Err(e) = completed {
            let _ = self.abort_started().await;
            return Err(s3("CompleteMultipartUpload", e));
        }
        Ok(self.size)
    }

    async fn abort(self: Box<Self>) -> Result<()> {
        self.abort_started().await
    }
}

struct S3Download {
    body: ByteStream,
    size: u64,
}

#[async_trait]
impl BlobDownload for S3Download {
    fn size(&self) -> u64 {
        self.size
    }

    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>> {
        match self.body.next().await {
            Some(Ok(bytes)) => Ok(Some(bytes.to_vec())),
            Some(Err(e)) => Err(MemoryError::transient(BACKEND, e)),
            None => Ok(None),
        }
    }
}

#[async_trait]
impl BlobStore for S3BlobStore {
    fn backend_name(&self) -> &'static str {
        BACKEND
    }

    fn capabilities(&self) -> BlobCapabilities {
        BlobCapabilities {
            create_only: self.bucket.conditional_writes,
        }
    }

    async fn put(&self, key: &str, body: Vec<u8>, mode: PutMode) -> Result<bool> {
        validate_blob_key(key)?;
        put_object(&self.bucket, &self.bucket.object(key), body, mode).await
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        validate_blob_key(key)?;
        get_object(&self.bucket, &self.bucket.object(key)).await
    }

    async fn head(&self, key: &str) -> Result<Option<BlobMeta>> {
        validate_blob_key(key)?;
        match self
            .bucket
            .client
            .head_object()
            .bucket(&self.bucket.bucket)
            .key(self.bucket.object(key))
            .send()
            .await
        {
            Ok(output) => Ok(Some(BlobMeta {
                key: key.to_owned(),
                size: output.content_length().unwrap_or(0).max(0) as u64,
                modified: millis(output.last_modified()),
            })),
            Err(e) if status(&e) == Some(404) => Ok(None),
            Err(e) => Err(s3("HeadObject", e)),
        }
    }

    async fn list(&self, prefix: &str, cursor: Option<String>, limit: usize) -> Result<BlobPage> {
        validate_blob_prefix(prefix)?;
        let limit = limit.clamp(1, MAX_LIST);
        let mut request = self
            .bucket
            .client
            .list_objects_v2()
            .bucket(&self.bucket.bucket)
            .prefix(self.bucket.object(prefix))
            .max_keys(limit as i32);
        if let Some(after) = &cursor {
            validate_blob_key(after)
                .map_err(|_| MemoryError::invalid(format!("invalid cursor {after:?}")))?;
            request = request.start_after(self.bucket.object(after));
        }
        let output = request.send().await.map_err(|e| s3("ListObjectsV2", e))?;
        let blobs: Vec<BlobMeta> = output
            .contents()
            .iter()
            .filter_map(|object| {
                let key = self.bucket.key_of(object.key()?)?;
                Some(BlobMeta {
                    key: key.to_owned(),
                    size: object.size().unwrap_or(0).max(0) as u64,
                    modified: millis(object.last_modified()),
                })
            })
            .collect();
        let more = output.is_truncated().unwrap_or(false);
        Ok(BlobPage {
            next_cursor: if more {
                blobs.last().map(|b| b.key.clone())
            } else {
                None
            },
            blobs,
        })
    }

    async fn delete(&self, key: &str) -> Result<()> {
        validate_blob_key(key)?;
        self.bucket
            .client
            .delete_object()
            .bucket(&self.bucket.bucket)
            .key(self.bucket.object(key))
            .send()
            .await
            .map_err(|e| s3("DeleteObject", e))?;
        Ok(())
    }

    async fn upload(&self, key: &str) -> Result<Box<dyn BlobUpload>> {
        validate_blob_key(key)?;
        Ok(Box::new(S3Upload {
            bucket: self.bucket.clone(),
            object: self.bucket.object(key),
            buffer: Vec::new(),
            upload_id: None,
            parts: Vec::new(),
            size: 0,
        }))
    }

    async fn download(&self, key: &str) -> Result<Option<Box<dyn BlobDownload>>> {
        validate_blob_key(key)?;
        let output = match self
            .bucket
            .client
            .get_object()
            .bucket(&self.bucket.bucket)
            .key(self.bucket.object(key))
            .send()
            .await
        {
            Ok(output) => output,
            Err(e) if status(&e) == Some(404) => return Ok(None),
            Err(e) => return Err(s3("GetObject", e)),
        };
        let size = output.content_length().unwrap_or(0).max(0) as u64;
        Ok(Some(Box::new(S3Download {
            body: output.body,
            size,
        })))
    }
}
