//! `[storage] blobs = "s3"`: the deployment's blobs and stored skills in a real
//! S3-compatible bucket (`scripts/setup-s3.sh`; the test command requires one), under the
//! configured prefix; the default keeps blobs in the data directory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use memory_compose::Deployment;
use memory_core::ports::{BlobStoreExt, PutMode};

#[tokio::test]
async fn blobs_default_to_the_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = Deployment::open(dir.path())
        .unwrap()
        .blob_store()
        .await
        .unwrap();
    assert_eq!(blobs.backend_name(), "fs");
    blobs
        .put("exports/a.jsonl", b"{}".to_vec(), PutMode::Create)
        .await
        .unwrap();
    assert!(dir.path().join("blobs/exports/a.jsonl").is_file());
}

#[tokio::test]
async fn skills_and_blobs_live_in_the_bucket() {
    let prefix = format!("memorytest/compose-{}/", uuid::Uuid::new_v4().simple());
    let Some(s3) = common::s3_blobs_section(&prefix) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        format!(
            "[[blocks]]\nlabel = \"playbooks\"\nkind = \"skill\"\n\n[memory]\nembedder = \"none\"\n\n{s3}"
        ),
    )
    .unwrap();
    let deployment = Deployment::open(dir.path()).unwrap();
    let manager = deployment.session_manager().await.unwrap();
    let id = manager.create(Default::default()).await.unwrap().id;
    let session = manager.session(&id).await.unwrap();
    session
        .context()
        .set_entry(
            "playbooks",
            "Tag, build, publish.",
            Some("release"),
            Some("How to release"),
        )
        .await
        .unwrap();
    assert_eq!(
        session
            .context()
            .load_skill("playbooks", "release")
            .await
            .unwrap()
            .as_deref(),
        Some("Tag, build, publish.")
    );
    let blobs = deployment.blob_store().await.unwrap();
    assert_eq!(blobs.backend_name(), "s3");
    let keys: Vec<String> = blobs
        .list_all("")
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.key)
        .collect();
    assert_eq!(
        keys,
        ["skills/playbooks/index.json", "skills/playbooks/release.md"],
        "the skill and its index are objects under the deployment's prefix"
    );
    for key in keys {
        blobs.delete(&key).await.unwrap();
    }
}
