//! What sharing an index between processes costs ([`TantivyOptions::shared`]), beside the
//! index held by one process, in the same run on the same corpus: writes per second from 16
//! concurrent writers of one document each (group commit in both), the same split over two
//! handles of the shared directory (as two processes would be), and search p50/p99 (a shared
//! index stats `meta.json` before each search).
//!
//! `cargo bench -p memory-tantivy --bench shared_index` (`SHARED_BENCH_SECONDS` sets each
//! write phase's length, default 5).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use memory_core::ports::{TextDocument, TextIndex, TextQuery};
use memory_tantivy::{Erasure, TantivyOptions, TantivyTextIndex};
use memory_testkit::corpus::{Rng, sentence, vocabulary};

const WRITERS: usize = 16;
const SEED_DOCUMENTS: usize = 50_000;
const QUERIES: usize = 500;

fn options(shared: bool) -> TantivyOptions {
    TantivyOptions::default()
        .erasure(Erasure::InBackground)
        .shared(shared)
}

/// Writes per second from [`WRITERS`] tasks, spread over `handles`, for `seconds`.
async fn write_rate(handles: &[TantivyTextIndex], seconds: u64, tag: &str) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let index = handles[w % handles.len()].clone();
        let tag = tag.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut written = 0u64;
            while Instant::now() < deadline {
                let id = format!("{tag}-{w}-{written}");
                let doc = TextDocument::new(id, format!("writer {w} note {written} harbour"));
                index.upsert("bench", vec![doc]).await.unwrap();
                written += 1;
            }
            written
        }));
    }
    let mut total = 0;
    for task in tasks {
        total += task.await.unwrap();
    }
    total as f64 / started.elapsed().as_secs_f64()
}

/// Search p50 and p99 in milliseconds over the seeded corpus.
async fn search_latency(index: &TantivyTextIndex, words: &[String]) -> (f64, f64) {
    let mut rng = Rng::new(11);
    let mut samples = Vec::with_capacity(QUERIES);
    for _ in 0..QUERIES {
        let query = sentence(&mut rng, words, 2);
        let started = Instant::now();
        index
            .search("seed", &TextQuery::new(query, 20))
            .await
            .unwrap();
        samples.push(started.elapsed().as_secs_f64() * 1e3);
    }
    samples.sort_by(f64::total_cmp);
    let at = |p: f64| samples[((samples.len() as f64 - 1.0) * p).round() as usize];
    (at(0.50), at(0.99))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let seconds: u64 = std::env::var("SHARED_BENCH_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let words = vocabulary(2_000);
    let mut rng = Rng::new(7);
    let seed: Vec<TextDocument> = (0..SEED_DOCUMENTS)
        .map(|i| TextDocument::new(format!("s{i}"), sentence(&mut rng, &words, 12)))
        .collect();
    println!(
        "shared_index: {WRITERS} writers, {seconds} s per write phase, {SEED_DOCUMENTS} documents searched, {QUERIES} queries"
    );
    let mut results = Vec::new();
    for (name, shared) in [("held by one process", false), ("shared", true)] {
        let dir = tempfile::tempdir().unwrap();
        let index = TantivyTextIndex::open_with(dir.path(), options(shared)).unwrap();
        index.upsert("seed", seed.clone()).await.unwrap();
        let (p50, p99) = search_latency(&index, &words).await;
        let one = write_rate(std::slice::from_ref(&index), seconds, "one").await;
        let two = if shared {
            let other = TantivyTextIndex::open_with(dir.path(), options(true)).unwrap();
            Some(write_rate(&[index.clone(), other], seconds, "two").await)
        } else {
            None
        };
        println!(
            "{name:<22} writes/s {one:>8.0}   over two handles {}   search p50 {p50:.3} ms p99 {p99:.3} ms",
            two.map_or("-".to_owned(), |r| format!("{r:.0}"))
        );
        results.push((one, p50, p99));
    }
    let (held, shared) = (results[0], results[1]);
    println!(
        "shared / held: writes {:.2}x, search p50 {:.2}x, p99 {:.2}x",
        shared.0 / held.0,
        shared.1 / held.1,
        shared.2 / held.2
    );
}
