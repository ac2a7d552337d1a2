//! `[storage] text = "tantivy"`: session search and long-term recall through Tantivy indexes
//! on disk, beside SQLite records, kept in step by the engine.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use memory_compose::Deployment;
use memory_config::{Backend, Role};
use memory_core::{Parent, Role as Speaker, SearchQuery, UiMessage};
use memory_engine::long_term::{RecallRequest, RememberRequest};
use memory_testkit::contract;

fn deployment(dir: &std::path::Path) -> Deployment {
    std::fs::write(
        dir.join("memory.toml"),
        "[storage]\ntext = \"tantivy\"\n\n[memory]\nembedder = \"none\"\n",
    )
    .unwrap();
    Deployment::open(dir).unwrap()
}

#[tokio::test]
async fn sessions_and_profiles_search_through_tantivy() {
    let dir = tempfile::tempdir().unwrap();
    let deployment = deployment(dir.path());
    assert_eq!(deployment.storage().backend(Role::Text), Backend::Tantivy);
    let manager = deployment.session_manager().await.unwrap();
    // The message store through the engine's index decorator passes the store contract.
    contract::message_store::run_all(manager.store().as_ref(), None, 2_000).await;

    let id = manager.create(Default::default()).await.unwrap().id;
    for (m, text) in [
        ("u1", "The herons nest by the river"),
        ("u2", "Kingfishers dive"),
    ] {
        manager
            .append(
                &id,
                UiMessage::text_message(m, Speaker::User, text),
                Parent::LatestLeaf,
            )
            .await
            .unwrap();
    }
    let hits = manager.search(&SearchQuery::new("heron")).await.unwrap();
    assert_eq!(hits.len(), 1, "stemmed: heron finds herons");
    assert!(dir.path().join("tantivy/general").is_dir());

    let (memory, _) = deployment.memory_service().await.unwrap();
    memory
        .remember(
            "home",
            RememberRequest {
                content: "The boiler was serviced in May.".into(),
                session_id: None,
                kind: None,
                key: None,
            },
        )
        .await
        .unwrap();
    let recalled = memory
        .recall("home", RecallRequest::new("boiler serviced", 5))
        .await
        .unwrap();
    assert_eq!(
        recalled.hits.len(),
        1,
        "found through the profile's Tantivy index"
    );
    assert!(dir.path().join("tantivy/profiles/home").is_dir());
    manager.delete(&id).await.unwrap();
    assert!(
        manager
            .search(&SearchQuery::new("heron"))
            .await
            .unwrap()
            .is_empty()
    );
}

/// `reindex` rebuilds the Tantivy messages index from the store: after the index lost a
/// session's documents (cleared behind the engine's back), search finds them again.
#[tokio::test]
async fn reindex_rebuilds_the_tantivy_index_from_the_store() {
    use memory_core::ports::namespaces;
    let dir = tempfile::tempdir().unwrap();
    let deployment = deployment(dir.path());
    let manager = deployment.session_manager().await.unwrap();
    let id = manager.create(Default::default()).await.unwrap().id;
    for i in 0..50 {
        let text = format!("lighthouse log entry {i}");
        manager
            .append(
                &id,
                UiMessage::text_message(format!("m{i}"), Speaker::User, text),
                Parent::LatestLeaf,
            )
            .await
            .unwrap();
    }
    let all = SearchQuery::new("lighthouse").limit(100);
    assert_eq!(manager.search(&all).await.unwrap().len(), 50);
    deployment
        .message_text_index()
        .await
        .unwrap()
        .clear(namespaces::MESSAGES)
        .await
        .unwrap();
    assert!(
        manager.search(&all).await.unwrap().is_empty(),
        "the index lost them"
    );
    let report = manager.reindex().await.unwrap();
    assert!(report.rebuilt);
    assert_eq!(report.documents, 50);
    assert_eq!(manager.search(&all).await.unwrap().len(), 50);
}
