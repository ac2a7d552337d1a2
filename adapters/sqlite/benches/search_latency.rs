//! Search latency over 1,000,000 messages in 1,000 sessions: p50 and p99, session-scoped and
//! global, beside raw sqlx queries of the same FTS5 index (FTS5's `ORDER BY rank`, and the
//! bounded sort of `bm25` the adapter asks for).
//!
//! `cargo bench -p memory-sqlite --bench search_latency` (set `SEARCH_BENCH_DB=/path/file.db`
//! to keep the corpus between runs; `SEARCH_BENCH_MESSAGES` to change its size).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::{Rng, message, raw_pool, vocabulary};
use memory_core::ports::MessageStore;
use memory_core::{NewMessage, SearchQuery, SessionId, search_messages};
use memory_sqlite::{SqliteConfig, SqliteDatabase, SqliteMessageIndex, SqliteMessageStore};

const SESSIONS: usize = 1_000;
const QUERIES: usize = 300;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    println!(
        "{name:<40} p50 {:>8.3} ms   p99 {:>8.3} ms   mean {:>8.3} ms   ({} queries)",
        percentile(&samples, 0.50).as_secs_f64() * 1e3,
        percentile(&samples, 0.99).as_secs_f64() * 1e3,
        mean.as_secs_f64() * 1e3,
        samples.len()
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let total: usize = std::env::var("SEARCH_BENCH_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let keep = std::env::var("SEARCH_BENCH_DB").ok();
    let temp = tempfile::tempdir().unwrap();
    let path = keep
        .clone()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| temp.path().join("search.db"));
    let db = SqliteDatabase::open(SqliteConfig::new(&path))
        .await
        .unwrap();
    let store = SqliteMessageStore::new(db.clone());
    let index = SqliteMessageIndex::new(db);
    let vocab = vocabulary(20_000);
    let existing: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM messages")
        .fetch_one(&raw_pool(&path).await)
        .await
        .unwrap();
    if (existing as usize) < total {
        let started = Instant::now();
        let mut rng = Rng::new(42);
        let per_session = total / SESSIONS;
        for s in 0..SESSIONS {
            let session = SessionId::new(format!("session-{s:04}")).unwrap();
            let items: Vec<NewMessage> = (0..per_session)
                .map(|i| NewMessage::new(message(format!("m{i}"), &mut rng, &vocab)))
                .collect();
            store.append(&session, items).await.unwrap();
        }
        let secs = started.elapsed().as_secs_f64();
        println!(
            "built corpus: {total} messages in {SESSIONS} sessions in {secs:.1} s ({:.0} messages/s)",
            total as f64 / secs
        );
    }
    let raw = raw_pool(&path).await;
    // Two query classes, reported separately: "typical" words are those a person looks up
    // (each in well under 1% of messages); "common" words each appear in 2-10% of messages,
    // the worst case for ranking (every match is scored).
    let mut rng = Rng::new(99);
    let mut make = |low: usize, high: usize| -> Vec<(String, SessionId)> {
        (0..QUERIES)
            .map(|_| {
                let words = 1 + (rng.next_u64() % 2) as usize;
                let text = (0..words)
                    .map(|_| vocab[low + (rng.next_u64() as usize % (high - low))].clone())
                    .collect::<Vec<_>>()
                    .join(" ");
                let session =
                    SessionId::new(format!("session-{:04}", rng.next_u64() as usize % SESSIONS))
                        .unwrap();
                (text, session)
            })
            .collect()
    };
    let classes = [("typical", make(500, 20_000)), ("common", make(20, 200))];
    for (_, queries) in &classes {
        for (text, _) in queries.iter().take(20) {
            search_messages(&index, &SearchQuery::new(text))
                .await
                .unwrap();
        }
    }
    println!(
        "search over {total} messages in {SESSIONS} sessions, limit 20, {QUERIES} queries per class"
    );
    for (class, queries) in &classes {
        let mut scoped = Vec::new();
        let mut global = Vec::new();
        let mut raw_scoped = Vec::new();
        let mut raw_global = Vec::new();
        let mut raw_global_bounded = Vec::new();
        let mut hits = [0usize; 2];
        for (text, session) in queries {
            let q = SearchQuery::new(text).in_session(session.clone());
            let t = Instant::now();
            hits[0] += search_messages(&index, &q).await.unwrap().len();
            scoped.push(t.elapsed());
            let t = Instant::now();
            hits[1] += search_messages(&index, &SearchQuery::new(text))
                .await
                .unwrap()
                .len();
            global.push(t.elapsed());
            let quoted = text
                .split_whitespace()
                .map(|w| format!("\"{w}\""))
                .collect::<Vec<_>>()
                .join(" ");
            let key: i64 = sqlx::query_scalar("SELECT key FROM session_keys WHERE session_id = ?")
                .bind(session.as_str())
                .fetch_one(&raw)
                .await
                .unwrap();
            let t = Instant::now();
            let _: Vec<(i64, f64)> = sqlx::query_as("SELECT rowid, rank FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rank LIMIT 20")
                .bind(format!("scope : \"s{key}\" AND search_text : ({quoted})"))
                .fetch_all(&raw)
                .await
                .unwrap();
            raw_scoped.push(t.elapsed());
            let t = Instant::now();
            let _: Vec<(i64, f64)> = sqlx::query_as("SELECT rowid, rank FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rank LIMIT 20")
                .bind(format!("search_text : ({quoted})"))
                .fetch_all(&raw)
                .await
                .unwrap();
            raw_global.push(t.elapsed());
            // The same top 20 by a bounded sort of bm25 (what the adapter asks since issue 34).
            let t = Instant::now();
            let _: Vec<(i64, f64)> = sqlx::query_as("SELECT rowid, bm25(messages_fts, 1.0, 0.0) AS score FROM messages_fts WHERE messages_fts MATCH ? ORDER BY score LIMIT 20")
                .bind(format!("search_text : ({quoted})"))
                .fetch_all(&raw)
                .await
                .unwrap();
            raw_global_bounded.push(t.elapsed());
        }
        println!(
            "[{class}] mean hits per query: scoped {:.1}, global {:.1}",
            hits[0] as f64 / QUERIES as f64,
            hits[1] as f64 / QUERIES as f64
        );
        report(&format!("{class}: memory-sqlite session-scoped"), scoped);
        report(
            &format!("{class}: raw-sqlx FTS5 session-scoped"),
            raw_scoped,
        );
        report(&format!("{class}: memory-sqlite global"), global);
        report(&format!("{class}: raw-sqlx FTS5 global"), raw_global);
        report(
            &format!("{class}: raw-sqlx FTS5 global, bm25 top"),
            raw_global_bounded,
        );
    }
}
