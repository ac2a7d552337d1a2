//! The shared contract suites against a real S3-compatible server (`scripts/setup-s3.sh`
//! starts SeaweedFS; the test command requires one). Each test works under a prefix of its
//! own and deletes what it wrote.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use memory_core::MemoryError;
use memory_core::ports::{BlobStore, BlobStoreExt, PutMode, SkillStore};
use memory_s3::{S3BlobStore, S3Bucket, S3Config, S3SkillStore};
use memory_testkit::contract;

/// The test server's configuration under `prefix`, or `None` (skipped, saying so) when no
/// server is configured and none is required.
fn config(prefix: &str) -> Option<S3Config> {
    let Ok(endpoint) = std::env::var("MEMORY_S3_ENDPOINT") else {
        assert!(
            std::env::var("MEMORY_REQUIRE_S3").is_err(),
            "MEMORY_REQUIRE_S3 is set but MEMORY_S3_ENDPOINT is not (run scripts/setup-s3.sh)"
        );
        eprintln!("skipped: MEMORY_S3_ENDPOINT is not set (scripts/setup-s3.sh starts a server)");
        return None;
    };
    let var = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    Some(
        S3Config::new(var("MEMORY_S3_BUCKET", "memory-test"))
            .endpoint(endpoint)
            .region("auto")
            .prefix(prefix)
            .static_credentials(
                var("MEMORY_S3_ACCESS_KEY_ID", "memorytest"),
                var("MEMORY_S3_SECRET_ACCESS_KEY", "memorytest-secret"),
            ),
    )
}

fn fresh_prefix(name: &str) -> String {
    format!("memorytest/{name}-{}/", uuid::Uuid::new_v4().simple())
}

async fn fresh_bucket(name: &str) -> Option<S3Bucket> {
    Some(
        S3Bucket::connect(config(&fresh_prefix(name))?)
            .await
            .unwrap(),
    )
}

#[tokio::test]
async fn s3_blob_store_passes_the_contract() {
    let Some(bucket) = fresh_bucket("blobs").await else {
        return;
    };
    let store = S3BlobStore::new(bucket);
    contract::blob_store::run_all(&store, "").await;
    contract::blob_store::run_all(&store, "nested/").await;
    assert!(store.list_all("").await.unwrap().is_empty());
}

#[tokio::test]
async fn s3_skill_store_passes_the_contract() {
    let Some(bucket) = fresh_bucket("skills").await else {
        return;
    };
    let store = S3SkillStore::new(bucket.clone(), "playbooks");
    contract::skill_store::run_all(&store).await;
    let blobs = S3BlobStore::new(bucket);
    for blob in blobs.list_all("").await.unwrap() {
        blobs.delete(&blob.key).await.unwrap();
    }
}

/// Eight writers add a skill each at once: the index keeps all eight (compare-and-swap on
/// its ETag), and listing them is one request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_skill_writers_keep_every_skill_in_the_index() {
    let Some(bucket) = fresh_bucket("skills-race").await else {
        return;
    };
    let writers: Vec<_> = (0..8)
        .map(|i| {
            let store = S3SkillStore::new(bucket.clone(), "race");
            tokio::spawn(async move {
                store
                    .put(&format!("skill-{i}"), "body", Some(format!("number {i}")))
                    .await
                    .unwrap();
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let listed = S3SkillStore::new(bucket.clone(), "race")
        .list()
        .await
        .unwrap();
    assert_eq!(listed.len(), 8, "{listed:?}");
    let blobs = S3BlobStore::new(bucket);
    for blob in blobs.list_all("").await.unwrap() {
        blobs.delete(&blob.key).await.unwrap();
    }
}

/// Prefixes keep deployments apart: one prefix never lists or reads another's blobs.
#[tokio::test]
async fn prefixes_keep_deployments_apart() {
    let (Some(a), Some(b)) = (
        fresh_bucket("tenant-a").await,
        fresh_bucket("tenant-b").await,
    ) else {
        return;
    };
    let (a, b) = (S3BlobStore::new(a), S3BlobStore::new(b));
    a.put("export.jsonl", b"a's".to_vec(), PutMode::Overwrite)
        .await
        .unwrap();
    assert_eq!(b.get("export.jsonl").await.unwrap(), None);
    assert!(b.list_all("").await.unwrap().is_empty());
    a.delete("export.jsonl").await.unwrap();
}

/// A bucket that does not exist, or credentials the server refuses, fail at connect naming
/// the bucket; a prefix that is not a key start is invalid input.
#[tokio::test]
async fn a_missing_bucket_or_bad_credentials_fail_at_connect() {
    let Some(config) = config("") else {
        return;
    };
    let missing = S3Bucket::connect(config.clone().prefix("").region("auto"))
        .await
        .map(|_| ());
    assert!(missing.is_ok(), "the test bucket answers");
    let mut wrong = config.clone();
    wrong = wrong.static_credentials("memorytest", "not-the-secret");
    let error = S3Bucket::connect(wrong).await.unwrap_err();
    assert!(matches!(error, MemoryError::Backend { .. }), "{error}");
    assert!(error.to_string().contains("memory-test"), "{error}");
    let error = S3Bucket::connect(config.prefix("no-slash"))
        .await
        .unwrap_err();
    assert!(matches!(error, MemoryError::InvalidInput { .. }), "{error}");
}

/// A server that answers every request with 503 SlowDown: the adapter retries with backoff
/// (every attempt reaches the server), then reports `Transient`, never `Backend`.
#[tokio::test]
async fn throttling_is_retried_then_reported_as_transient() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&requests);
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let counted = Arc::clone(&counted);
            tokio::spawn(async move {
                let mut buffer = vec![0; 64 * 1024];
                // One request per connection is enough for the SDK's retries.
                if socket.read(&mut buffer).await.unwrap_or(0) > 0 {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let body = "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>";
                    let reply = format!(
                        "HTTP/1.1 503 Slow Down\r\ncontent-type: application/xml\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(reply.as_bytes()).await;
                }
            });
        }
    });
    let config = S3Config::new("throttled")
        .endpoint(format!("http://127.0.0.1:{port}"))
        .region("auto")
        .static_credentials("key", "secret")
        .max_attempts(3);
    let error = S3Bucket::connect(config).await.unwrap_err();
    assert!(matches!(error, MemoryError::Transient { .. }), "{error}");
    assert_eq!(
        requests.load(Ordering::SeqCst),
        3,
        "each attempt reached the server"
    );

    // Nothing listening: transient as well (the connection is refused).
    drop(requests);
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead = closed.local_addr().unwrap().port();
    drop(closed);
    let config = S3Config::new("nowhere")
        .endpoint(format!("http://127.0.0.1:{dead}"))
        .region("auto")
        .static_credentials("key", "secret")
        .max_attempts(2);
    let error = S3Bucket::connect(config).await.unwrap_err();
    assert!(matches!(error, MemoryError::Transient { .. }), "{error}");
}
