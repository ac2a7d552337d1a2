//! Many profile indexes, few open: at most `open_profiles` indexes (a writer's threads and
//! lock each) are open at once; a closed index reopens with its documents, shared or not; an
//! index in use is never closed under its user; a full set in use is a transient error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use memory_core::MemoryError;
use memory_core::ports::{TextDocument, TextIndexes, TextQuery};
use memory_tantivy::{TantivyOptions, TantivyTextIndexes};

/// Threads of this process (Linux).
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

/// File descriptors this process has open (Linux).
fn open_files() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

async fn many_indexes_keep_few_open(shared: bool) {
    let dir = tempfile::tempdir().unwrap();
    let indexes = TantivyTextIndexes::new(dir.path())
        .with_options(
            TantivyOptions::default()
                .shared(shared)
                .writer_threads(1)
                .merge_threads(1),
        )
        .open_profiles(3, Duration::from_secs(3600));
    let (threads_before, files_before) = (threads(), open_files());
    for i in 0..30 {
        let index = indexes.text_index(&format!("user-{i:03}")).await.unwrap();
        index
            .upsert(
                "memories",
                vec![TextDocument::new(
                    "m",
                    format!("plays instrument number{i}"),
                )],
            )
            .await
            .unwrap();
        drop(index);
        assert!(indexes.open_count().await <= 3);
    }
    let (thread_count, files) = (threads(), open_files());
    assert!(
        thread_count <= threads_before + 3 * 8,
        "{thread_count} threads, {threads_before} before"
    );
    assert!(
        files <= files_before + 3 * 40,
        "{files} files, {files_before} before"
    );
    for i in 0..30 {
        let hits = indexes
            .text_index(&format!("user-{i:03}"))
            .await
            .unwrap()
            .search("memories", &TextQuery::new(format!("number{i}"), 5))
            .await
            .unwrap();
        assert_eq!(hits.len(), 1, "user-{i:03}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_profile_indexes_keep_few_open_and_lose_nothing() {
    many_indexes_keep_few_open(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_shared_profile_indexes_keep_few_open_and_lose_nothing() {
    many_indexes_keep_few_open(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_in_use_stays_open_and_idle_ones_close() {
    let dir = tempfile::tempdir().unwrap();
    let indexes = TantivyTextIndexes::new(dir.path()).open_profiles(2, Duration::from_secs(1));
    let a = indexes.text_index("a").await.unwrap();
    let b = indexes.text_index("b").await.unwrap();
    let started = std::time::Instant::now();
    let refused = indexes.text_index("c").await.err().expect("no room");
    assert!(
        matches!(refused, MemoryError::Transient { .. }),
        "{refused}"
    );
    assert!(
        started.elapsed() >= Duration::from_secs(4),
        "waited for room first"
    );
    a.upsert("raw", vec![TextDocument::new("r", "still writable")])
        .await
        .unwrap();
    drop((a, b));
    // Unused for the idle time, both close in the background; reopened, "a" has its text.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while indexes.open_count().await > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(indexes.open_count().await, 0);
    let hits = indexes
        .text_index("a")
        .await
        .unwrap()
        .search("raw", &TextQuery::new("writable", 5))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
}
