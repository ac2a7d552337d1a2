//! The Redis adapter beside the SQLite adapter (same work, same run) and beside raw Redis
//! commands doing the least that work needs (the floor). Needs a server:
//!
//! ```sh
//! MEMORY_REDIS_URL=$(./scripts/setup-redis.sh) cargo bench -p memory-redis --bench redis
//! ```
//!
//! Everything runs under a key prefix of its own, deleted at the end; results are printed as
//! Markdown rows for `docs/benchmarks.md`. `BENCH_OPS` (default 5,000) sizes each part.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Instant;

use memory_core::ports::{JobFilter, JobQueue, KeyValueStore, MessageStore, NewJob};
use memory_core::{NewMessage, Role, SessionId, Timestamp, UiMessage};
use memory_redis::{
    RedisConfig, RedisDatabase, RedisJobQueue, RedisKeyValueStore, RedisMessageStore,
};
use memory_sqlite::{
    SqliteConfig, SqliteDatabase, SqliteJobQueue, SqliteKeyValueStore, SqliteMessageStore,
};

struct Row {
    what: String,
    per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
}

fn row(what: &str, mut samples: Vec<f64>, elapsed: f64, ops: usize) -> Row {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    Row {
        what: what.to_owned(),
        per_second: ops as f64 / elapsed,
        p50_ms: at(0.5),
        p99_ms: at(0.99),
    }
}

/// `ops` block writes: read the block, write it back with one more line by compare-and-set.
async fn block_writes(kv: &dyn KeyValueStore, key: &str, ops: usize) -> (Vec<f64>, f64) {
    let started = Instant::now();
    let mut samples = Vec::with_capacity(ops);
    for i in 0..ops {
        let t = Instant::now();
        let current = kv.get(key).await.unwrap();
        let next = format!("line {i}");
        assert!(kv.compare_and_set(key, current, &next).await.unwrap());
        samples.push(t.elapsed().as_secs_f64() * 1_000.0);
    }
    (samples, started.elapsed().as_secs_f64())
}

fn job(i: usize) -> NewJob {
    NewJob {
        id: format!("job-{i:06}"),
        kind: "ingest".into(),
        profile: "bench".into(),
        stage: "queued".into(),
        body: serde_json::json!({ "n": i }),
    }
}

/// Four workers claim and complete every queued job; claims per second.
async fn claims(queues: Vec<Arc<dyn JobQueue>>, jobs: usize) -> f64 {
    for i in 0..jobs {
        queues[0]
            .enqueue(job(i), Timestamp(i as i64))
            .await
            .unwrap();
    }
    let started = Instant::now();
    let workers: Vec<_> = queues
        .into_iter()
        .enumerate()
        .map(|(w, queue)| {
            tokio::spawn(async move {
                let filter = JobFilter {
                    profile: Some("bench".into()),
                    ..JobFilter::default()
                };
                let mut done = 0usize;
                while let Some((_, lease)) = queue
                    .claim(&filter, &format!("w{w}"), 60_000, Timestamp(1_000_000))
                    .await
                    .unwrap()
                {
                    queue
                        .complete(&lease, "done", serde_json::json!({}), Timestamp(1_000_001))
                        .await
                        .unwrap();
                    done += 1;
                }
                done
            })
        })
        .collect();
    let mut total = 0;
    for worker in workers {
        total += worker.await.unwrap();
    }
    assert_eq!(total, jobs, "every job claimed once");
    jobs as f64 / started.elapsed().as_secs_f64()
}

fn message(id: String) -> UiMessage {
    UiMessage::text_message(
        id,
        Role::User,
        "a message of about the length agents send, with a few words in it",
    )
}

/// Times `work` `runs` times; the samples in ms and the total seconds.
async fn timed<F, Fut>(runs: usize, mut work: F) -> (Vec<f64>, f64)
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let started = Instant::now();
    let mut samples = Vec::with_capacity(runs);
    for i in 0..runs {
        let t = Instant::now();
        work(i).await;
        samples.push(t.elapsed().as_secs_f64() * 1_000.0);
    }
    (samples, started.elapsed().as_secs_f64())
}

/// The message tree: single appends, batches of 100, history of 10K and 100K messages and
/// the latest leaf, on one store.
async fn message_tree(store: &dyn MessageStore, name: &str, ops: usize, rows: &mut Vec<Row>) {
    let single = SessionId::new("single").unwrap();
    let (samples, elapsed) = timed(ops, |i| {
        let session = single.clone();
        async move {
            let batch = vec![NewMessage::new(message(format!("s{i}")))];
            store.append(&session, batch).await.unwrap();
        }
    })
    .await;
    rows.push(row(
        &format!("single append, {name}"),
        samples,
        elapsed,
        ops,
    ));
    let batches = (ops / 100).max(1);
    let (samples, elapsed) = timed(batches, |b| {
        let session = single.clone();
        async move {
            let batch = (0..100)
                .map(|i| NewMessage::new(message(format!("b{b}-{i}"))))
                .collect();
            store.append(&session, batch).await.unwrap();
        }
    })
    .await;
    let mut r = row(
        &format!("batch append (100 per call; per second = messages), {name}"),
        samples,
        elapsed,
        batches,
    );
    r.per_second *= 100.0;
    rows.push(r);
    for (len, runs) in [(10_000usize, 50usize), (100_000, 10)] {
        let session = SessionId::new(format!("chain-{len}")).unwrap();
        for start in (0..len).step_by(1_000) {
            let batch = (start..start + 1_000)
                .map(|i| NewMessage::new(message(format!("c{i}"))))
                .collect();
            store.append(&session, batch).await.unwrap();
        }
        let (samples, elapsed) = timed(runs, |_| {
            let session = session.clone();
            async move {
                assert_eq!(store.history(&session, None).await.unwrap().len(), len);
            }
        })
        .await;
        rows.push(row(
            &format!("history of {len}, {name}"),
            samples,
            elapsed,
            runs,
        ));
    }
    let session = SessionId::new("chain-100000").unwrap();
    let (samples, elapsed) = timed(ops, |_| {
        let session = session.clone();
        async move {
            assert!(store.latest_leaf(&session).await.unwrap().is_some());
        }
    })
    .await;
    rows.push(row(
        &format!("latest leaf (100K session), {name}"),
        samples,
        elapsed,
        ops,
    ));
}

/// The floor for the same work in raw Redis: a session as one list of JSON values (no
/// tree, no ids, no atomic insert-if-absent): `RPUSH`, `RPUSH` of 100, `LRANGE 0 -1`,
/// `LINDEX -1`.
async fn raw_message_list(
    raw: &mut redis::aio::MultiplexedConnection,
    prefix: &str,
    ops: usize,
    rows: &mut Vec<Row>,
) {
    let json = serde_json::to_string(&message("raw".into())).unwrap();
    let list = format!("{prefix}raw:list:single");
    let (samples, elapsed) = timed(ops, |_| {
        let (mut raw, list, json) = (raw.clone(), list.clone(), json.clone());
        async move {
            let _: u64 = redis::cmd("RPUSH")
                .arg(&list)
                .arg(&json)
                .query_async(&mut raw)
                .await
                .unwrap();
        }
    })
    .await;
    rows.push(row("raw RPUSH (the floor)", samples, elapsed, ops));
    let batches = (ops / 100).max(1);
    let (samples, elapsed) = timed(batches, |_| {
        let (mut raw, list, json) = (raw.clone(), list.clone(), json.clone());
        async move {
            let _: u64 = redis::cmd("RPUSH")
                .arg(&list)
                .arg(vec![json; 100])
                .query_async(&mut raw)
                .await
                .unwrap();
        }
    })
    .await;
    let mut r = row("raw RPUSH of 100 (the floor)", samples, elapsed, batches);
    r.per_second *= 100.0;
    rows.push(r);
    for (len, runs) in [(10_000usize, 50usize), (100_000, 10)] {
        let chain = format!("{prefix}raw:list:{len}");
        for _ in (0..len).step_by(1_000) {
            let _: u64 = redis::cmd("RPUSH")
                .arg(&chain)
                .arg(vec![json.clone(); 1_000])
                .query_async(raw)
                .await
                .unwrap();
        }
        let (samples, elapsed) = timed(runs, |_| {
            let (mut raw, chain) = (raw.clone(), chain.clone());
            async move {
                let all: Vec<String> = redis::cmd("LRANGE")
                    .arg(&chain)
                    .arg(0)
                    .arg(-1)
                    .query_async(&mut raw)
                    .await
                    .unwrap();
                let decoded: Vec<UiMessage> = all
                    .iter()
                    .map(|j| serde_json::from_str(j).unwrap())
                    .collect();
                assert_eq!(decoded.len(), len);
            }
        })
        .await;
        rows.push(row(
            &format!("raw LRANGE 0 -1 of {len}, decoded (the floor)"),
            samples,
            elapsed,
            runs,
        ));
    }
    let chain = format!("{prefix}raw:list:100000");
    let (samples, elapsed) = timed(ops, |_| {
        let (mut raw, chain) = (raw.clone(), chain.clone());
        async move {
            let last: Option<String> = redis::cmd("LINDEX")
                .arg(&chain)
                .arg(-1)
                .query_async(&mut raw)
                .await
                .unwrap();
            assert!(last.is_some());
        }
    })
    .await;
    rows.push(row("raw LINDEX -1 (the floor)", samples, elapsed, ops));
    let _: u64 = redis::cmd("UNLINK")
        .arg(&list)
        .arg(format!("{prefix}raw:list:10000"))
        .arg(&chain)
        .query_async(raw)
        .await
        .unwrap();
}

#[tokio::main]
async fn main() {
    let Ok(url) = std::env::var("MEMORY_REDIS_URL") else {
        eprintln!("set MEMORY_REDIS_URL (scripts/setup-redis.sh starts a server)");
        return;
    };
    let ops: usize = std::env::var("BENCH_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000);
    let prefix = format!("memorybench:{}:", std::process::id());
    let config = RedisConfig::new(url.clone()).key_prefix(prefix.clone());
    let db = RedisDatabase::connect(config.clone()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteDatabase::open(SqliteConfig::new(dir.path().join("bench.db")))
        .await
        .unwrap();
    let mut rows = Vec::new();
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut raw = client.get_multiplexed_async_connection().await.unwrap();

    // The message tree.
    message_tree(
        &RedisMessageStore::new(db.clone()),
        "memory-redis",
        ops,
        &mut rows,
    )
    .await;
    message_tree(
        &SqliteMessageStore::new(sqlite.clone()),
        "memory-sqlite",
        ops,
        &mut rows,
    )
    .await;
    raw_message_list(&mut raw, &prefix, ops, &mut rows).await;

    // Block writes with compare-and-set.
    let (samples, elapsed) = block_writes(&RedisKeyValueStore::new(db.clone()), "block", ops).await;
    rows.push(row(
        "block write (GET + compare-and-set), memory-redis",
        samples,
        elapsed,
        ops,
    ));
    let (samples, elapsed) =
        block_writes(&SqliteKeyValueStore::new(sqlite.clone()), "block", ops).await;
    rows.push(row(
        "block write (read + compare-and-set), memory-sqlite",
        samples,
        elapsed,
        ops,
    ));
    let raw_key = format!("{prefix}raw:block");
    let started = Instant::now();
    let mut samples = Vec::with_capacity(ops);
    for i in 0..ops {
        let t = Instant::now();
        let _: Option<String> = redis::cmd("GET")
            .arg(&raw_key)
            .query_async(&mut raw)
            .await
            .unwrap();
        let _: () = redis::cmd("SET")
            .arg(&raw_key)
            .arg(format!("line {i}"))
            .query_async(&mut raw)
            .await
            .unwrap();
        samples.push(t.elapsed().as_secs_f64() * 1_000.0);
    }
    rows.push(row(
        "raw GET + SET (no guard: the floor)",
        samples,
        started.elapsed().as_secs_f64(),
        ops,
    ));

    // Job claims with four workers, each on its own connection.
    let mut queues: Vec<Arc<dyn JobQueue>> = Vec::new();
    for _ in 0..4 {
        let own = RedisDatabase::connect(config.clone()).await.unwrap();
        queues.push(Arc::new(RedisJobQueue::new(own)));
    }
    let redis_claims = claims(queues, ops).await;
    let sqlite_jobs = SqliteDatabase::open(SqliteConfig::new(dir.path().join("jobs.db")))
        .await
        .unwrap();
    let queues: Vec<Arc<dyn JobQueue>> = (0..4)
        .map(|_| Arc::new(SqliteJobQueue::new(sqlite_jobs.clone())) as Arc<dyn JobQueue>)
        .collect();
    let sqlite_claims = claims(queues, ops).await;
    let list = format!("{prefix}raw:jobs");
    for chunk in (0..ops).collect::<Vec<_>>().chunks(1_000) {
        let ids: Vec<String> = chunk.iter().map(|i| format!("job-{i:06}")).collect();
        let _: () = redis::cmd("RPUSH")
            .arg(&list)
            .arg(ids)
            .query_async(&mut raw)
            .await
            .unwrap();
    }
    let started = Instant::now();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (client, list, prefix) = (client.clone(), list.clone(), prefix.clone());
            tokio::spawn(async move {
                let mut connection = client.get_multiplexed_async_connection().await.unwrap();
                let mut done = 0usize;
                while let Some(id) = redis::cmd("LPOP")
                    .arg(&list)
                    .query_async::<Option<String>>(&mut connection)
                    .await
                    .unwrap()
                {
                    let _: () = redis::cmd("SET")
                        .arg(format!("{prefix}raw:done:{id}"))
                        .arg(1)
                        .query_async(&mut connection)
                        .await
                        .unwrap();
                    done += 1;
                }
                done
            })
        })
        .collect();
    let mut total = 0;
    for worker in workers {
        total += worker.await.unwrap();
    }
    assert_eq!(total, ops);
    let raw_claims = ops as f64 / started.elapsed().as_secs_f64();

    println!("| operation ({ops} each, one caller unless said) | per second | p50 ms | p99 ms |");
    println!("|---|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {:.0} | {:.3} | {:.3} |",
            r.what, r.per_second, r.p50_ms, r.p99_ms
        );
    }
    println!("| job claim + complete, 4 workers, memory-redis | {redis_claims:.0} | | |");
    println!("| job claim + complete, 4 workers, memory-sqlite | {sqlite_claims:.0} | | |");
    println!("| raw LPOP + SET, 4 workers (no lease: the floor) | {raw_claims:.0} | | |");

    let _: () = redis::cmd("UNLINK")
        .arg(&raw_key)
        .arg(&list)
        .query_async(&mut raw)
        .await
        .unwrap();
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}raw:done:*"))
            .arg("COUNT")
            .arg(1_000)
            .query_async(&mut raw)
            .await
            .unwrap();
        if !keys.is_empty() {
            let _: () = redis::cmd("UNLINK")
                .arg(keys)
                .query_async(&mut raw)
                .await
                .unwrap();
        }
        if next == 0 {
            break;
        }
        cursor = next;
    }
    db.drop_all().await.unwrap();
}
