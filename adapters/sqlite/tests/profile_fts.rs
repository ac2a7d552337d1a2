//! A profile database whose text is indexed elsewhere keeps no FTS5 index of its own, and
//! gets it back, complete, when it is opened as its own text index again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use memory_core::MemoryError;
use memory_core::Timestamp;
use memory_core::ports::{
    MemoryKind, MemoryProfiles, MemoryRecord, RawMessage, TextIndexes, TextQuery, namespaces,
};
use memory_sqlite::SqliteProfiles;

fn raw(id: &str, content: &str) -> RawMessage {
    RawMessage {
        id: id.into(),
        session_id: "s".into(),
        role: "user".into(),
        content: content.into(),
        created_at: Timestamp(1),
        metadata: Default::default(),
    }
}

fn memory(id: &str, content: &str) -> MemoryRecord {
    MemoryRecord {
        id: id.into(),
        kind: MemoryKind::Fact,
        content: content.into(),
        key: None,
        questions: vec![],
        session_id: Some("s".into()),
        source_message_ids: vec![],
        source_lines: None,
        recorded_at: Timestamp(1),
        valid_at: None,
        superseded_by: None,
        forgotten: None,
        metadata: Default::default(),
        expires_at: None,
        merged: None,
        confirmed_at: None,
        recalled_at: None,
    }
}

/// How many rows of `table` (an FTS5 table) match `word`, read from the file itself.
async fn fts_matches(path: &std::path::Path, table: &str, word: &str) -> i64 {
    use sqlx::ConnectOptions;
    let mut connection = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .connect()
        .await
        .unwrap();
    let count: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT count(*) FROM {table} WHERE {table} MATCH '{word}'"
    )))
    .fetch_one(&mut connection)
    .await
    .unwrap();
    count
}

#[tokio::test]
async fn a_profile_indexed_elsewhere_keeps_no_fts5_index_until_it_is_its_own_again() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.db");

    // Written as the default (its own index), then opened with the text indexed elsewhere.
    let own = SqliteProfiles::new(dir.path());
    let store = own.open("p").await.unwrap();
    store
        .insert_raw(vec![raw("r1", "the lantern by the harbour")])
        .await
        .unwrap();
    store
        .insert_memory(memory("m1", "likes the harbour lantern"))
        .await
        .unwrap();
    assert_eq!(fts_matches(&file, "raw_fts", "lantern").await, 1);
    drop((store, own));

    let elsewhere = SqliteProfiles::new(dir.path()).own_text_index(false);
    let store = elsewhere.open("p").await.unwrap();
    assert_eq!(
        fts_matches(&file, "raw_fts", "lantern").await,
        0,
        "emptied at open"
    );
    assert_eq!(fts_matches(&file, "memories_fts", "lantern").await, 0);
    store
        .insert_raw(vec![raw("r2", "a violin on the bridge")])
        .await
        .unwrap();
    store
        .insert_memory(memory("m2", "plays the violin"))
        .await
        .unwrap();
    assert_eq!(
        fts_matches(&file, "raw_fts", "violin").await,
        0,
        "no trigger ran"
    );
    assert_eq!(fts_matches(&file, "memories_fts", "violin").await, 0);
    // Forgetting still works on the records without the triggers.
    assert!(store.purge("m1").await.unwrap());
    assert!(matches!(
        elsewhere.text_index("p").await.err(),
        Some(MemoryError::NotSupported { .. })
    ));
    drop((store, elsewhere));

    // Its own index again: rebuilt from every record, old and new, and kept in step.
    let own = SqliteProfiles::new(dir.path());
    let store = own.open("p").await.unwrap();
    let index = own.text_index("p").await.unwrap();
    let hits = |namespace: &'static str, word: &'static str| {
        let index = index.clone();
        async move {
            let mut ids: Vec<String> = index
                .search(namespace, &TextQuery::new(word, 10))
                .await
                .unwrap()
                .into_iter()
                .map(|hit| hit.id)
                .collect();
            ids.sort();
            ids
        }
    };
    assert_eq!(hits(namespaces::RAW, "lantern").await, ["r1"]);
    assert_eq!(hits(namespaces::RAW, "violin").await, ["r2"]);
    assert_eq!(hits(namespaces::MEMORIES, "violin").await, ["m2"]);
    assert!(
        hits(namespaces::MEMORIES, "harbour").await.is_empty(),
        "m1 was purged"
    );
    store
        .insert_raw(vec![raw("r3", "a violin in the garden")])
        .await
        .unwrap();
    assert_eq!(hits(namespaces::RAW, "violin").await, ["r2", "r3"]);
}

#[tokio::test]
async fn until_moved_a_profile_keeps_its_fts5_index_until_it_is_stopped_for_good() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.db");
    let profiles = SqliteProfiles::new(dir.path()).own_text_index_until_moved();
    let store = profiles.open("p").await.unwrap();
    store
        .insert_memory(memory("m1", "likes the harbour lantern"))
        .await
        .unwrap();
    let index = profiles.text_index("p").await.unwrap();
    assert!(index.capabilities().written_by_store);
    let hits = index
        .search(namespaces::MEMORIES, &TextQuery::new("lantern", 10))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1, "a new profile indexes its own text");
    drop(index);

    // Stopped: emptied, no longer written, and refused as an index.
    profiles.delete_text_index("p").await.unwrap();
    assert_eq!(fts_matches(&file, "memories_fts", "lantern").await, 0);
    store
        .insert_memory(memory("m2", "plays the violin"))
        .await
        .unwrap();
    assert_eq!(fts_matches(&file, "memories_fts", "violin").await, 0);
    assert!(matches!(
        profiles.text_index("p").await.err(),
        Some(MemoryError::NotSupported { .. })
    ));
    drop((store, profiles));

    // A later process sees it stopped as well: opening changes nothing.
    let later = SqliteProfiles::new(dir.path()).own_text_index_until_moved();
    assert!(matches!(
        later.text_index("p").await.err(),
        Some(MemoryError::NotSupported { .. })
    ));
    assert_eq!(fts_matches(&file, "memories_fts", "lantern").await, 0);
    // Another profile beside it, and a missing one, are untouched.
    later.open("q").await.unwrap();
    assert!(later.text_index("q").await.is_ok());
    later.delete_text_index("missing").await.unwrap();
    assert!(!later.exists("missing").await.unwrap());
}
