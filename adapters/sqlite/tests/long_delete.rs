//! Clearing a long session commits in bounded batches: another connection sees the count
//! fall step by step, and can write between the steps (one statement locked writers out for
//! the whole delete: 6.7 s on 200,000 messages).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use memory_core::ports::MessageStore;
use memory_core::{NewMessage, Parent, Role, SessionId, UiMessage};
use memory_sqlite::{SqliteConfig, SqliteDatabase, SqliteMessageStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clearing_a_long_session_lets_other_writers_in_between_batches() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let store = SqliteMessageStore::new(
        SqliteDatabase::open(SqliteConfig::new(&path))
            .await
            .unwrap(),
    );
    let big = SessionId::new("big").unwrap();
    let n = 30_000;
    for start in (0..n).step_by(5_000) {
        let batch = (start..start + 5_000)
            .map(|i| {
                NewMessage::with_parent(
                    UiMessage::text_message(
                        format!("m{i}"),
                        Role::User,
                        format!("message {i} of a long session"),
                    ),
                    Parent::LatestLeaf,
                )
            })
            .collect();
        store.append(&big, batch).await.unwrap();
    }
    // Another process's connection, with a short busy timeout: it writes one message per
    // round while the delete runs; each write must get in within the timeout.
    let other = Arc::new(SqliteMessageStore::new(
        SqliteDatabase::open(
            SqliteConfig::new(&path).busy_timeout(std::time::Duration::from_millis(400)),
        )
        .await
        .unwrap(),
    ));
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (other, done) = (other.clone(), done.clone());
        tokio::spawn(async move {
            let side = SessionId::new("side").unwrap();
            let mut writes = 0u32;
            while !done.load(Ordering::SeqCst) {
                other
                    .append(
                        &side,
                        vec![NewMessage::with_parent(
                            UiMessage::text_message(format!("s{writes}"), Role::User, "beside"),
                            Parent::LatestLeaf,
                        )],
                    )
                    .await
                    .unwrap();
                writes += 1;
            }
            writes
        })
    };
    let started = std::time::Instant::now();
    store.clear(&big).await.unwrap();
    let took = started.elapsed();
    done.store(true, Ordering::SeqCst);
    let writes = writer.await.unwrap();
    assert!(store.history(&big, None).await.unwrap().is_empty());
    assert!(
        writes > 1,
        "only {writes} write(s) got in during a {took:?} delete"
    );
}
