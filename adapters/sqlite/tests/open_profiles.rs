//! Many profiles, few open: at most `open_profiles` databases are open at once, whatever the
//! number of profiles; a closed profile reopens with everything it had; a profile in use is
//! never closed under its user; and running out of room is a transient error, not one more
//! open database.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use memory_core::ports::{
    MemoryFilter, MemoryKind, MemoryProfiles, MemoryRecord, TextIndexes, TextQuery, VectorIndexes,
    VectorQuery, VectorRecord, namespaces,
};
use memory_core::{MemoryError, Timestamp};
use memory_sqlite::SqliteProfiles;

fn memory(id: &str, content: &str) -> MemoryRecord {
    MemoryRecord::new(id, MemoryKind::Fact, content, Timestamp(1))
}

/// File descriptors this process has open (Linux).
fn open_files() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// Threads of this process (Linux).
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_profiles_keep_few_open_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let profiles = SqliteProfiles::new(dir.path()).open_profiles(3, Duration::from_secs(3600));
    let (files_before, threads_before) = (open_files(), threads());
    for i in 0..40 {
        let name = format!("user-{i:03}");
        let store = profiles.open(&name).await.unwrap();
        store
            .insert_memory(memory(
                &format!("m{i}"),
                &format!("likes colour number {i}"),
            ))
            .await
            .unwrap();
        let vectors = profiles.vector_index(&name).await.unwrap();
        vectors
            .upsert(
                "memories",
                vec![VectorRecord::new(
                    format!("m{i}"),
                    vec![1.0, i as f32, 0.5],
                    "model",
                )],
            )
            .await
            .unwrap();
        assert!(profiles.open_count().await <= 3);
    }
    // Three profiles' connections and threads at most, not forty.
    let (files, thread_count) = (open_files(), threads());
    assert!(
        files <= files_before + 3 * 8,
        "{files} files open, {files_before} before"
    );
    assert!(
        thread_count <= threads_before + 3 * 6,
        "{thread_count} threads, {threads_before} before"
    );
    // Every profile reopens with its memory, its text and its vectors.
    for i in 0..40 {
        let name = format!("user-{i:03}");
        let page = profiles
            .open(&name)
            .await
            .unwrap()
            .list(&MemoryFilter::default(), None, 10)
            .await
            .unwrap();
        assert_eq!(page.memories.len(), 1, "{name}");
        assert_eq!(page.memories[0].content, format!("likes colour number {i}"));
        let hits = profiles
            .text_index(&name)
            .await
            .unwrap()
            .search(namespaces::MEMORIES, &TextQuery::new("colour", 10))
            .await
            .unwrap();
        assert_eq!(hits.len(), 1, "{name}");
        let found = profiles
            .vector_index(&name)
            .await
            .unwrap()
            .search("memories", &VectorQuery::new(&[1.0, i as f32, 0.5], 1))
            .await
            .unwrap();
        assert_eq!(found[0].id, format!("m{i}"));
        assert!(profiles.open_count().await <= 3);
    }
    assert_eq!(profiles.list().await.unwrap().len(), 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_in_use_stays_open_and_a_full_set_in_use_is_transient() {
    let dir = tempfile::tempdir().unwrap();
    let profiles = SqliteProfiles::new(dir.path())
        .open_profiles(2, Duration::from_secs(3600))
        .busy_timeout(Duration::from_millis(200));
    let a = profiles.open("a").await.unwrap();
    let b_vectors = profiles.vector_index("b").await.unwrap();
    // Both open profiles are held: a third cannot be opened, and nothing was closed.
    let refused = profiles.open("c").await.err().expect("no room");
    assert!(
        matches!(refused, MemoryError::Transient { .. }),
        "{refused}"
    );
    a.insert_memory(memory("m1", "still writable"))
        .await
        .unwrap();
    // Letting one go makes room; the other keeps working.
    drop(a);
    let c = profiles.open("c").await.unwrap();
    c.insert_memory(memory("m2", "in c")).await.unwrap();
    b_vectors
        .upsert(
            "memories",
            vec![VectorRecord::new("v", vec![1.0, 0.0], "model")],
        )
        .await
        .unwrap();
    drop((b_vectors, c));
    let a = profiles.open("a").await.unwrap();
    assert!(a.get_memory("m1").await.unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_profiles_are_closed_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let profiles = SqliteProfiles::new(dir.path()).open_profiles(8, Duration::from_secs(1));
    for name in ["a", "b", "c"] {
        profiles
            .open(name)
            .await
            .unwrap()
            .insert_memory(memory("m", name))
            .await
            .unwrap();
    }
    let held = profiles.open("a").await.unwrap();
    assert_eq!(profiles.open_count().await, 3);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while profiles.open_count().await > 1 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The one in use stays open however long it is held.
    assert_eq!(profiles.open_count().await, 1);
    assert!(held.get_memory("m").await.unwrap().is_some());
    drop(held);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while profiles.open_count().await > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(profiles.open_count().await, 0);
    let b = profiles.open("b").await.unwrap();
    assert_eq!(b.get_memory("m").await.unwrap().unwrap().content, "b");
}
