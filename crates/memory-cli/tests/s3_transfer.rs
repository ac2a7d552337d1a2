//! Exports and imports through a bucket (`s3://bucket/key`): a session and a profile move
//! from one data directory to another through a real S3-compatible server
//! (`scripts/setup-s3.sh`; the test command requires one).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::run;

use memory_core::ports::{BlobStore, BlobStoreExt};

#[tokio::test]
async fn a_session_and_a_profile_move_between_deployments_through_a_bucket() {
    let Ok(endpoint) = std::env::var("MEMORY_S3_ENDPOINT") else {
        assert!(
            std::env::var("MEMORY_REQUIRE_S3").is_err(),
            "MEMORY_REQUIRE_S3 is set but MEMORY_S3_ENDPOINT is not"
        );
        eprintln!("skipped: MEMORY_S3_ENDPOINT is not set");
        return;
    };
    let bucket = std::env::var("MEMORY_S3_BUCKET").unwrap_or_else(|_| "memory-test".into());
    let config = format!(
        "[memory]\nembedder = \"none\"\n\n[storage.s3]\nbucket = \"{bucket}\"\nendpoint = \"{endpoint}\"\n\
         region = \"auto\"\naccess_key_env = \"MEMORY_S3_ACCESS_KEY_ID\"\n\
         secret_key_env = \"MEMORY_S3_SECRET_ACCESS_KEY\"\n"
    );
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for dir in [a.path(), b.path()] {
        std::fs::write(dir.join("memory.toml"), &config).unwrap();
    }
    let root = format!("memorytest/transfer-{}", uuid::Uuid::new_v4().simple());
    let session_url = format!("s3://{bucket}/{root}/trip.jsonl");
    let profile_url = format!("s3://{bucket}/{root}/home.jsonl");

    run(a.path(), &["session", "create", "--id", "trip"]);
    for (id, text) in [("u1", "Weather in Lisbon?"), ("a1", "Sunny, 22°C.")] {
        let message = serde_json::json!({"id": id, "role": "user", "parts": [{"type": "text", "text": text}]});
        run(
            a.path(),
            &["message", "append", "trip", &message.to_string()],
        );
    }
    run(
        a.path(),
        &[
            "profile",
            "remember",
            "home",
            "The boiler was serviced in May.",
        ],
    );
    run(a.path(), &["export", "trip", "--output", &session_url]);
    run(
        a.path(),
        &["profile", "export", "home", "--output", &profile_url],
    );

    run(b.path(), &["import", &session_url]);
    run(b.path(), &["profile", "import", "home", &profile_url]);
    assert_eq!(
        run(b.path(), &["history", "trip", "--json"]),
        run(a.path(), &["history", "trip", "--json"])
    );
    assert_eq!(
        run(b.path(), &["profile", "list", "home", "--json"]),
        run(a.path(), &["profile", "list", "home", "--json"])
    );

    let blobs = memory_s3::S3BlobStore::new(
        memory_s3::S3Bucket::connect(
            memory_s3::S3Config::new(&bucket)
                .endpoint(&endpoint)
                .region("auto")
                .static_credentials(
                    std::env::var("MEMORY_S3_ACCESS_KEY_ID").unwrap(),
                    std::env::var("MEMORY_S3_SECRET_ACCESS_KEY").unwrap(),
                ),
        )
        .await
        .unwrap(),
    );
    let written = blobs.list_all(&format!("{root}/")).await.unwrap();
    assert_eq!(written.len(), 2);
    for blob in written {
        blobs.delete(&blob.key).await.unwrap();
    }
}
