//! Group commit: small writes from concurrent callers share one transaction.
//!
//! SQLite has one writer. When every single append is its own transaction, concurrent
//! callers queue for the lock and each pays a whole commit (the WAL frames of every page it
//! touched, FTS5's new segment). Here a write is queued; one leader task takes everything
//! queued, runs it in one `BEGIN IMMEDIATE` transaction and commits; then every caller gets
//! its result. No caller is answered before the commit that holds its write, and writes run
//! in the order they were queued, so later writes see earlier ones as they would one at a
//! time. A caller that is alone pays one transaction, as before. A caller that goes away
//! after queueing does not take its write back: it runs and commits with its group (appends
//! are idempotent by id).
//!
//! One caller's refusal never undoes another's write: a write either refuses having written
//! nothing ([`Written`]), which a single statement does by itself (SQLite undoes a failed
//! statement and keeps the transaction), or runs several statements inside [`guarded`]'s
//! savepoint. Each statement is a round trip to the writer's thread, the cost that bounds a
//! group, so a one-statement write takes no savepoint.

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use memory_core::{MemoryError, Result};
use sqlx::{SqliteConnection, SqlitePool};

use crate::error::db;

/// What a write in a group returns. `Ok(Ok(value))`: written. `Ok(Err(error))`: refused,
/// and nothing of it is written (the transaction goes on). `Err(error)`: the transaction
/// itself is in doubt (SQLite may have rolled it back), so the whole group is rolled back.
pub(crate) type Written<T> = Result<Result<T>>;

/// What a write does, given the group's connection, inside the group's transaction.
pub(crate) type GroupWrite<T> =
    Box<dyn for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, Written<T>> + Send>;

/// Answers a caller once the group's commit is known.
type Answer = Box<dyn FnOnce(std::result::Result<(), &MemoryError>) + Send>;

/// How a queued write went, for the group.
enum Step {
    Wrote,
    Refused,
    /// The transaction is in doubt; the error is the group's (a copy of the write's own).
    Aborted(MemoryError),
}

/// Runs a queued write, then says how it went and how to answer its caller.
type Run =
    Box<dyn for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, (Step, Answer)> + Send>;

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

/// The error a caller gets when the group's transaction failed around its write: always
/// transient, since its own write was not at fault and may be retried.
fn group_failed(error: &MemoryError) -> MemoryError {
    MemoryError::transient(
        crate::error::BACKEND,
        format!("the shared transaction failed: {error}"),
    )
}

/// A copy of `error` of the same transience, for the rest of its group.
fn copy_of(error: &MemoryError) -> MemoryError {
    if error.is_transient() {
        MemoryError::transient(crate::error::BACKEND, error.to_string())
    } else {
        MemoryError::backend(crate::error::BACKEND, error.to_string())
    }
}

/// Runs a write of several statements inside a savepoint of its own, so that a refusal
/// (any error, once the savepoint is rolled back) leaves nothing of it. The savepoint is not
/// released: savepoints nest until the commit releases them all, and each write's is the
/// innermost while it runs (one round trip saved per write).
pub(crate) async fn guarded<T, F>(conn: &mut SqliteConnection, write: F) -> Written<T>
where
    F: for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, Result<T>>,
{
    sqlx::query("SAVEPOINT one_write")
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    match write(conn).await {
        Ok(value) => Ok(Ok(value)),
        Err(error) => {
            sqlx::query("ROLLBACK TO one_write")
                .execute(&mut *conn)
                .await
                .map_err(db)?;
            Ok(Err(error))
        }
    }
}

/// How a single statement's failure reads for its group: a constraint violation is a
/// refusal (SQLite undid just that statement); any other error puts the transaction in doubt.
pub(crate) fn statement_failed<T>(error: sqlx::Error) -> Written<T> {
    let constraint = matches!(&error, sqlx::Error::Database(e)
        if e.code().and_then(|c| c.parse::<i32>().ok()).is_some_and(|c| c & 0xff == 19));
    if constraint {
        Ok(Err(db(error)))
    } else {
        Err(db(error))
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
            let value = write(&mut tx).await??;
            tx.commit().await.map_err(db)?;
            return Ok(value);
        }
        let (sender, receiver) = tokio::sync::oneshot::channel::<Result<T>>();
        let sender = Arc::new(Mutex::new(Some(sender)));
        let aborted = Arc::clone(&sender);
        let run: Run = Box::new(move |conn| {
            async move {
                let (step, result) = match write(conn).await {
                    Ok(Ok(value)) => (Step::Wrote, Ok(value)),
                    Ok(Err(refusal)) => (Step::Refused, Err(refusal)),
                    Err(error) => (Step::Aborted(copy_of(&error)), Err(error)),
                };
                let answer: Answer = Box::new(move |committed| {
                    if let Some(sender) = sender.lock().ok().and_then(|mut s| s.take()) {
                        let _ = sender.send(match (result, committed) {
                            // Its own error stands whatever became of the group.
                            (Err(own), _) => Err(own),
                            (Ok(value), Ok(())) => Ok(value),
                            (Ok(_), Err(error)) => Err(group_failed(error)),
                        });
                    }
                });
                (step, answer)
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

    /// One group: every job in one transaction. A job whose transaction is in doubt rolls
    /// the group back; a job that never ran (the group failed before it) is answered with
    /// the group's error.
    async fn commit(&self, jobs: Vec<Job>) {
        let mut answers = Vec::with_capacity(jobs.len());
        let mut pending = jobs.into_iter();
        let mut wrote = false;
        let committed: Result<()> = async {
            let mut tx = self
                .writer
                .begin_with("BEGIN IMMEDIATE")
                .await
                .map_err(db)?;
            for job in pending.by_ref() {
                let (step, answer) = (job.run)(&mut tx).await;
                answers.push(answer);
                match step {
                    Step::Wrote => wrote = true,
                    Step::Refused => {}
                    Step::Aborted(error) => {
                        let _ = tx.rollback().await;
                        return Err(error);
                    }
                }
            }
            if wrote {
                tx.commit().await.map_err(db)
            } else {
                // Nothing to keep (every write refused).
                tx.rollback().await.map_err(db)
            }
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
                match sqlx::query("INSERT INTO t (v) VALUES (?)")
                    .bind(v)
                    .execute(conn)
                    .await
                {
                    Ok(done) => Ok(Ok(done.rows_affected())),
                    Err(error) => statement_failed(error),
                }
            }
            .boxed()
        })
    }

    /// Two inserts in a savepoint: `first` then `second`.
    fn insert_two(first: i64, second: i64) -> GroupWrite<()> {
        Box::new(move |conn| {
            async move {
                guarded(conn, move |conn| {
                    async move {
                        for v in [first, second] {
                            sqlx::query("INSERT INTO t (v) VALUES (?)")
                                .bind(v)
                                .execute(&mut *conn)
                                .await
                                .map_err(db)?;
                        }
                        Ok(())
                    }
                    .boxed()
                })
                .await
            }
            .boxed()
        })
    }

    async fn count(db: &SqliteDatabase) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM t")
            .fetch_one(&db.reader)
            .await
            .unwrap()
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
        assert_eq!(count(&db).await, 199);
    }

    #[tokio::test]
    async fn a_lone_write_that_fails_leaves_nothing() {
        let (_dir, database) = scratch().await;
        database.group.run(insert(1)).await.unwrap();
        assert!(database.group.run(insert_two(2, 1)).await.is_err());
        assert_eq!(
            count(&database).await,
            1,
            "the failed write's first insert was rolled back"
        );
    }

    /// Guarded writes that refuse halfway leave nothing, in a group shared with writes that
    /// commit (the savepoints nest, unreleased, until the commit).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn guarded_refusals_in_a_shared_group_leave_nothing() {
        let (_dir, db) = scratch().await;
        db.group.run(insert(0)).await.unwrap();
        let mut tasks = Vec::new();
        for v in 1..=100i64 {
            let group = db.group.clone();
            // Every third write's second insert collides with row 0: it must leave no row.
            let second = if v % 3 == 0 { 0 } else { 1_000 + v };
            tasks.push(tokio::spawn(async move {
                group.run(insert_two(v, second)).await
            }));
        }
        let mut refused = 0;
        for task in tasks {
            if task.await.unwrap().is_err() {
                refused += 1;
            }
        }
        assert_eq!(refused, 33);
        assert_eq!(count(&db).await, 1 + 2 * 67);
        let stray: i64 =
            sqlx::query_scalar("SELECT count(*) FROM t WHERE v > 0 AND v % 3 = 0 AND v < 1000")
                .fetch_one(&db.reader)
                .await
                .unwrap();
        assert_eq!(stray, 0, "a refused write's first insert survived");
    }

    /// A write that puts the transaction in doubt fails its whole group: its caller gets its
    /// own error, the others the group's, and nothing of the group is kept.
    #[tokio::test]
    async fn an_aborted_write_fails_its_group() {
        let (_dir, database) = scratch().await;
        let doubtful: GroupWrite<()> = Box::new(|conn| {
            async move {
                sqlx::query("INSERT INTO t (v) VALUES (7)")
                    .execute(&mut *conn)
                    .await
                    .map_err(db)?;
                Err(MemoryError::transient("test", "disk on fire"))
            }
            .boxed()
        });
        // Queued together: the leader takes all three into one group.
        let (first, second, third) = tokio::join!(
            database.group.run(insert(1)),
            database.group.run(doubtful),
            database.group.run(insert(2)),
        );
        let first = first.unwrap_err().to_string();
        assert!(
            first.contains("shared transaction failed") && first.contains("disk on fire"),
            "{first}"
        );
        assert!(second.unwrap_err().to_string().contains("disk on fire"));
        assert!(third.unwrap_err().is_transient());
        assert_eq!(count(&database).await, 0);
    }
}
