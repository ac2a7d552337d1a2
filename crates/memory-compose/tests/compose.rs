//! Composing deployments from `memory.toml`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use memory_compose::{ComposeError, Deployment};
use memory_config::{Backend, MemoryConfig, Role};
use memory_core::{Role as Speaker, SearchQuery, UiMessage};
use memory_engine::long_term::{IngestMessage, RecallRequest};

#[tokio::test]
async fn no_configuration_composes_the_embedded_default() {
    let dir = tempfile::tempdir().unwrap();
    let deployment = Deployment::open(dir.path()).unwrap();
    assert_eq!(deployment.storage().backend(Role::Records), Backend::Sqlite);
    let sessions = deployment.session_manager().await.unwrap();
    let info = sessions.create(Default::default()).await.unwrap();
    sessions
        .append(
            &info.id,
            UiMessage::text_message("m1", Speaker::User, "the heron nests by the river"),
            Default::default(),
        )
        .await
        .unwrap();
    let hits = sessions.search(&SearchQuery::new("heron")).await.unwrap();
    assert_eq!(hits.len(), 1);
    let mut config = MemoryConfig::default();
    config.memory.embedder = memory_config::EmbedderChoice::None;
    let deployment = Deployment::with_config(config, dir.path());
    let (memory, note) = deployment.memory_service().await.unwrap();
    assert!(note.unwrap().contains("vectors are off"));
    memory
        .ingest_messages(
            "ada",
            "chat",
            vec![IngestMessage::new("user", "I moved to Lisbon")],
        )
        .await
        .unwrap();
    let recalled = memory
        .recall("ada", RecallRequest::new("lisbon", 5))
        .await
        .unwrap();
    assert_eq!(recalled.hits.len(), 1);
    assert!(dir.path().join("memory.db").exists());
    assert!(dir.path().join("profiles/ada.db").exists());
    assert!(dir.path().join("profiles/jobs.sqlite").exists());
    deployment.close().await;
}

#[tokio::test]
async fn storage_paths_come_from_the_configuration() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        "[storage.sqlite]\npath = \"db/sessions.sqlite\"\nprofiles = \"long-term\"\n",
    )
    .unwrap();
    let deployment = Deployment::open(dir.path()).unwrap();
    deployment.session_manager().await.unwrap();
    deployment.long_term_backends().await.unwrap();
    assert!(dir.path().join("db/sessions.sqlite").exists());
    assert!(dir.path().join("long-term/jobs.sqlite").exists());
}

/// LanceDB is left out of the default build: naming it is a clear error that says how to
/// build it in.
#[cfg(not(feature = "lancedb"))]
#[tokio::test]
async fn a_backend_left_out_of_the_build_is_a_clear_error_naming_the_role() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        "[storage]\nvectors = \"lancedb\"\n",
    )
    .unwrap();
    let deployment = Deployment::open(dir.path()).unwrap();
    let error = deployment.long_term_backends().await.err().unwrap();
    assert!(matches!(
        error,
        ComposeError::NotBuilt {
            role: Role::Vectors,
            backend: Backend::Lancedb,
        }
    ));
    let message = error.to_string();
    assert!(
        message.starts_with("storage.vectors = \"lancedb\"")
            && message.contains("--features lancedb"),
        "{message}"
    );
    // The session tier is linked to long-term memory (bound sessions ship there): it names
    // the same error rather than compose without it.
    let error = deployment.session_manager().await.err().unwrap();
    assert!(
        error
            .to_string()
            .starts_with("storage.vectors = \"lancedb\""),
        "{error}"
    );

    // Redis holds the session tier, never long-term records: a configuration error that
    // names the roles it serves.
    std::fs::write(
        dir.path().join("memory.toml"),
        "[storage]\nrecords = \"redis\"\n",
    )
    .unwrap();
    let error = Deployment::open(dir.path()).err().unwrap();
    assert!(matches!(error, ComposeError::Config(_)));
    let text = error.to_string();
    assert!(
        text.contains("storage.records") && text.contains("sessions"),
        "{text}"
    );
}

#[test]
fn an_invalid_configuration_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        "[storage]\nblobs = \"sqlite\"\n",
    )
    .unwrap();
    let error = Deployment::open(dir.path()).err().unwrap();
    assert!(matches!(error, ComposeError::Config(_)));
    assert!(error.to_string().contains("storage.blobs"), "{error}");
}

/// A keyless fact to remember.
#[cfg(feature = "postgres")]
fn remember_request(content: &str) -> memory_engine::long_term::RememberRequest {
    memory_engine::long_term::RememberRequest {
        content: content.into(),
        session_id: None,
        kind: None,
        key: None,
        metadata: Default::default(),
        expires_at: None,
    }
}

/// The test command's Postgres URL, or `None` (skipped, saying so) when none is configured
/// and none is required.
#[cfg(feature = "postgres")]
fn postgres_url() -> Option<String> {
    let Ok(url) = std::env::var("MEMORY_POSTGRES_URL") else {
        assert!(
            std::env::var("MEMORY_REQUIRE_POSTGRES").is_err(),
            "MEMORY_REQUIRE_POSTGRES is set but MEMORY_POSTGRES_URL is not"
        );
        eprintln!("skipped: MEMORY_POSTGRES_URL is not set");
        return None;
    };
    Some(url)
}

/// Every role on PostgreSQL: sessions, their search, blocks' key-value, long-term records,
/// their text index and vectors, and the job queue. Nothing is written to the data
/// directory but the configuration.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn every_role_on_postgres() {
    let Some(url) = postgres_url() else {
        return;
    };
    let schema = format!(
        "test_compose_all_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        memory_config::all_on_postgres(&schema),
    )
    .unwrap();
    let deployment = Deployment::open(dir.path()).unwrap();
    let sessions = deployment.session_manager().await.unwrap();
    let info = sessions.create(Default::default()).await.unwrap();
    for (id, text) in [
        ("m1", "the herons are nesting by the river"),
        ("m2", "how many eggs do they lay?"),
    ] {
        sessions
            .append(
                &info.id,
                UiMessage::text_message(id, Speaker::User, text),
                Default::default(),
            )
            .await
            .unwrap();
    }
    let hits = sessions
        .search(&SearchQuery::new("heron nest"))
        .await
        .unwrap();
    assert_eq!(
        hits.len(),
        1,
        "found through the store-written Postgres index"
    );
    let history = sessions.store().history(&info.id, None).await.unwrap();
    assert_eq!(history.len(), 2);

    let (memory, note) = deployment.memory_service().await.unwrap();
    let job = memory
        .ingest_and_extract(
            "ada",
            "chat",
            vec![IngestMessage::new(
                "user",
                "I keep three beehives in Sintra",
            )],
        )
        .await
        .unwrap();
    assert_eq!(job.status, memory_engine::long_term::JobStatus::Done);
    let recalled = memory
        .recall("ada", RecallRequest::new("beehive", 5))
        .await
        .unwrap();
    assert_eq!(recalled.hits.len(), 1);
    let vectors_on = note.is_none();
    if std::env::var("MEMORY_REQUIRE_MODEL").is_ok() {
        assert!(vectors_on, "the local embedder is installed: {note:?}");
    }
    deployment.close().await;
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "only memory.toml: no SQLite file was created"
    );

    let db = memory_postgres::PostgresDatabase::connect(
        memory_postgres::PostgresConfig::new(url).schema(schema),
    )
    .await
    .unwrap();
    let profiles = memory_postgres::PostgresProfiles::new(db.clone());
    assert_eq!(
        memory_core::ports::MemoryProfiles::list(&profiles)
            .await
            .unwrap(),
        ["ada"]
    );
    if vectors_on {
        let vectors = memory_core::ports::VectorIndexes::vector_index(
            &memory_postgres::PostgresVectorIndexes::new(db.clone()),
            "ada",
        )
        .await
        .unwrap();
        let mut models = Vec::new();
        for namespace in ["raw", "memories"] {
            models.push(vectors.model(namespace).await.unwrap());
        }
        assert!(
            models.iter().any(Option::is_some),
            "the profile's vectors are in pgvector: {models:?}"
        );
    }
    db.drop_schema().await.unwrap();
}

/// On an all-Postgres deployment, purging a memory, deleting a profile and deleting a
/// session leave no row of any table in the schema holding the erased text (the job
/// checkpoints, text indexes and vectors included).
#[cfg(feature = "postgres")]
#[tokio::test]
async fn erasure_on_postgres_leaves_no_row_with_the_text() {
    let Some(url) = postgres_url() else {
        return;
    };
    let schema = format!(
        "test_compose_erase_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        memory_config::all_on_postgres(&schema),
    )
    .unwrap();
    let deployment = Deployment::open(dir.path()).unwrap();
    let db = memory_postgres::PostgresDatabase::connect(
        memory_postgres::PostgresConfig::new(url).schema(&schema),
    )
    .await
    .unwrap();
    let (memory, _) = deployment.memory_service().await.unwrap();
    memory
        .ingest_and_extract(
            "ada",
            "chat",
            vec![IngestMessage::new(
                "user",
                "my locker code is quokkaflux seven",
            )],
        )
        .await
        .unwrap();
    memory
        .remember("ada", remember_request("zebracorn lives in the attic"))
        .await
        .unwrap();
    let kept = memory
        .remember("ada", remember_request("the attic is dusty"))
        .await
        .unwrap();
    let purged = memory
        .list("ada", &Default::default(), None, 10)
        .await
        .unwrap()
        .memories
        .into_iter()
        .find(|m| m.content.contains("zebracorn"))
        .unwrap();
    assert!(!db.tables_containing("zebracorn").await.unwrap().is_empty());
    memory.purge("ada", &purged.id, true).await.unwrap();
    assert_eq!(db.tables_containing("zebracorn").await.unwrap(), []);
    assert!(
        !db.tables_containing(&kept.id).await.unwrap().is_empty(),
        "the rest of the profile stays"
    );

    assert!(!db.tables_containing("quokkaflux").await.unwrap().is_empty());
    assert!(memory.delete_profile("ada").await.unwrap());
    assert_eq!(db.tables_containing("quokkaflux").await.unwrap(), []);
    assert_eq!(db.tables_containing(&kept.id).await.unwrap(), []);

    let sessions = deployment.session_manager().await.unwrap();
    let info = sessions.create(Default::default()).await.unwrap();
    sessions
        .append(
            &info.id,
            UiMessage::text_message("m1", Speaker::User, "the narwhalette sings"),
            Default::default(),
        )
        .await
        .unwrap();
    assert!(
        !db.tables_containing("narwhalette")
            .await
            .unwrap()
            .is_empty()
    );
    sessions.delete(&info.id).await.unwrap();
    assert_eq!(db.tables_containing("narwhalette").await.unwrap(), []);
    deployment.close().await;
    db.drop_schema().await.unwrap();
}

/// `[storage]` puts key-value, jobs and text on PostgreSQL beside SQLite records: sessions and
/// profiles search through Postgres indexes the engine keeps in step, and ingest jobs run
/// from the Postgres queue. (Against the test command's server; the schema is the
/// test's own and is dropped.)
#[cfg(feature = "postgres")]
#[tokio::test]
async fn key_value_jobs_and_text_on_postgres_beside_sqlite_records() {
    let Some(url) = postgres_url() else {
        return;
    };
    let schema = format!(
        "test_compose_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        format!(
            "[memory]\nembedder = \"none\"\n\n[storage]\nkv = \"postgres\"\njobs = \"postgres\"\ntext = \"postgres\"\n\n[storage.postgres]\nschema = \"{schema}\"\n"
        ),
    )
    .unwrap();
    let deployment = Deployment::open(dir.path()).unwrap();
    let sessions = deployment.session_manager().await.unwrap();
    let info = sessions.create(Default::default()).await.unwrap();
    sessions
        .append(
            &info.id,
            UiMessage::text_message("m1", Speaker::User, "the herons are nesting by the river"),
            Default::default(),
        )
        .await
        .unwrap();
    let hits = sessions
        .search(&SearchQuery::new("heron nest"))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1, "found through the Postgres index (stemmed)");

    // The long-term tier: raw messages and memories on SQLite, their text index on
    // Postgres (kept in step by the engine), ingest jobs on the Postgres queue.
    let (memory, _) = deployment.memory_service().await.unwrap();
    let job = memory
        .ingest_and_extract(
            "ada",
            "chat",
            vec![IngestMessage::new(
                "user",
                "I keep three beehives in Sintra",
            )],
        )
        .await
        .unwrap();
    assert_eq!(job.status, memory_engine::long_term::JobStatus::Done);
    let recalled = memory
        .recall("ada", RecallRequest::new("beehive", 5))
        .await
        .unwrap();
    assert_eq!(
        recalled.hits.len(),
        1,
        "found through the Postgres profile index"
    );
    deployment.close().await;

    let db = memory_postgres::PostgresDatabase::connect(
        memory_postgres::PostgresConfig::new(url).schema(schema),
    )
    .await
    .unwrap();
    let jobs = memory_postgres::PostgresJobQueue::new(db.clone());
    let page = memory_core::ports::JobQueue::list(&jobs, &Default::default(), None, 10)
        .await
        .unwrap();
    assert_eq!(
        page.jobs.len(),
        1,
        "the ingest job lived in the Postgres queue"
    );
    db.drop_schema().await.unwrap();
}
