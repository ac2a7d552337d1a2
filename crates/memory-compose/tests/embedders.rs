//! The two local embedders through the composition, on the embedded default: `[memory]
//! embedder = "local-int8"` stores vectors under its own model id; a deployment switched to
//! `local` leaves the vector channels out of recall, and says so, until `reembed` rebuilds
//! them with its model.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use memory_compose::Deployment;
use memory_engine::long_term::{MemoryService, RecallRequest, RememberRequest};

async fn open(dir: &Path, embedder: &str) -> Option<(Deployment, MemoryService)> {
    std::fs::write(
        dir.join("memory.toml"),
        format!("[memory]\nembedder = \"{embedder}\"\n"),
    )
    .unwrap();
    let deployment = Deployment::open(dir).unwrap();
    let (memory, note) = deployment.memory_service().await.unwrap();
    if let Some(note) = note {
        if std::env::var("MEMORY_REQUIRE_MODEL").is_ok_and(|v| v == "1") {
            panic!("MEMORY_REQUIRE_MODEL=1 but {embedder} is not installed: {note}");
        }
        eprintln!("skipped: {note}");
        deployment.close().await;
        return None;
    }
    Some((deployment, memory))
}

fn vector_notes(response: &memory_engine::long_term::RecallResponse) -> Vec<String> {
    response
        .degraded
        .iter()
        .filter(|d| d.feature == "vectors")
        .map(|d| d.reason.clone())
        .collect()
}

#[tokio::test]
async fn switching_between_the_local_embedders_takes_a_reembed() {
    let dir = tempfile::tempdir().unwrap();
    let Some((deployment, memory)) = open(dir.path(), "local-int8").await else {
        return;
    };
    for content in [
        "I keep three beehives in Sintra",
        "My sister teaches chemistry in Porto",
    ] {
        let request = RememberRequest {
            content: content.into(),
            session_id: None,
            kind: None,
            key: None,
            metadata: Default::default(),
            expires_at: None,
        };
        memory.remember("ada", request).await.unwrap();
    }
    let question = || RecallRequest::new("who works at a school?", 2);
    let recalled = memory.recall("ada", question()).await.unwrap();
    assert!(
        vector_notes(&recalled).is_empty(),
        "{:?}",
        recalled.degraded
    );
    assert!(recalled.hits[0].item.content().contains("chemistry"));
    deployment.close().await;

    let Some((deployment, memory)) = open(dir.path(), "local").await else {
        return;
    };
    let notes = vector_notes(&memory.recall("ada", question()).await.unwrap());
    assert!(
        notes.iter().any(|n| n.contains(memory_onnx_model_id())),
        "the int8 vectors are named and left out: {notes:?}"
    );
    let report = memory.reembed("ada").await.unwrap();
    assert_eq!(report.model, "sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!(report.memories, 2);
    let recalled = memory.recall("ada", question()).await.unwrap();
    assert!(
        vector_notes(&recalled).is_empty(),
        "{:?}",
        recalled.degraded
    );
    deployment.close().await;
}

fn memory_onnx_model_id() -> &'static str {
    "all-MiniLM-L6-v2@onnx-int8"
}
