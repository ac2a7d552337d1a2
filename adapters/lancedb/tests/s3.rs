//! LanceDB tables in an S3-compatible bucket (the test command's server,
//! `scripts/setup-s3.sh`): the shared contract, the model check across two connections, and
//! erasure checked on the bucket's objects. Each run works under a prefix of its own and
//! removes it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use futures::TryStreamExt;
use memory_core::ports::{VectorIndex, VectorRecord};
use memory_lancedb::{LanceOptions, LanceVectorIndex};
use memory_testkit::contract;
use object_store::{ObjectStore, ObjectStoreExt};

/// The server's settings, or `None` (the test skips, saying so) when none is configured and
/// none is required.
struct Server {
    endpoint: String,
    bucket: String,
    key_id: String,
    secret: String,
}

fn server() -> Option<Server> {
    let Ok(endpoint) = std::env::var("MEMORY_S3_ENDPOINT") else {
        assert!(
            std::env::var("MEMORY_REQUIRE_S3").is_err(),
            "MEMORY_REQUIRE_S3 is set but MEMORY_S3_ENDPOINT is not (run scripts/setup-s3.sh)"
        );
        eprintln!("skipped: MEMORY_S3_ENDPOINT is not set (scripts/setup-s3.sh starts a server)");
        return None;
    };
    let var = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    Some(Server {
        endpoint,
        bucket: var("MEMORY_S3_BUCKET", "memory-test"),
        key_id: var("MEMORY_S3_ACCESS_KEY_ID", "memorytest"),
        secret: var("MEMORY_S3_SECRET_ACCESS_KEY", "memorytest-secret"),
    })
}

impl Server {
    fn options(&self) -> LanceOptions {
        LanceOptions::default()
            .storage_option("aws_endpoint", &self.endpoint)
            .storage_option("aws_region", "us-east-1")
            .storage_option("aws_access_key_id", &self.key_id)
            .storage_option("aws_secret_access_key", &self.secret)
            .storage_option("allow_http", "true")
    }

    /// A fresh prefix of the bucket, as a database URI and as an object-store path.
    fn database(&self, tag: &str) -> (String, String) {
        let prefix = format!("memorytest/{}", contract::unique(tag));
        (format!("s3://{}/{prefix}", self.bucket), prefix)
    }

    /// The bucket, reached directly (to read what LanceDB wrote).
    fn store(&self) -> Arc<dyn ObjectStore> {
        Arc::new(
            object_store::aws::AmazonS3Builder::new()
                .with_endpoint(&self.endpoint)
                .with_bucket_name(&self.bucket)
                .with_region("us-east-1")
                .with_access_key_id(&self.key_id)
                .with_secret_access_key(&self.secret)
                .with_allow_http(true)
                .build()
                .unwrap(),
        )
    }

    /// Every object under `prefix`.
    async fn objects(&self, prefix: &str) -> Vec<object_store::path::Path> {
        self.store()
            .list(Some(&prefix.into()))
            .map_ok(|meta| meta.location)
            .try_collect()
            .await
            .unwrap()
    }

    /// The objects under `prefix` whose bytes contain `needle`.
    async fn objects_containing(&self, prefix: &str, needle: &[u8]) -> Vec<String> {
        let store = self.store();
        let mut found = Vec::new();
        for path in self.objects(prefix).await {
            let bytes = store.get(&path).await.unwrap().bytes().await.unwrap();
            if bytes.windows(needle.len()).any(|w| w == needle) {
                found.push(path.to_string());
            }
        }
        found
    }

    /// Removes whatever is left under `prefix`.
    async fn remove(&self, prefix: &str) {
        let store = self.store();
        for path in self.objects(prefix).await {
            store.delete(&path).await.unwrap();
        }
    }
}

#[tokio::test]
async fn lancedb_in_a_bucket_passes_the_contract() {
    let Some(server) = server() else { return };
    let (uri, prefix) = server.database("lance-contract");
    let index = LanceVectorIndex::connect(&uri, server.options())
        .await
        .unwrap();
    contract::vector_index::run_all(&index).await;
    index.drop_all().await.unwrap();
    server.remove(&prefix).await;
}

/// Two connections on one bucket prefix (two servers sharing a vector store): of two first
/// writers with different models exactly one wins.
#[tokio::test]
async fn the_model_check_is_atomic_in_a_bucket() {
    let Some(server) = server() else { return };
    let (uri, prefix) = server.database("lance-race");
    let first = LanceVectorIndex::connect(&uri, server.options())
        .await
        .unwrap();
    let second = LanceVectorIndex::connect(&uri, server.options())
        .await
        .unwrap();
    contract::vector_index::the_model_check_is_atomic(Arc::new(first.clone()), Arc::new(second))
        .await;
    first.drop_all().await.unwrap();
    server.remove(&prefix).await;
}

/// A deleted vector leaves the bucket once its namespace is erased: no object holds it.
#[tokio::test]
async fn erasure_removes_deleted_vectors_from_the_bucket() {
    const MARKER: &str = "erase-me-7f3a9c";
    let Some(server) = server() else { return };
    let (uri, prefix) = server.database("lance-erase");
    let index = LanceVectorIndex::connect(&uri, server.options())
        .await
        .unwrap();
    let mut records: Vec<VectorRecord> = (0..50)
        .map(|i| VectorRecord::new(format!("keep{i}"), vec![i as f32, 1.0, 0.5], "m"))
        .collect();
    records.push(VectorRecord::new(MARKER, vec![7.0, 7.0, 7.0], "m"));
    index.upsert("memories", records).await.unwrap();
    assert!(
        !server
            .objects_containing(&prefix, MARKER.as_bytes())
            .await
            .is_empty(),
        "the marker is in the bucket before the delete (positive control)"
    );
    assert_eq!(
        index
            .delete("memories", &[MARKER.to_owned()])
            .await
            .unwrap(),
        1
    );
    index.erase_deleted("memories").await.unwrap();
    assert_eq!(
        server.objects_containing(&prefix, MARKER.as_bytes()).await,
        Vec::<String>::new()
    );
    assert_eq!(
        index
            .query("memories", &[1.0, 1.0, 0.5], 100)
            .await
            .unwrap()
            .len(),
        50
    );
    index.drop_all().await.unwrap();
    server.remove(&prefix).await;
}
