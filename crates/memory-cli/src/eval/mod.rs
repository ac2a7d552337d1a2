//! `memory eval locomo` and `memory eval longmemeval`: retrieval quality through the real
//! ingest and recall paths, beside a BM25-only baseline measured by the same harness in the
//! same run.

pub mod fit;
pub mod judge;
pub mod kept;
pub mod locomo;
pub mod longmemeval;
pub mod longmemeval_run;
pub mod metrics;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

use memory_core::SearchMode;
use memory_core::ports::{TextQuery, namespaces};
use memory_engine::long_term::{IngestMessage, MemoryService, RecallItem, RecallRequest};
use serde::Serialize;

use crate::commands::CliError;
use metrics::{GroupScores, QuestionScores, average, score};

/// Knobs of one evaluation run.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// The LoCoMo JSON file.
    pub data: PathBuf,
    /// Only the first N conversations (after `skip`).
    pub conversations: Option<usize>,
    /// Conversations skipped first.
    pub skip: usize,
    /// Keep the ingested conversations here and reuse those already there.
    pub keep: Option<PathBuf>,
    /// Answer and judge each question of categories 1-4 too (`--answer`).
    pub answering: Option<judge::Answering>,
}

/// What ingesting one conversation left (kept with `--keep`).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub(crate) struct Ingested {
    /// Message id → `dia_id`.
    pub(crate) dia_of: HashMap<String, String>,
    degraded: Vec<String>,
}

/// Ingests `sample` into `profile` (fresh): every turn at its session's date.
async fn ingest_sample(
    service: &MemoryService,
    profile: &str,
    sample: &locomo::Sample,
    progress: &indicatif::ProgressBar,
) -> Result<Ingested, CliError> {
    service.delete_profile(profile).await?;
    let mut ingested = Ingested {
        dia_of: HashMap::new(),
        degraded: Vec::new(),
    };
    for session in &sample.sessions {
        let messages = session
            .turns
            .iter()
            .enumerate()
            .map(|(i, t)| {
                IngestMessage::new("user", t.text.clone())
                    .at(memory_core::Timestamp(session.at.0 + i as i64 * 1_000))
            })
            .collect();
        let report = service
            .ingest_messages(profile, &format!("s{}", session.number), messages)
            .await?;
        for d in report.degraded {
            let line = format!("{}: {}", d.feature, d.reason);
            if !ingested.degraded.contains(&line) {
                ingested.degraded.push(line);
            }
        }
        for (turn, id) in session.turns.iter().zip(report.message_ids) {
            ingested
                .dia_of
                .entry(id)
                .or_insert_with(|| turn.dia_id.clone());
        }
        progress.inc(session.turns.len() as u64);
    }
    Ok(ingested)
}

/// The profile name of a LoCoMo conversation.
pub(crate) fn profile_of(sample: &locomo::Sample) -> String {
    sample
        .id
        .replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "-")
}

/// The conversation in its profile: ingested now, or (with `keep`) read back from an earlier
/// run's record when that run finished ingesting it.
pub(crate) async fn conversation(
    service: &MemoryService,
    sample: &locomo::Sample,
    keep: Option<&std::path::Path>,
    progress: &indicatif::ProgressBar,
) -> Result<(String, Ingested), CliError> {
    let profile = profile_of(sample);
    if let Some(ingested) = keep.and_then(|keep| kept::read::<Ingested>(keep, "locomo", &profile)) {
        progress.inc(sample.sessions.iter().map(|s| s.turns.len() as u64).sum());
        return Ok((profile, ingested));
    }
    let ingested = ingest_sample(service, &profile, sample, progress).await?;
    if let Some(keep) = keep {
        kept::write(keep, "locomo", &profile, &ingested)?;
    }
    Ok((profile, ingested))
}

/// Scores per group for one system.
#[derive(Debug, Clone, Serialize)]
pub struct SystemScores {
    /// Categories 1-4 together.
    pub overall: GroupScores,
    /// Per category (1-5).
    pub categories: BTreeMap<u8, GroupScores>,
}

/// The outcome of a run.
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    /// Conversations.
    pub conversations: usize,
    /// Turns ingested.
    pub turns: usize,
    /// Questions scored.
    pub questions: usize,
    /// Questions skipped (empty gold).
    pub skipped: usize,
    /// The full pipeline.
    pub pipeline: SystemScores,
    /// BM25 over raw messages only.
    pub bm25: SystemScores,
    /// What the pipeline ran without.
    pub degraded: Vec<String>,
    /// Seconds spent ingesting (embedding included).
    pub ingest_seconds: f64,
    /// Seconds spent answering questions (both systems).
    pub query_seconds: f64,
    /// End-to-end answer accuracy per category (`--answer`; categories 1-4).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub answer_accuracy: BTreeMap<u8, f64>,
    /// The answered questions' accuracy (categories 1-4 together) and costs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answers: Option<judge::AnswerCosts>,
}

fn group(scored: &[(u8, QuestionScores)]) -> SystemScores {
    let overall: Vec<QuestionScores> = scored
        .iter()
        .filter(|(c, _)| (1..=4).contains(c))
        .map(|(_, s)| *s)
        .collect();
    let mut categories = BTreeMap::new();
    for c in 1..=5u8 {
        let s: Vec<QuestionScores> = scored
            .iter()
            .filter(|(cat, _)| *cat == c)
            .map(|(_, s)| *s)
            .collect();
        if !s.is_empty() {
            categories.insert(c, average(&s));
        }
    }
    SystemScores {
        overall: average(&overall),
        categories,
    }
}

/// Ids in rank order with duplicates removed, at most 10.
pub(crate) fn top_ten(ids: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut seen = HashSet::new();
    ids.into_iter()
        .filter(|id| seen.insert(id.clone()))
        .take(10)
        .collect()
}

/// Runs the recipe with `service` (whose profiles should be fresh: one per conversation).
pub async fn run_locomo(
    service: &MemoryService,
    options: &EvalOptions,
    progress: &indicatif::ProgressBar,
) -> Result<EvalReport, CliError> {
    let mut samples = locomo::load(&options.data)?;
    samples.drain(..options.skip.min(samples.len()));
    if let Some(n) = options.conversations {
        samples.truncate(n);
    }
    let turns: usize = samples
        .iter()
        .flat_map(|s| &s.sessions)
        .map(|s| s.turns.len())
        .sum();
    let questions: usize = samples.iter().map(|s| s.questions.len()).sum();
    progress.set_length((turns + questions) as u64);
    let (mut pipeline, mut bm25) = (Vec::new(), Vec::new());
    let mut degraded = Vec::new();
    let (mut ingest_seconds, mut query_seconds) = (0.0, 0.0);
    let mut answered: Vec<(u8, judge::Answered)> = Vec::new();
    for sample in &samples {
        let started = std::time::Instant::now();
        let (
            profile,
            Ingested {
                dia_of,
                degraded: notes,
            },
        ) = conversation(service, sample, options.keep.as_deref(), progress).await?;
        for line in notes {
            if !degraded.contains(&line) {
                degraded.push(line);
            }
        }
        ingest_seconds += started.elapsed().as_secs_f64();
        let started = std::time::Instant::now();
        let text = service.backends().text.text_index(&profile).await?;
        for q in &sample.questions {
            let gold: HashSet<String> = q.gold.iter().cloned().collect();
            let response = service
                .recall(&profile, RecallRequest::new(q.text.clone(), 10))
                .await?;
            let ranked = top_ten(response.hits.iter().flat_map(|h| {
                match &h.item {
                    RecallItem::Raw { id, .. } => dia_of.get(id).cloned().into_iter().collect(),
                    RecallItem::Memory(m) => m
                        .source_message_ids
                        .iter()
                        .filter_map(|id| dia_of.get(id).cloned())
                        .collect::<Vec<_>>(),
                }
            }));
            pipeline.push((q.category, score(&ranked, &gold)));
            // The reference BM25 tokenises on `[a-z0-9]+`: "Ann's" is "ann" and "s".
            let words: Vec<&str> = q
                .text
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .collect();
            let query = TextQuery::new(words.join(" "), 10).mode(SearchMode::AnyWords);
            let baseline = text.search(namespaces::RAW, &query).await?;
            let ranked = top_ten(baseline.iter().filter_map(|h| dia_of.get(&h.id).cloned()));
            bm25.push((q.category, score(&ranked, &gold)));
            if let Some(answering) = options
                .answering
                .as_ref()
                .filter(|_| (1..=4).contains(&q.category))
            {
                let answer = judge::answer_and_judge(
                    service,
                    answering.judge.as_ref(),
                    &profile,
                    RecallRequest::new(q.text.clone(), answering.limit),
                    judge::Rubric::Locomo,
                    &q.answer,
                )
                .await?;
                answered.push((q.category, answer));
            }
            progress.inc(1);
        }
        query_seconds += started.elapsed().as_secs_f64();
        if options.keep.is_none() {
            service.delete_profile(&profile).await?;
        }
    }
    Ok(EvalReport {
        conversations: samples.len(),
        turns,
        questions,
        skipped: samples.iter().map(|s| s.skipped).sum(),
        pipeline: group(&pipeline),
        bm25: group(&bm25),
        degraded,
        ingest_seconds,
        query_seconds,
        answer_accuracy: (1..=4u8)
            .filter_map(|c| {
                judge::AnswerCosts::of(
                    answered
                        .iter()
                        .filter(|(category, _)| *category == c)
                        .map(|(_, a)| a),
                )
                .map(|costs| (c, costs.accuracy))
            })
            .collect(),
        answers: judge::AnswerCosts::of(answered.iter().map(|(_, a)| a)),
    })
}

/// The report as a Markdown table.
pub fn render(report: &EvalReport) -> String {
    let mut out = format!(
        "LoCoMo retrieval: {} conversations, {} turns, {} questions ({} skipped: no gold)\n\n\
         | system | group | n | recall@5 | recall@10 | recall_all@10 | ndcg@10 |\n|---|---|---|---|---|---|---|\n",
        report.conversations, report.turns, report.questions, report.skipped
    );
    let names = [
        "",
        "1 multi-hop",
        "2 temporal",
        "3 open-domain",
        "4 single-hop",
        "5 adversarial",
    ];
    for (system, scores) in [("pipeline", &report.pipeline), ("bm25", &report.bm25)] {
        let mut rows = vec![("categories 1-4".to_owned(), scores.overall)];
        for (c, g) in &scores.categories {
            rows.push((
                names
                    .get(usize::from(*c))
                    .copied()
                    .unwrap_or("?")
                    .to_owned(),
                *g,
            ));
        }
        for (name, g) in rows {
            out.push_str(&format!(
                "| {system} | {name} | {} | {:.3} | {:.3} | {:.3} | {:.3} |\n",
                g.n, g.recall_at_5, g.recall_at_10, g.recall_all_at_10, g.ndcg_at_10
            ));
        }
    }
    out.push_str(&format!(
        "\ningest {:.1} s, queries {:.1} s\n",
        report.ingest_seconds, report.query_seconds
    ));
    for (c, accuracy) in &report.answer_accuracy {
        let name = names.get(usize::from(*c)).copied().unwrap_or("?");
        out.push_str(&format!("answer accuracy, {name}: {accuracy:.3}\n"));
    }
    if let Some(answers) = &report.answers {
        out.push_str(&answers.render());
    }
    for d in &report.degraded {
        out.push_str(&format!("degraded: {d}\n"));
    }
    out
}
