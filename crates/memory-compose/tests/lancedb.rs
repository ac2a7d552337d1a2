//! `[storage] vectors = "lancedb"`: each profile's vectors in LanceDB tables on disk, beside
//! SQLite records, or in the `[storage.s3]` bucket (built with the `lancedb` feature:
//! `cargo test -p memory-compose --features lancedb --test lancedb`).
#![cfg(feature = "lancedb")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use memory_compose::Deployment;
use memory_config::{Backend, Role};
use memory_core::ports::{BlobStoreExt, VectorFilter, VectorQuery, VectorRecord};
use memory_engine::long_term::{RecallRequest, RememberRequest};

#[tokio::test]
async fn profile_vectors_live_in_lancedb() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        "[storage]\nvectors = \"lancedb\"\n",
    )
    .unwrap();
    let deployment = Deployment::open(dir.path()).unwrap();
    assert_eq!(
        deployment.storage().backend(Role::Vectors),
        Backend::Lancedb
    );
    let (memory, note) = deployment.memory_service().await.unwrap();
    if std::env::var("MEMORY_REQUIRE_MODEL").is_ok() {
        assert!(note.is_none(), "the local embedder is installed: {note:?}");
    }
    let Some(_) = note.is_none().then_some(()) else {
        eprintln!("skipped: no local embedder ({note:?})");
        return;
    };
    let remembered = memory
        .remember(
            "ada",
            RememberRequest {
                content: "Ada keeps three beehives in Sintra.".into(),
                session_id: None,
                kind: None,
                key: None,
                metadata: Default::default(),
                expires_at: None,
            },
        )
        .await
        .unwrap();
    let vectors = deployment
        .long_term_backends()
        .await
        .unwrap()
        .vectors
        .vector_index("ada")
        .await
        .unwrap();
    assert!(vectors.model("memories").await.unwrap().is_some());
    assert!(
        dir.path().join("lancedb/ada").is_dir(),
        "the profile's database"
    );
    // A paraphrase with no shared word is found through the vector channel.
    let recalled = memory
        .recall("ada", RecallRequest::new("apiculture near Lisbon", 5))
        .await
        .unwrap();
    assert!(
        recalled.hits.iter().any(|h| matches!(&h.item,
            memory_engine::long_term::RecallItem::Memory(m) if m.id == remembered.id)),
        "{recalled:?}"
    );
    memory.purge("ada", &remembered.id, false).await.unwrap();
    assert!(
        vectors
            .get("memories", std::slice::from_ref(&remembered.id))
            .await
            .unwrap()
            .is_empty()
    );
}

/// `location = "s3"`: the tables live in `[storage.s3]`'s bucket under its prefix, reached
/// with its endpoint and keys, and the settings reach the index.
#[tokio::test]
async fn profile_vectors_live_in_the_s3_bucket() {
    let prefix = format!(
        "memorytest/compose-lance-{}/",
        uuid::Uuid::new_v4().simple()
    );
    let Some(s3) = common::s3_blobs_section(&prefix) else {
        return;
    };
    let toml = s3.replace(
        "[storage]\nblobs = \"s3\"\n",
        "[storage]\nblobs = \"s3\"\nvectors = \"lancedb\"\n\n[storage.lancedb]\n\
         location = \"s3\"\nprefix = \"vectors/\"\nnprobes = 4\n",
    );
    assert!(toml.contains("location"), "{toml}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("memory.toml"), toml).unwrap();
    let deployment = Deployment::open(dir.path()).unwrap();
    let vectors = deployment.long_term_backends().await.unwrap().vectors;
    let index = vectors.vector_index("ada").await.unwrap();
    index
        .upsert(
            "memories",
            vec![
                VectorRecord::new("m1", vec![1.0, 0.0], "mini"),
                VectorRecord::new("m2", vec![0.0, 1.0], "mini"),
            ],
        )
        .await
        .unwrap();
    let hits = index
        .search("memories", &VectorQuery::new(&[0.9, 0.1], 1))
        .await
        .unwrap();
    assert_eq!(hits[0].id, "m1");
    assert_eq!(
        index
            .count("memories", &VectorFilter::default())
            .await
            .unwrap(),
        2
    );
    let blobs = deployment.blob_store().await.unwrap();
    let objects: Vec<String> = blobs
        .list_all("vectors/ada/")
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.key)
        .collect();
    assert!(
        objects
            .iter()
            .any(|k| k.starts_with("vectors/ada/memories.lance/")),
        "the table is in the bucket under the deployment's prefix: {objects:?}"
    );
    assert!(
        dir.path()
            .read_dir()
            .unwrap()
            .all(|e| { e.unwrap().file_name() != "lancedb" })
    );
    vectors.delete_vector_index("ada").await.unwrap();
    for blob in blobs.list_all("").await.unwrap() {
        blobs.delete(&blob.key).await.unwrap();
    }
}

/// `[storage.lancedb]` left out means the adapter's own defaults.
#[test]
fn config_defaults_are_the_adapters_defaults() {
    let options = memory_lancedb::LanceOptions::default();
    assert_eq!(
        (
            options.index_threshold,
            options.field_index_threshold,
            options.exact_filter_limit,
            options.nprobes,
            options.refine_factor
        ),
        (
            memory_config::DEFAULT_LANCEDB_INDEX_THRESHOLD,
            memory_config::DEFAULT_LANCEDB_FIELD_INDEX_THRESHOLD,
            memory_config::DEFAULT_LANCEDB_EXACT_FILTER_LIMIT,
            memory_config::DEFAULT_LANCEDB_NPROBES,
            memory_config::DEFAULT_LANCEDB_REFINE_FACTOR
        )
    );
}
