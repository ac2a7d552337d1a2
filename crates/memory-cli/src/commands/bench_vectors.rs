//! The SQLite part of `memory bench long-term`: recall with the vectors searched through
//! the approximate graph (the default) beside the same recalls with the exact scan, in the
//! same run over the same files, with each one's CPU time per recall and the graph's
//! recall@10 against the exhaustive `f32` scan.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use memory_core::ports::{
    Embedder, SystemClock, VectorHit, VectorIndex, VectorIndexes, VectorQuery, VectorRecord,
};
use memory_engine::long_term::{
    LongTermBackends, MEMORY_NAMESPACE, MemoryService, RAW_NAMESPACE, RecallRequest,
};
use memory_sqlite::{
    ApproximateSearch, SqliteConfig, SqliteDatabase, SqliteProfiles, SqliteVectorIndex,
};
use serde::Serialize;

use super::CliError;
use super::bench::{Latency, LongTermBench, Words, latency};

/// Exact against approximate vector search, measured through recall.
#[derive(Debug, Clone, Serialize)]
pub struct VectorComparison {
    /// Recall (every channel) with the approximate graph.
    pub recall_approximate: Latency,
    /// CPU time of the whole process per recall, approximate graph (ms).
    pub cpu_ms_per_recall_approximate: Option<f64>,
    /// Recall (every channel) with the exact scan.
    pub recall_exact: Latency,
    /// CPU time of the whole process per recall, exact scan (ms).
    pub cpu_ms_per_recall_exact: Option<f64>,
    /// The same queries through the graph from [`CONCURRENT_CALLERS`] callers at once.
    pub concurrent: ConcurrentRecalls,
    /// Candidates per search from the graph.
    pub graph_candidates: usize,
    /// Of the exact top 10 of each query vector, the share the graph returned.
    pub graph_recall_at_10: f64,
    /// The same, counting a returned vector that ties the exact tenth's score as found.
    pub graph_recall_at_10_with_ties: f64,
    /// The graph on sentences embedded by the local model (when asked for and installed).
    pub model_vectors: Option<ModelVectors>,
    /// Seconds to load the profile's vectors and build (or load) their graphs.
    pub graph_ready_seconds: f64,
}

/// Callers of the concurrent recall phase: enough to keep both cores of a small machine busy.
pub const CONCURRENT_CALLERS: usize = 8;

/// Recalls through the graph from several callers at once: the cost of a recall when the
/// process is busy, so that no thread goes idle and is woken between a recall's steps.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ConcurrentRecalls {
    /// Callers, each making its next recall as soon as its last one returned.
    pub callers: usize,
    /// Recalls answered per second.
    pub recalls_per_sec: f64,
    /// CPU time of the whole process per recall (ms).
    pub cpu_ms_per_recall: Option<f64>,
}

/// The graph against the exhaustive scan on vectors of the local model.
#[derive(Debug, Clone, Serialize)]
pub struct ModelVectors {
    /// Vectors in the namespace.
    pub vectors: usize,
    /// The graph searched with several candidate counts.
    pub graphs: Vec<GraphRecall>,
    /// Of the exact top 10 of each query, the share the search without the graph (the int8
    /// pre-scan, then `f32` on its best) returned.
    pub prescan_recall_at_10: f64,
    /// One search without the graph.
    pub exact_search: Latency,
}

/// The graph's recall@10 and search time with one candidate count.
#[derive(Debug, Clone, Serialize)]
pub struct GraphRecall {
    /// Candidates taken from the graph and rescored.
    pub candidates: usize,
    /// Of the exact top 10 of each query, the share the graph returned.
    pub recall_at_10: f64,
    /// The same, counting a returned vector that ties the exact tenth's score as found.
    pub recall_at_10_with_ties: f64,
    /// One vector search through the graph.
    pub search: Latency,
}

/// The graph's results against the exhaustive scan's, summed over queries.
#[derive(Debug, Clone, Copy, Default)]
struct RecallCount {
    /// Exact results in all.
    total: usize,
    /// Exact results the graph returned.
    found: usize,
    /// Graph results at least as good as the exact tenth (ties with it count).
    found_with_ties: usize,
}

impl RecallCount {
    /// Scores within this of the exact tenth's are ties (float rounding only).
    const TIE: f32 = 1e-6;

    fn add(&mut self, truth: &[VectorHit], got: &[VectorHit]) {
        self.total += truth.len();
        self.found += truth
            .iter()
            .filter(|t| got.iter().any(|g| g.id == t.id))
            .count();
        if let Some(last) = truth.last() {
            self.found_with_ties += got
                .iter()
                .take(truth.len())
                .filter(|g| g.score >= last.score - Self::TIE)
                .count();
        }
    }

    fn recall(&self) -> f64 {
        self.found as f64 / self.total.max(1) as f64
    }

    fn recall_with_ties(&self) -> f64 {
        self.found_with_ties as f64 / self.total.max(1) as f64
    }
}

/// User plus system CPU time of this process so far, from `/proc/self/stat` (Linux; ticks
/// of 10 ms).
fn process_cpu_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let user: f64 = fields.get(11)?.parse().ok()?;
    let system: f64 = fields.get(12)?.parse().ok()?;
    Some((user + system) * 10.0)
}

/// CPU time of this process per call since `before` (a [`process_cpu_ms`] reading), over
/// `calls` calls.
fn cpu_ms_per_call(before: Option<f64>, calls: usize) -> Option<f64> {
    Some((process_cpu_ms()? - before?) / calls.max(1) as f64)
}

/// Times `queries` recalls; returns their latencies and the CPU time per recall. Says on
/// stderr when the timed loop starts (`timing: recall, {name}, {n} queries`), so a profiler
/// can be pointed at it.
async fn timed_recalls(
    service: &MemoryService,
    name: &str,
    profile: &str,
    queries: &[String],
) -> Result<(Latency, Option<f64>), CliError> {
    service
        .recall(profile, RecallRequest::new(queries[0].clone(), 10))
        .await?;
    eprintln!("timing: recall, {name}, {} queries", queries.len());
    let cpu_before = process_cpu_ms();
    let mut samples = Vec::with_capacity(queries.len());
    for q in queries {
        let started = Instant::now();
        service
            .recall(profile, RecallRequest::new(q.clone(), 10))
            .await?;
        samples.push(started.elapsed().as_secs_f64() * 1_000.0);
    }
    let cpu = cpu_ms_per_call(cpu_before, queries.len());
    Ok((latency(samples), cpu))
}

/// Runs `queries` through `service` from `callers` tasks at once (query `i` by caller
/// `i % callers`); returns the throughput and the CPU time per recall.
async fn concurrent_recalls(
    service: Arc<MemoryService>,
    profile: &str,
    queries: &[String],
    callers: usize,
) -> Result<ConcurrentRecalls, CliError> {
    eprintln!(
        "timing: recall, graph, {callers} callers, {} queries",
        queries.len()
    );
    let queries = Arc::new(queries.to_vec());
    let cpu_before = process_cpu_ms();
    let started = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|caller| {
            let (service, queries, profile) = (
                Arc::clone(&service),
                Arc::clone(&queries),
                profile.to_owned(),
            );
            tokio::spawn(async move {
                for q in queries.iter().skip(caller).step_by(callers) {
                    service
                        .recall(&profile, RecallRequest::new(q.clone(), 10))
                        .await?;
                }
                Result::<(), memory_core::MemoryError>::Ok(())
            })
        })
        .collect();
    for task in tasks {
        task.await.map_err(|e| {
            memory_core::MemoryError::backend("bench", format!("a recall caller stopped: {e}"))
        })??;
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(ConcurrentRecalls {
        callers,
        recalls_per_sec: queries.len() as f64 / seconds.max(f64::EPSILON),
        cpu_ms_per_recall: cpu_ms_per_call(cpu_before, queries.len()),
    })
}

/// Recall on `profile` under `root` with approximate and with exact vector search.
pub(super) async fn compare(
    root: &Path,
    backends: &LongTermBackends,
    hashing: &Arc<dyn Embedder>,
    profile: &str,
    queries: &[String],
    bench: LongTermBench,
) -> Result<VectorComparison, CliError> {
    let settings = ApproximateSearch {
        candidates: bench.graph_candidates,
        ..ApproximateSearch::default()
    };
    let service = |vectors: Arc<dyn VectorIndexes>| {
        MemoryService::new(
            LongTermBackends::from_parts(
                Arc::clone(&backends.records),
                Arc::clone(&backends.text),
                vectors,
                Arc::clone(&backends.jobs),
                Arc::clone(&backends.outbox),
            ),
            Arc::new(SystemClock),
        )
        .with_embedder(Arc::clone(hashing))
    };
    let approximate = Arc::new(SqliteProfiles::new(root).approximate(Some(settings)));
    let started = Instant::now();
    approximate.prepare_vectors(profile).await?;
    let graph_ready_seconds = started.elapsed().as_secs_f64();
    let exact = Arc::new(SqliteProfiles::new(root).approximate(None));

    let (recall_exact, cpu_exact) =
        timed_recalls(&service(exact.clone()), "exact scan", profile, queries).await?;
    let graph_service = Arc::new(service(approximate.clone()));
    let (recall_approximate, cpu_approximate) =
        timed_recalls(&graph_service, "graph", profile, queries).await?;
    let concurrent = concurrent_recalls(
        Arc::clone(&graph_service),
        profile,
        queries,
        CONCURRENT_CALLERS,
    )
    .await?;

    let mut count = RecallCount::default();
    let exact_index = exact.sqlite_vector_index(profile).await?;
    let approximate_index = approximate.vector_index(profile).await?;
    let vectors = hashing.embed(queries).await?;
    for vector in vectors {
        for namespace in [MEMORY_NAMESPACE, RAW_NAMESPACE] {
            let query = VectorQuery {
                vector: vector.clone(),
                k: 10,
                filter: Default::default(),
            };
            let truth = exact_index.search_exhaustive(namespace, &query).await?;
            let got = approximate_index.search(namespace, &query).await?;
            count.add(&truth, &got);
        }
    }
    let model_vectors = if bench.model_vectors > 0 {
        let file = bench
            .model_vectors_file
            .clone()
            .unwrap_or_else(|| root.join("model-vectors.db"));
        model_recall(&file, bench.model_vectors, settings).await?
    } else {
        None
    };
    Ok(VectorComparison {
        recall_approximate,
        cpu_ms_per_recall_approximate: cpu_approximate,
        recall_exact,
        cpu_ms_per_recall_exact: cpu_exact,
        concurrent,
        graph_candidates: settings.candidates,
        graph_recall_at_10: count.recall(),
        graph_recall_at_10_with_ties: count.recall_with_ties(),
        graph_ready_seconds,
        model_vectors,
    })
}

/// The graph's recall@10 and search time on `n` sentences the local model embedded (`None`
/// when the model is not installed), beside the exact scan of the same namespace.
async fn model_recall(
    file: &Path,
    n: usize,
    settings: ApproximateSearch,
) -> Result<Option<ModelVectors>, CliError> {
    let (Some(model), _) = memory_compose::embedder(&memory_config::MemoryConfig::default())?
    else {
        return Ok(None);
    };
    let mut words = Words::new(99, 20_000);
    let texts: Vec<String> = (0..n).map(|_| words.sentence(14)).collect();
    let db = SqliteDatabase::open(SqliteConfig::new(file)).await?;
    let exact = SqliteVectorIndex::new(db.clone()).with_approximate(None);
    // A file kept from an earlier run (same sentences, same ids, same model) is not embedded
    // again; a file holding anything else is refused, not overwritten.
    let stored = exact.count("model", &Default::default()).await?;
    let chunks = match exact.model("model").await? {
        None => &texts[..],
        Some(m) if m == model.model_id() && stored == n as u64 => &[][..],
        Some(m) => {
            return Err(CliError::Input(format!(
                "{} holds {stored} vectors of {m:?}; this run wants {n} of {:?}: name another file",
                file.display(),
                model.model_id()
            )));
        }
    };
    for (c, chunk) in chunks.chunks(512).enumerate() {
        let vectors = model.embed(chunk).await?;
        let records = vectors
            .into_iter()
            .enumerate()
            .map(|(i, vector)| VectorRecord {
                id: format!("t{:07}", c * 512 + i),
                vector,
                model: model.model_id().to_owned(),
                fields: Default::default(),
            })
            .collect();
        exact.upsert("model", records).await?;
    }
    let queries: Vec<String> = (0..300).map(|_| words.query()).collect();
    let query_vectors: Vec<VectorQuery> = model
        .embed(&queries)
        .await?
        .into_iter()
        .map(|vector| VectorQuery {
            vector,
            k: 10,
            filter: Default::default(),
        })
        .collect();
    let mut truths = Vec::with_capacity(query_vectors.len());
    let mut prescan = RecallCount::default();
    let mut exact_times = Vec::new();
    for query in &query_vectors {
        let started = Instant::now();
        let got = exact.search("model", query).await?;
        exact_times.push(started.elapsed().as_secs_f64() * 1_000.0);
        let truth = exact.search_exhaustive("model", query).await?;
        prescan.add(&truth, &got);
        truths.push(truth);
    }
    let mut counts = vec![64, 128, 160, 192, 256, settings.candidates];
    counts.sort_unstable();
    counts.dedup();
    let mut graphs = Vec::new();
    for candidates in counts {
        // The first builds the graph and saves it beside the file; the others load it.
        let graph = SqliteVectorIndex::new(db.clone()).with_approximate(Some(ApproximateSearch {
            from_rows: 0,
            candidates,
            ..settings
        }));
        graph.prepare("model").await?;
        let mut count = RecallCount::default();
        let mut times = Vec::new();
        for (query, truth) in query_vectors.iter().zip(&truths) {
            let started = Instant::now();
            let got = graph.search("model", query).await?;
            times.push(started.elapsed().as_secs_f64() * 1_000.0);
            count.add(truth, &got);
        }
        graphs.push(GraphRecall {
            candidates,
            recall_at_10: count.recall(),
            recall_at_10_with_ties: count.recall_with_ties(),
            search: latency(times),
        });
    }
    Ok(Some(ModelVectors {
        vectors: n,
        graphs,
        prescan_recall_at_10: prescan.recall(),
        exact_search: latency(exact_times),
    }))
}
