//! The SQLite part of `memory bench long-term`: recall with the vectors searched through
//! the approximate graph (the default) beside the same recalls with the exact scan, in the
//! same run over the same files, with each one's CPU time per recall and the graph's
//! recall@10 against the exact scan.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use memory_core::ports::{Embedder, SystemClock, VectorIndexes, VectorQuery};
use memory_engine::long_term::{
    LongTermBackends, MEMORY_NAMESPACE, MemoryService, RAW_NAMESPACE, RecallRequest,
};
use memory_sqlite::SqliteProfiles;
use serde::Serialize;

use super::CliError;
use super::bench::{Latency, latency};

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
    /// Of the exact top 10 of each query vector, the share the graph returned.
    pub graph_recall_at_10: f64,
    /// Seconds to load the profile's vectors and build (or load) their graphs.
    pub graph_ready_seconds: f64,
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

/// Times `queries` recalls; returns their latencies and the CPU time per recall.
async fn timed_recalls(
    service: &MemoryService,
    profile: &str,
    queries: &[String],
) -> Result<(Latency, Option<f64>), CliError> {
    service
        .recall(profile, RecallRequest::new(queries[0].clone(), 10))
        .await?;
    let cpu_before = process_cpu_ms();
    let mut samples = Vec::with_capacity(queries.len());
    for q in queries {
        let started = Instant::now();
        service
            .recall(profile, RecallRequest::new(q.clone(), 10))
            .await?;
        samples.push(started.elapsed().as_secs_f64() * 1_000.0);
    }
    let cpu = match (cpu_before, process_cpu_ms()) {
        (Some(before), Some(after)) => Some((after - before) / queries.len() as f64),
        _ => None,
    };
    Ok((latency(samples), cpu))
}

/// Recall on `profile` under `root` with approximate and with exact vector search.
pub(super) async fn compare(
    root: &Path,
    backends: &LongTermBackends,
    hashing: &Arc<dyn Embedder>,
    profile: &str,
    queries: &[String],
) -> Result<VectorComparison, CliError> {
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
    let approximate = Arc::new(SqliteProfiles::new(root));
    let started = Instant::now();
    approximate.prepare_vectors(profile).await?;
    let graph_ready_seconds = started.elapsed().as_secs_f64();
    let exact = Arc::new(SqliteProfiles::new(root).approximate(None));

    let (recall_exact, cpu_exact) =
        timed_recalls(&service(exact.clone()), profile, queries).await?;
    let (recall_approximate, cpu_approximate) =
        timed_recalls(&service(approximate.clone()), profile, queries).await?;

    let (mut found, mut total) = (0usize, 0usize);
    let exact_index = exact.vector_index(profile).await?;
    let approximate_index = approximate.vector_index(profile).await?;
    let vectors = hashing.embed(queries).await?;
    for vector in vectors {
        for namespace in [MEMORY_NAMESPACE, RAW_NAMESPACE] {
            let query = VectorQuery {
                vector: vector.clone(),
                k: 10,
                filter: Default::default(),
            };
            let truth = exact_index.search(namespace, &query).await?;
            let got = approximate_index.search(namespace, &query).await?;
            total += truth.len();
            found += truth
                .iter()
                .filter(|t| got.iter().any(|g| g.id == t.id))
                .count();
        }
    }
    Ok(VectorComparison {
        recall_approximate,
        cpu_ms_per_recall_approximate: cpu_approximate,
        recall_exact,
        cpu_ms_per_recall_exact: cpu_exact,
        graph_recall_at_10: found as f64 / total.max(1) as f64,
        graph_ready_seconds,
    })
}
