//! A metadata filter in recall, ranked inside every channel (key, full text, vectors, dated),
//! on each composition that serves the long-term roles: the embedded default (SQLite), Tantivy
//! text beside SQLite records, and every role on PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use memory_compose::Deployment;
use memory_core::MetadataFilter;
use memory_core::ports::{MemoryKind, SystemClock};
use memory_engine::long_term::{
    IngestMessage, MemoryService, RecallItem, RecallRequest, RememberRequest,
};
use memory_testkit::in_memory::HashingEmbedder;
use serde_json::json;

/// Memories in the profile; one in fifty is team "apollo".
const MEMORIES: usize = 500;

fn tagged(content: String, team: &str, key: Option<&str>) -> RememberRequest {
    RememberRequest {
        content,
        session_id: Some("chat".into()),
        kind: Some(MemoryKind::Fact),
        key: key.map(str::to_owned),
        metadata: serde_json::from_value(json!({ "team": team, "n": 1 })).unwrap(),
        expires_at: None,
    }
}

fn filter(value: serde_json::Value) -> MetadataFilter {
    MetadataFilter::from_json(&value).unwrap()
}

/// The memories of other teams say "deadline" loudest, far past every channel's depth, so a
/// filter applied after fusion would find nothing: the filtered recall must still fill its
/// limit from the 2 % in scope, and only from it.
async fn filtered_recall_ranks_inside_the_scope(deployment: &Deployment) {
    let memory = MemoryService::new(
        deployment.long_term_backends().await.unwrap(),
        Arc::new(SystemClock),
    )
    .with_embedder(Arc::new(HashingEmbedder::new(64)));
    let mut apollo = Vec::new();
    for i in 0..MEMORIES {
        let request = if i % 50 == 7 {
            tagged(
                format!("Apollo note {i}: the deadline moved, budget approved, venue booked"),
                "apollo",
                None,
            )
        } else {
            tagged(format!("deadline deadline {i}"), "other", None)
        };
        let stored = memory.remember("p", request).await.unwrap();
        if i % 50 == 7 {
            apollo.push(stored.id);
        }
    }
    memory.forget("p", &apollo[0], "wrong").await.unwrap();
    memory
        .ingest_messages(
            "p",
            "c",
            vec![IngestMessage::new("user", "the deadline is tomorrow")],
        )
        .await
        .unwrap();

    let unfiltered = memory
        .recall("p", RecallRequest::new("deadline", 5))
        .await
        .unwrap();
    assert!(
        unfiltered
            .hits
            .iter()
            .all(|h| !h.item.content().starts_with("Apollo")),
        "the scope ranks below the rest"
    );
    let team = filter(json!({"team": "apollo"}));
    let five = memory
        .recall(
            "p",
            RecallRequest::new("deadline", 5).filtered(team.clone()),
        )
        .await
        .unwrap();
    assert_eq!(five.hits.len(), 5, "the limit is filled from the scope");
    for hit in &five.hits {
        let RecallItem::Memory(m) = &hit.item else {
            panic!("raw messages carry no metadata: {hit:?}");
        };
        assert!(apollo[1..].contains(&m.id), "{m:?}");
        let channels: Vec<&str> = hit.ranks.iter().map(|r| r.channel).collect();
        assert!(channels.contains(&"memory_fts"), "{channels:?}");
        assert!(channels.contains(&"direct_vector"), "{channels:?}");
    }
    let all = memory
        .recall(
            "p",
            RecallRequest::new("deadline", 50).filtered(team.clone()),
        )
        .await
        .unwrap();
    let mut ids: Vec<&str> = all.hits.iter().map(|h| h.item.id()).collect();
    ids.sort_unstable();
    let mut expected: Vec<&str> = apollo[1..].iter().map(String::as_str).collect();
    expected.sort_unstable();
    assert_eq!(
        ids, expected,
        "every current match, the forgotten one left out"
    );

    // Operators beyond equality, evaluated by the store: a range and a negation.
    let ranged = memory
        .recall(
            "p",
            RecallRequest::new("deadline", 5).filtered(filter(
                json!({"$and": [{"n": {"$gte": 1}}, {"$not": {"team": "other"}}]}),
            )),
        )
        .await
        .unwrap();
    assert_eq!(ranged.hits.len(), 5);
    assert!(
        ranged
            .hits
            .iter()
            .all(|h| h.item.content().starts_with("Apollo"))
    );
    // A filter an empty object passes lets raw messages in.
    let with_raw = memory
        .recall(
            "p",
            RecallRequest::new("deadline tomorrow", 50)
                .filtered(filter(json!({"$not": {"team": "other"}}))),
        )
        .await
        .unwrap();
    assert_eq!(with_raw.hits.len(), apollo.len(), "{:?}", with_raw.hits);
    assert!(
        with_raw
            .hits
            .iter()
            .any(|h| matches!(h.item, RecallItem::Raw { .. }))
    );
    // The key channel keeps to the scope, and the dated channel too.
    memory
        .remember(
            "p",
            tagged("Prefers green tea".into(), "other", Some("drink")),
        )
        .await
        .unwrap();
    let keyed = memory
        .recall("p", RecallRequest::new("drink", 5).filtered(team.clone()))
        .await
        .unwrap();
    assert!(
        keyed
            .hits
            .iter()
            .all(|h| h.item.content() != "Prefers green tea"),
        "{:?}",
        keyed.hits
    );
    let dated = memory
        .recall(
            "p",
            RecallRequest::new("what was the deadline yesterday", 5).filtered(team),
        )
        .await
        .unwrap();
    assert!(
        dated
            .hits
            .iter()
            .all(|h| h.item.content().starts_with("Apollo")),
        "{:?}",
        dated.hits
    );
}

#[tokio::test]
async fn filtered_recall_on_the_embedded_default() {
    let dir = tempfile::tempdir().unwrap();
    let deployment = Deployment::open(dir.path()).unwrap();
    filtered_recall_ranks_inside_the_scope(&deployment).await;
    deployment.close().await;
}

#[tokio::test]
async fn filtered_recall_on_tantivy_text() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        "[storage]\ntext = \"tantivy\"\n",
    )
    .unwrap();
    let deployment = Deployment::open(dir.path()).unwrap();
    filtered_recall_ranks_inside_the_scope(&deployment).await;
    deployment.close().await;
}

#[tokio::test]
async fn filtered_recall_on_postgres() {
    common::on_postgres(
        "test_filtered_recall",
        "",
        filtered_recall_ranks_inside_the_scope,
    )
    .await;
}
