//! `[storage] vectors = "lancedb"`: each profile's vectors in LanceDB tables on disk, beside
//! SQLite records (built with the `lancedb` feature: `cargo test -p memory-compose --features
//! lancedb --test lancedb`).
#![cfg(feature = "lancedb")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use memory_compose::Deployment;
use memory_config::{Backend, Role};
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
