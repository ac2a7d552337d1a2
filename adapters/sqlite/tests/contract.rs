//! The SQLite adapter passes the whole port contract suite.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use memory_sqlite::{
    SqliteConfig, SqliteDatabase, SqliteJobQueue, SqliteKeyValueStore, SqliteMessageIndex,
    SqliteMessageStore, SqliteSessionRegistry, SqliteSkillStore, SqliteTextIndex,
};
use memory_testkit::contract;

async fn open(dir: &tempfile::TempDir) -> SqliteDatabase {
    SqliteDatabase::open(SqliteConfig::new(dir.path().join("memory.db")))
        .await
        .unwrap()
}

#[tokio::test]
async fn sqlite_message_store_passes_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir).await;
    let store = SqliteMessageStore::new(db.clone());
    let index = SqliteMessageIndex::new(db);
    contract::message_store::run_all(&store, Some(&index), 100_000).await;
}

#[tokio::test]
async fn sqlite_session_registry_passes_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    contract::session_registry::run_all(&SqliteSessionRegistry::new(open(&dir).await)).await;
}

#[tokio::test]
async fn sqlite_key_value_store_passes_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    contract::key_value_store::run_all(&SqliteKeyValueStore::new(open(&dir).await)).await;
}

#[test]
fn sqlite_message_store_agrees_with_the_model() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = runtime.block_on(open(&dir));
    let store = SqliteMessageStore::new(db.clone());
    let index = SqliteMessageIndex::new(db);
    memory_testkit::model::check_against_model(&runtime, &store, Some(&index), 64);
}

#[tokio::test]
async fn data_survives_reopening_the_file() {
    use memory_core::ports::{MessageStore, MessageStoreExt};
    use memory_core::{Parent, SearchQuery, SessionId};
    let dir = tempfile::tempdir().unwrap();
    let session = SessionId::new("durable").unwrap();
    {
        let db = open(&dir).await;
        let store = SqliteMessageStore::new(db.clone());
        store
            .append_one(
                &session,
                memory_testkit::samples::user("u1", "persist me please"),
                Parent::LatestLeaf,
            )
            .await
            .unwrap();
        db.close().await;
    }
    let db = open(&dir).await;
    let store = SqliteMessageStore::new(db.clone());
    assert_eq!(store.history(&session, None).await.unwrap().len(), 1);
    let index = memory_sqlite::SqliteMessageIndex::new(db);
    let hits = memory_core::search_messages(&index, &SearchQuery::new("persist"))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
}

#[tokio::test]
async fn sqlite_text_index_passes_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    contract::text_index::run_all(&SqliteTextIndex::new(open(&dir).await)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_job_queue_passes_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    contract::job_queue::run_all(Arc::new(SqliteJobQueue::new(open(&dir).await))).await;
}

/// Two processes' worth of queues over one file (two pools, two writer connections): every
/// job is claimed once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_queues_over_one_file_never_share_a_job() {
    use memory_core::Timestamp;
    use memory_core::ports::{JobFilter, JobQueue, NewJob};
    let dir = tempfile::tempdir().unwrap();
    let a = Arc::new(SqliteJobQueue::new(open(&dir).await));
    let b = Arc::new(SqliteJobQueue::new(open(&dir).await));
    for i in 0..20 {
        a.enqueue(
            NewJob {
                id: format!("j{i}"),
                kind: "ingest".into(),
                profile: "p".into(),
                stage: "queued".into(),
                body: serde_json::json!({}),
            },
            Timestamp(i),
        )
        .await
        .unwrap();
    }
    let worker = |queue: Arc<SqliteJobQueue>, name: &'static str| {
        tokio::spawn(async move {
            let mut mine = Vec::new();
            while let Some((job, _)) = queue
                .claim(&JobFilter::default(), name, 60_000, Timestamp(100))
                .await
                .unwrap()
            {
                mine.push(job.id);
            }
            mine
        })
    };
    let (x, y) = (worker(a, "a"), worker(b, "b"));
    let mut all: Vec<String> = x.await.unwrap();
    all.extend(y.await.unwrap());
    assert_eq!(all.len(), 20, "{all:?}");
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 20, "no job claimed twice");
}

#[tokio::test]
async fn sqlite_skill_store_passes_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir).await;
    contract::skill_store::run_all(&SqliteSkillStore::new(db.clone(), "skills")).await;
    // Namespaces are separate collections.
    use memory_core::ports::SkillStore;
    let a = SqliteSkillStore::new(db.clone(), "a");
    let b = SqliteSkillStore::new(db, "b");
    a.put("k", "in a", None).await.unwrap();
    assert_eq!(b.get("k").await.unwrap(), None);
    assert!(b.list().await.unwrap().is_empty());
}

#[tokio::test]
async fn sqlite_long_term_memory_passes_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let profiles = memory_sqlite::SqliteProfiles::new(dir.path().join("profiles"));
    contract::long_term_memory::run_all(&profiles, Some(&profiles)).await;
    // A profile is one file: deleting it removes the file.
    use memory_core::ports::MemoryProfiles;
    profiles.open("solo").await.unwrap();
    assert!(dir.path().join("profiles/solo.db").exists());
    profiles.delete("solo").await.unwrap();
    assert!(!dir.path().join("profiles/solo.db").exists());
}

#[tokio::test]
async fn sqlite_vector_index_passes_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    contract::vector_index::run_all(&memory_sqlite::SqliteVectorIndex::new(open(&dir).await)).await;
    let profiles = memory_sqlite::SqliteProfiles::new(dir.path().join("profiles"));
    contract::vector_index::profile_vectors_are_isolated(&profiles).await;
}

/// The same suite with every namespace searched through its approximate graph (built at
/// the first write, saved after every write), filtered searches included.
#[tokio::test]
async fn sqlite_vector_index_passes_the_contract_through_its_graph() {
    let dir = tempfile::tempdir().unwrap();
    let eager = memory_sqlite::ApproximateSearch {
        from_rows: 0,
        exact_below: 0,
        candidates: 64,
        save_after: 1,
    };
    let index =
        memory_sqlite::SqliteVectorIndex::new(open(&dir).await).with_approximate(Some(eager));
    contract::vector_index::run_all(&index).await;
    assert!(
        dir.path()
            .join("memory.db.vectors")
            .read_dir()
            .unwrap()
            .count()
            > 0,
        "graph snapshots were saved"
    );
}

/// Two index instances over one file (as two processes would have) race to set a
/// namespace's model: one wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_vector_model_check_is_atomic_across_instances() {
    let dir = tempfile::tempdir().unwrap();
    let first = memory_sqlite::SqliteVectorIndex::new(open(&dir).await);
    let second = memory_sqlite::SqliteVectorIndex::new(open(&dir).await);
    contract::vector_index::the_model_check_is_atomic(Arc::new(first), Arc::new(second)).await;
}

#[tokio::test]
async fn sqlite_vectors_survive_a_reopen() {
    use memory_core::ports::{VectorIndex, VectorRecord};
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir).await;
    let index = memory_sqlite::SqliteVectorIndex::new(db.clone());
    let record = |id: &str, v: [f32; 2]| VectorRecord {
        id: id.into(),
        vector: v.to_vec(),
        model: "m".into(),
        fields: Default::default(),
    };
    index
        .upsert("ns", vec![record("a", [1.0, 0.0]), record("b", [0.0, 1.0])])
        .await
        .unwrap();
    index.delete("ns", &["b".to_owned()]).await.unwrap();
    db.close().await;
    let reopened = memory_sqlite::SqliteVectorIndex::new(open(&dir).await);
    let hits = reopened.query("ns", &[0.0, 1.0], 5).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, "a");
    assert_eq!(reopened.model("ns").await.unwrap().as_deref(), Some("m"));
}

/// Erasure is provable on disk: after `purge` and `purge_raw` no byte of the erased text is
/// left in the profile's database, WAL or shared-memory files.
#[tokio::test]
async fn purged_text_leaves_no_trace_in_any_file() {
    use memory_core::Timestamp;
    use memory_core::ports::{MemoryKind, MemoryProfiles, MemoryRecord, RawMessage};
    let dir = tempfile::tempdir().unwrap();
    let profiles = memory_sqlite::SqliteProfiles::new(dir.path());
    let store = profiles.open("erasure").await.unwrap();
    let secret_raw = "zqxjraw passport number 4711";
    let secret_memory = "zqxjmem lives at 12 secret street";
    let mut raw = vec![RawMessage {
        id: "r-secret".into(),
        session_id: "s".into(),
        role: "user".into(),
        content: secret_raw.into(),
        created_at: Timestamp(1),
        metadata: Default::default(),
    }];
    for i in 0..300 {
        raw.push(RawMessage {
            id: format!("r{i}"),
            session_id: "s".into(),
            role: "user".into(),
            content: format!("ordinary message {i} about the weather and the garden"),
            created_at: Timestamp(2 + i),
            metadata: Default::default(),
        });
    }
    store.insert_raw(raw).await.unwrap();
    store
        .insert_memory(MemoryRecord {
            id: "m-secret".into(),
            kind: MemoryKind::Fact,
            content: secret_memory.into(),
            key: Some("home".into()),
            questions: vec!["where does zqxjmem live?".into()],
            session_id: Some("s".into()),
            source_message_ids: vec!["r-secret".into()],
            source_lines: Some([0, 0]),
            recorded_at: Timestamp(1),
            valid_at: None,
            superseded_by: None,
            forgotten: None,
            metadata: Default::default(),
            expires_at: None,
            merged: None,
            confirmed_at: None,
            recalled_at: None,
        })
        .await
        .unwrap();
    let files = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| std::fs::read(e.unwrap().path()).unwrap())
            .collect::<Vec<_>>()
    };
    let contains = |needle: &str| {
        files()
            .iter()
            .any(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
    };
    assert!(
        contains("zqxjraw") || contains("zqxjmem"),
        "the test can see stored text"
    );
    assert_eq!(store.purge_raw(&["r-secret".into()]).await.unwrap(), 1);
    assert!(store.purge("m-secret").await.unwrap());
    assert!(!contains("zqxjraw"), "raw text left a trace");
    assert!(!contains("zqxjmem"), "memory text left a trace");
    assert!(contains("garden"), "other data is intact");
    use memory_core::ports::{TextIndexes, TextQuery, namespaces};
    let text = profiles.text_index("erasure").await.unwrap();
    let weather = text
        .search(namespaces::RAW, &TextQuery::new("weather", 500))
        .await
        .unwrap();
    assert_eq!(weather.len(), 300);
}

/// Two index instances over one file (a stale cache) still cannot mix two models.
#[tokio::test]
async fn a_stale_cache_cannot_mix_two_models_in_a_namespace() {
    use memory_core::ports::{VectorIndex, VectorRecord};
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir).await;
    let first = memory_sqlite::SqliteVectorIndex::new(db.clone());
    let second = memory_sqlite::SqliteVectorIndex::new(db);
    assert!(
        first.query("ns", &[1.0, 0.0], 1).await.unwrap().is_empty(),
        "cache loaded empty"
    );
    let record = |model: &str, v: Vec<f32>| VectorRecord {
        id: "x".into(),
        vector: v,
        model: model.into(),
        fields: Default::default(),
    };
    second
        .upsert("ns", vec![record("a", vec![1.0, 0.0])])
        .await
        .unwrap();
    let refused = first
        .upsert("ns", vec![record("b", vec![1.0, 0.0, 0.0])])
        .await;
    assert!(matches!(
        refused,
        Err(memory_core::MemoryError::InvalidInput { .. })
    ));
    first
        .upsert("ns", vec![record("a", vec![0.0, 1.0])])
        .await
        .unwrap();
    let hits = first.query("ns", &[0.0, 1.0], 5).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert!(
        (hits[0].score - 1.0).abs() < 1e-5,
        "the reloaded cache holds the new vector"
    );
}
