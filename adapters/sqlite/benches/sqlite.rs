//! Criterion benchmarks of the SQLite message store, each beside a raw sqlx baseline doing
//! the same SQL work in the same run. `cargo bench -p memory-sqlite --bench sqlite`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::{Rng, message, raw_pool, vocabulary};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use memory_core::ports::{MessageStore, MessageStoreExt};
use memory_core::{NewMessage, Parent, SessionId, UiMessage};
use memory_sqlite::{SqliteConfig, SqliteDatabase, SqliteMessageStore, Synchronous};
use sqlx::SqlitePool;
use tokio::runtime::Runtime;

struct Fixture {
    _dir: tempfile::TempDir,
    store: SqliteMessageStore,
    raw: SqlitePool,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.db");
    let db = SqliteDatabase::open(SqliteConfig::new(&path))
        .await
        .unwrap();
    let raw = raw_pool(&path).await;
    Fixture {
        _dir: dir,
        store: SqliteMessageStore::new(db),
        raw,
    }
}

fn batch(prefix: &str, n: usize, rng: &mut Rng, vocab: &[String]) -> Vec<UiMessage> {
    (0..n)
        .map(|i| message(format!("{prefix}{i}"), rng, vocab))
        .collect()
}

/// The raw baseline of an append: the same rows (FTS triggers included) in one
/// `BEGIN IMMEDIATE` transaction, with the next sequence read once and multi-row inserts of
/// 64 rows, but no existence checks and no parent or run resolution.
async fn raw_insert(raw: &SqlitePool, key: i64, messages: &[UiMessage]) {
    let mut tx = raw.begin_with("BEGIN IMMEDIATE").await.unwrap();
    let start_seq: i64 = sqlx::query_scalar("SELECT IFNULL(MAX(seq), 0) + 1 FROM messages")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    for (c, chunk) in messages.chunks(64).enumerate() {
        let mut sql = String::from(
            "INSERT INTO messages (seq, session_key, id, parent_seq, run_id, role, content, search_text, bytes) VALUES ",
        );
        sql.push_str(&vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?)"; chunk.len()].join(","));
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for (i, m) in chunk.iter().enumerate() {
            let seq = start_seq + (c * 64 + i) as i64;
            let json = serde_json::to_string(m).unwrap();
            let len = json.len() as i64;
            query = query
                .bind(seq)
                .bind(key)
                .bind(m.id.clone())
                .bind(if seq == start_seq {
                    None
                } else {
                    Some(seq - 1)
                })
                .bind(start_seq)
                .bind(m.role.as_str())
                .bind(json)
                .bind(m.text())
                .bind(len);
        }
        query.execute(&mut *tx).await.unwrap();
    }
    tx.commit().await.unwrap();
}

async fn raw_session_key(raw: &SqlitePool, name: &str) -> i64 {
    sqlx::query("INSERT OR IGNORE INTO session_keys(session_id) VALUES (?)")
        .bind(name)
        .execute(raw)
        .await
        .unwrap();
    sqlx::query_scalar("SELECT key FROM session_keys WHERE session_id = ?")
        .bind(name)
        .fetch_one(raw)
        .await
        .unwrap()
}

/// One autocommit statement: the least SQL that stores and indexes a message (the raw
/// baseline of a single append).
async fn raw_single_insert(raw: &SqlitePool, key: i64, m: &UiMessage, json: &str) {
    sqlx::query(
        "INSERT INTO messages (seq, session_key, id, parent_seq, run_id, role, content, search_text, bytes) \
         VALUES ((SELECT IFNULL(MAX(seq), 0) + 1 FROM messages), ?, ?, NULL, 0, ?, ?, ?, ?)",
    )
    .bind(key)
    .bind(&m.id)
    .bind(m.role.as_str())
    .bind(json)
    .bind(m.text())
    .bind(json.len() as i64)
    .execute(raw)
    .await
    .unwrap();
}

fn append(c: &mut Criterion) {
    let rt = runtime();
    let f = rt.block_on(fixture());
    let vocab = vocabulary(5_000);
    let mut rng = Rng::new(7);
    let mut group = c.benchmark_group("append");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(8));
    const BATCH: usize = 1_000;
    group.throughput(Throughput::Elements(BATCH as u64));
    let mut round = 0u64;
    group.bench_function(
        BenchmarkId::new("batch_1000_with_fts", "memory-sqlite"),
        |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    round += 1;
                    let session = SessionId::new(format!("batch-{round}")).unwrap();
                    let items: Vec<NewMessage> = batch("m", BATCH, &mut rng, &vocab)
                        .into_iter()
                        .map(NewMessage::new)
                        .collect();
                    let start = Instant::now();
                    rt.block_on(f.store.append(&session, items)).unwrap();
                    total += start.elapsed();
                }
                total
            })
        },
    );
    group.bench_function(BenchmarkId::new("batch_1000_with_fts", "raw-sqlx"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                round += 1;
                let messages = batch("m", BATCH, &mut rng, &vocab);
                let key = rt.block_on(raw_session_key(&f.raw, &format!("raw-batch-{round}")));
                let start = Instant::now();
                rt.block_on(raw_insert(&f.raw, key, &messages));
                total += start.elapsed();
            }
            total
        })
    });
    group.throughput(Throughput::Elements(1));
    let single = SessionId::new("single").unwrap();
    let mut n = 0u64;
    group.bench_function(
        BenchmarkId::new("single_durable_append", "memory-sqlite"),
        |b| {
            b.iter_batched(
                || {
                    n += 1;
                    message(format!("s{n}"), &mut rng, &vocab)
                },
                |m| {
                    rt.block_on(f.store.append_one(&single, m, Parent::LatestLeaf))
                        .unwrap()
                },
                criterion::BatchSize::SmallInput,
            )
        },
    );
    let raw_key = rt.block_on(raw_session_key(&f.raw, "raw-single"));
    group.bench_function(BenchmarkId::new("single_durable_append", "raw-sqlx"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                n += 1;
                let m = message(format!("s{n}"), &mut rng, &vocab);
                let json = serde_json::to_string(&m).unwrap();
                let start = Instant::now();
                rt.block_on(raw_single_insert(&f.raw, raw_key, &m, &json));
                total += start.elapsed();
            }
            total
        })
    });
    let full = rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let db = SqliteDatabase::open(
            SqliteConfig::new(dir.path().join("full.db")).synchronous(Synchronous::Full),
        )
        .await
        .unwrap();
        (dir, SqliteMessageStore::new(db))
    });
    group.bench_function(
        BenchmarkId::new("single_durable_append", "memory-sqlite synchronous=FULL"),
        |b| {
            b.iter_batched(
                || {
                    n += 1;
                    message(format!("s{n}"), &mut rng, &vocab)
                },
                |m| {
                    rt.block_on(full.1.append_one(&single, m, Parent::LatestLeaf))
                        .unwrap()
                },
                criterion::BatchSize::SmallInput,
            )
        },
    );
    group.finish();
}

fn history(c: &mut Criterion) {
    let rt = runtime();
    let f = rt.block_on(fixture());
    let vocab = vocabulary(5_000);
    let mut rng = Rng::new(11);
    let mut group = c.benchmark_group("history");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    for &len in &[10_000usize, 100_000] {
        let session = SessionId::new(format!("linear-{len}")).unwrap();
        // Interleave a noise session so the branch's rows are not contiguous on disk.
        let noise = SessionId::new(format!("noise-{len}")).unwrap();
        for chunk in 0..len / 5_000 {
            let items = batch(&format!("c{chunk}-"), 5_000, &mut rng, &vocab)
                .into_iter()
                .map(NewMessage::new)
                .collect();
            rt.block_on(f.store.append(&session, items)).unwrap();
            let noise_items = batch(&format!("n{chunk}-"), 500, &mut rng, &vocab)
                .into_iter()
                .map(NewMessage::new)
                .collect();
            rt.block_on(f.store.append(&noise, noise_items)).unwrap();
        }
        let key: i64 = rt
            .block_on(
                sqlx::query_scalar("SELECT key FROM session_keys WHERE session_id = ?")
                    .bind(session.as_str())
                    .fetch_one(&f.raw),
            )
            .unwrap();
        group.throughput(Throughput::Elements(len as u64));
        group.bench_function(
            BenchmarkId::new(format!("linear_{len}"), "memory-sqlite history"),
            |b| {
                b.iter(|| {
                    let h = rt.block_on(f.store.history(&session, None)).unwrap();
                    assert_eq!(h.len(), len);
                })
            },
        );
        group.bench_function(
            BenchmarkId::new(format!("linear_{len}"), "raw-sqlx select content"),
            |b| {
                b.iter(|| {
                    let rows: Vec<String> = rt
                        .block_on(
                            sqlx::query_scalar(
                                "SELECT content FROM messages WHERE session_key = ? ORDER BY seq",
                            )
                            .bind(key)
                            .fetch_all(&f.raw),
                        )
                        .unwrap();
                    assert_eq!(rows.len(), len);
                })
            },
        );
        group.bench_function(
            BenchmarkId::new(format!("linear_{len}"), "raw-sqlx select content + decode"),
            |b| {
                b.iter(|| {
                    let rows: Vec<String> = rt
                        .block_on(
                            sqlx::query_scalar(
                                "SELECT content FROM messages WHERE session_key = ? ORDER BY seq",
                            )
                            .bind(key)
                            .fetch_all(&f.raw),
                        )
                        .unwrap();
                    let decoded: Vec<UiMessage> = rows
                        .iter()
                        .map(|r| serde_json::from_str(r).unwrap())
                        .collect();
                    assert_eq!(decoded.len(), len);
                })
            },
        );
    }
    group.finish();

    // Appending the 100,000th message of a branch versus the first message of a new one.
    let mut group = c.benchmark_group("append_depth");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(6));
    let deep = SessionId::new("linear-100000").unwrap();
    let mut n = 0u64;
    let mut fresh = 0u64;
    group.bench_function("first_message_of_a_session", |b| {
        b.iter_batched(
            || {
                fresh += 1;
                (
                    SessionId::new(format!("fresh-{fresh}")).unwrap(),
                    message("first".into(), &mut rng, &vocab),
                )
            },
            |(s, m)| {
                rt.block_on(f.store.append_one(&s, m, Parent::LatestLeaf))
                    .unwrap()
            },
            criterion::BatchSize::SmallInput,
        )
    });
    group.bench_function("message_100000_of_a_branch", |b| {
        b.iter_batched(
            || {
                n += 1;
                message(format!("deep{n}"), &mut rng, &vocab)
            },
            |m| {
                rt.block_on(f.store.append_one(&deep, m, Parent::LatestLeaf))
                    .unwrap()
            },
            criterion::BatchSize::SmallInput,
        )
    });
    group.finish();
}

/// 16 tasks appending single messages to 16 sessions at once (800 appends a round), with group
/// commit, without it (each append its own transaction), and the raw baseline: the same 16
/// tasks each running the one autocommit `INSERT` of a message through a one-connection pool.
fn concurrent_appends(c: &mut Criterion) {
    const TASKS: usize = 16;
    const EACH: usize = 50;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let vocab = std::sync::Arc::new(vocabulary(5_000));
    let mut group = c.benchmark_group("concurrent_appends");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Elements((TASKS * EACH) as u64));
    for grouped in [true, false] {
        let (_dir, store) = rt.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let db = SqliteDatabase::open(
                SqliteConfig::new(dir.path().join("c.db")).group_commit(grouped),
            )
            .await
            .unwrap();
            (dir, std::sync::Arc::new(SqliteMessageStore::new(db)))
        });
        let mut round = 0u64;
        let name = if grouped {
            "memory-sqlite, group commit"
        } else {
            "memory-sqlite, a transaction each"
        };
        group.bench_function(BenchmarkId::new("16_tasks_single_appends", name), |b| {
            b.iter_custom(|iters| {
                timed_rounds(&rt, iters, &mut round, TASKS, |round, t| {
                    let (store, vocab) = (store.clone(), vocab.clone());
                    async move {
                        let session = SessionId::new(format!("t{t}")).unwrap();
                        let mut rng = Rng::new(round * 100 + t as u64);
                        for i in 0..EACH {
                            let m = message(format!("r{round}-{i}"), &mut rng, &vocab);
                            store
                                .append_one(&session, m, Parent::LatestLeaf)
                                .await
                                .unwrap();
                        }
                    }
                })
            })
        });
    }
    let (_dir, raw) = rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raw.db");
        SqliteDatabase::open(SqliteConfig::new(&path))
            .await
            .unwrap();
        let raw = raw_pool(&path).await;
        (dir, raw)
    });
    let key = rt.block_on(raw_session_key(&raw, "raw"));
    let mut round = 0u64;
    group.bench_function(
        BenchmarkId::new("16_tasks_single_appends", "raw-sqlx"),
        |b| {
            b.iter_custom(|iters| {
                timed_rounds(&rt, iters, &mut round, TASKS, |round, t| {
                    let (raw, vocab) = (raw.clone(), vocab.clone());
                    async move {
                        let mut rng = Rng::new(round * 100 + t as u64);
                        for i in 0..EACH {
                            let m = message(format!("r{round}-{t}-{i}"), &mut rng, &vocab);
                            let json = serde_json::to_string(&m).unwrap();
                            raw_single_insert(&raw, key, &m, &json).await;
                        }
                    }
                })
            })
        },
    );
    group.finish();
}

/// The time of `iters` rounds, each `tasks` tasks made by `task(round, t)` run at once to
/// their end; `round` counts on across calls.
fn timed_rounds<F, Fut>(
    rt: &Runtime,
    iters: u64,
    round: &mut u64,
    tasks: usize,
    task: F,
) -> Duration
where
    F: Fn(u64, usize) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        *round += 1;
        let start = Instant::now();
        rt.block_on(async {
            let running: Vec<_> = (0..tasks).map(|t| tokio::spawn(task(*round, t))).collect();
            for handle in running {
                handle.await.unwrap();
            }
        });
        total += start.elapsed();
    }
    total
}

criterion_group!(benches, append, history, concurrent_appends);
criterion_main!(benches);

/// A current-thread runtime: the benchmark thread drives the futures itself, so timings do
/// not include a hop to a runtime worker thread (sqlx's connection threads remain).
fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}
