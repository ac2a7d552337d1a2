//! Archiving cold sessions into the blob store (the data directory's, and a real
//! S3-compatible bucket when the test command starts one): history, overlays and blocks
//! leave the hot stores, the registry keeps the record, and the next read or append brings
//! everything back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use memory_compose::Deployment;
use memory_core::ports::BlobStoreExt;
use memory_core::{Parent, Role, SearchQuery, UiMessage};

const BLOCKS: &str = "[[blocks]]\nlabel = \"notes\"\nkind = \"writable\"\nmax_tokens = 200\n\n\
                      [memory]\nembedder = \"none\"\n";

async fn round_trip(dir: &Path, config: &str) {
    std::fs::write(dir.join("memory.toml"), config).unwrap();
    let deployment = Deployment::open(dir).unwrap();
    let manager = deployment.session_manager().await.unwrap();
    let id = manager.create(Default::default()).await.unwrap().id;
    let other = manager.create(Default::default()).await.unwrap().id;
    let messages: Vec<UiMessage> = (0..10_000)
        .map(|i| {
            UiMessage::text_message(
                format!("m{i}"),
                Role::User,
                format!("entry {i} of the lighthouse log"),
            )
        })
        .collect();
    for chunk in messages.chunks(1_000) {
        manager
            .append_all(&id, chunk.to_vec(), Parent::LatestLeaf)
            .await
            .unwrap();
    }
    manager
        .append(
            &id,
            UiMessage::text_message("alt", Role::User, "a heron branch"),
            Parent::message("m10"),
        )
        .await
        .unwrap();
    manager
        .append(
            &other,
            UiMessage::text_message("o1", Role::User, "a heron elsewhere"),
            Parent::LatestLeaf,
        )
        .await
        .unwrap();
    let session = manager.session(&id).await.unwrap();
    session
        .context()
        .replace("notes", "Prefers green tea")
        .await
        .unwrap();
    session
        .add_compaction("the first hundred entries", "m0", "m99")
        .await
        .unwrap();
    let before = session.history(None).await.unwrap();
    let branch = session.history(Some("alt")).await.unwrap();
    let info = manager.get(&id).await.unwrap().unwrap();

    let report = manager.archive(&id).await.unwrap();
    assert_eq!(report.messages, 10_001);
    assert!(manager.is_archived(&id).await.unwrap());
    // The hot stores hold nothing of it; the registry keeps its record.
    assert!(
        manager
            .store()
            .messages(&id, None, 10)
            .await
            .unwrap()
            .messages
            .is_empty()
    );
    assert_eq!(manager.get(&id).await.unwrap().unwrap(), info);
    assert!(
        manager
            .list(10, 0)
            .await
            .unwrap()
            .iter()
            .any(|s| s.id == id)
    );
    let hits = manager.search(&SearchQuery::new("heron")).await.unwrap();
    assert_eq!(hits.len(), 1, "archived messages are not searched");
    let blobs = deployment.blob_store().await.unwrap();
    assert_eq!(blobs.list_all("archive/").await.unwrap().len(), 1);

    // A second server sees the archive and brings it back on its first read.
    let elsewhere = Deployment::open(dir)
        .unwrap()
        .session_manager()
        .await
        .unwrap();
    let back = elsewhere.session(&id).await.unwrap();
    assert!(!elsewhere.is_archived(&id).await.unwrap());
    assert_eq!(back.history(None).await.unwrap(), before);
    assert_eq!(back.history(Some("alt")).await.unwrap(), branch);
    assert_eq!(
        back.context().get("notes").await.unwrap().content,
        "Prefers green tea"
    );
    assert_eq!(back.compactions().await.unwrap().len(), 1);
    assert_eq!(
        manager
            .search(&SearchQuery::new("heron"))
            .await
            .unwrap()
            .len(),
        2
    );
    assert!(
        blobs.list_all("archive/").await.unwrap().is_empty(),
        "the archive object is gone"
    );

    // An append to an archived session brings it back first, then lands after it.
    manager.archive(&id).await.unwrap();
    manager
        .append(
            &id,
            UiMessage::text_message("late", Role::User, "back again"),
            Parent::LatestLeaf,
        )
        .await
        .unwrap();
    let after = manager
        .session(&id)
        .await
        .unwrap()
        .history(None)
        .await
        .unwrap();
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(after.last().unwrap().id, "late");

    // Idle sessions: everything older than now is cold; deleting an archived session
    // removes its archive too.
    let moved = manager.archive_idle(-1).await.unwrap();
    assert_eq!(moved.len(), 2);
    manager.delete(&other).await.unwrap();
    manager.delete(&id).await.unwrap();
    assert!(blobs.list_all("archive/").await.unwrap().is_empty());
}

#[tokio::test]
async fn sessions_archive_to_the_data_directory_and_come_back() {
    let dir = tempfile::tempdir().unwrap();
    round_trip(dir.path(), BLOCKS).await;
}

#[tokio::test]
async fn sessions_archive_to_an_s3_bucket_and_come_back() {
    let prefix = format!("memorytest/archive-{}/", uuid::Uuid::new_v4().simple());
    let Some(s3) = common::s3_blobs_section(&prefix) else {
        return;
    };
    let config = format!("{BLOCKS}\n{s3}");
    let dir = tempfile::tempdir().unwrap();
    round_trip(dir.path(), &config).await;
}

/// A session id may hold `:`: deleting or archiving session `a` touches nothing of session
/// `a:b` (whose keys start with `a`'s key prefix).
#[tokio::test]
async fn a_session_whose_id_extends_another_keeps_its_blocks() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("memory.toml"), BLOCKS).unwrap();
    let manager = Deployment::open(dir.path())
        .unwrap()
        .session_manager()
        .await
        .unwrap();
    let ids: Vec<memory_core::SessionId> = ["a", "a:b"]
        .iter()
        .map(|id| memory_core::SessionId::new(*id).unwrap())
        .collect();
    for id in &ids {
        let spec = memory_core::NewSession {
            id: Some(id.clone()),
            ..Default::default()
        };
        manager.create(spec).await.unwrap();
        let session = manager.session(id).await.unwrap();
        session
            .context()
            .replace("notes", &format!("notes of {id}"))
            .await
            .unwrap();
        session.freeze_system_prompt().await.unwrap();
    }
    let notes = |id: usize| {
        let (manager, id) = (manager.clone(), ids[id].clone());
        async move {
            manager
                .session(&id)
                .await
                .unwrap()
                .context()
                .get("notes")
                .await
                .unwrap()
                .content
        }
    };
    manager.archive(&ids[0]).await.unwrap();
    assert_eq!(
        notes(1).await,
        "notes of a:b",
        "archiving a leaves a:b alone"
    );
    assert_eq!(notes(0).await, "notes of a", "a comes back whole");
    manager.delete(&ids[0]).await.unwrap();
    assert_eq!(
        notes(1).await,
        "notes of a:b",
        "deleting a leaves a:b alone"
    );
}
