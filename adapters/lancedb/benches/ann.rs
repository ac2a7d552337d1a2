//! Approximate search on LanceDB beside the embedded exact scan (SQLite's in-memory matrix,
//! the default vector index) on the same vectors in the same run: search p50/p95 and
//! recall@10 against a brute-force exact top 10, unfiltered and filtered to one session in a
//! hundred; load time, index build time and size on disk; and the `nprobes` trade-off.
//!
//! `cargo bench -p memory-lancedb --bench ann` (`LANCE_BENCH_SIZES=100000,1000000` by
//! default; 384 dimensions).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use memory_core::ports::{VectorFields, VectorFilter, VectorIndex, VectorQuery, VectorRecord};
use memory_lancedb::{LanceOptions, LanceVectorIndex};
use memory_sqlite::{SqliteConfig, SqliteDatabase, SqliteVectorIndex};
use memory_testkit::corpus::{Rng, embedding_like_vectors};
use memory_testkit::files::size_on_disk;

const DIMS: usize = 384;
const QUERIES: usize = 200;
const K: usize = 10;
const SESSIONS: usize = 100;
const CHUNK: usize = 10_000;
const NAMESPACE: &str = "memories";

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn percentile(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[((samples.len() as f64 - 1.0) * p).round() as usize]
}

fn unit(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / norm).collect()
}

fn session(i: usize) -> String {
    format!("s{:02}", i % SESSIONS)
}

/// The exact top `K` ids of each query among the rows `keep` accepts (brute force over unit
/// vectors, on every core).
fn exact_top(
    rows: &[Vec<f32>],
    queries: &[Vec<f32>],
    keep: &(dyn Fn(usize) -> bool + Sync),
) -> Vec<Vec<usize>> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let per = queries.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = queries
            .chunks(per)
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .map(|q| {
                            let mut scored: Vec<(f32, usize)> = rows
                                .iter()
                                .enumerate()
                                .filter(|(i, _)| keep(*i))
                                .map(|(i, r)| (r.iter().zip(q).map(|(a, b)| a * b).sum(), i))
                                .collect();
                            let k = K.min(scored.len());
                            scored.select_nth_unstable_by(k.saturating_sub(1), |a, b| {
                                b.0.total_cmp(&a.0)
                            });
                            scored.truncate(k);
                            scored.into_iter().map(|(_, i)| i).collect()
                        })
                        .collect::<Vec<Vec<usize>>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

/// Searches every query; returns p50, p95 (ms) and recall@K against `truth`.
async fn measure(
    index: &dyn VectorIndex,
    queries: &[Vec<f32>],
    truth: &[Vec<usize>],
    filter: &VectorFilter,
) -> (f64, f64, f64) {
    let mut times = Vec::with_capacity(queries.len());
    let mut found = 0;
    for (q, truth) in queries.iter().zip(truth) {
        let t = Instant::now();
        let hits = index
            .search(NAMESPACE, &VectorQuery::new(q, K).filter(filter.clone()))
            .await
            .unwrap();
        times.push(ms(t.elapsed()));
        found += hits
            .iter()
            .filter(|h| truth.iter().any(|i| h.id == format!("v{i}")))
            .count();
    }
    let wanted: usize = truth.iter().map(Vec::len).sum();
    (
        percentile(&mut times, 0.50),
        percentile(&mut times, 0.95),
        found as f64 / wanted as f64,
    )
}

async fn run(n: usize) {
    println!("\n== {n} vectors of {DIMS} dimensions, {QUERIES} queries, k = {K}");
    let data = embedding_like_vectors(n, DIMS, &mut Rng::new(5));
    let queries = embedding_like_vectors(QUERIES, DIMS, &mut Rng::new(77));
    let t = Instant::now();
    let (units, unit_queries): (Vec<Vec<f32>>, Vec<Vec<f32>>) = (
        data.iter().map(|v| unit(v)).collect(),
        queries.iter().map(|v| unit(v)).collect(),
    );
    let truth = exact_top(&units, &unit_queries, &|_| true);
    let target = session(7);
    let filtered_truth = exact_top(&units, &unit_queries, &|i| session(i) == target);
    drop(units);
    println!("brute-force truth: {:.1} s", t.elapsed().as_secs_f64());
    let filter = VectorFilter {
        session: Some(target),
        ..VectorFilter::default()
    };
    let record = |i: usize| {
        VectorRecord::new(format!("v{i}"), data[i].clone(), "bench").with_fields(VectorFields {
            session: Some(session(i)),
            ..VectorFields::default()
        })
    };
    let dir = tempfile::tempdir().unwrap();

    // The embedded exact scan.
    let db_path = dir.path().join("vectors.db");
    let db = SqliteDatabase::open(SqliteConfig::new(&db_path))
        .await
        .unwrap();
    let sqlite = SqliteVectorIndex::new(db.clone());
    let t = Instant::now();
    for start in (0..n).step_by(CHUNK) {
        let chunk = (start..(start + CHUNK).min(n)).map(record).collect();
        sqlite.upsert(NAMESPACE, chunk).await.unwrap();
    }
    let sqlite_load = t.elapsed();
    let t = Instant::now();
    sqlite.query(NAMESPACE, &queries[0], K).await.unwrap();
    let sqlite_warm = t.elapsed();
    let (s50, s95, s_recall) = measure(&sqlite, &queries, &truth, &VectorFilter::default()).await;
    let (sf50, sf95, sf_recall) = measure(&sqlite, &queries, &filtered_truth, &filter).await;
    let sqlite_size = size_on_disk(&db_path) + size_on_disk(&dir.path().join("vectors.db-wal"));
    db.close().await;
    drop(sqlite);

    // LanceDB: loaded through the port, then indexed.
    let lance_path = dir.path().join("lancedb");
    let uri = lance_path.to_str().unwrap().to_owned();
    let lance = LanceVectorIndex::connect(&uri, LanceOptions::default().index_threshold(n))
        .await
        .unwrap();
    let t = Instant::now();
    for start in (0..n).step_by(CHUNK) {
        let chunk = (start..(start + CHUNK).min(n)).map(record).collect();
        lance.upsert(NAMESPACE, chunk).await.unwrap();
    }
    let lance_load = t.elapsed();
    let t = Instant::now();
    // Waits for the build the last upsert started in the background (or builds it).
    assert!(lance.optimize_index(NAMESPACE).await.unwrap());
    let lance_build = t.elapsed();
    lance.query(NAMESPACE, &queries[0], K).await.unwrap();
    let (l50, l95, l_recall) = measure(&lance, &queries, &truth, &VectorFilter::default()).await;
    let (lf50, lf95, lf_recall) = measure(&lance, &queries, &filtered_truth, &filter).await;
    let lance_size = size_on_disk(&lance_path);

    println!(
        "| exact scan (SQLite matrix) | {n} | {s50:.2} / {s95:.2} ms | {s_recall:.3} | {sf50:.2} / {sf95:.2} ms | {sf_recall:.3} | load {:.1} s (+{:.1} s matrix) | {} MB |",
        sqlite_load.as_secs_f64(),
        sqlite_warm.as_secs_f64(),
        sqlite_size >> 20
    );
    println!(
        "| LanceDB IVF-PQ (default: nprobes 80, refine 10) | {n} | {l50:.2} / {l95:.2} ms | {l_recall:.3} | {lf50:.2} / {lf95:.2} ms | {lf_recall:.3} | load {:.1} s, index {:.1} s | {} MB |",
        lance_load.as_secs_f64(),
        lance_build.as_secs_f64(),
        lance_size >> 20
    );
    println!(
        "ratio LanceDB / exact scan, p50: {:.2} (unfiltered), {:.2} (filtered)",
        l50 / s50,
        lf50 / sf50
    );
    for (nprobes, refine) in [(10, 10), (20, 10), (40, 10), (80, 20)] {
        let tuned = LanceVectorIndex::connect(
            &uri,
            LanceOptions::default()
                .index_threshold(n)
                .nprobes(nprobes)
                .refine_factor(refine),
        )
        .await
        .unwrap();
        tuned.query(NAMESPACE, &queries[0], K).await.unwrap();
        let (p50, p95, recall) = measure(&tuned, &queries, &truth, &VectorFilter::default()).await;
        println!(
            "| nprobes {nprobes}, refine {refine} | {n} | {p50:.2} / {p95:.2} ms | {recall:.3} |"
        );
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let sizes: Vec<usize> = std::env::var("LANCE_BENCH_SIZES")
        .unwrap_or_else(|_| "100000,1000000".into())
        .split(',')
        .map(|s| s.trim().parse().expect("LANCE_BENCH_SIZES: numbers"))
        .collect();
    for n in sizes {
        run(n).await;
    }
}
