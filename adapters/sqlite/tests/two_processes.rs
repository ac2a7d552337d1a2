//! Two processes on one profile file: a vector index instance with a cached matrix sees
//! what another process wrote, at its next read.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use memory_core::ports::{VectorIndex, VectorRecord};
use memory_sqlite::{SqliteConfig, SqliteDatabase, SqliteVectorIndex};

const CHILD_DB: &str = "MEMORY_SQLITE_CHILD_DB";
const CHILD_TEST: &str = "child_process_writes_vectors";

fn record(id: &str, vector: [f32; 2], model: &str) -> VectorRecord {
    VectorRecord {
        id: id.into(),
        vector: vector.to_vec(),
        model: model.into(),
        fields: Default::default(),
    }
}

async fn index(path: &str) -> SqliteVectorIndex {
    SqliteVectorIndex::new(SqliteDatabase::open(SqliteConfig::new(path)).await.unwrap())
}

/// Runs this test binary again, as a second process, to run the child test on `path`.
fn run_child(path: &std::path::Path, action: &str) {
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([CHILD_TEST, "--exact", "--ignored", "--nocapture"])
        .env(CHILD_DB, path)
        .env("MEMORY_SQLITE_CHILD_ACTION", action)
        .status()
        .unwrap();
    assert!(status.success(), "the child process failed: {status}");
}

/// The second process (run only by `a_cached_index_sees_another_processes_writes`, which
/// starts this test binary again with `--ignored --exact` and the database path in the
/// environment). Ignored because on its own it has no database of the first process to write
/// to; it runs in every test run through the parent test, which fails if it fails.
#[tokio::test]
#[ignore = "run as a child process by a_cached_index_sees_another_processes_writes"]
async fn child_process_writes_vectors() {
    let path = std::env::var(CHILD_DB).expect("run by the parent test");
    let index = index(&path).await;
    match std::env::var("MEMORY_SQLITE_CHILD_ACTION")
        .unwrap()
        .as_str()
    {
        "add" => index
            .upsert("ns", vec![record("b", [0.0, 1.0], "m")])
            .await
            .unwrap(),
        "delete" => {
            index.delete("ns", &["a".to_owned()]).await.unwrap();
        }
        "recreate" => {
            index.clear("ns").await.unwrap();
            index
                .upsert("ns", vec![record("c", [1.0, 1.0], "m")])
                .await
                .unwrap();
        }
        other => panic!("unknown action {other}"),
    }
}

#[tokio::test]
async fn a_cached_index_sees_another_processes_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("profile.db");
    let ours = index(path.to_str().unwrap()).await;
    ours.upsert("ns", vec![record("a", [1.0, 0.0], "m")])
        .await
        .unwrap();
    // The matrix is cached now.
    assert_eq!(ours.query("ns", &[0.0, 1.0], 5).await.unwrap().len(), 1);

    run_child(&path, "add");
    let hits = ours.query("ns", &[0.0, 1.0], 5).await.unwrap();
    assert_eq!(hits.len(), 2, "the other process's vector is seen");
    assert_eq!(hits[0].id, "b");

    run_child(&path, "delete");
    let hits = ours.query("ns", &[1.0, 0.0], 5).await.unwrap();
    assert_eq!(
        hits.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(),
        ["b"],
        "the other process's delete is seen"
    );

    run_child(&path, "recreate");
    let hits = ours.query("ns", &[1.0, 1.0], 5).await.unwrap();
    assert_eq!(
        hits.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(),
        ["c"],
        "a namespace cleared and refilled elsewhere is reloaded"
    );
    // Our own writes keep the cache in step without a reload.
    ours.upsert("ns", vec![record("d", [0.5, 0.5], "m")])
        .await
        .unwrap();
    assert_eq!(ours.query("ns", &[1.0, 1.0], 5).await.unwrap().len(), 2);
}
