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
        memory.remember("ada", remember(content)).await.unwrap();
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

fn remember(content: &str) -> RememberRequest {
    RememberRequest {
        content: content.into(),
        ..RememberRequest::default()
    }
}

/// The catalogue's MiniLM entry by name is the int8 embedder: the same files, the same model
/// id, so a profile embedded by `local-int8` needs no re-embedding.
#[tokio::test]
async fn the_minilm_catalogue_entry_is_the_int8_embedder_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let Some((deployment, memory)) = open(dir.path(), "local-int8").await else {
        return;
    };
    memory
        .remember("ada", remember("My sister teaches chemistry in Porto"))
        .await
        .unwrap();
    deployment.close().await;
    let Some((deployment, memory)) = open(dir.path(), "all-MiniLM-L6-v2").await else {
        return;
    };
    let recalled = memory
        .recall("ada", RecallRequest::new("who works at a school?", 2))
        .await
        .unwrap();
    assert!(
        vector_notes(&recalled).is_empty(),
        "the same model id: {:?}",
        recalled.degraded
    );
    deployment.close().await;
}

/// A name the catalogue lacks is refused when the memory is opened, naming what it has.
#[tokio::test]
async fn unknown_models_are_refused_with_the_catalogue() {
    let dir = tempfile::tempdir().unwrap();
    for (section, wanted) in [
        ("embedder = \"bge-huge\"", "bge-small-en-v1.5"),
        ("reranker = \"colbert\"", "ms-marco-MiniLM-L-6-v2"),
    ] {
        std::fs::write(
            dir.path().join("memory.toml"),
            format!("[memory]\n{section}\n"),
        )
        .unwrap();
        let deployment = Deployment::open(dir.path()).unwrap();
        let error = deployment.memory_service().await.err().unwrap().to_string();
        assert!(error.contains(wanted), "{section}: {error}");
        deployment.close().await;
    }
}

/// A catalogue model is loaded once a process, however many deployments (a tenant each) ask
/// for it: the same model, not another copy of its weights.
#[test]
fn a_catalogue_model_is_loaded_once_a_process() {
    let mut config = memory_config::MemoryConfig::default();
    config.memory.embedder = memory_config::EmbedderChoice::Model("all-MiniLM-L6-v2".into());
    let (first, note) = memory_compose::embedder(&config).unwrap();
    let Some(first) = first else {
        assert!(
            !std::env::var("MEMORY_REQUIRE_MODEL").is_ok_and(|v| v == "1"),
            "MEMORY_REQUIRE_MODEL=1 but the int8 model is not installed: {note:?}"
        );
        eprintln!("skipped: {note:?}");
        return;
    };
    let (again, _) = memory_compose::embedder(&config).unwrap();
    assert!(std::sync::Arc::ptr_eq(&first, &again.unwrap()));
}
