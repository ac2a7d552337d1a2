//! Skills on S3: each document an object, and one index object per collection with every
//! key's description, so listing the skills is one request whatever their number.

use std::collections::BTreeMap;

use async_trait::async_trait;
use aws_sdk_s3::primitives::ByteStream;
use memory_core::ports::{SkillStore, SkillSummary, validate_blob_key};
use memory_core::{MemoryError, Result};

use crate::blob_store::{get_object, put_object};
use crate::bucket::S3Bucket;
use crate::error::{corrupt, s3, status};

/// How often an index change is read and tried again after another writer changed the
/// index first.
const INDEX_ATTEMPTS: u32 = 16;

/// [`SkillStore`] on S3: `<prefix>skills/<collection>/<key>.md` holds each document and
/// `<prefix>skills/<collection>/index.json` every key's description. The index changes by
/// compare-and-swap on its ETag (`If-Match`, or `If-None-Match: *` for the first), so two
/// writers never drop each other's skills; on a bucket configured without conditional
/// writes the last index write wins.
#[derive(Debug, Clone)]
pub struct S3SkillStore {
    bucket: S3Bucket,
    root: String,
}

type Index = BTreeMap<String, Option<String>>;

impl S3SkillStore {
    /// The skills of `collection` (a block's label).
    pub fn new(bucket: S3Bucket, collection: &str) -> Self {
        let root = bucket.object(&format!("skills/{collection}/"));
        Self { bucket, root }
    }

    fn document(&self, key: &str) -> Result<String> {
        if key.contains('/') {
            return Err(MemoryError::invalid(format!(
                "skill key {key:?} must not contain '/'"
            )));
        }
        validate_blob_key(key)?;
        Ok(format!("{}{key}.md", self.root))
    }

    fn index_object(&self) -> String {
        format!("{}index.json", self.root)
    }

    /// The index and its ETag (`None` when there is no index yet).
    async fn read_index(&self) -> Result<(Index, Option<String>)> {
        let output = match self
            .bucket
            .client
            .get_object()
            .bucket(&self.bucket.bucket)
            .key(self.index_object())
            .send()
            .await
        {
            Ok(output) => output,
            Err(e) if status(&e) == Some(404) => return Ok((Index::new(), None)),
            Err(e) => return Err(s3("GetObject", e)),
        };
        let etag = output.e_tag().map(str::to_owned);
        let bytes = output
            .body
            .collect()
            .await
            .map_err(|e| MemoryError::transient(crate::error::BACKEND, e))?
            .into_bytes();
        let index =
            serde_json::from_slice(&bytes).map_err(|e| corrupt("skill index", e.to_string()))?;
        Ok((index, etag))
    }

    /// Applies `change` to the index by compare-and-swap; `change` says whether it changed
    /// anything (nothing is written otherwise).
    async fn change_index(&self, change: impl Fn(&mut Index) -> bool) -> Result<bool> {
        for _ in 0..INDEX_ATTEMPTS {
            let (mut index, etag) = self.read_index().await?;
            if !change(&mut index) {
                return Ok(false);
            }
            let body = serde_json::to_vec(&index)?;
            if !self.bucket.conditional_writes {
                put_object(
                    &self.bucket,
                    &self.index_object(),
                    body,
                    memory_core::ports::PutMode::Overwrite,
                )
                .await?;
                return Ok(true);
            }
            let mut request = self
                .bucket
                .client
                .put_object()
                .bucket(&self.bucket.bucket)
                .key(self.index_object())
                .body(ByteStream::from(body));
            request = match &etag {
                Some(etag) => request.if_match(etag),
                None => request.if_none_match("*"),
            };
            match request.send().await {
                Ok(_) => return Ok(true),
                Err(e) if matches!(status(&e), Some(412 | 409)) => continue,
                Err(e) => return Err(s3("PutObject", e)),
            }
        }
        Err(MemoryError::Conflict {
            message: format!(
                "the skill index {} kept changing under {INDEX_ATTEMPTS} attempts; retry",
                self.index_object()
            ),
        })
    }
}

#[async_trait]
impl SkillStore for S3SkillStore {
    async fn list(&self) -> Result<Vec<SkillSummary>> {
        let (index, _) = self.read_index().await?;
        Ok(index
            .into_iter()
            .map(|(key, description)| SkillSummary { key, description })
            .collect())
    }

    async fn get(&self, key: &str) -> Result<Option<String>> {
        let Some(bytes) = get_object(&self.bucket, &self.document(key)?).await? else {
            return Ok(None);
        };
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|e| corrupt("skill document", e.to_string()))
    }

    async fn put(&self, key: &str, content: &str, description: Option<String>) -> Result<()> {
        let document = self.document(key)?;
        put_object(
            &self.bucket,
            &document,
            content.as_bytes().to_vec(),
            memory_core::ports::PutMode::Overwrite,
        )
        .await?;
        self.change_index(|index| {
            index.insert(key.to_owned(), description.clone()) != Some(description.clone())
        })
        .await?;
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result<bool> {
        let document = self.document(key)?;
        let existed = self
            .change_index(|index| index.remove(key).is_some())
            .await?;
        self.bucket
            .client
            .delete_object()
            .bucket(&self.bucket.bucket)
            .key(document)
            .send()
            .await
            .map_err(|e| s3("DeleteObject", e))?;
        Ok(existed)
    }
}
