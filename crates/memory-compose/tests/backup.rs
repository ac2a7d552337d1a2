//! `Deployment::backup` and `restore`: a live embedded deployment backed up into its blob
//! store (the data directory's, and a real S3-compatible bucket when the test command
//! starts one), restored into an empty directory, and compared export by export, byte for
//! byte.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use memory_compose::Deployment;
use memory_core::ports::{BlobStoreExt, PutMode};
use memory_core::{Parent, Role, SessionId, UiMessage};
use memory_engine::long_term::RememberRequest;

const CONFIG: &str = "[[blocks]]\nlabel = \"notes\"\nkind = \"writable\"\nmax_tokens = 200\n\n\
                      [memory]\nembedder = \"none\"\n";

/// Two sessions (one with a branch), a block, and a profile with two memories.
async fn seed(deployment: &Deployment) -> Vec<SessionId> {
    let manager = deployment.session_manager().await.unwrap();
    let mut ids = Vec::new();
    for s in 0..2 {
        let id = manager.create(Default::default()).await.unwrap().id;
        for m in 0..5 {
            let text = format!("session {s} message {m}: the lighthouse keeper's log");
            manager
                .append(
                    &id,
                    UiMessage::text_message(format!("m{m}"), Role::User, text),
                    Parent::LatestLeaf,
                )
                .await
                .unwrap();
        }
        ids.push(id);
    }
    manager
        .append(
            &ids[0],
            UiMessage::text_message("alt", Role::User, "a branch"),
            Parent::message("m1"),
        )
        .await
        .unwrap();
    let session = manager.session(&ids[0]).await.unwrap();
    session
        .context()
        .replace("notes", "Prefers green tea")
        .await
        .unwrap();
    let (memory, _) = deployment.memory_service().await.unwrap();
    for content in ["The boiler was serviced in May.", "Ada keeps bees."] {
        let request = RememberRequest {
            content: content.into(),
            session_id: None,
            kind: None,
            key: None,
            metadata: Default::default(),
            expires_at: None,
        };
        memory.remember("home", request).await.unwrap();
    }
    ids
}

/// Every export line of the deployment: each session's, then the profile's.
async fn exports(deployment: &Deployment, sessions: &[SessionId]) -> Vec<String> {
    let manager = deployment.session_manager().await.unwrap();
    let mut lines = Vec::new();
    for id in sessions {
        let mut cursor = None;
        loop {
            let page = manager.export_page(id, cursor, 2).await.unwrap();
            lines.extend(page.lines);
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        let session = manager.session(id).await.unwrap();
        lines.push(session.context().get("notes").await.unwrap().content);
    }
    let (memory, _) = deployment.memory_service().await.unwrap();
    let mut cursor = None;
    loop {
        let page = memory.export_page("home", true, cursor).await.unwrap();
        lines.extend(page.lines);
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    lines
}

async fn round_trip(source: &Path, config: &str) {
    std::fs::write(source.join("memory.toml"), config).unwrap();
    let deployment = Deployment::open(source).unwrap();
    let sessions = seed(&deployment).await;
    let before = exports(&deployment, &sessions).await;

    let first = deployment.backup(Some(2)).await.unwrap();
    let kinds: Vec<(&str, &str)> = first
        .files
        .iter()
        .map(|f| (f.kind.as_str(), f.name.as_str()))
        .collect();
    assert!(kinds.contains(&("sessions", "memory.db")), "{kinds:?}");
    assert!(kinds.contains(&("profiles", "home.db")), "{kinds:?}");
    assert!(
        first
            .files
            .iter()
            .all(|f| f.size > 0 && f.sha256.len() == 64)
    );

    // Writes after the backup are not in it.
    let manager = deployment.session_manager().await.unwrap();
    manager
        .append(
            &sessions[1],
            UiMessage::text_message("late", Role::User, "after the backup"),
            Parent::LatestLeaf,
        )
        .await
        .unwrap();

    let target = tempfile::tempdir().unwrap();
    std::fs::write(target.path().join("memory.toml"), config).unwrap();
    let restored = deployment
        .restore(Some(&first.id), target.path())
        .await
        .unwrap();
    assert_eq!(restored, first);
    let copy = Deployment::open(target.path()).unwrap();
    assert_eq!(
        exports(&copy, &sessions).await,
        before,
        "the restore equals the backup, byte for byte"
    );

    let error = deployment.restore(None, target.path()).await.unwrap_err();
    assert!(
        error.to_string().contains("empty data directory"),
        "{error}"
    );

    // Retention: three more backups, keep two.
    for _ in 0..3 {
        deployment.backup(Some(2)).await.unwrap();
    }
    let kept = deployment.backups().await.unwrap();
    assert_eq!(kept.len(), 2);
    assert!(
        kept.iter().all(|b| b.id != first.id),
        "the oldest went first"
    );
    let blobs = deployment.blob_store().await.unwrap();
    let left = blobs
        .list_all(&format!("backups/{}/", first.id))
        .await
        .unwrap();
    assert!(left.is_empty(), "a pruned backup leaves no blob: {left:?}");

    // A damaged file is caught by its checksum, and nothing is put in place.
    let newest = kept.last().unwrap();
    let file = &newest.files[0];
    let mut bytes = blobs.get(&file.key).await.unwrap().unwrap();
    bytes[100] ^= 0xff;
    blobs
        .put(&file.key, bytes, PutMode::Overwrite)
        .await
        .unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let error = deployment
        .restore(Some(&newest.id), elsewhere.path())
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("does not match its manifest"),
        "{error}"
    );
    assert!(!elsewhere.path().join(&file.name).exists());

    for backup in deployment.backups().await.unwrap() {
        for blob in blobs
            .list_all(&format!("backups/{}/", backup.id))
            .await
            .unwrap()
        {
            blobs.delete(&blob.key).await.unwrap();
        }
    }
}

#[tokio::test]
async fn a_backup_in_the_data_directory_restores_byte_for_byte() {
    let source = tempfile::tempdir().unwrap();
    round_trip(source.path(), CONFIG).await;
}

#[tokio::test]
async fn a_backup_in_an_s3_bucket_restores_byte_for_byte() {
    let prefix = format!("memorytest/backup-{}/", uuid::Uuid::new_v4().simple());
    let Some(s3) = common::s3_blobs_section(&prefix) else {
        return;
    };
    let config = format!("{CONFIG}\n{s3}");
    let source = tempfile::tempdir().unwrap();
    round_trip(source.path(), &config).await;
}

/// A deployment with every role on PostgreSQL is backed up logically (every session with
/// its overlays and blocks, every profile, through the export lines) and restored into an
/// empty deployment on another schema: the exports match byte for byte.
#[tokio::test]
async fn a_postgres_deployment_backs_up_logically_and_restores_into_another_schema() {
    let Ok(url) = std::env::var("MEMORY_POSTGRES_URL") else {
        assert!(
            std::env::var("MEMORY_REQUIRE_POSTGRES").is_err(),
            "MEMORY_REQUIRE_POSTGRES is set but MEMORY_POSTGRES_URL is not"
        );
        eprintln!("skipped: MEMORY_POSTGRES_URL is not set");
        return;
    };
    let suffix = &uuid::Uuid::new_v4().simple().to_string()[..10];
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let config = |schema: &str| {
        format!(
            "{CONFIG}\n{}",
            memory_config::all_on_postgres(&format!("backup_{schema}_{suffix}"))
        )
    };
    std::fs::write(a.path().join("memory.toml"), config("a")).unwrap();
    std::fs::write(b.path().join("memory.toml"), config("b")).unwrap();
    let source = Deployment::open(a.path()).unwrap();
    let sessions = seed(&source).await;
    let manager = source.session_manager().await.unwrap();
    manager
        .session(&sessions[0])
        .await
        .unwrap()
        .add_compaction("the first messages", "m0", "m2")
        .await
        .unwrap();
    let before = exports(&source, &sessions).await;

    let backup = source.backup(None).await.unwrap();
    assert_eq!(backup.mode, "logical");
    let restored = source.restore(Some(&backup.id), b.path()).await.unwrap();
    assert_eq!(restored.id, backup.id);
    let copy = Deployment::open(b.path()).unwrap();
    assert_eq!(exports(&copy, &sessions).await, before, "byte for byte");
    let overlays = copy
        .session_manager()
        .await
        .unwrap()
        .session(&sessions[0])
        .await
        .unwrap()
        .compactions()
        .await
        .unwrap();
    assert_eq!(overlays.len(), 1);
    // A second restore into the now non-empty deployment is refused.
    let error = source
        .restore(Some(&backup.id), b.path())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("empty deployment"), "{error}");
    source.close().await;
    copy.close().await;
    for schema in ["a", "b"] {
        let db = memory_postgres::PostgresDatabase::connect(
            memory_postgres::PostgresConfig::new(url.clone())
                .schema(format!("backup_{schema}_{suffix}")),
        )
        .await
        .unwrap();
        db.drop_schema().await.unwrap();
    }
}
