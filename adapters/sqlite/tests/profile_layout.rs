//! A profile database holds only a profile's tables, in small pages; a profile file made
//! with the full schema (before profiles had their own) opens as it is and keeps everything.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use memory_core::Timestamp;
use memory_core::ports::{
    MemoryFilter, MemoryKind, MemoryProfiles, MemoryRecord, MemoryRecordStore, TextIndexes,
    TextQuery, VectorIndex, VectorIndexes, VectorQuery, VectorRecord, namespaces,
};
use memory_sqlite::{
    SqliteConfig, SqliteDatabase, SqliteLongTermMemory, SqliteProfiles, SqliteVectorIndex,
};
use sqlx::{Connection, SqliteConnection};

fn memory(id: &str, content: &str) -> MemoryRecord {
    MemoryRecord::new(id, MemoryKind::Fact, content, Timestamp(1))
}

/// The file's page size and table names, read over a connection of the test's own after a
/// checkpoint (so the file holds everything written).
async fn layout(file: &Path) -> (i64, Vec<String>) {
    let mut conn = SqliteConnection::connect(&format!("sqlite:{}?mode=rw", file.display()))
        .await
        .unwrap();
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&mut conn)
        .await
        .unwrap();
    let page_size: i64 = sqlx::query_scalar("PRAGMA page_size")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let tables: Vec<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    conn.close().await.unwrap();
    (page_size, tables)
}

async fn remember_ten(profiles: &SqliteProfiles, name: &str) {
    let store = profiles.open(name).await.unwrap();
    let vectors = profiles.vector_index(name).await.unwrap();
    for i in 0..10 {
        let id = format!("m{i}");
        store
            .insert_memory(memory(&id, &format!("likes colour number {i} very much")))
            .await
            .unwrap();
        let vector: Vec<f32> = (0..384).map(|d| ((d * (i + 1)) % 17) as f32).collect();
        vectors
            .upsert(
                namespaces::MEMORIES,
                vec![VectorRecord::new(id, vector, "model")],
            )
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_profile_holds_only_its_tables_in_small_pages() {
    let dir = tempfile::tempdir().unwrap();
    let profiles = SqliteProfiles::new(dir.path()).own_text_index(false);
    remember_ten(&profiles, "small").await;
    drop(profiles);
    let file = dir.path().join("small.db");
    let (page_size, tables) = layout(&file).await;
    let wal = std::fs::metadata(dir.path().join("small.db-wal")).map_or(0, |m| m.len());
    assert_eq!(wal, 0, "checkpointed");
    assert_eq!(page_size, 512);
    for table in ["memories", "raw_messages", "vectors", "vector_namespaces"] {
        assert!(tables.iter().any(|t| t == table), "{table} in {tables:?}");
    }
    for table in [
        "session_keys",
        "messages",
        "sessions",
        "job_queue",
        "kv",
        "skills",
    ] {
        assert!(!tables.iter().any(|t| t == table), "{table} in {tables:?}");
    }
    // Ten memories and their 384-dimension vectors (15,360 bytes of them): the full schema in
    // 4 KiB pages took 290,816 bytes for this.
    let bytes = std::fs::metadata(&file).unwrap().len();
    assert!(bytes <= 72 * 1024, "{bytes} bytes");

    // A size set by the builder applies to new files.
    let profiles = SqliteProfiles::new(dir.path()).page_size(4096);
    remember_ten(&profiles, "large-pages").await;
    drop(profiles);
    assert_eq!(layout(&dir.path().join("large-pages.db")).await.0, 4096);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_file_of_the_full_schema_opens_and_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("legacy.db");
    // What the earlier code made for a profile: the full schema, 4 KiB pages.
    let db = SqliteDatabase::open(SqliteConfig::new(&file).secure_delete(true))
        .await
        .unwrap();
    let store = SqliteLongTermMemory::new(db.clone());
    let vectors = SqliteVectorIndex::new(db.clone());
    store
        .insert_memory(memory("old", "zqxjold lives by the lighthouse"))
        .await
        .unwrap();
    store
        .insert_memory(memory("kept", "prefers tea in the morning"))
        .await
        .unwrap();
    vectors
        .upsert(
            namespaces::MEMORIES,
            vec![
                VectorRecord::new("old", vec![1.0, 0.0, 0.0], "model"),
                VectorRecord::new("kept", vec![0.0, 1.0, 0.0], "model"),
            ],
        )
        .await
        .unwrap();
    drop((store, vectors));
    db.close().await;
    drop(db);

    let profiles = SqliteProfiles::new(dir.path());
    let store = profiles.open("legacy").await.unwrap();
    let page = store
        .list(&MemoryFilter::default(), None, 10)
        .await
        .unwrap();
    assert_eq!(page.memories.len(), 2);
    let hits = profiles
        .text_index("legacy")
        .await
        .unwrap()
        .search(namespaces::MEMORIES, &TextQuery::new("lighthouse", 5))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    let found = profiles
        .vector_index("legacy")
        .await
        .unwrap()
        .search(namespaces::MEMORIES, &VectorQuery::new(&[0.0, 1.0, 0.0], 1))
        .await
        .unwrap();
    assert_eq!(found[0].id, "kept");
    store
        .insert_memory(memory("new", "started learning the cello"))
        .await
        .unwrap();

    // Erasure stays complete on the old layout.
    assert!(store.purge("old").await.unwrap());
    drop(store);
    drop(profiles);
    let contains = |needle: &[u8]| {
        std::fs::read_dir(dir.path()).unwrap().any(|entry| {
            let path = entry.unwrap().path();
            path.is_file()
                && std::fs::read(&path)
                    .unwrap()
                    .windows(needle.len())
                    .any(|w| w == needle)
        })
    };
    assert!(!contains(b"zqxjold"), "purged text left a trace");
    assert!(contains(b"cello"), "the test can see stored text");

    // The file kept its schema and pages: nothing was rewritten.
    let (page_size, tables) = layout(&file).await;
    assert_eq!(page_size, 4096);
    assert!(tables.iter().any(|t| t == "session_keys"), "{tables:?}");
    let profiles = SqliteProfiles::new(dir.path());
    let page = profiles
        .open("legacy")
        .await
        .unwrap()
        .list(&MemoryFilter::default(), None, 10)
        .await
        .unwrap();
    let ids: Vec<&str> = page.memories.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&"kept") && ids.contains(&"new"), "{ids:?}");
}
