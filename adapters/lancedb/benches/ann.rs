//! Approximate search on LanceDB beside the embedded exact scan (SQLite's in-memory matrix,
//! the default vector index) on the same vectors in the same run: search p50/p95 and
//! recall@10 against a brute-force exact top 10, unfiltered, filtered to one session in a
//! hundred (a contiguous run of rows) and to one kind in a hundred (every hundredth row);
//! load time, index build time and size on disk; the `nprobes` trade-off, unfiltered and
//! filtered (exactly, and through the index).
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
/// The session and the kind the filtered searches ask for (1 % of the rows each).
const SESSION: usize = 7;
const KIND: usize = 7;

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

/// Row `i`'s session of `n` rows: a hundred contiguous runs.
fn session_of(i: usize, n: usize) -> usize {
    i * SESSIONS / n
}

/// Row `i`'s kind: every hundredth row has the same.
fn kind_of(i: usize) -> usize {
    i % SESSIONS
}

/// The bench's vectors, a chunk at a time from the start (the generator is sequential, so
/// every pass sees the same vectors without holding them all).
fn chunks(n: usize) -> impl Iterator<Item = (usize, Vec<Vec<f32>>)> {
    let mut rng = Rng::new(5);
    (0..n).step_by(CHUNK).map(move |start| {
        (
            start,
            embedding_like_vectors(CHUNK.min(n - start), DIMS, &mut rng),
        )
    })
}

/// The exact top `K` of each query, gathered a chunk at a time (brute force over unit
/// vectors, on every core): unfiltered, among one session's rows (a contiguous run, as a
/// session's memories are written together) and among one kind's rows (every hundredth
/// row, scattered over the table).
struct Truth {
    n: usize,
    all: Vec<Vec<(f32, usize)>>,
    in_session: Vec<Vec<(f32, usize)>>,
    of_kind: Vec<Vec<(f32, usize)>>,
}

impl Truth {
    fn new(n: usize) -> Self {
        Self {
            n,
            all: vec![Vec::new(); QUERIES],
            in_session: vec![Vec::new(); QUERIES],
            of_kind: vec![Vec::new(); QUERIES],
        }
    }

    /// Adds the rows `start..` of `chunk` (unit vectors) to every query's top `K`.
    fn add(&mut self, start: usize, chunk: &[Vec<f32>], queries: &[Vec<f32>]) {
        let n = self.n;
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let per = queries.len().div_ceil(threads);
        std::thread::scope(|scope| {
            for (((queries, all), in_session), of_kind) in queries
                .chunks(per)
                .zip(self.all.chunks_mut(per))
                .zip(self.in_session.chunks_mut(per))
                .zip(self.of_kind.chunks_mut(per))
            {
                scope.spawn(move || {
                    for (((q, all), in_session), of_kind) in
                        queries.iter().zip(all).zip(in_session).zip(of_kind)
                    {
                        let scored: Vec<(f32, usize)> = chunk
                            .iter()
                            .enumerate()
                            .map(|(i, r)| (r.iter().zip(q).map(|(a, b)| a * b).sum(), start + i))
                            .collect();
                        keep_best(all, scored.iter().copied());
                        keep_best(
                            in_session,
                            scored
                                .iter()
                                .copied()
                                .filter(|(_, i)| session_of(*i, n) == SESSION),
                        );
                        keep_best(
                            of_kind,
                            scored.into_iter().filter(|(_, i)| kind_of(*i) == KIND),
                        );
                    }
                });
            }
        });
    }

    fn ids(top: &[Vec<(f32, usize)>]) -> Vec<Vec<usize>> {
        top.iter()
            .map(|t| t.iter().map(|(_, i)| *i).collect())
            .collect()
    }
}

/// Merges `candidates` into `best`, keeping the `K` highest scores.
fn keep_best(best: &mut Vec<(f32, usize)>, candidates: impl Iterator<Item = (f32, usize)>) {
    best.extend(candidates);
    best.sort_by(|a, b| b.0.total_cmp(&a.0));
    best.truncate(K);
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
    let queries = embedding_like_vectors(QUERIES, DIMS, &mut Rng::new(77));
    let unit_queries: Vec<Vec<f32>> = queries.iter().map(|v| unit(v)).collect();
    let session_filter = VectorFilter {
        session: Some(format!("s{SESSION:02}")),
        ..VectorFilter::default()
    };
    let kind_filter = VectorFilter {
        kind: Some(format!("k{KIND:02}")),
        ..VectorFilter::default()
    };
    let records = |start: usize, chunk: Vec<Vec<f32>>| -> Vec<VectorRecord> {
        chunk
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                VectorRecord::new(format!("v{}", start + i), v, "bench").with_fields(VectorFields {
                    session: Some(format!("s{:02}", session_of(start + i, n))),
                    kind: Some(format!("k{:02}", kind_of(start + i))),
                    ..VectorFields::default()
                })
            })
            .collect()
    };
    let dir = tempfile::tempdir().unwrap();

    // The embedded exact scan, loaded while the brute-force truth is gathered.
    let db_path = dir.path().join("vectors.db");
    let db = SqliteDatabase::open(SqliteConfig::new(&db_path))
        .await
        .unwrap();
    let sqlite = SqliteVectorIndex::new(db.clone());
    let mut truth = Truth::new(n);
    let (mut sqlite_load, mut truth_time) = (Duration::ZERO, Duration::ZERO);
    for (start, chunk) in chunks(n) {
        let t = Instant::now();
        let units: Vec<Vec<f32>> = chunk.iter().map(|v| unit(v)).collect();
        truth.add(start, &units, &unit_queries);
        truth_time += t.elapsed();
        let t = Instant::now();
        sqlite
            .upsert(NAMESPACE, records(start, chunk))
            .await
            .unwrap();
        sqlite_load += t.elapsed();
    }
    println!("brute-force truth: {:.1} s", truth_time.as_secs_f64());
    let (session_truth, kind_truth) = (Truth::ids(&truth.in_session), Truth::ids(&truth.of_kind));
    let truth = Truth::ids(&truth.all);
    let t = Instant::now();
    sqlite.query(NAMESPACE, &queries[0], K).await.unwrap();
    let sqlite_warm = t.elapsed();
    let (s50, s95, s_recall) = measure(&sqlite, &queries, &truth, &VectorFilter::default()).await;
    let sqlite_session = measure(&sqlite, &queries, &session_truth, &session_filter).await;
    let sqlite_kind = measure(&sqlite, &queries, &kind_truth, &kind_filter).await;
    let sqlite_size = size_on_disk(&db_path) + size_on_disk(&dir.path().join("vectors.db-wal"));
    db.close().await;
    drop(sqlite);

    // LanceDB: loaded through the port, then indexed.
    let lance_path = dir.path().join("lancedb");
    let uri = lance_path.to_str().unwrap().to_owned();
    let lance = LanceVectorIndex::connect(&uri, LanceOptions::default().index_threshold(n))
        .await
        .unwrap();
    let mut lance_load = Duration::ZERO;
    for (start, chunk) in chunks(n) {
        let records = records(start, chunk);
        let t = Instant::now();
        lance.upsert(NAMESPACE, records).await.unwrap();
        lance_load += t.elapsed();
    }
    let t = Instant::now();
    // Waits for the build the last upsert started in the background (or builds it).
    assert!(lance.optimize(NAMESPACE).await.unwrap());
    let lance_build = t.elapsed();
    let layout = lance.layout(NAMESPACE).await.unwrap().unwrap();
    println!(
        "layout: {} rows in {} fragments, version {}, indexes {:?}",
        layout.rows, layout.fragments, layout.version, layout.indexes
    );
    // Versions replaced by compaction stay for a while; the size is the table's own.
    lance.erase_deleted(NAMESPACE).await.unwrap();
    lance.query(NAMESPACE, &queries[0], K).await.unwrap();
    let (l50, l95, l_recall) = measure(&lance, &queries, &truth, &VectorFilter::default()).await;
    let lance_session = measure(&lance, &queries, &session_truth, &session_filter).await;
    let lance_kind = measure(&lance, &queries, &kind_truth, &kind_filter).await;
    let lance_size = size_on_disk(&lance_path);

    let row = |(p50, p95, recall): (f64, f64, f64)| format!("{p50:.2} / {p95:.2} ms, {recall:.3}");
    println!(
        "| exact scan (SQLite matrix) | {n} | {s50:.2} / {s95:.2} ms, {s_recall:.3} | {} | {} | load {:.1} s (+{:.1} s matrix) | {} MB |",
        row(sqlite_session),
        row(sqlite_kind),
        sqlite_load.as_secs_f64(),
        sqlite_warm.as_secs_f64(),
        sqlite_size >> 20
    );
    println!(
        "| LanceDB IVF-PQ (defaults: nprobes 80, refine 10, exact_filter_limit 5000) | {n} | {l50:.2} / {l95:.2} ms, {l_recall:.3} | {} | {} | load {:.1} s, index {:.1} s | {} MB |",
        row(lance_session),
        row(lance_kind),
        lance_load.as_secs_f64(),
        lance_build.as_secs_f64(),
        lance_size >> 20
    );
    println!(
        "ratio LanceDB / exact scan, p50: {:.2} (unfiltered), {:.2} (one session), {:.2} (one kind)",
        l50 / s50,
        lance_session.0 / sqlite_session.0,
        lance_kind.0 / sqlite_kind.0
    );
    for (nprobes, refine) in [(20, 10), (40, 10), (80, 5), (80, 20), (120, 10)] {
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
    // Filtered searches exactly (as a filter no more than `exact_filter_limit` rows match
    // is), and through the index with other `nprobes` (a 1 % filter probes about 3.2 times
    // as many partitions).
    let options = LanceOptions::default().index_threshold(n);
    let mut filtered = vec![(
        "filtered exactly".to_owned(),
        options.clone().exact_filter_limit(usize::MAX),
    )];
    for nprobes in [25, 50, 80, 100] {
        filtered.push((
            format!("filtered through the index, nprobes {nprobes}"),
            options.clone().exact_filter_limit(0).nprobes(nprobes),
        ));
    }
    for (label, options) in filtered {
        let index = LanceVectorIndex::connect(&uri, options).await.unwrap();
        let session = measure(&index, &queries, &session_truth, &session_filter).await;
        let kind = measure(&index, &queries, &kind_truth, &kind_filter).await;
        println!(
            "| {label} | {n} | one session {} | one kind {} |",
            row(session),
            row(kind)
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
