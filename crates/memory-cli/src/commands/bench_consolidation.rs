//! `memory bench consolidation`: a seeded profile of paraphrased memories
//! ([`super::paraphrase_corpus`]) is remembered, recalled, consolidated LLM-free and
//! recalled again, in one run: how many pairs of one fact's memories were merged (the
//! target is at least 90 %), how many pairs of different facts were (under 1 %), the run's
//! time and peak memory, and recall before and after on the corpus's questions.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use memory_core::ports::{Embedder, MemoryKind};
use memory_engine::long_term::{
    ConsolidationReport, MemoryService, RecallItem, RecallRequest, RememberRequest,
};
use memory_hashing::HashingEmbedder;
use serde::Serialize;

use super::CliError;
use super::paraphrase_corpus::{Corpus, generate};
use crate::output;

/// What to measure.
pub struct ConsolidationBench {
    /// Memories in the profile.
    pub memories: usize,
    /// The share of facts restated two to six times.
    pub grouped: f64,
    /// Questions asked before and after.
    pub queries: usize,
    /// The generator's seed.
    pub seed: u64,
    /// The embedder (`None`: hashing).
    pub model_embedder: Option<memory_config::EmbedderChoice>,
}

/// Recall on the corpus's questions.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct RecallFigures {
    /// Questions with a memory of an answering fact among the first 10 hits.
    pub hit_at_10: f64,
    /// Mean reciprocal rank of the first such memory (0 when none in 10).
    pub mrr_at_10: f64,
    /// Mean distinct answering facts among the first 10, per question (duplicates of one
    /// fact count once).
    pub distinct_answers_at_10: f64,
}

/// Everything measured.
#[derive(Debug, Clone, Serialize)]
pub struct ConsolidationFigures {
    /// Memories remembered.
    pub memories: usize,
    /// Memories in groups of 2-6 (restatements of one fact).
    pub grouped_memories: usize,
    /// Facts (groups and single memories).
    pub facts: usize,
    /// The embedder.
    pub embedder: String,
    /// Pairs of memories of one fact.
    pub in_group_pairs: u64,
    /// Of those, merged into one survivor.
    pub in_group_merged: u64,
    /// Pairs of memories of different facts merged.
    pub cross_group_merged: u64,
    /// Pairs of memories of different facts.
    pub cross_group_pairs: u64,
    /// `in_group_merged / in_group_pairs`.
    pub in_group_rate: f64,
    /// `cross_group_merged / cross_group_pairs`.
    pub cross_group_rate: f64,
    /// Of the merged pairs, the share of one fact.
    pub precision: f64,
    /// The consolidation run, seconds.
    pub seconds: f64,
    /// The process's resident memory before the run, MB.
    pub rss_before_mb: f64,
    /// Its highest resident memory during the run, MB.
    pub rss_peak_mb: f64,
    /// Pairs the run judged.
    pub pairs_judged: u64,
    /// Recall before consolidation.
    pub before: RecallFigures,
    /// Recall after.
    pub after: RecallFigures,
}

/// The process's resident memory now, MB (Linux `/proc`; 0 elsewhere).
fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

/// The bench's embedder and its name: hashing without a choice, else the model chosen.
pub(super) fn bench_embedder(
    choice: Option<&memory_config::EmbedderChoice>,
) -> Result<(Arc<dyn Embedder>, String), CliError> {
    match choice {
        None => Ok((Arc::new(HashingEmbedder::new(384)), "hashing".into())),
        Some(choice) => {
            let mut config = memory_config::MemoryConfig::default();
            config.memory.embedder = choice.clone();
            match memory_compose::embedder(&config)? {
                (Some(model), _) => Ok((model, choice.to_string())),
                (None, why) => Err(CliError::Input(why.unwrap_or_default())),
            }
        }
    }
}

/// Runs it.
pub async fn run(options: ConsolidationBench, json: bool) -> Result<(), CliError> {
    let corpus = generate(
        options.seed,
        options.memories,
        options.grouped,
        options.queries,
    );
    let scratch = tempfile::Builder::new()
        .prefix("memory-bench-consolidation-")
        .tempdir()
        .map_err(|e| CliError::io("creating a scratch directory", e))?;
    let backends = crate::app::scratch_long_term(scratch.path(), true, None).await?;
    let (embedder, name) = bench_embedder(options.model_embedder.as_ref())?;
    let service = MemoryService::new(backends, Arc::new(memory_core::ports::SystemClock))
        .with_embedder(embedder);
    let profile = "paraphrases";
    let mut fact_of: HashMap<String, usize> = HashMap::new();
    let started = Instant::now();
    for (n, memory) in corpus.memories.iter().enumerate() {
        let remembered = service
            .remember(
                profile,
                RememberRequest {
                    content: memory.content.clone(),
                    kind: Some(MemoryKind::Fact),
                    ..RememberRequest::default()
                },
            )
            .await?;
        fact_of.insert(remembered.id, memory.fact);
        if (n + 1) % 5_000 == 0 {
            eprintln!(
                "remembered {} of {} ({:.0} s)",
                n + 1,
                corpus.memories.len(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    let before = recall_figures(&service, profile, &corpus, &fact_of).await?;

    let rss_before_mb = rss_mb();
    let running = Arc::new(AtomicBool::new(true));
    let sampler = {
        let running = Arc::clone(&running);
        std::thread::spawn(move || {
            let mut peak = rss_mb();
            while running.load(Ordering::Relaxed) {
                peak = peak.max(rss_mb());
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            peak.max(rss_mb())
        })
    };
    let started = Instant::now();
    let report = service.consolidate(profile, false).await;
    let seconds = started.elapsed().as_secs_f64();
    running.store(false, Ordering::Relaxed);
    let rss_peak_mb = sampler.join().unwrap_or(0.0);
    let report = report?;
    let after = recall_figures(&service, profile, &corpus, &fact_of).await?;
    let figures = figures(
        &corpus,
        &fact_of,
        &report,
        name,
        seconds,
        rss_before_mb,
        rss_peak_mb,
        before,
        after,
    );
    if json {
        return output::json(&figures);
    }
    print(&figures);
    Ok(())
}

/// The pair counts of `report`'s merges against the corpus's facts.
#[allow(clippy::too_many_arguments)]
fn figures(
    corpus: &Corpus,
    fact_of: &HashMap<String, usize>,
    report: &ConsolidationReport,
    embedder: String,
    seconds: f64,
    rss_before_mb: f64,
    rss_peak_mb: f64,
    before: RecallFigures,
    after: RecallFigures,
) -> ConsolidationFigures {
    let mut in_group_merged = 0u64;
    let mut cross_group_merged = 0u64;
    for merge in &report.merges {
        let facts: Vec<Option<usize>> = std::iter::once(&merge.survivor)
            .chain(&merge.absorbed)
            .map(|m| fact_of.get(&m.id).copied())
            .collect();
        for (n, a) in facts.iter().enumerate() {
            for b in &facts[n + 1..] {
                match (a, b) {
                    (Some(a), Some(b)) if a == b => in_group_merged += 1,
                    _ => cross_group_merged += 1,
                }
            }
        }
    }
    let n = corpus.memories.len() as u64;
    let in_group_pairs = corpus.in_group_pairs();
    let cross_group_pairs = n * n.saturating_sub(1) / 2 - in_group_pairs;
    let merged = in_group_merged + cross_group_merged;
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    ConsolidationFigures {
        memories: corpus.memories.len(),
        grouped_memories: corpus.grouped_memories(),
        facts: corpus.group_sizes.len(),
        embedder,
        in_group_pairs,
        in_group_merged,
        cross_group_merged,
        cross_group_pairs,
        in_group_rate: ratio(in_group_merged, in_group_pairs),
        cross_group_rate: ratio(cross_group_merged, cross_group_pairs),
        precision: ratio(in_group_merged, merged),
        seconds,
        rss_before_mb,
        rss_peak_mb,
        pairs_judged: report.pairs_judged,
        before,
        after,
    }
}

/// Recall (limit 10) of every question, scored against the facts that answer it.
async fn recall_figures(
    service: &MemoryService,
    profile: &str,
    corpus: &Corpus,
    fact_of: &HashMap<String, usize>,
) -> Result<RecallFigures, CliError> {
    let (mut hits, mut reciprocal, mut distinct) = (0usize, 0.0f64, 0usize);
    for query in &corpus.queries {
        let response = service
            .recall(profile, RecallRequest::new(query.text.clone(), 10))
            .await?;
        let mut first = None;
        let mut answered = std::collections::HashSet::new();
        for (rank, hit) in response.hits.iter().enumerate() {
            if let RecallItem::Memory(m) = &hit.item
                && let Some(fact) = fact_of.get(&m.id)
                && query.facts.contains(fact)
            {
                first.get_or_insert(rank + 1);
                answered.insert(*fact);
            }
        }
        if let Some(rank) = first {
            hits += 1;
            reciprocal += 1.0 / rank as f64;
        }
        distinct += answered.len();
    }
    let asked = corpus.queries.len().max(1) as f64;
    Ok(RecallFigures {
        hit_at_10: hits as f64 / asked,
        mrr_at_10: reciprocal / asked,
        distinct_answers_at_10: distinct as f64 / asked,
    })
}

fn print(f: &ConsolidationFigures) {
    println!(
        "consolidation of {} memories ({} in groups of 2-6, {} facts), embedder {}",
        f.memories, f.grouped_memories, f.facts, f.embedder
    );
    println!(
        "in-group pairs merged:    {:>8} of {:>10} = {:.1} % (target >= 90 %)",
        f.in_group_merged,
        f.in_group_pairs,
        100.0 * f.in_group_rate
    );
    println!(
        "cross-group pairs merged: {:>8} of {:>10} = {:.4} % (target < 1 %); precision {:.3}",
        f.cross_group_merged,
        f.cross_group_pairs,
        100.0 * f.cross_group_rate,
        f.precision
    );
    println!(
        "run: {:.1} s, {} pairs judged; resident memory {:.0} MB before, {:.0} MB at the peak",
        f.seconds, f.pairs_judged, f.rss_before_mb, f.rss_peak_mb
    );
    for (when, r) in [("before", f.before), ("after", f.after)] {
        println!(
            "recall {when:<6}: hit@10 {:.3}, MRR@10 {:.3}, distinct answers in 10 {:.2}",
            r.hit_at_10, r.mrr_at_10, r.distinct_answers_at_10
        );
    }
}
