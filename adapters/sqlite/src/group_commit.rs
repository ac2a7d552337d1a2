//! Group commit: small writes from concurrent callers share one transaction.
//!
//! SQLite has one writer. When every single append is its own transaction, concurrent
//! callers queue for the lock and each pays a whole commit (the WAL frames of every page it
//! touched, FTS5's new segment). Here a write is queued; one leader task takes everything
//! queued, runs it in one `BEGIN IMMEDIATE` transaction (each caller's write inside its own
//! savepoint, so one caller's error rolls back only its own work) and commits; then every
//! caller gets its result. No caller is answered before the commit that holds its write, and
//! writes run in the order they were queued, so later writes see earlier ones as they would
//! one at a time. A caller that is alone pays one transaction, as before. A caller that goes
//! away after queueing does not take its write back: it runs and commits with its group
//! (appends are idempotent by id).

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use memory_core::{MemoryError, Result};
use sqlx::{SqliteConnection, SqlitePool};

use crate::error::db;

/// What a write does, given the group's connection, inside the group's transaction.
pub(crate) type GroupWrite<T> =
    Box<dyn for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, Result<T>> + Send>;

/// Answers a caller once the group's commit is known.
type Answer = Box<dyn FnOnce(std::result::Result<(), &MemoryError>) + Send>;

/// Runs a queued write, then says whether it succeeded and how to answer its caller.
type Run =
    Box<dyn for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, (bool, Answer)> + Send>;

/// A queued write, and how to answer its caller if it never runs (the group failed first).
struct Job {
    run: Run,
    abort: Answer,
}

/// Writes in one transaction at most (a bound on how long the first of them waits).
const MOST_PER_GROUP: usize = 256;

#[derive(Default)]
struct Queue {
    jobs: Vec<Job>,
    /// A leader task is running (it takes the queue until it finds it empty).
    leading: bool,
}

/// The group committer of one database's writer connection. Cheap to clone.
#[derive(Clone)]
pub(crate) struct GroupCommit {
    writer: SqlitePool,
    queue: Arc<Mutex<Queue>>,
    /// Off: every write is a transaction of its own, in the caller's task.
    grouped: bool,
}

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

/// The error a caller gets when the group's transaction failed around its write.
fn group_failed(error: &MemoryError) -> MemoryError {
    let message = format!("the shared transaction failed: {error}");
    if error.is_transient() {
        MemoryError::transient(crate::error::BACKEND, message)
    } else {
        MemoryError::backend(crate::error::BACKEND, message)
    }
}

impl GroupCommit {
    /// A committer over `writer` (the one-connection writer pool); `grouped: false` runs
    /// each write in a transaction of its own.
    pub(crate) fn new(writer: SqlitePool, grouped: bool) -> Self {
        Self {
            writer,
            queue: Arc::new(Mutex::new(Queue::default())),
            grouped,
        }
    }

    /// Runs `write` in the next group's transaction and returns its result once that
    /// transaction committed (or the error that kept it from committing).
    pub(crate) async fn run<T: Send + 'static>(&self, write: GroupWrite<T>) -> Result<T> {
        if !self.grouped {
            let mut tx = self
                .writer
                .begin_with("BEGIN IMMEDIATE")
                .await
                .map_err(db)?;
            let result = write(&mut tx).await?;
            tx.commit().await.map_err(db)?;
            return Ok(result);
        }
        let (sender, receiver) = tokio::sync::oneshot::channel::<Result<T>>();
        let sender = Arc::new(Mutex::new(Some(sender)));
        let aborted = Arc::clone(&sender);
        let run: Run = Box::new(move |conn| {
            async move {
                let result = write(conn).await;
                let succeeded = result.is_ok();
                let answer: Answer = Box::new(move |committed| {
                    if let Some(sender) = sender.lock().ok().and_then(|mut s| s.take()) {
                        let _ = sender.send(match committed {
                            Ok(()) => result,
                            Err(error) => Err(group_failed(error)),
                        });
                    }
                });
                (succeeded, answer)
            }
            .boxed()
        });
        let abort: Answer = Box::new(move |failed| {
            if let Some(sender) = aborted.lock().ok().and_then(|mut s| s.take()) {
                let _ = sender.send(Err(match failed {
                    Err(error) => group_failed(error),
                    Ok(()) => never_ran(),
                }));
            }
        });
        let job = Job { run, abort };
        let lead = {
            let mut queue = self
                .queue
                .lock()
                .map_err(|_| crate::error::invariant("group commit queue poisoned"))?;
            queue.jobs.push(job);
            !std::mem::replace(&mut queue.leading, true)
        };
        if lead {
            // A task of its own, so a caller that goes away never strands the queue.
            tokio::spawn(self.clone().lead());
        }
        receiver.await.map_err(|_| never_ran())?
    }

    /// Commits groups until the queue is empty.
    async fn lead(self) {
        let mut leader = Leader {
            queue: Arc::clone(&self.queue),
            finished: false,
        };
        loop {
            let jobs = match self.queue.lock() {
                Ok(mut queue) => {
                    if queue.jobs.is_empty() {
                        queue.leading = false;
                        leader.finished = true;
                        return;
                    }
                    let take = queue.jobs.len().min(MOST_PER_GROUP);
                    queue.jobs.drain(..take).collect::<Vec<_>>()
                }
                Err(_) => return,
            };
            self.commit(jobs).await;
        }
    }

    /// One group: every job in one transaction, each in a savepoint when there are several.
    /// A job that never ran (the group failed before it) is answered with the group's error.
    async fn commit(&self, jobs: Vec<Job>) {
        let mut answers = Vec::with_capacity(jobs.len());
        let alone = jobs.len() == 1;
        let mut pending = jobs.into_iter();
        let committed: Result<()> = async {
            let mut tx = self
                .writer
                .begin_with("BEGIN IMMEDIATE")
                .await
                .map_err(db)?;
            for job in pending.by_ref() {
                if alone {
                    let (succeeded, answer) = (job.run)(&mut tx).await;
                    answers.push(answer);
                    if !succeeded {
                        // Its only write failed: nothing to keep, and its own error stands.
                        let _ = tx.rollback().await;
                        return Ok(());
                    }
                    continue;
                }
                if let Err(error) = sqlx::query("SAVEPOINT one_write").execute(&mut *tx).await {
                    answers.push(job.abort);
                    return Err(db(error));
                }
                let (succeeded, answer) = (job.run)(&mut tx).await;
                answers.push(answer);
                if !succeeded {
                    sqlx::query("ROLLBACK TO one_write")
                        .execute(&mut *tx)
                        .await
                        .map_err(db)?;
                }
                sqlx::query("RELEASE one_write")
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
            }
            tx.commit().await.map_err(db)
        }
        .await;
        let outcome = committed.as_ref().map(|_| ());
        for answer in answers {
            answer(outcome);
        }
        let never = never_ran();
        for job in pending {
            (job.abort)(Err(outcome.err().unwrap_or(&never)));
        }
    }
}

/// The error of a write whose group ended before it ran, without an error of its own.
fn never_ran() -> MemoryError {
    MemoryError::transient(
        crate::error::BACKEND,
        "the shared transaction ended before this write ran",
    )
}

/// Held by the leader task: if it ends any other way than finding the queue empty (a
/// panic, or its runtime shutting down), the queue is released and the writes still queued
/// are answered with an error instead of waiting forever.
struct Leader {
    queue: Arc<Mutex<Queue>>,
    finished: bool,
}

impl Drop for Leader {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let mut queue = self
            .queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        queue.leading = false;
        let never = never_ran();
        for job in queue.jobs.drain(..) {
            (job.abort)(Err(&never));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::{SqliteConfig, SqliteDatabase};

    async fn scratch() -> (tempfile::TempDir, SqliteDatabase) {
        let dir = tempfile::tempdir().unwrap();
        let db = SqliteDatabase::open(SqliteConfig::new(dir.path().join("g.db")))
            .await
            .unwrap();
        sqlx::query("CREATE TABLE t (v INTEGER PRIMARY KEY)")
            .execute(&db.writer)
            .await
            .unwrap();
        (dir, db)
    }

    fn insert(v: i64) -> GroupWrite<u64> {
        Box::new(move |conn| {
            async move {
                let done = sqlx::query("INSERT INTO t (v) VALUES (?)")
                    .bind(v)
                    .execute(conn)
                    .await
                    .map_err(db)?;
                Ok(done.rows_affected())
            }
            .boxed()
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_writes_commit_and_one_failure_fails_only_its_caller() {
        let (_dir, db) = scratch().await;
        let mut tasks = Vec::new();
        for v in 0..200i64 {
            let group = db.group.clone();
            // 150 is written twice: exactly one of the two fails (primary key).
            let value = if v == 199 { 150 } else { v };
            tasks.push(tokio::spawn(async move { group.run(insert(value)).await }));
        }
        let mut failed = 0;
        for task in tasks {
            match task.await.unwrap() {
                Ok(rows) => assert_eq!(rows, 1),
                Err(error) => {
                    assert!(error.to_string().contains("UNIQUE"), "{error}");
                    failed += 1;
                }
            }
        }
        assert_eq!(failed, 1);
        let count: i64 = sqlx::query_scalar("SELECT count(*) FROM t")
            .fetch_one(&db.reader)
            .await
            .unwrap();
        assert_eq!(count, 199);
    }

    #[tokio::test]
    async fn a_lone_write_that_fails_leaves_nothing() {
        let (_dir, database) = scratch().await;
        database.group.run(insert(1)).await.unwrap();
        let both: GroupWrite<()> = Box::new(|conn| {
            async move {
                sqlx::query("INSERT INTO t (v) VALUES (2)")
                    .execute(&mut *conn)
                    .await
                    .map_err(db)?;
                sqlx::query("INSERT INTO t (v) VALUES (1)")
                    .execute(&mut *conn)
                    .await
                    .map_err(db)?;
                Ok(())
            }
            .boxed()
        });
        assert!(database.group.run(both).await.is_err());
        let count: i64 = sqlx::query_scalar("SELECT count(*) FROM t")
            .fetch_one(&database.reader)
            .await
            .unwrap();
        assert_eq!(count, 1, "the failed write's first insert was rolled back");
    }
}
