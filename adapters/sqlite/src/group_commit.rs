//! Group commit: small writes from concurrent callers share one transaction, and writes of
//! one kind share statements.
//!
//! SQLite has one writer. When every single append is its own transaction, concurrent
//! callers queue for the lock and each pays a whole commit (the WAL frames of every page it
//! touched, FTS5's new segment). Here a write is queued; one leader task takes everything
//! queued, runs it in one `BEGIN IMMEDIATE` transaction and commits; then every caller gets
//! its result. No caller is answered before the commit that holds its write. A caller that
//! is alone pays one transaction, as before. A caller that goes away after queueing does not
//! take its write back: it runs and commits with its group (appends are idempotent by id).
//!
//! Each statement is a round trip to the writer's thread, the cost that bounds a group, so a
//! group hands all its writes of one kind ([`Batch`]) to that kind at once, which writes
//! them with as few statements as it can (one multi-row insert for many sessions' appends,
//! one update for their touches). Writes of one kind run in the order they were queued, so a
//! later one sees an earlier one's effect; kinds run in the order their first write was
//! queued, so writes of different kinds in one group must not depend on each other's order
//! (an append writes messages, a touch a session's time).
//!
//! One caller's refusal never undoes another's write: a write either refuses having written
//! nothing, which a single statement does by itself (SQLite undoes a failed statement and
//! keeps the transaction), or runs several statements inside [`guarded`]'s savepoint.

use std::any::{Any, TypeId};
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use memory_core::{MemoryError, Result};
use sqlx::pool::PoolConnection;
use sqlx::{Sqlite, SqliteConnection, SqlitePool};

use crate::error::db;

/// What a write returns inside a group. `Ok(Ok(value))`: written. `Ok(Err(error))`:
/// refused, and nothing of it is written (the transaction goes on). `Err(error)`: the
/// transaction itself is in doubt (SQLite may have rolled it back), so the whole group is
/// rolled back.
pub(crate) type Written<T> = Result<Result<T>>;

/// A kind of small write whose queued instances a group writes together.
pub(crate) trait Batch: Send + Sized + 'static {
    /// What one write answers its caller.
    type Output: Send + 'static;

    /// Writes `writes`, in the order they were queued, inside the group's transaction, as
    /// if one at a time: one result per write, in the same order, where `Err` is a refusal
    /// that wrote nothing of that write. An `Err` of the whole call means the transaction
    /// is in doubt (see [`Written`]).
    fn write_all(
        conn: &mut SqliteConnection,
        writes: Vec<Self>,
    ) -> BoxFuture<'_, Result<Vec<Result<Self::Output>>>>;
}

/// Answers a caller once the group's commit is known.
type Answer = Box<dyn FnOnce(std::result::Result<(), &MemoryError>) + Send>;

/// Where a caller's result goes; shared by its answer and its abort (whichever comes first).
type Reply<T> = Arc<Mutex<Option<tokio::sync::oneshot::Sender<Result<T>>>>>;

fn send<T>(reply: &Reply<T>, result: Result<T>) {
    if let Some(sender) = reply.lock().ok().and_then(|mut s| s.take()) {
        let _ = sender.send(result);
    }
}

/// A queued write of kind `W` and where its result goes.
struct Queued<W: Batch> {
    write: W,
    reply: Reply<W::Output>,
}

/// Writes a kind's queued writes (each a boxed [`Queued`] of that kind): the answers, one
/// per write, and whether any wrote (`Err`: the transaction is in doubt).
type WriteAll = for<'c> fn(
    &'c mut SqliteConnection,
    Vec<Box<dyn Any + Send>>,
) -> BoxFuture<'c, (Vec<Answer>, Result<bool>)>;

/// A queued write, its kind, and how to answer its caller if it never runs (the group
/// failed first).
struct Job {
    kind: TypeId,
    write_all: WriteAll,
    write: Box<dyn Any + Send>,
    abort: Answer,
}

/// A group's writes of one kind.
struct Kind {
    kind: TypeId,
    write_all: WriteAll,
    writes: Vec<Box<dyn Any + Send>>,
    aborts: Vec<Answer>,
}

/// Writes in one transaction at most (a bound on how long the first of them waits).
const MOST_PER_GROUP: usize = 256;
/// Groups a leader commits in a row on the writer it holds before handing it back.
const GROUPS_PER_HOLD: usize = 16;

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

/// A copy of `error` of the same transience, for each write of the kind that met it.
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

/// [`WriteAll`] for kind `W`: unboxes the queued writes, writes them, and pairs each result
/// with its caller.
fn write_all_of<W: Batch>(
    conn: &mut SqliteConnection,
    queued: Vec<Box<dyn Any + Send>>,
) -> BoxFuture<'_, (Vec<Answer>, Result<bool>)> {
    async move {
        // Every box of this kind holds a `Queued<W>` (the kind is its type id); one that did
        // not would drop its reply, and its caller would get `never_ran`.
        let (writes, replies): (Vec<W>, Vec<Reply<W::Output>>) = queued
            .into_iter()
            .filter_map(|q| q.downcast::<Queued<W>>().ok())
            .map(|q| (q.write, q.reply))
            .unzip();
        let expected = replies.len();
        let written = match W::write_all(conn, writes).await {
            Ok(results) if results.len() != expected => Err(crate::error::invariant(
                "a batch answered a different number of writes than it was given",
            )),
            written => written,
        };
        let results = match written {
            Ok(results) => results,
            Err(error) => {
                let answers = replies
                    .into_iter()
                    .map(|reply| {
                        let own = copy_of(&error);
                        Box::new(move |_: std::result::Result<(), &MemoryError>| {
                            send(&reply, Err(own));
                        }) as Answer
                    })
                    .collect();
                return (answers, Err(error));
            }
        };
        let wrote = results.iter().any(Result::is_ok);
        let answers = replies
            .into_iter()
            .zip(results)
            .map(|(reply, result)| {
                Box::new(move |committed: std::result::Result<(), &MemoryError>| {
                    send(
                        &reply,
                        match (result, committed) {
                            // Its own refusal stands whatever became of the group.
                            (Err(own), _) => Err(own),
                            (Ok(value), Ok(())) => Ok(value),
                            (Ok(_), Err(error)) => Err(group_failed(error)),
                        },
                    );
                }) as Answer
            })
            .collect();
        (answers, Ok(wrote))
    }
    .boxed()
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
    pub(crate) async fn run<W: Batch>(&self, write: W) -> Result<W::Output> {
        if !self.grouped {
            let mut tx = self
                .writer
                .begin_with("BEGIN IMMEDIATE")
                .await
                .map_err(db)?;
            let value = W::write_all(&mut tx, vec![write])
                .await?
                .pop()
                .ok_or_else(|| crate::error::invariant("a batch of one answered nothing"))??;
            tx.commit().await.map_err(db)?;
            return Ok(value);
        }
        let (sender, receiver) = tokio::sync::oneshot::channel::<Result<W::Output>>();
        let reply: Reply<W::Output> = Arc::new(Mutex::new(Some(sender)));
        let aborted = Arc::clone(&reply);
        let job = Job {
            kind: TypeId::of::<W>(),
            write_all: write_all_of::<W>,
            write: Box::new(Queued { write, reply }),
            abort: Box::new(move |failed| {
                send(
                    &aborted,
                    Err(match failed {
                        Err(error) => group_failed(error),
                        Ok(()) => never_ran(),
                    }),
                );
            }),
        };
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

    /// Commits groups until the queue is empty, on the writer connection it takes once and
    /// hands back after [`GROUPS_PER_HOLD`] groups (so other writers get their turn) or when
    /// the queue is empty: the pool's hand-back (a task and a round trip to the connection's
    /// thread) would otherwise stand between every two groups.
    async fn lead(self) {
        let mut leader = Leader {
            queue: Arc::clone(&self.queue),
            finished: false,
        };
        let mut held: Option<PoolConnection<Sqlite>> = None;
        let mut groups = 0;
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
            if groups == GROUPS_PER_HOLD {
                held = None;
                groups = 0;
            }
            self.commit(&mut held, by_kind(jobs)).await;
            groups += 1;
        }
    }

    /// One group: every kind's writes in one transaction. A kind whose writes put the
    /// transaction in doubt rolls the group back; the kinds that never ran (the group
    /// failed before them) are answered with the group's error.
    async fn commit(&self, held: &mut Option<PoolConnection<Sqlite>>, kinds: Vec<Kind>) {
        let mut answers = Vec::new();
        let mut pending = kinds.into_iter();
        let committed: Result<()> = async {
            let conn = match held {
                Some(conn) => conn,
                None => held.insert(self.writer.acquire().await.map_err(db)?),
            };
            let mut tx = sqlx::Connection::begin_with(&mut **conn, "BEGIN IMMEDIATE")
                .await
                .map_err(db)?;
            let mut wrote = false;
            for kind in pending.by_ref() {
                let (mut answered, outcome) = (kind.write_all)(&mut tx, kind.writes).await;
                answers.append(&mut answered);
                match outcome {
                    Ok(any) => wrote |= any,
                    Err(error) => {
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
        if committed.is_err() {
            // Back to the pool, which pings it before reuse (the failed transaction's own
            // guard has queued its rollback).
            *held = None;
        }
        let outcome = committed.as_ref().map(|_| ());
        for answer in answers {
            answer(outcome);
        }
        let never = never_ran();
        for abort in pending.flat_map(|kind| kind.aborts) {
            abort(Err(outcome.err().unwrap_or(&never)));
        }
    }
}

/// A group's jobs by kind, kinds in the order of their first job, each kind's writes in
/// queue order.
fn by_kind(jobs: Vec<Job>) -> Vec<Kind> {
    let mut kinds: Vec<Kind> = Vec::new();
    for job in jobs {
        let at = match kinds.iter().position(|k| k.kind == job.kind) {
            Some(at) => at,
            None => {
                kinds.push(Kind {
                    kind: job.kind,
                    write_all: job.write_all,
                    writes: Vec::new(),
                    aborts: Vec::new(),
                });
                kinds.len() - 1
            }
        };
        kinds[at].writes.push(job.write);
        kinds[at].aborts.push(job.abort);
    }
    kinds
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

    /// Inserts its values into `t`: one value in one statement, several in a savepoint.
    struct Insert(Vec<i64>);

    async fn insert_one(conn: &mut SqliteConnection, values: Vec<i64>) -> Written<u64> {
        if let [v] = values[..] {
            return match sqlx::query("INSERT INTO t (v) VALUES (?)")
                .bind(v)
                .execute(&mut *conn)
                .await
            {
                Ok(done) => Ok(Ok(done.rows_affected())),
                Err(error) => statement_failed(error),
            };
        }
        guarded(conn, move |conn| {
            async move {
                for v in &values {
                    sqlx::query("INSERT INTO t (v) VALUES (?)")
                        .bind(v)
                        .execute(&mut *conn)
                        .await
                        .map_err(db)?;
                }
                Ok(values.len() as u64)
            }
            .boxed()
        })
        .await
    }

    impl Batch for Insert {
        type Output = u64;

        fn write_all(
            conn: &mut SqliteConnection,
            writes: Vec<Self>,
        ) -> BoxFuture<'_, Result<Vec<Result<u64>>>> {
            async move {
                let mut results = Vec::new();
                for Insert(values) in writes {
                    results.push(insert_one(conn, values).await?);
                }
                Ok(results)
            }
            .boxed()
        }
    }

    /// [`Insert`] that records the size of every batch it is given.
    struct Recorded(Vec<i64>);

    static RECORDED_BATCHES: Mutex<Vec<usize>> = Mutex::new(Vec::new());

    impl Batch for Recorded {
        type Output = u64;

        fn write_all(
            conn: &mut SqliteConnection,
            writes: Vec<Self>,
        ) -> BoxFuture<'_, Result<Vec<Result<u64>>>> {
            RECORDED_BATCHES.lock().unwrap().push(writes.len());
            Insert::write_all(
                conn,
                writes.into_iter().map(|Recorded(v)| Insert(v)).collect(),
            )
        }
    }

    /// Inserts its value, then says the transaction is in doubt.
    struct Doubtful(i64);

    impl Batch for Doubtful {
        type Output = ();

        fn write_all(
            conn: &mut SqliteConnection,
            writes: Vec<Self>,
        ) -> BoxFuture<'_, Result<Vec<Result<()>>>> {
            async move {
                for Doubtful(v) in writes {
                    sqlx::query("INSERT INTO t (v) VALUES (?)")
                        .bind(v)
                        .execute(&mut *conn)
                        .await
                        .map_err(db)?;
                }
                Err(MemoryError::transient("test", "disk on fire"))
            }
            .boxed()
        }
    }

    async fn count(db: &SqliteDatabase) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM t")
            .fetch_one(&mut *db.reader.acquire().await.unwrap())
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
            tasks.push(tokio::spawn(
                async move { group.run(Insert(vec![value])).await },
            ));
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
        database.group.run(Insert(vec![1])).await.unwrap();
        assert!(database.group.run(Insert(vec![2, 1])).await.is_err());
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
        db.group.run(Insert(vec![0])).await.unwrap();
        let mut tasks = Vec::new();
        for v in 1..=100i64 {
            let group = db.group.clone();
            // Every third write's second insert collides with row 0: it must leave no row.
            let second = if v % 3 == 0 { 0 } else { 1_000 + v };
            tasks.push(tokio::spawn(async move {
                group.run(Insert(vec![v, second])).await
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
                .fetch_one(&mut *db.reader.acquire().await.unwrap())
                .await
                .unwrap();
        assert_eq!(stray, 0, "a refused write's first insert survived");
    }

    /// A kind that puts the transaction in doubt fails its whole group: its callers get its
    /// own error, the others the group's, and nothing of the group is kept.
    #[tokio::test]
    async fn an_aborted_write_fails_its_group() {
        let (_dir, database) = scratch().await;
        // Queued together (joined in one task): the leader takes all three into one group.
        let (first, second, third) = tokio::join!(
            database.group.run(Insert(vec![1])),
            database.group.run(Doubtful(7)),
            database.group.run(Insert(vec![2])),
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

    /// A leader holds the writer across groups, and hands it back after
    /// [`GROUPS_PER_HOLD`] of them even while its queue stays full: a write outside the
    /// groups gets in before the queue is drained.
    #[tokio::test]
    async fn a_write_outside_the_groups_gets_in_while_the_queue_stays_full() {
        let (_dir, database) = scratch().await;
        let total = 40 * MOST_PER_GROUP as i64;
        // On this one-thread runtime none of them runs before this task waits.
        let tasks: Vec<_> = (0..total)
            .map(|v| {
                let group = database.group.clone();
                tokio::spawn(async move { group.run(Insert(vec![v])).await })
            })
            .collect();
        while count(&database).await == 0 {
            tokio::task::yield_now().await;
        }
        let mut tx = database.write().await.unwrap();
        let before: i64 = sqlx::query_scalar("SELECT count(*) FROM t")
            .fetch_one(&mut *tx)
            .await
            .unwrap();
        sqlx::query("INSERT INTO t (v) VALUES (-1)")
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert!(
            before < total,
            "the outside write waited for {before} of {total} queued writes"
        );
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        assert_eq!(count(&database).await, total + 1);
    }

    /// A group hands all its writes of a kind to that kind at once, in queue order, even
    /// when writes of another kind were queued between them.
    #[tokio::test]
    async fn a_group_writes_each_kind_at_once() {
        let (_dir, database) = scratch().await;
        let group = &database.group;
        let (a, b, other, c, d) = tokio::join!(
            group.run(Recorded(vec![10])),
            group.run(Recorded(vec![11, 12])),
            group.run(Insert(vec![20])),
            group.run(Recorded(vec![11])),
            group.run(Recorded(vec![13])),
        );
        assert_eq!((a.unwrap(), b.unwrap(), d.unwrap()), (1, 2, 1));
        assert_eq!(other.unwrap(), 1);
        assert!(
            c.unwrap_err().to_string().contains("UNIQUE"),
            "a later write sees an earlier one's row"
        );
        assert_eq!(*RECORDED_BATCHES.lock().unwrap(), vec![4]);
        assert_eq!(count(&database).await, 5);
    }
}
