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

use memory_core::Timestamp;
use memory_core::ports::{JobFilter, JobQueue, KeyValueStore, NewJob};
use memory_redis::{RedisConfig, RedisDatabase, RedisJobQueue, RedisKeyValueStore};
use memory_sqlite::{SqliteConfig, SqliteDatabase, SqliteJobQueue, SqliteKeyValueStore};

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
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut raw = client.get_multiplexed_async_connection().await.unwrap();
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
