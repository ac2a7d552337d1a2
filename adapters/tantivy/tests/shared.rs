//! An index several processes share ([`TantivyOptions::shared`]): each handle here opens the
//! directory on its own, with its own file descriptors, exactly as another process would
//! (file locks conflict between descriptors, not only between processes).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::Duration;

use memory_core::MemoryError;
use memory_core::ports::{TextDocument, TextIndex, TextQuery};
use memory_tantivy::{TantivyOptions, TantivyTextIndex};
use memory_testkit::contract;
use memory_testkit::files::files_containing;

/// A word no analyzer changes, found nowhere else.
const MARKER: &str = "zqxjvsharedkwz";

fn shared(dir: &Path) -> TantivyTextIndex {
    TantivyTextIndex::open_with(dir, TantivyOptions::default().shared(true)).unwrap()
}

fn notes(prefix: &str, n: usize) -> Vec<TextDocument> {
    (0..n)
        .map(|i| TextDocument::new(format!("{prefix}{i}"), format!("harbour note {prefix} {i}")))
        .collect()
}

async fn found(index: &TantivyTextIndex, words: &str) -> Vec<String> {
    let mut ids: Vec<String> = index
        .search("n", &TextQuery::new(words, 1_000))
        .await
        .unwrap()
        .into_iter()
        .map(|hit| hit.id)
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn a_shared_index_passes_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    contract::text_index::run_all(&shared(dir.path())).await;
}

/// Two handles on one directory both write; each sees the other's writes at its next
/// search, with nothing lost when they write at the same time.
#[tokio::test]
async fn two_handles_write_in_turn_and_see_each_others_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (shared(dir.path()), shared(dir.path()));
    assert!(a.is_shared() && b.is_shared());
    a.upsert(
        "n",
        vec![TextDocument::new("first", "the lighthouse keeper")],
    )
    .await
    .unwrap();
    assert_eq!(found(&b, "lighthouse").await, ["first"], "b sees a's write");

    // Many writes through both at once: every one lands once.
    let mut writes = Vec::new();
    for round in 0..20 {
        for (name, index) in [("a", a.clone()), ("b", b.clone())] {
            writes.push(tokio::spawn(async move {
                let prefix = format!("{name}{round}-");
                index.upsert("n", notes(&prefix, 5)).await.unwrap();
            }));
        }
    }
    for write in writes {
        write.await.unwrap();
    }
    for index in [&a, &b] {
        assert_eq!(index.count("n").await.unwrap(), 201);
        assert_eq!(found(index, "harbour").await.len(), 200);
    }

    // A replace through one handle is the only version the other finds.
    b.upsert("n", vec![TextDocument::new("first", "the harbour master")])
        .await
        .unwrap();
    assert!(found(&a, "lighthouse").await.is_empty());
    assert_eq!(a.count("n").await.unwrap(), 201);
}

/// A delete through one handle leaves the text in no file, and the other handle no longer
/// finds it; a new handle opened afterwards sees the same documents.
#[tokio::test]
async fn a_delete_through_one_handle_erases_the_text_for_all() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (shared(dir.path()), shared(dir.path()));
    let mut documents = notes("f", 100);
    documents.insert(
        50,
        TextDocument::new("secret", format!("the code word is {MARKER}")),
    );
    a.upsert("n", documents).await.unwrap();
    assert_eq!(found(&b, MARKER).await, ["secret"]);
    assert!(
        !files_containing(dir.path(), MARKER.as_bytes()).is_empty(),
        "positive control: the marker is in the files before the delete"
    );
    assert_eq!(b.delete("n", &["secret".into()]).await.unwrap(), 1);
    assert_eq!(
        files_containing(dir.path(), MARKER.as_bytes()),
        Vec::<String>::new()
    );
    assert!(found(&a, MARKER).await.is_empty());
    assert_eq!(a.count("n").await.unwrap(), 100);
    drop((a, b));
    assert_eq!(shared(dir.path()).count("n").await.unwrap(), 100);
}

/// Many small commits from two handles are merged, and the files of merged segments are
/// collected whichever handle made them (each commit opens the index afresh).
#[tokio::test]
async fn commits_from_both_handles_are_merged_and_collected() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (shared(dir.path()), shared(dir.path()));
    for i in 0..60 {
        let index = if i % 2 == 0 { &a } else { &b };
        index
            .upsert("n", vec![TextDocument::new(format!("d{i}"), "a keeper")])
            .await
            .unwrap();
    }
    assert_eq!(b.count("n").await.unwrap(), 60);
    let segments = a.segment_count();
    assert!(segments < 20, "{segments} segments after 60 commits");
    let files = std::fs::read_dir(dir.path()).unwrap().count();
    assert!(
        files < 120,
        "{files} files: merged segments' files were collected"
    );
}

/// A shared handle cannot write while a handle that does not share the index holds it: its
/// write fails with a `Conflict` that says why, and nothing is lost once that one is gone.
#[tokio::test]
async fn a_handle_that_does_not_share_blocks_writes_with_a_clear_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let sharing = shared(dir.path());
    let holding = TantivyTextIndex::open(dir.path()).unwrap();
    let error = sharing
        .upsert("n", vec![TextDocument::new("d", "the keeper")])
        .await
        .unwrap_err();
    assert!(matches!(error, MemoryError::Conflict { .. }), "{error}");
    assert!(error.to_string().contains("does not share"), "{error}");
    holding
        .upsert("n", vec![TextDocument::new("h", "the keeper")])
        .await
        .unwrap();
    drop(holding);
    sharing
        .upsert("n", vec![TextDocument::new("d", "the keeper")])
        .await
        .unwrap();
    assert_eq!(found(&sharing, "keeper").await, ["d", "h"]);
}

/// A commit that waits longer than `lock_wait` for another process's commit fails as
/// `Transient` (retryable), and succeeds once the lock is free.
#[tokio::test]
async fn a_commit_waiting_too_long_for_the_lock_is_transient() {
    let dir = tempfile::tempdir().unwrap();
    let options = TantivyOptions::default()
        .shared(true)
        .lock_wait(Duration::from_millis(200));
    let index = TantivyTextIndex::open_with(dir.path(), options).unwrap();
    // Another process in the middle of a long commit holds the directory's lock.
    let lock = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.path().join("memory-writer.lock"))
        .unwrap();
    lock.lock().unwrap();
    let error = index
        .upsert("n", vec![TextDocument::new("d", "the keeper")])
        .await
        .unwrap_err();
    assert!(error.is_transient(), "{error}");
    drop(lock);
    index
        .upsert("n", vec![TextDocument::new("d", "the keeper")])
        .await
        .unwrap();
    assert_eq!(found(&index, "keeper").await, ["d"]);
}
