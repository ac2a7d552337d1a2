//! `memory eval longmemeval`: each question's haystack ingested into a fresh profile with the
//! sessions' real dates, recalled with the question at its own date, scored at session level
//! (recall_any / recall_all @5 and @10, nDCG@10) and at turn level (recall@10 over the turns
//! marked `has_answer`), beside a BM25 baseline over the same raw turns in the same run.
//!
//! Resumable and parallel-safe: one JSON line per finished question is appended to a results
//! file, a run skips the questions it already holds, and `--shard K/N` splits the questions
//! between processes appending to the same file (each line one `write`, so lines never mix).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use memory_core::SearchMode;
use memory_core::ports::{TextQuery, namespaces};
use memory_engine::long_term::{IngestMessage, MemoryService, RecallItem, RecallRequest};
use serde::{Deserialize, Serialize};

use super::judge::{AnswerCosts, Answered, Answering, Rubric, answer_and_judge};
use super::kept;
use super::longmemeval::{Evidence, Question, load};
use super::metrics::{SessionScores, score, score_sessions};
use crate::commands::CliError;

/// How many ranked items each system hands over: sessions are ranked by their first
/// appearance in this list.
pub(crate) const DEPTH: usize = 50;

/// Knobs of one run.
#[derive(Debug, Clone)]
pub struct LongMemEvalOptions {
    /// The data set (`longmemeval_s_dev.json.gz`), read in place.
    pub data: PathBuf,
    /// Only these question types (all when empty).
    pub types: Vec<String>,
    /// Only the first N selected questions.
    pub limit: Option<usize>,
    /// This process's share: questions whose position modulo `N` is `K`.
    pub shard: Option<(usize, usize)>,
    /// The results file (JSON lines), appended to and read back for resuming.
    pub results: PathBuf,
    /// Where ingested haystacks are kept between runs (`None`: each question's profile is
    /// deleted once scored). A kept haystack is recalled again without ingesting, so recall
    /// settings can be compared in minutes rather than hours.
    pub keep: Option<PathBuf>,
    /// Answer and judge each question too (`--answer`).
    pub answering: Option<Answering>,
}

/// What ingesting one question's haystack left: kept beside the profile so a later run
/// can score it again without ingesting.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Ingested {
    /// Message id → `(session position, turn position)`.
    pub(crate) positions: HashMap<String, (usize, usize)>,
    degraded: BTreeSet<String>,
    seconds: f64,
}

/// One system's scores on one question.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Scores {
    /// Session level.
    pub sessions: SessionScores,
    /// Turn-level recall@10 over the `has_answer` turns (`None` when none is marked).
    pub turn_recall_at_10: Option<f64>,
}

/// What one question gave: a line of the results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionResult {
    /// `question_id`.
    pub id: String,
    /// `question_type`.
    pub kind: String,
    /// An abstention question (reported apart).
    pub abstention: bool,
    /// Turns ingested.
    pub turns: usize,
    /// The full pipeline.
    pub pipeline: Scores,
    /// BM25 over the raw turns.
    pub bm25: Scores,
    /// Seconds ingesting the haystack (embedding included).
    pub ingest_seconds: f64,
    /// Seconds of the pipeline's recall.
    pub recall_seconds: f64,
    /// What the pipeline ran without.
    pub degraded: Vec<String>,
    /// The end-to-end answer and its grade (`--answer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answered>,
}

/// Means over a group of questions.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct GroupMeans {
    /// Questions.
    pub n: usize,
    /// Session-level means.
    pub sessions: SessionScores,
    /// Mean turn-level recall@10 over the questions with marked turns.
    pub turn_recall_at_10: Option<f64>,
    /// The share of answered questions the judge graded correct (`--answer`).
    pub accuracy: Option<f64>,
}

/// The report of a run (over every result of the selection, resumed ones included).
#[derive(Debug, Clone, Serialize)]
pub struct LongMemEvalReport {
    /// Questions selected.
    pub selected: usize,
    /// Questions with a result.
    pub done: usize,
    /// Pipeline, then BM25: overall (abstention questions excluded), per type, abstention.
    pub pipeline: BTreeMap<String, GroupMeans>,
    /// The baseline, same groups.
    pub bm25: BTreeMap<String, GroupMeans>,
    /// What the pipeline ran without (union over questions).
    pub degraded: Vec<String>,
    /// Mean seconds per question ingesting, and recalling.
    pub seconds_per_question: (f64, f64),
    /// The answered questions' accuracy and costs (`--answer`).
    pub answers: Option<AnswerCosts>,
}

/// The questions of this run: types, shard and limit applied, in the data set's order.
pub fn select(questions: Vec<Question>, options: &LongMemEvalOptions) -> Vec<Question> {
    let mut selected: Vec<Question> = questions
        .into_iter()
        .filter(|q| options.types.is_empty() || options.types.contains(&q.kind))
        .collect();
    if let Some(n) = options.limit {
        selected.truncate(n);
    }
    match options.shard {
        Some((k, n)) if n > 0 => selected
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % n == k)
            .map(|(_, q)| q)
            .collect(),
        _ => selected,
    }
}

/// The results already in `path` (none when it does not exist yet).
pub fn read_results(path: &Path) -> Result<HashMap<String, QuestionResult>, CliError> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(e) => return Err(CliError::io(format!("reading {}", path.display()), e)),
    };
    let mut results = HashMap::new();
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| CliError::io(format!("reading {}", path.display()), e))?;
        if line.trim().is_empty() {
            continue;
        }
        let result: QuestionResult = serde_json::from_str(&line)
            .map_err(|e| CliError::Input(format!("{} line {}: {e}", path.display(), n + 1)))?;
        results.insert(result.id.clone(), result);
    }
    Ok(results)
}

fn append_result(path: &Path, result: &QuestionResult) -> Result<(), CliError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::io(format!("creating {}", dir.display()), e))?;
    }
    let mut line = serde_json::to_string(result).map_err(|e| CliError::Input(e.to_string()))?;
    line.push('\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(line.as_bytes()))
        .map_err(|e| CliError::io(format!("appending to {}", path.display()), e))
}

/// Distinct items in rank order.
fn distinct<T: Clone + Eq + std::hash::Hash>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut seen = HashSet::new();
    items
        .into_iter()
        .filter(|item| seen.insert(item.clone()))
        .collect()
}

/// Scores a ranked list of turns (best first, `(session, turn)` positions).
pub(crate) fn score_turns(ranked: &[(usize, usize)], evidence: &Evidence) -> Scores {
    let turns = distinct(ranked.iter().copied());
    let sessions: Vec<String> = distinct(turns.iter().map(|(s, _)| s.to_string()));
    let gold_sessions: HashSet<String> = evidence.sessions.iter().map(usize::to_string).collect();
    let turn_recall_at_10 = (!evidence.turns.is_empty()).then(|| {
        let ranked: Vec<String> = turns.iter().map(|(s, t)| format!("{s}:{t}")).collect();
        let gold: HashSet<String> = evidence
            .turns
            .iter()
            .map(|(s, t)| format!("{s}:{t}"))
            .collect();
        score(&ranked, &gold).recall_at_10
    });
    Scores {
        sessions: score_sessions(&sessions, &gold_sessions),
        turn_recall_at_10,
    }
}

/// A file-name-safe form of a question id.
pub(crate) fn safe(id: &str) -> String {
    id.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "-")
}

/// Ingests the haystack into `profile` (fresh), recording where each message came from.
async fn ingest(
    service: &MemoryService,
    profile: &str,
    question: &Question,
) -> Result<Ingested, CliError> {
    service.delete_profile(profile).await?;
    let started = Instant::now();
    let mut positions: HashMap<String, (usize, usize)> = HashMap::new();
    let mut degraded = BTreeSet::new();
    for (s, session) in question.haystack.iter().enumerate() {
        if session.turns.is_empty() {
            continue;
        }
        let messages = session
            .turns
            .iter()
            .enumerate()
            .map(|(t, turn)| {
                IngestMessage::new(turn.role.clone(), turn.content.clone())
                    .at(memory_core::Timestamp(session.at.0 + t as i64 * 1_000))
            })
            .collect();
        // The session's name is its position: never the data set's id (it names the label).
        let report = service
            .ingest_messages(profile, &format!("h{s}"), messages)
            .await?;
        for d in report.degraded {
            degraded.insert(format!("{}: {}", d.feature, d.reason));
        }
        for (t, id) in report.message_ids.into_iter().enumerate() {
            positions.entry(id).or_insert((s, t));
        }
    }
    Ok(Ingested {
        positions,
        degraded,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The haystack of `question` in `profile`: ingested now, or (with `keep`) read back from
/// an earlier run's record when that run finished ingesting it.
pub(crate) async fn haystack(
    service: &MemoryService,
    profile: &str,
    question: &Question,
    keep: Option<&Path>,
) -> Result<Ingested, CliError> {
    let Some(keep) = keep else {
        return ingest(service, profile, question).await;
    };
    if let Some(ingested) = kept::read(keep, "haystacks", profile) {
        return Ok(ingested);
    }
    let ingested = ingest(service, profile, question).await?;
    kept::write(keep, "haystacks", profile, &ingested)?;
    Ok(ingested)
}

/// Runs one question in its own profile of `service` (kept when `keep` names a directory,
/// deleted afterwards otherwise).
pub async fn run_question(
    service: &MemoryService,
    question: &Question,
    keep: Option<&Path>,
    answering: Option<&Answering>,
) -> Result<QuestionResult, CliError> {
    let profile = format!("q-{}", safe(&question.id));
    let Ingested {
        positions: position_of,
        degraded,
        seconds: ingest_seconds,
    } = haystack(service, &profile, question, keep).await?;
    let profile = profile.as_str();

    let started = Instant::now();
    let response = service
        .recall(
            profile,
            RecallRequest::new(question.text.clone(), DEPTH).as_of(question.asked_at),
        )
        .await?;
    let recall_seconds = started.elapsed().as_secs_f64();
    let ranked: Vec<(usize, usize)> = response
        .hits
        .iter()
        .flat_map(|hit| match &hit.item {
            RecallItem::Raw { id, .. } => position_of.get(id).copied().into_iter().collect(),
            RecallItem::Memory(memory) => memory
                .source_message_ids
                .iter()
                .filter_map(|id| position_of.get(id).copied())
                .collect::<Vec<_>>(),
        })
        .collect();
    let pipeline = score_turns(&ranked, &question.evidence);

    let text = service.backends().text.text_index(profile).await?;
    let words: Vec<&str> = question
        .text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let query = TextQuery::new(words.join(" "), DEPTH).mode(SearchMode::AnyWords);
    let baseline = text.search(namespaces::RAW, &query).await?;
    let ranked: Vec<(usize, usize)> = baseline
        .iter()
        .filter_map(|hit| position_of.get(&hit.id).copied())
        .collect();
    let bm25 = score_turns(&ranked, &question.evidence);
    let answer = match answering {
        Some(answering) => Some(
            answer_and_judge(
                service,
                answering.judge.as_ref(),
                profile,
                RecallRequest::new(question.text.clone(), answering.limit).as_of(question.asked_at),
                Rubric::LongMemEval {
                    kind: &question.kind,
                    abstention: question.is_abstention(),
                },
                &question.answer,
            )
            .await?,
        ),
        None => None,
    };
    if keep.is_none() {
        service.delete_profile(profile).await?;
    }
    Ok(QuestionResult {
        id: question.id.clone(),
        kind: question.kind.clone(),
        abstention: question.is_abstention(),
        turns: position_of.len(),
        pipeline,
        bm25,
        ingest_seconds,
        recall_seconds,
        degraded: degraded.into_iter().collect(),
        answer,
    })
}

/// Runs every selected question without a result yet, appending each result as it
/// finishes; `progress` hears about each one (its position, the total, the result, and the
/// estimated seconds left).
pub async fn run_longmemeval(
    service: &MemoryService,
    options: &LongMemEvalOptions,
    mut progress: impl FnMut(usize, usize, &QuestionResult, f64),
) -> Result<LongMemEvalReport, CliError> {
    let selected = select(load(&options.data)?, options);
    let mut results = read_results(&options.results)?;
    let todo: Vec<&Question> = selected
        .iter()
        .filter(|q| !results.contains_key(&q.id))
        .collect();
    let started = Instant::now();
    for (n, question) in todo.iter().enumerate() {
        let result = run_question(
            service,
            question,
            options.keep.as_deref(),
            options.answering.as_ref(),
        )
        .await?;
        append_result(&options.results, &result)?;
        let per_question = started.elapsed().as_secs_f64() / (n + 1) as f64;
        progress(
            n + 1,
            todo.len(),
            &result,
            per_question * (todo.len() - n - 1) as f64,
        );
        results.insert(result.id.clone(), result);
    }
    let ours: Vec<&QuestionResult> = selected.iter().filter_map(|q| results.get(&q.id)).collect();
    Ok(report(selected.len(), &ours))
}

fn means(results: &[&QuestionResult], pick: fn(&QuestionResult) -> Scores) -> GroupMeans {
    let n = results.len();
    if n == 0 {
        return GroupMeans::default();
    }
    let mean = |f: fn(&SessionScores) -> f64| {
        results.iter().map(|r| f(&pick(r).sessions)).sum::<f64>() / n as f64
    };
    let turns: Vec<f64> = results
        .iter()
        .filter_map(|r| pick(r).turn_recall_at_10)
        .collect();
    GroupMeans {
        n,
        sessions: SessionScores {
            recall_any_at_5: mean(|s| s.recall_any_at_5),
            recall_any_at_10: mean(|s| s.recall_any_at_10),
            recall_all_at_5: mean(|s| s.recall_all_at_5),
            recall_all_at_10: mean(|s| s.recall_all_at_10),
            ndcg_at_10: mean(|s| s.ndcg_at_10),
        },
        turn_recall_at_10: (!turns.is_empty())
            .then(|| turns.iter().sum::<f64>() / turns.len() as f64),
        accuracy: AnswerCosts::of(results.iter().filter_map(|r| r.answer.as_ref()))
            .map(|costs| costs.accuracy),
    }
}

/// The overall, per-type and abstention groups of some results.
pub fn report(selected: usize, results: &[&QuestionResult]) -> LongMemEvalReport {
    let mut groups: BTreeMap<String, Vec<&QuestionResult>> = BTreeMap::new();
    for result in results {
        let name = if result.abstention {
            "abstention".to_owned()
        } else {
            groups.entry("overall".to_owned()).or_default().push(result);
            result.kind.clone()
        };
        groups.entry(name).or_default().push(result);
    }
    let table = |pick: fn(&QuestionResult) -> Scores| {
        groups
            .iter()
            .map(|(name, members)| (name.clone(), means(members, pick)))
            .collect()
    };
    let done = results.len().max(1) as f64;
    LongMemEvalReport {
        selected,
        done: results.len(),
        pipeline: table(|r| r.pipeline),
        // Answers are the pipeline's: the baseline writes none.
        bm25: table(|r| r.bm25)
            .into_iter()
            .map(|(name, means)| {
                (
                    name,
                    GroupMeans {
                        accuracy: None,
                        ..means
                    },
                )
            })
            .collect(),
        degraded: distinct(results.iter().flat_map(|r| r.degraded.iter().cloned())),
        seconds_per_question: (
            results.iter().map(|r| r.ingest_seconds).sum::<f64>() / done,
            results.iter().map(|r| r.recall_seconds).sum::<f64>() / done,
        ),
        answers: AnswerCosts::of(results.iter().filter_map(|r| r.answer.as_ref())),
    }
}

/// The report as a Markdown table.
pub fn render(report: &LongMemEvalReport) -> String {
    let mut out = format!(
        "LongMemEval retrieval: {} of {} selected questions scored\n\n\
         | system | group | n | any@5 | any@10 | all@5 | all@10 | ndcg@10 | turn recall@10 | answer accuracy |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
        report.done, report.selected
    );
    for (system, groups) in [("pipeline", &report.pipeline), ("bm25", &report.bm25)] {
        // Overall first, abstention last.
        let mut names: Vec<&String> = groups.keys().collect();
        names.sort_by_key(|name| match name.as_str() {
            "overall" => (0, (*name).clone()),
            "abstention" => (2, (*name).clone()),
            _ => (1, (*name).clone()),
        });
        for name in names {
            let g = &groups[name];
            let s = &g.sessions;
            let turns = g
                .turn_recall_at_10
                .map_or_else(|| "-".to_owned(), |t| format!("{t:.3}"));
            let accuracy = g
                .accuracy
                .map_or_else(|| "-".to_owned(), |a| format!("{a:.3}"));
            out.push_str(&format!(
                "| {system} | {name} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {turns} | {accuracy} |\n",
                g.n,
                s.recall_any_at_5,
                s.recall_any_at_10,
                s.recall_all_at_5,
                s.recall_all_at_10,
                s.ndcg_at_10
            ));
        }
    }
    let (ingest, recall) = report.seconds_per_question;
    out.push_str(&format!(
        "\nper question: ingest {ingest:.1} s, recall {:.0} ms\n",
        recall * 1_000.0
    ));
    if let Some(answers) = &report.answers {
        out.push_str(&answers.render());
    }
    for d in &report.degraded {
        out.push_str(&format!("degraded: {d}\n"));
    }
    out
}
