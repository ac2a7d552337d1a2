//! The PostgreSQL adapter passes the port contract suites against a real server: the one
//! `MEMORY_POSTGRES_URL` names (`scripts/setup-postgres.sh` starts one with pgvector on
//! loopback and prints its URL; the test command sets it). Each test works in a schema of
//! its own and drops it afterwards; no other data on the server is touched.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use memory_postgres::{
    PostgresConfig, PostgresDatabase, PostgresJobQueue, PostgresKeyValueStore,
    PostgresMessageIndex, PostgresMessageStore, PostgresProfiles, PostgresSessionRegistry,
    PostgresSkillStore, PostgresTextIndex, PostgresVectorIndex, PostgresVectorIndexes,
};
use memory_testkit::contract;

/// The test server's URL, or `None` (the test is skipped, saying so) when none is configured
/// and none is required (the test command requires one).
fn server_url() -> Option<String> {
    let Ok(url) = std::env::var("MEMORY_POSTGRES_URL") else {
        assert!(
            std::env::var("MEMORY_REQUIRE_POSTGRES").is_err(),
            "MEMORY_REQUIRE_POSTGRES is set but MEMORY_POSTGRES_URL is not (run scripts/setup-postgres.sh)"
        );
        eprintln!(
            "skipped: MEMORY_POSTGRES_URL is not set (scripts/setup-postgres.sh starts a server)"
        );
        return None;
    };
    Some(url)
}

/// A fresh schema on the test server, or `None` (the test is skipped, saying so) when no
/// server is configured and none is required.
async fn fresh_database(name: &str) -> Option<PostgresDatabase> {
    let url = server_url()?;
    let schema = format!(
        "test_{name}_{}",
        uuid::Uuid::new_v4()
            .simple()
            .to_string()
            .get(..12)
            .unwrap_or("x")
    );
    Some(
        PostgresDatabase::connect(PostgresConfig::new(url).schema(schema).max_connections(4))
            .await
            .unwrap(),
    )
}

#[tokio::test]
async fn postgres_message_store_passes_the_contract() {
    let Some(db) = fresh_database("messages").await else {
        return;
    };
    let store = PostgresMessageStore::new(db.clone());
    let index = PostgresMessageIndex::new(db.clone());
    contract::message_store::run_all(&store, Some(&index), 100_000).await;
    db.drop_schema().await.unwrap();
}

#[tokio::test]
async fn postgres_skill_store_passes_the_contract() {
    let Some(db) = fresh_database("skills").await else {
        return;
    };
    contract::skill_store::run_all(&PostgresSkillStore::new(db.clone(), "skills")).await;
    db.drop_schema().await.unwrap();
}

#[tokio::test]
async fn postgres_session_registry_passes_the_contract() {
    let Some(db) = fresh_database("registry").await else {
        return;
    };
    contract::session_registry::run_all(&PostgresSessionRegistry::new(db.clone())).await;
    db.drop_schema().await.unwrap();
}

#[tokio::test]
async fn postgres_key_value_store_passes_the_contract() {
    let Some(db) = fresh_database("kv").await else {
        return;
    };
    contract::key_value_store::run_all(&PostgresKeyValueStore::new(db.clone())).await;
    db.drop_schema().await.unwrap();
}

#[tokio::test]
async fn postgres_job_queue_passes_the_contract() {
    let Some(db) = fresh_database("jobs").await else {
        return;
    };
    contract::job_queue::run_all(std::sync::Arc::new(PostgresJobQueue::new(db.clone()))).await;
    db.drop_schema().await.unwrap();
}

#[tokio::test]
async fn postgres_text_index_passes_the_contract() {
    let Some(db) = fresh_database("text").await else {
        return;
    };
    contract::text_index::run_all(&PostgresTextIndex::new(db.clone())).await;
    db.drop_schema().await.unwrap();
}

/// Each profile's index is its own: documents never cross, and deleting one profile's index
/// leaves the others whole.
#[tokio::test]
async fn profile_text_indexes_are_isolated() {
    use memory_core::ports::TextIndex;
    let Some(db) = fresh_database("profiles").await else {
        return;
    };
    let indexes = memory_postgres::PostgresTextIndexes::new(db.clone());
    contract::text_index::profile_indexes_are_isolated(&indexes).await;
    let general = PostgresTextIndex::new(db.clone());
    assert_eq!(
        general.count("raw").await.unwrap(),
        0,
        "the general index is its own scope"
    );
    db.drop_schema().await.unwrap();
}

/// A NUL in a document (PostgreSQL text cannot hold one) is indexed as a word separator,
/// not refused.
#[tokio::test]
async fn a_nul_in_a_document_is_indexed_not_refused() {
    use memory_core::ports::{TextDocument, TextIndex, TextQuery};
    let Some(db) = fresh_database("nul").await else {
        return;
    };
    let index = PostgresTextIndex::new(db.clone());
    index
        .upsert("n", vec![TextDocument::new("d1", "lighthouse\u{0}keeper")])
        .await
        .unwrap();
    let hits = index
        .search("n", &TextQuery::new("keeper", 5))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    db.drop_schema().await.unwrap();
}

/// Eight connections opening one new schema at once all succeed, and migrate it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_connects_migrate_once() {
    let Some(url) = server_url() else {
        return;
    };
    let schema = format!(
        "test_race_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let opens: Vec<_> = (0..8)
        .map(|_| {
            let config = PostgresConfig::new(url.clone())
                .schema(schema.clone())
                .max_connections(2);
            tokio::spawn(PostgresDatabase::connect(config))
        })
        .collect();
    let mut databases = Vec::new();
    for open in opens {
        databases.push(open.await.unwrap().unwrap());
    }
    let kv = PostgresKeyValueStore::new(databases[0].clone());
    memory_core::ports::KeyValueStore::set(&kv, "k", "v")
        .await
        .unwrap();
    databases[0].drop_schema().await.unwrap();
}

#[tokio::test]
async fn a_schema_name_that_is_not_an_identifier_is_refused() {
    let err =
        PostgresDatabase::connect(PostgresConfig::new("postgres://nowhere").schema("x; drop"))
            .await
            .unwrap_err();
    assert!(
        matches!(err, memory_core::MemoryError::InvalidInput { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn postgres_long_term_memory_passes_the_contract() {
    let Some(db) = fresh_database("longterm").await else {
        return;
    };
    contract::long_term_memory::run_all(&PostgresProfiles::new(db.clone()), None).await;
    db.drop_schema().await.unwrap();
}

#[tokio::test]
async fn postgres_vector_index_passes_the_contract() {
    let Some(db) = fresh_database("vectors").await else {
        return;
    };
    contract::vector_index::run_all(&PostgresVectorIndex::new(db.clone())).await;
    contract::vector_index::profile_vectors_are_isolated(&PostgresVectorIndexes::new(db.clone()))
        .await;
    // Two instances (two pools, as two processes would have) race the first write.
    let other = PostgresDatabase::connect(
        PostgresConfig::new(server_url().unwrap())
            .schema(db.schema())
            .max_connections(2),
    )
    .await
    .unwrap();
    contract::vector_index::the_model_check_is_atomic(
        std::sync::Arc::new(PostgresVectorIndex::new(db.clone())),
        std::sync::Arc::new(PostgresVectorIndex::new(other.clone())),
    )
    .await;
    other.close().await;
    db.drop_schema().await.unwrap();
}

/// Four instances with pools of their own (as four worker processes would have) claim from
/// one queue at once: every job goes to exactly one worker.
#[tokio::test]
async fn postgres_job_queue_hands_each_job_to_one_worker_across_instances() {
    let Some(db) = fresh_database("jobs4").await else {
        return;
    };
    let mut queues: Vec<std::sync::Arc<dyn memory_core::ports::JobQueue>> = Vec::new();
    let mut pools = Vec::new();
    for _ in 0..4 {
        let other = PostgresDatabase::connect(
            PostgresConfig::new(server_url().unwrap())
                .schema(db.schema())
                .max_connections(4),
        )
        .await
        .unwrap();
        queues.push(std::sync::Arc::new(PostgresJobQueue::new(other.clone())));
        pools.push(other);
    }
    for _ in 0..5 {
        contract::job_queue::concurrent_claims_across_instances_never_share_a_job(queues.clone())
            .await;
    }
    for pool in pools {
        pool.close().await;
    }
    db.drop_schema().await.unwrap();
}

/// A path through more runs than are read one by one (every step a second child) reads the
/// same as a linear one: root first, every ancestor once.
#[tokio::test]
async fn postgres_a_path_of_many_runs_reads_in_order() {
    use memory_core::ports::{MessageStore, MessageStoreExt};
    use memory_core::{Parent, Role, SessionId, UiMessage};
    let Some(db) = fresh_database("runs").await else {
        return;
    };
    let store = PostgresMessageStore::new(db.clone());
    let session = SessionId::new("s").unwrap();
    let text = |id: &str| UiMessage::text_message(id, Role::User, id);
    store
        .append_one(&session, text("m0"), Parent::Root)
        .await
        .unwrap();
    let mut expected = vec!["m0".to_owned()];
    for i in 1..40 {
        let parent = Parent::message(format!("m{}", i - 1));
        store
            .append_one(&session, text(&format!("s{i}")), parent.clone())
            .await
            .unwrap();
        store
            .append_one(&session, text(&format!("m{i}")), parent)
            .await
            .unwrap();
        expected.push(format!("m{i}"));
    }
    let history = store.history(&session, Some("m39".into())).await.unwrap();
    let ids: Vec<String> = history.into_iter().map(|m| m.id).collect();
    assert_eq!(ids, expected);
    let path = store.path(&session, Some("s20".into())).await.unwrap();
    let ids: Vec<&str> = path.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids.last(), Some(&"s20"));
    assert_eq!(ids.len(), 21);
    db.drop_schema().await.unwrap();
}

/// The namespace's HNSW indexes in `db`'s schema.
async fn hnsw_indexes(db: &PostgresDatabase) -> i64 {
    use sqlx::ConnectOptions;
    let options: sqlx::postgres::PgConnectOptions = server_url().unwrap().parse().unwrap();
    let mut connection = options.connect().await.unwrap();
    sqlx::query_scalar(
        "SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname LIKE 'vectors_hnsw_%'",
    )
    .bind(db.schema())
    .fetch_one(&mut connection)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_vector_namespace_gets_its_hnsw_index_only_when_it_is_large() {
    use memory_core::ports::{VectorIndex, VectorQuery, VectorRecord};
    let Some(db) = fresh_database("hnsw").await else {
        return;
    };
    let index = PostgresVectorIndex::new(db.clone());
    // Every vector leans on the first axis but `v7`, alone on the third: its own nearest.
    let record = |i: i64| {
        let x = i as f32;
        let vector = if i == 7 {
            vec![0.0, 0.0, 1.0]
        } else {
            vec![1.0, x.sin(), x.cos() * 0.1]
        };
        VectorRecord::new(format!("v{i}"), vector, "m")
    };
    let below = memory_postgres::HNSW_FROM_VECTORS - 1;
    let all: Vec<VectorRecord> = (0..below).map(record).collect();
    for page in all.chunks(2_000) {
        index.upsert("big", page.to_vec()).await.unwrap();
    }
    index.upsert("small", vec![record(1)]).await.unwrap();
    assert_eq!(hnsw_indexes(&db).await, 0, "small namespaces are scanned");
    let hits = index
        .search("big", &VectorQuery::new(&record(7).vector, 1))
        .await
        .unwrap();
    assert_eq!(hits[0].id, "v7", "an exact scan finds the vector itself");

    index.upsert("big", vec![record(below)]).await.unwrap();
    assert_eq!(hnsw_indexes(&db).await, 1, "built at the size");
    // Through the graph now: approximate, so a close neighbour rather than the vector itself.
    let hits = index
        .search("big", &VectorQuery::new(&record(1_000).vector, 5))
        .await
        .unwrap();
    assert_eq!(hits.len(), 5);
    assert!(hits[0].score > 0.99, "{hits:?}");
    index.clear("big").await.unwrap();
    assert_eq!(hnsw_indexes(&db).await, 0, "cleared with its namespace");
    db.drop_schema().await.unwrap();
}
