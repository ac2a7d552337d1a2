//! `memory bench long-term`: recall latency on a large profile, LLM-free ingest throughput
//! and local embedding throughput, measured through the real service on SQLite (or, with
//! `--postgres`, on PostgreSQL).
//!
//! LLM calls are excluded by construction (no model is configured). The vector channels run
//! with a deterministic 384-dimension hashing embedder, so the numbers are the pipeline's own
//! cost (six channels, fusion, context, loading); the local model's per-query embedding time
//! is measured and reported separately. `--embedder local|local-int8` embeds the profile with
//! the model instead (the vectors a deployment's graph holds) and its queries before
//! anything is timed.

use std::sync::Arc;
use std::time::Instant;

use memory_core::Timestamp;
use memory_core::ports::{Embedder, MemoryKind, MemoryRecord, SystemClock, VectorRecord};
use memory_engine::long_term::{
    IngestMessage, MEMORY_NAMESPACE, MemoryService, RecallItem, RecallRequest, STOP_WORDS,
    memory_embedding_text,
};
use memory_hashing::HashingEmbedder;
use serde::Serialize;
use serde_json::json;

use super::CliError;
use crate::output;

/// English-like text: word ranks follow Zipf's law (frequency ∝ 1/rank) over a 20,000-word
/// vocabulary whose most frequent words are real function words, as in natural text. Recall
/// drops function words from queries, so query terms are the content words they would be.
/// Deterministic (xorshift), so runs are comparable.
pub(super) struct Words {
    state: u64,
    vocabulary: Vec<String>,
    cumulative: Vec<f64>,
}

impl Words {
    pub(super) fn new(seed: u64, size: usize) -> Self {
        let syllables = [
            "ka", "lo", "mi", "ra", "tu", "ne", "so", "vi", "de", "pa", "gu", "ze",
        ];
        let mut vocabulary: Vec<String> = STOP_WORDS.iter().map(|w| (*w).to_owned()).collect();
        let mut n = 0;
        while vocabulary.len() < size {
            n += 1;
            let (mut word, mut k) = (String::new(), n);
            while k > 0 {
                word.push_str(syllables[k % syllables.len()]);
                k /= syllables.len();
            }
            vocabulary.push(word);
        }
        let mut total = 0.0;
        let cumulative = (1..=vocabulary.len())
            .map(|rank| {
                total += 1.0 / rank as f64;
                total
            })
            .collect();
        Self {
            state: seed | 1,
            vocabulary,
            cumulative,
        }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    pub(super) fn word(&mut self) -> &str {
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let u = (self.next() % 1_000_000_007) as f64 / 1_000_000_007.0 * total;
        let i = self.cumulative.partition_point(|c| *c < u);
        &self.vocabulary[i.min(self.vocabulary.len() - 1)]
    }

    pub(super) fn sentence(&mut self, words: usize) -> String {
        (0..words)
            .map(|_| self.word().to_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A question-like query: a few words of running text (function words included).
    pub(super) fn query(&mut self) -> String {
        self.sentence(8)
    }
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Latency {
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
}

pub(super) fn latency(mut samples: Vec<f64>) -> Latency {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    Latency {
        p50_ms: at(0.50),
        p95_ms: at(0.95),
        p99_ms: at(0.99),
    }
}

/// Everything measured.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// Memories in the profile.
    pub memories: usize,
    /// Raw messages in the profile.
    pub raw_messages: usize,
    /// LLM-free inline ingest (store + FTS, no embedder), messages per second.
    pub ingest_msgs_per_sec: f64,
    /// Queued ingest (store + FTS + durable job record), messages per second.
    pub enqueue_msgs_per_sec: f64,
    /// Recall over every channel (the vectors from the hashing embedder, or the model
    /// `--embedder` names).
    pub recall: Latency,
    /// Recall over every channel with a metadata filter, at three shares in scope.
    pub recall_filtered: Vec<FilteredRecall>,
    /// Recall over every channel with the ranking before `memory eval fit` chose today's
    /// defaults (2026-12-06: no recency pass, raw vectors at full weight, half a hit's score
    /// lent to its neighbours, date words out of the text query): the baseline in the same
    /// run for what the fitted ranking costs.
    pub recall_hand_set_ranking: Latency,
    /// Recall with vectors off (text channels only).
    pub recall_text_only: Latency,
    /// The local model: one query embedding.
    pub local_query_embedding: Option<Latency>,
    /// The local model: texts per second in batches.
    pub local_embedding_texts_per_sec: Option<f64>,
    /// SQLite: the approximate graph beside the exact scan, in the same run.
    #[cfg(feature = "sqlite")]
    pub vectors: Option<super::bench_vectors::VectorComparison>,
    /// `--text tantivy`: the profile's index rebuilt from its records (what a process does
    /// by itself when it first opens a profile whose index is missing).
    pub text_rebuild: Option<TextRebuild>,
}

/// A text index rebuilt from a profile's records.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TextRebuild {
    /// Documents written.
    pub documents: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// What `memory bench long-term` measures.
#[derive(Debug, Clone)]
pub struct LongTermBench {
    /// Memories in the profile.
    pub memories: usize,
    /// Raw messages in the profile.
    pub raw: usize,
    /// Recall queries timed.
    pub queries: usize,
    /// On PostgreSQL instead of SQLite.
    pub postgres: bool,
    /// SQLite: candidates per search from the approximate graph.
    pub graph_candidates: usize,
    /// SQLite: sentences embedded by the local model for the graph's recall on real vectors.
    pub model_vectors: usize,
    /// SQLite: where the model's sentence vectors are kept for later runs (else in the
    /// scratch directory).
    pub model_vectors_file: Option<std::path::PathBuf>,
    /// SQLite: the profile's full-text indexes on Tantivy (the embedded default), not FTS5.
    pub tantivy_text: bool,
    /// The profile's and the queries' vectors from this local model instead of the hashing
    /// embedder.
    pub model_embedder: Option<memory_config::EmbedderChoice>,
    /// Also time the recalls filtered by metadata.
    pub filtered: bool,
    /// SQLite: the profile database's page size (`None`: the default).
    pub profile_page_size: Option<u32>,
}

/// Each query's recall (limit 10) through `service` on the profile `big`, timed one after
/// another, in milliseconds.
async fn time_recalls(
    service: &MemoryService,
    queries: &[String],
    what: &str,
) -> Result<Vec<f64>, CliError> {
    eprintln!("timing: recall, {what}, {} queries", queries.len());
    let mut millis = Vec::with_capacity(queries.len());
    for q in queries {
        let started = Instant::now();
        service
            .recall("big", RecallRequest::new(q.clone(), 10))
            .await?;
        millis.push(started.elapsed().as_secs_f64() * 1_000.0);
    }
    Ok(millis)
}

/// Runs the long-term memory benchmark.
pub async fn long_term(bench: LongTermBench, json: bool) -> Result<(), CliError> {
    let postgres = bench.postgres;
    let scratch = tempfile::Builder::new()
        .prefix("memory-bench-")
        .tempdir()
        .map_err(|e| CliError::io("creating a scratch directory", e))?;
    let schema = format!("bench_long_term_{}", std::process::id());
    let backends = if postgres {
        std::fs::write(
            scratch.path().join("memory.toml"),
            memory_config::all_on_postgres(&schema),
        )
        .map_err(|e| CliError::io("writing the scratch memory.toml", e))?;
        crate::app::configured_long_term(scratch.path()).await?
    } else {
        crate::app::scratch_long_term(scratch.path(), bench.tantivy_text, bench.profile_page_size)
            .await?
    };
    let result = run_long_term(backends, (!postgres).then_some(scratch.path()), bench, json).await;
    if postgres {
        drop_scratch_schema(&schema).await?;
    }
    result
}

/// Drops the Postgres benchmark's scratch schema.
#[cfg(feature = "postgres")]
pub(super) async fn drop_scratch_schema(schema: &str) -> Result<(), CliError> {
    let url = std::env::var("MEMORY_POSTGRES_URL").unwrap_or_default();
    let db = memory_postgres::PostgresDatabase::connect(
        memory_postgres::PostgresConfig::new(url).schema(schema),
    )
    .await?;
    db.drop_schema().await?;
    db.close().await;
    Ok(())
}

/// Without the Postgres adapter there is no scratch schema (composing failed first).
#[cfg(not(feature = "postgres"))]
pub(super) async fn drop_scratch_schema(_schema: &str) -> Result<(), CliError> {
    Ok(())
}

/// Stores `memories` synthetic memories (a third of them keyed, three questions each) in
/// `profile`, with their vectors from `hashing`, straight through the store (no LLM).
pub(super) async fn seed_memories(
    backends: &memory_engine::long_term::LongTermBackends,
    hashing: &Arc<dyn Embedder>,
    profile: &str,
    memories: usize,
    words: &mut Words,
) -> Result<(), CliError> {
    let store = backends.records.open(profile).await?;
    let index = backends.vectors.vector_index(profile).await?;
    let kinds = [MemoryKind::Fact, MemoryKind::Event, MemoryKind::Instruction];
    for start in (0..memories).step_by(1_000) {
        let mut records = Vec::new();
        for i in start..(start + 1_000).min(memories) {
            let record = MemoryRecord {
                id: format!("m{i:07}"),
                kind: kinds[i % kinds.len()],
                content: words.sentence(12),
                key: (i % 3 == 0).then(|| format!("topic.{}", i / 3)),
                questions: vec![words.sentence(6), words.sentence(6), words.sentence(6)],
                session_id: Some(format!("s{}", i % 100)),
                source_message_ids: Vec::new(),
                source_lines: None,
                recorded_at: Timestamp(i as i64),
                valid_at: None,
                superseded_by: None,
                forgotten: None,
                metadata: bench_metadata(i)?,
                expires_at: None,
                merged: None,
                confirmed_at: None,
                recalled_at: None,
            };
            store.insert_memory(record.clone()).await?;
            records.push(record);
        }
        let texts: Vec<String> = records.iter().map(memory_embedding_text).collect();
        let vectors = hashing.embed(&texts).await?;
        let model = hashing.model_id().to_owned();
        index
            .upsert(
                MEMORY_NAMESPACE,
                records
                    .iter()
                    .zip(vectors)
                    .map(|(r, vector)| VectorRecord {
                        id: r.id.clone(),
                        vector,
                        model: model.clone(),
                        fields: Default::default(),
                    })
                    .collect(),
            )
            .await?;
    }
    Ok(())
}

/// The metadata of the `i`th seeded memory: `bucket` is `i % 100` (one bucket is 1 % of the
/// memories), for the filtered recalls.
fn bench_metadata(i: usize) -> Result<memory_core::Metadata, CliError> {
    serde_json::from_value(json!({ "bucket": i % 100 }))
        .map_err(|e| CliError::Input(format!("benchmark metadata: {e}")))
}

/// The filtered recalls timed: the share of memories in scope and the filter.
const FILTERS: [(f64, &str); 3] = [
    (0.01, r#"{"bucket": 7}"#),
    (
        0.10,
        r#"{"bucket": {"$in": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}}"#,
    ),
    (0.90, r#"{"bucket": {"$gte": 10}}"#),
];

/// Recall with a metadata filter, every channel, beside the unfiltered recall of the same run.
#[derive(Debug, Clone, Serialize)]
pub struct FilteredRecall {
    /// The share of the profile's memories the filter admits.
    pub share: f64,
    /// The filter.
    pub filter: String,
    /// Latency.
    pub recall: Latency,
    /// Mean hits per recall (the limit is 10).
    pub mean_hits: f64,
}

/// Times `queries` recalls under each of [`FILTERS`], checking that every hit is in scope.
async fn filtered_recalls(
    service: &MemoryService,
    queries: &[String],
) -> Result<Vec<FilteredRecall>, CliError> {
    let mut out = Vec::new();
    for (share, text) in FILTERS {
        let filter = memory_core::MetadataFilter::parse(text)?;
        let mut samples = Vec::new();
        let mut hits = 0;
        for q in queries {
            let request = RecallRequest::new(q.clone(), 10).filtered(filter.clone());
            let started = Instant::now();
            let response = service.recall("big", request).await?;
            samples.push(started.elapsed().as_secs_f64() * 1_000.0);
            for hit in &response.hits {
                match &hit.item {
                    RecallItem::Memory(m) if filter.matches(&m.metadata) => hits += 1,
                    other => {
                        return Err(CliError::Input(format!(
                            "a recall filtered by {text} returned {} out of scope",
                            other.id()
                        )));
                    }
                }
            }
        }
        out.push(FilteredRecall {
            share,
            filter: text.to_owned(),
            recall: latency(samples),
            mean_hits: hits as f64 / queries.len().max(1) as f64,
        });
    }
    Ok(out)
}

/// `sqlite_root`: the scratch directory of the SQLite profiles (`None` on PostgreSQL).
async fn run_long_term(
    backends: memory_engine::long_term::LongTermBackends,
    sqlite_root: Option<&std::path::Path>,
    bench: LongTermBench,
    json: bool,
) -> Result<(), CliError> {
    let (memories, raw, queries) = (bench.memories, bench.raw, bench.queries);
    let postgres = sqlite_root.is_none();
    let plain = MemoryService::new(backends.clone(), Arc::new(SystemClock));
    let embedder: Arc<dyn Embedder> = match &bench.model_embedder {
        None => Arc::new(HashingEmbedder::new(384)),
        Some(choice) => {
            let mut config = memory_config::MemoryConfig::default();
            config.memory.embedder = choice.clone();
            match memory_compose::embedder(&config)? {
                (Some(model), _) => model,
                (None, why) => return Err(CliError::Input(why.unwrap_or_default())),
            }
        }
    };
    let with_vectors = plain.clone().with_embedder(Arc::clone(&embedder));
    let mut words = Words::new(42, 20_000);
    let progress = output::progress_bar(json, "steps");
    progress.set_length(5);

    // 1. LLM-free ingest throughput: 10,000 messages in conversations of 100.
    let conversations: Vec<Vec<IngestMessage>> = (0..100)
        .map(|_| {
            (0..100)
                .map(|_| IngestMessage::new("user", words.sentence(14)))
                .collect()
        })
        .collect();
    let started = Instant::now();
    for (i, c) in conversations.iter().enumerate() {
        plain
            .ingest_messages("ingest", &format!("c{i}"), c.clone())
            .await?;
    }
    let ingest_msgs_per_sec = 10_000.0 / started.elapsed().as_secs_f64();
    let started = Instant::now();
    for (i, c) in conversations.into_iter().enumerate() {
        plain.enqueue_ingest("enqueue", &format!("c{i}"), c).await?;
    }
    let enqueue_msgs_per_sec = 10_000.0 / started.elapsed().as_secs_f64();
    progress.inc(1);

    // 2. The large profile: raw messages (with vectors) and memories (with vectors).
    for start in (0..raw).step_by(1_000) {
        let batch: Vec<IngestMessage> = (start..(start + 1_000).min(raw))
            .map(|_| IngestMessage::new("user", words.sentence(14)))
            .collect();
        with_vectors
            .ingest_messages("big", &format!("s{}", start / 1_000), batch)
            .await?;
    }
    progress.inc(1);
    seed_memories(&backends, &embedder, "big", memories, &mut words).await?;
    let mut text_rebuild = None;
    if bench.tantivy_text {
        // The seeded records were written beside the engine: an index the engine writes is
        // rebuilt from them, as `memory reindex` does.
        let started = Instant::now();
        let report = backends.reindex("big").await?;
        text_rebuild = Some(TextRebuild {
            documents: report.documents,
            seconds: started.elapsed().as_secs_f64(),
        });
        let expected = (memories + raw) as u64;
        if !report.rebuilt || report.documents < expected {
            return Err(CliError::Input(format!(
                "the Tantivy index was rebuilt with {} documents; the profile holds {expected}",
                report.documents
            )));
        }
    }
    progress.inc(1);

    // 3. Recall latency (warm: the first query loads the vector matrices). On SQLite, the
    // vectors' approximate graphs beside the exact scan, once the graphs are ready.
    let queries: Vec<String> = (0..queries.max(20)).map(|_| words.query()).collect();
    // A model's query vectors are made now: the timed recalls exclude the query's embedding.
    let (embedder, with_vectors) = match bench.model_embedder {
        None => (embedder, with_vectors),
        Some(_) => {
            let prepared: Arc<dyn Embedder> =
                Arc::new(super::bench_queries::PreparedQueries::embed(embedder, &queries).await?);
            let service = plain.clone().with_embedder(Arc::clone(&prepared));
            (prepared, service)
        }
    };
    #[cfg(feature = "sqlite")]
    let vectors = match sqlite_root {
        Some(root) => Some(
            super::bench_vectors::compare(
                root,
                &backends,
                &embedder,
                "big",
                &queries,
                bench.clone(),
            )
            .await?,
        ),
        None => None,
    };
    #[cfg(not(feature = "sqlite"))]
    let _ = sqlite_root;
    with_vectors
        .recall("big", RecallRequest::new(queries[0].clone(), 10))
        .await?;
    let full = time_recalls(&with_vectors, &queries, "every channel").await?;
    let hand_set = {
        let mut config = with_vectors.config().clone();
        config.weights.recency = 0.0;
        config.weights.raw_vector = 1.0;
        config.context_weight = 0.5;
        config.text_keeps_date_words = false;
        with_vectors.clone().with_config(config)
    };
    let before_fit =
        time_recalls(&hand_set, &queries, "every channel, the hand-set ranking").await?;
    let filtered = match bench.filtered {
        true => filtered_recalls(&with_vectors, &queries).await?,
        false => Vec::new(),
    };
    let text_only = time_recalls(&plain, &queries, "text channels only").await?;
    progress.inc(1);

    // 4. The local model, when installed.
    let (mut local_query_embedding, mut local_embedding_texts_per_sec) = (None, None);
    let (local, _) = memory_compose::embedder(&memory_config::MemoryConfig::default())?;
    if let Some(local) = local {
        let mut samples = Vec::new();
        for q in queries.iter().take(50) {
            let started = Instant::now();
            local.embed_queries(std::slice::from_ref(q)).await?;
            samples.push(started.elapsed().as_secs_f64() * 1_000.0);
        }
        local_query_embedding = Some(latency(samples));
        let texts: Vec<String> = (0..512).map(|_| words.sentence(14)).collect();
        let started = Instant::now();
        for chunk in texts.chunks(64) {
            local.embed(chunk).await?;
        }
        local_embedding_texts_per_sec = Some(texts.len() as f64 / started.elapsed().as_secs_f64());
    }
    progress.finish_and_clear();

    let report = BenchReport {
        memories,
        raw_messages: raw,
        ingest_msgs_per_sec,
        enqueue_msgs_per_sec,
        recall: latency(full),
        recall_filtered: filtered,
        recall_hand_set_ranking: latency(before_fit),
        recall_text_only: latency(text_only),
        local_query_embedding,
        local_embedding_texts_per_sec,
        #[cfg(feature = "sqlite")]
        vectors,
        text_rebuild,
    };
    if json {
        return output::json(&report);
    }
    let backend = match (postgres, bench.tantivy_text) {
        (true, _) => "PostgreSQL",
        (false, true) => "SQLite, profiles' text on Tantivy (the default)",
        (false, false) => "SQLite, profiles' text on FTS5",
    };
    println!(
        "long-term memory on {backend}: {memories} memories, {raw} raw messages, vectors by {}",
        embedder.model_id()
    );
    println!(
        "ingest (LLM-free, inline): {:.0} msg/s",
        report.ingest_msgs_per_sec
    );
    if let Some(r) = report.text_rebuild {
        println!(
            "text index rebuilt from the records: {} documents in {:.1} s ({:.0} documents/s)",
            r.documents,
            r.seconds,
            r.documents as f64 / r.seconds.max(f64::EPSILON)
        );
    }
    println!(
        "ingest (queued as a durable job): {:.0} msg/s",
        report.enqueue_msgs_per_sec
    );
    let show = |name: &str, l: Latency| {
        println!(
            "{name}: p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms",
            l.p50_ms, l.p95_ms, l.p99_ms
        );
    };
    show("recall, every channel", report.recall);
    show(
        "recall, every channel, the hand-set ranking before the fit",
        report.recall_hand_set_ranking,
    );
    for f in &report.recall_filtered {
        show(
            &format!(
                "recall, every channel, filtered to {:.0} % ({}; {:.1} hits each)",
                f.share * 100.0,
                f.filter,
                f.mean_hits
            ),
            f.recall,
        );
    }
    #[cfg(feature = "sqlite")]
    if let Some(v) = &report.vectors {
        let cpu = |c: Option<f64>| c.map_or("n/a".to_owned(), |c| format!("{c:.2} ms"));
        println!(
            "vector graphs ready in {:.1} s (loaded or built)",
            v.graph_ready_seconds
        );
        show(
            "recall, every channel, approximate graph",
            v.recall_approximate,
        );
        println!(
            "  CPU per recall (whole process): {}",
            cpu(v.cpu_ms_per_recall_approximate)
        );
        let c = v.concurrent;
        println!(
            "recall through the graph from {} callers at once: {:.0} recalls/s, CPU per recall (whole process): {}",
            c.callers,
            c.recalls_per_sec,
            cpu(c.cpu_ms_per_recall)
        );
        show("recall, every channel, exact scan", v.recall_exact);
        println!(
            "  CPU per recall (whole process): {}",
            cpu(v.cpu_ms_per_recall_exact)
        );
        println!(
            "graph recall@10 against the exhaustive scan ({} candidates): {:.3} ({:.3} counting ties with the tenth)",
            v.graph_candidates, v.graph_recall_at_10, v.graph_recall_at_10_with_ties
        );
        if let Some(model) = &v.model_vectors {
            println!(
                "on {} sentences embedded by the local model: without the graph recall@10 {:.3}, one search p50 {:.3} ms",
                model.vectors, model.prescan_recall_at_10, model.exact_search.p50_ms
            );
            for g in &model.graphs {
                println!(
                    "  graph, {} candidates: recall@10 {:.3} ({:.3} counting ties), one search p50 {:.3} ms",
                    g.candidates, g.recall_at_10, g.recall_at_10_with_ties, g.search.p50_ms
                );
            }
        }
    }
    show("recall, text channels only", report.recall_text_only);
    match (
        report.local_query_embedding,
        report.local_embedding_texts_per_sec,
    ) {
        (Some(l), Some(t)) => {
            show("local embedder, one query", l);
            println!("local embedder throughput: {t:.0} texts/s (batches of 64)");
        }
        _ => println!("local embedder: not installed (scripts/setup-model.sh)"),
    }
    Ok(())
}
