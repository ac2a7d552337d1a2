//! The writer: concurrent writes share commits, every write is searchable when it returns,
//! and deleted text leaves the index files (checked by scanning them for a marker).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use memory_core::ports::{TextDocument, TextIndex, TextQuery};
use memory_tantivy::{Erasure, TantivyOptions, TantivyTextIndex};
use memory_testkit::files::files_containing;

/// A word no analyzer changes (lowercase, no stem to strip), found nowhere else.
const MARKER: &str = "zqxjvmarkerkwz";

fn filler(from: usize, n: usize) -> Vec<TextDocument> {
    (from..from + n)
        .map(|i| {
            TextDocument::new(
                format!("f{i}"),
                format!("ordinary note number {i} about lighthouses"),
            )
        })
        .collect()
}

#[tokio::test]
async fn concurrent_writes_share_commits_and_are_visible_on_return() {
    let dir = tempfile::tempdir().unwrap();
    let index = TantivyTextIndex::open_with(
        dir.path(),
        TantivyOptions::default().commit_interval(Duration::from_millis(30)),
    )
    .unwrap();
    let writers: Vec<_> = (0..16)
        .map(|w| {
            let index = index.clone();
            tokio::spawn(async move {
                for i in 0..5 {
                    let id = format!("w{w}-{i}");
                    index
                        .upsert("n", vec![TextDocument::new(&id, format!("keeper {id}"))])
                        .await
                        .unwrap();
                    // Visible to the next search as soon as the write returns.
                    let hits = index.search("n", &TextQuery::new(&id, 5)).await.unwrap();
                    assert!(hits.iter().any(|h| h.id == id), "{id} not visible");
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    assert_eq!(index.count("n").await.unwrap(), 80);
    let commits = index.commits();
    assert!(
        commits < 80,
        "80 writes from 16 writers took {commits} commits"
    );

    // The interval bounds a lone write's wait: it is the interval plus one commit.
    let started = Instant::now();
    index
        .upsert("n", vec![TextDocument::new("alone", "a lone write")])
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(index.count("n").await.unwrap(), 81);
}

/// With the default interval (zero) a write commits at once; nothing waits for a timer.
#[tokio::test]
async fn sequential_writes_commit_one_by_one_and_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let index = TantivyTextIndex::open(dir.path()).unwrap();
    for i in 0..20 {
        index
            .upsert("n", vec![TextDocument::new(format!("d{i}"), "a keeper")])
            .await
            .unwrap();
        assert_eq!(index.count("n").await.unwrap(), i + 1);
    }
    assert_eq!(index.commits(), 20);
    drop(index);
    let again = TantivyTextIndex::open(dir.path()).unwrap();
    assert_eq!(again.count("n").await.unwrap(), 20);
}

/// A deleted document's text is in no file afterwards; the marker is found before the
/// delete (the positive control: the scan would see it if it were there). The marker shares
/// its segment with live documents: a segment whose documents are all deleted is dropped
/// whole by any commit, which would prove nothing.
#[tokio::test]
async fn a_delete_erases_the_text_from_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let index = TantivyTextIndex::open_with(
        dir.path(),
        TantivyOptions::default().commit_interval(Duration::from_millis(200)),
    )
    .unwrap();
    let mut documents = filler(0, 200);
    documents.insert(
        100,
        TextDocument::new("secret", format!("the code word is {MARKER}")),
    );
    index.upsert("n", documents).await.unwrap();
    assert!(
        !files_containing(dir.path(), MARKER.as_bytes()).is_empty(),
        "positive control: the marker is in the files before the delete"
    );
    assert_eq!(index.delete("n", &["secret".into()]).await.unwrap(), 1);
    assert_eq!(
        files_containing(dir.path(), MARKER.as_bytes()),
        Vec::<String>::new()
    );
    assert!(
        index
            .search("n", &TextQuery::new(MARKER, 5))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(index.count("n").await.unwrap(), 200, "the rest stays");
    assert_eq!(
        index
            .search("n", &TextQuery::new("lighthouse", 500))
            .await
            .unwrap()
            .len(),
        200
    );

    // Clearing a namespace erases too (its documents committed with another namespace's).
    let secret = vec![TextDocument::new("s2", format!("again {MARKER}"))];
    let (a, b) = tokio::join!(
        index.upsert("n", filler(200, 100)),
        index.upsert("m", secret)
    );
    a.unwrap();
    b.unwrap();
    assert!(!files_containing(dir.path(), MARKER.as_bytes()).is_empty());
    index.clear("m").await.unwrap();
    assert_eq!(
        files_containing(dir.path(), MARKER.as_bytes()),
        Vec::<String>::new()
    );
    assert_eq!(index.count("n").await.unwrap(), 300);

    let secret = vec![TextDocument::new("s3", format!("once more {MARKER}"))];
    index.upsert("m", secret).await.unwrap();
    index.clear_all().await.unwrap();
    assert_eq!(
        files_containing(dir.path(), MARKER.as_bytes()),
        Vec::<String>::new()
    );
    assert_eq!(index.count("n").await.unwrap(), 0);
}

/// In the background mode a delete returns at once and the text leaves the files when the
/// merge ends.
#[tokio::test]
async fn background_erasure_removes_the_text_soon_after() {
    let dir = tempfile::tempdir().unwrap();
    let index = TantivyTextIndex::open_with(
        dir.path(),
        TantivyOptions::default().erasure(Erasure::InBackground),
    )
    .unwrap();
    let mut documents = filler(0, 100);
    documents.insert(50, TextDocument::new("secret", format!("code {MARKER}")));
    index.upsert("n", documents).await.unwrap();
    assert!(!files_containing(dir.path(), MARKER.as_bytes()).is_empty());
    index.delete("n", &["secret".into()]).await.unwrap();
    assert!(
        index
            .search("n", &TextQuery::new(MARKER, 5))
            .await
            .unwrap()
            .is_empty()
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !files_containing(dir.path(), MARKER.as_bytes()).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the background merge never erased the text"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(index.count("n").await.unwrap(), 100);
}

/// Merges are the writer thread's own (Tantivy's policy is off): segments made by many
/// small commits are merged, and every document stays.
#[tokio::test]
async fn small_commits_are_merged() {
    let dir = tempfile::tempdir().unwrap();
    let index = TantivyTextIndex::open(dir.path()).unwrap();
    for i in 0..100 {
        index
            .upsert("n", vec![TextDocument::new(format!("d{i}"), "a keeper")])
            .await
            .unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while index.segment_count() > 16 {
        assert!(
            Instant::now() < deadline,
            "{} segments left unmerged",
            index.segment_count()
        );
        // The reader reloads when a merge ends.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(index.count("n").await.unwrap(), 100);
}
