//! `memory eval fit`: recall's ranking settings fitted on both development sets together,
//! LoCoMo's conversations and LongMemEval's development half, by coordinate ascent over a
//! grid, and cross-validated by conversation and by question so that no question scores the
//! setting it helped choose.
//!
//! Each question's candidates are collected once
//! ([`MemoryService::recall_candidates`]) and ranked under every setting tried by
//! [`rank`]: the functions a recall itself runs, so a setting's score here is the score the
//! evaluations give it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use memory_engine::long_term::{Candidates, LongTermConfig, MemoryService, RecallRequest, rank};
use serde::Serialize;

use super::longmemeval::{Evidence, load as load_longmemeval};
use super::longmemeval_run::{DEPTH, Ingested as Haystack, haystack, safe, score_turns};
use super::metrics::score;
use super::{Ingested as Conversation, conversation, locomo, top_ten};
use crate::commands::CliError;

/// Knobs of a fit.
#[derive(Debug, Clone)]
pub struct FitOptions {
    /// LoCoMo's data set (`locomo10.json`), when it takes part.
    pub locomo: Option<PathBuf>,
    /// LongMemEval's development half, when it takes part.
    pub longmemeval: Option<PathBuf>,
    /// Only the first N LongMemEval questions.
    pub limit: Option<usize>,
    /// Where the ingested haystacks are kept (and found, when an earlier evaluation kept
    /// them there).
    pub keep: PathBuf,
    /// Cross-validation folds (at least 2).
    pub folds: usize,
}

/// How a question's ranking is scored.
enum Gold {
    /// LoCoMo: the dialogue ids of the evidence.
    Locomo {
        dia_of: Arc<HashMap<String, String>>,
        gold: HashSet<String>,
    },
    /// LongMemEval: the evidence sessions and turns.
    LongMemEval {
        positions: Arc<HashMap<String, (usize, usize)>>,
        evidence: Evidence,
    },
}

/// One question, ready to be ranked under any setting.
struct Case {
    /// Its fold key: the conversation (LoCoMo) or the question (LongMemEval).
    fold: usize,
    /// `locomo 1`…`locomo 4`, or the LongMemEval question type.
    kind: String,
    /// The limit its evaluation recalls with.
    limit: usize,
    /// What the channels found with the date words left out of the text query, and with
    /// them kept in it ([`LongTermConfig::text_keeps_date_words`]).
    candidates: [Candidates; 2],
    gold: Gold,
}

impl Case {
    /// The candidates a recall under `config` ranks.
    fn candidates(&self, config: &LongTermConfig) -> &Candidates {
        &self.candidates[usize::from(config.text_keeps_date_words)]
    }
}

/// The channels' candidates for `request`, with the date words out of and in the text query.
async fn both_ways(
    service: &MemoryService,
    profile: &str,
    request: &RecallRequest,
) -> Result<[Candidates; 2], CliError> {
    let mut each = Vec::with_capacity(2);
    for keep in [false, true] {
        let config = LongTermConfig {
            text_keeps_date_words: keep,
            ..service.config().clone()
        };
        each.push(
            service
                .clone()
                .with_config(config)
                .recall_candidates(profile, request)
                .await?,
        );
    }
    let [without, with]: [Candidates; 2] = each
        .try_into()
        .map_err(|_| CliError::Input("two candidate sets were asked for".into()))?;
    Ok([without, with])
}

/// The means of one setting over some questions, and the objective the fit maximises: each
/// data set weighs half, LoCoMo by its recall@10, LongMemEval by the mean of its three.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Fitness {
    /// Questions.
    pub n: usize,
    /// LoCoMo recall@10 (categories 1-4).
    pub locomo_recall_at_10: Option<f64>,
    /// LongMemEval session recall_all@5.
    pub all_at_5: Option<f64>,
    /// LongMemEval session nDCG@10.
    pub ndcg_at_10: Option<f64>,
    /// LongMemEval turn recall@10 (questions with marked turns).
    pub turn_recall_at_10: Option<f64>,
    /// Half LoCoMo's recall@10, half the mean of LongMemEval's three (all of it for the one
    /// set present).
    pub objective: f64,
}

#[derive(Default)]
struct Sums {
    n: usize,
    locomo: (f64, usize),
    all_at_5: (f64, usize),
    ndcg: (f64, usize),
    turns: (f64, usize),
}

impl Sums {
    fn fitness(&self) -> Fitness {
        let mean = |(sum, n): (f64, usize)| (n > 0).then(|| sum / n as f64);
        let parts = [
            mean(self.locomo),
            mean(self.all_at_5),
            mean(self.ndcg),
            mean(self.turns),
        ];
        // Each data set weighs half: LoCoMo's recall@10, and the mean of LongMemEval's three.
        let longmemeval: Vec<f64> = parts[1..].iter().flatten().copied().collect();
        let sets: Vec<f64> = [
            parts[0],
            (!longmemeval.is_empty())
                .then(|| longmemeval.iter().sum::<f64>() / longmemeval.len() as f64),
        ]
        .into_iter()
        .flatten()
        .collect();
        Fitness {
            n: self.n,
            locomo_recall_at_10: parts[0],
            all_at_5: parts[1],
            ndcg_at_10: parts[2],
            turn_recall_at_10: parts[3],
            objective: if sets.is_empty() {
                0.0
            } else {
                sets.iter().sum::<f64>() / sets.len() as f64
            },
        }
    }
}

/// Scores `config` over `cases`.
fn fitness<'a>(
    cases: impl IntoIterator<Item = &'a Case>,
    config: &LongTermConfig,
) -> Result<Fitness, CliError> {
    let mut sums = Sums::default();
    for case in cases {
        let ranked = rank(case.candidates(config), config, case.limit)?;
        let bare = ranked
            .iter()
            .map(|id| id.strip_prefix("raw:").unwrap_or(id));
        sums.n += 1;
        match &case.gold {
            Gold::Locomo { dia_of, gold } => {
                let ranked = top_ten(bare.filter_map(|id| dia_of.get(id).cloned()));
                sums.locomo.0 += score(&ranked, gold).recall_at_10;
                sums.locomo.1 += 1;
            }
            Gold::LongMemEval {
                positions,
                evidence,
            } => {
                let ranked: Vec<(usize, usize)> =
                    bare.filter_map(|id| positions.get(id).copied()).collect();
                let scores = score_turns(&ranked, evidence);
                sums.all_at_5.0 += scores.sessions.recall_all_at_5;
                sums.all_at_5.1 += 1;
                sums.ndcg.0 += scores.sessions.ndcg_at_10;
                sums.ndcg.1 += 1;
                if let Some(t) = scores.turn_recall_at_10 {
                    sums.turns.0 += t;
                    sums.turns.1 += 1;
                }
            }
        }
    }
    Ok(sums.fitness())
}

/// One ranking setting the fit searches, with the values it tries.
struct Knob {
    name: &'static str,
    grid: &'static [f64],
    get: fn(&LongTermConfig) -> f64,
    set: fn(&mut LongTermConfig, f64),
}

/// What the fit searches: the weights of the channels a recall runs without an LLM (full
/// text over raw messages stays at 1, the scale the others are measured against), the RRF
/// constant, context, recency, session spread, and whether date words stay in the text query
/// (1) or leave it to the dated channel (0). The memory channels (key, memory text,
/// direct and HyDE vectors) need an LLM's extraction, which the development runs do without,
/// so they keep their hand-set weights.
const KNOBS: [Knob; 7] = [
    Knob {
        name: "raw_vector weight",
        grid: &[0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0],
        get: |c| c.weights.raw_vector,
        set: |c, v| c.weights.raw_vector = v,
    },
    Knob {
        name: "dated weight",
        grid: &[0.0, 0.25, 0.5, 1.0, 2.0, 3.0],
        get: |c| c.weights.dated,
        set: |c, v| c.weights.dated = v,
    },
    Knob {
        name: "rrf_k",
        grid: &[1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 60.0],
        get: |c| c.rrf_k,
        set: |c, v| c.rrf_k = v,
    },
    Knob {
        name: "context_weight",
        grid: &[0.0, 0.1, 0.25, 0.5, 0.75, 1.0],
        get: |c| c.context_weight,
        set: |c, v| c.context_weight = v,
    },
    Knob {
        name: "session_spread",
        grid: &[0.0, 0.1, 0.2, 0.3, 0.5, 0.7],
        get: |c| c.session_spread,
        set: |c, v| c.session_spread = v,
    },
    Knob {
        name: "date words in the text query",
        grid: &[0.0, 1.0],
        get: |c| f64::from(u8::from(c.text_keeps_date_words)),
        set: |c, v| c.text_keeps_date_words = v > 0.5,
    },
    Knob {
        name: "recency weight",
        grid: &[0.0, 0.1, 0.25, 0.5, 1.0],
        get: |c| c.weights.recency,
        set: |c, v| c.weights.recency = v,
    },
];

/// The most passes over the knobs; the ascent stops earlier when a pass changes nothing.
const MAX_PASSES: usize = 5;

/// Coordinate ascent from `start`: each knob in turn takes the grid value that scores best
/// on `cases` (a tie keeps the current value), until a pass changes nothing.
fn ascend(cases: &[&Case], start: &LongTermConfig) -> Result<LongTermConfig, CliError> {
    let mut best = start.clone();
    let mut best_score = fitness(cases.iter().copied(), &best)?.objective;
    for _ in 0..MAX_PASSES {
        let mut changed = false;
        for knob in &KNOBS {
            for &value in knob.grid {
                if (knob.get)(&best) == value {
                    continue;
                }
                let mut trial = best.clone();
                (knob.set)(&mut trial, value);
                let score = fitness(cases.iter().copied(), &trial)?.objective;
                if score > best_score + 1e-9 {
                    best = trial;
                    best_score = score;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    Ok(best)
}

/// One fold's held-out scores.
#[derive(Debug, Clone, Serialize)]
pub struct FoldResult {
    /// The current defaults on the held-out questions.
    pub defaults: Fitness,
    /// The setting fitted on the other folds, on the held-out questions.
    pub fitted: Fitness,
    /// That setting.
    pub setting: Vec<(String, f64)>,
}

/// What a fit found.
#[derive(Debug, Clone, Serialize)]
pub struct FitReport {
    /// LoCoMo questions (categories 1-4).
    pub locomo_questions: usize,
    /// LongMemEval questions (abstention left out).
    pub longmemeval_questions: usize,
    /// Cross-validation: each fold held out in turn.
    pub folds: Vec<FoldResult>,
    /// The means over the folds' held-out questions (every question once).
    pub held_out: (Fitness, Fitness),
    /// Each knob: its current default and the value fitted on every question.
    pub fitted: Vec<(String, f64, f64)>,
    /// Rows on every question: the defaults, the fit, and the fit with each knob put back to
    /// its default (what that knob brings).
    pub ablation: Vec<(String, Fitness)>,
    /// Per question type: the defaults and the fit.
    pub per_type: BTreeMap<String, (Fitness, Fitness)>,
}

fn setting(config: &LongTermConfig) -> Vec<(String, f64)> {
    KNOBS
        .iter()
        .map(|k| (k.name.to_owned(), (k.get)(config)))
        .collect()
}

/// Collects every question's candidates (ingesting what `keep` does not hold yet).
async fn collect(
    service: &MemoryService,
    options: &FitOptions,
    progress: &indicatif::ProgressBar,
) -> Result<Vec<Case>, CliError> {
    let mut cases = Vec::new();
    if let Some(path) = &options.locomo {
        let samples = locomo::load(path)?;
        progress.inc_length(samples.len() as u64);
        for (n, sample) in samples.iter().enumerate() {
            progress.set_message(format!("LoCoMo {}", sample.id));
            let hidden = indicatif::ProgressBar::hidden();
            let (profile, Conversation { dia_of, .. }) =
                conversation(service, sample, Some(&options.keep), &hidden).await?;
            let dia_of = Arc::new(dia_of);
            for q in sample
                .questions
                .iter()
                .filter(|q| (1..=4).contains(&q.category))
            {
                let request = RecallRequest::new(q.text.clone(), 10);
                cases.push(Case {
                    fold: n,
                    kind: format!("locomo {}", q.category),
                    limit: request.limit,
                    candidates: both_ways(service, &profile, &request).await?,
                    gold: Gold::Locomo {
                        dia_of: Arc::clone(&dia_of),
                        gold: q.gold.iter().cloned().collect(),
                    },
                });
            }
            progress.inc(1);
        }
    }
    if let Some(path) = &options.longmemeval {
        let mut questions = load_longmemeval(path)?;
        if let Some(limit) = options.limit {
            questions.truncate(limit);
        }
        progress.inc_length(questions.len() as u64);
        for (n, question) in questions.into_iter().enumerate() {
            progress.inc(1);
            if question.is_abstention() {
                continue;
            }
            progress.set_message(format!("LongMemEval {}", question.id));
            let profile = format!("q-{}", safe(&question.id));
            let Haystack { positions, .. } =
                haystack(service, &profile, &question, Some(&options.keep)).await?;
            let request = RecallRequest::new(question.text.clone(), DEPTH).as_of(question.asked_at);
            cases.push(Case {
                fold: n,
                kind: question.kind.clone(),
                limit: request.limit,
                candidates: both_ways(service, &profile, &request).await?,
                gold: Gold::LongMemEval {
                    positions: Arc::new(positions),
                    evidence: question.evidence,
                },
            });
        }
    }
    Ok(cases)
}

/// Collects, cross-validates, fits on every question and reports, starting from the
/// service's own settings.
pub async fn run_fit(
    service: &MemoryService,
    options: &FitOptions,
    progress: &indicatif::ProgressBar,
) -> Result<FitReport, CliError> {
    if options.folds < 2 {
        return Err(CliError::Input("--folds: at least 2".into()));
    }
    if options.locomo.is_none() && options.longmemeval.is_none() {
        return Err(CliError::Input(
            "nothing to fit on: give --locomo, --longmemeval or both".into(),
        ));
    }
    let cases = collect(service, options, progress).await?;
    if cases.is_empty() {
        return Err(CliError::Input(
            "the data sets hold no question to fit on".into(),
        ));
    }
    progress.set_message("fitting");
    let defaults = service.config().clone();
    let mut folds = Vec::with_capacity(options.folds);
    let (mut held_defaults, mut held_fitted) = (Vec::new(), Vec::new());
    for fold in 0..options.folds {
        let (test, train): (Vec<&Case>, Vec<&Case>) =
            cases.iter().partition(|c| c.fold % options.folds == fold);
        let fitted = ascend(&train, &defaults)?;
        held_defaults.extend(test.iter().map(|c| (*c, defaults.clone())));
        held_fitted.extend(test.iter().map(|c| (*c, fitted.clone())));
        folds.push(FoldResult {
            defaults: fitness(test.iter().copied(), &defaults)?,
            fitted: fitness(test.iter().copied(), &fitted)?,
            setting: setting(&fitted),
        });
    }
    let held_out = (per_case(&held_defaults)?, per_case(&held_fitted)?);

    let all: Vec<&Case> = cases.iter().collect();
    let fitted = ascend(&all, &defaults)?;
    let mut ablation = vec![
        (
            "defaults".to_owned(),
            fitness(all.iter().copied(), &defaults)?,
        ),
        ("fitted".to_owned(), fitness(all.iter().copied(), &fitted)?),
    ];
    for knob in &KNOBS {
        if (knob.get)(&fitted) == (knob.get)(&defaults) {
            continue;
        }
        let mut without = fitted.clone();
        (knob.set)(&mut without, (knob.get)(&defaults));
        ablation.push((
            format!("fitted, {} at its default", knob.name),
            fitness(all.iter().copied(), &without)?,
        ));
    }
    let mut raw_text = fitted.clone();
    raw_text.weights.raw_vector = 0.0;
    raw_text.weights.dated = 0.0;
    raw_text.context_weight = 0.0;
    raw_text.weights.recency = 0.0;
    raw_text.session_spread = 0.0;
    ablation.push((
        "raw full text alone".to_owned(),
        fitness(all.iter().copied(), &raw_text)?,
    ));

    let kinds: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.kind.as_str()).collect();
    let mut per_type = BTreeMap::new();
    for kind in kinds {
        let members: Vec<&Case> = cases.iter().filter(|c| c.kind == kind).collect();
        per_type.insert(
            kind.to_owned(),
            (
                fitness(members.iter().copied(), &defaults)?,
                fitness(members.iter().copied(), &fitted)?,
            ),
        );
    }
    Ok(FitReport {
        locomo_questions: cases
            .iter()
            .filter(|c| matches!(c.gold, Gold::Locomo { .. }))
            .count(),
        longmemeval_questions: cases
            .iter()
            .filter(|c| matches!(c.gold, Gold::LongMemEval { .. }))
            .count(),
        folds,
        held_out,
        fitted: KNOBS
            .iter()
            .map(|k| (k.name.to_owned(), (k.get)(&defaults), (k.get)(&fitted)))
            .collect(),
        ablation,
        per_type,
    })
}

/// The means over cases each scored under its own setting.
fn per_case(scored: &[(&Case, LongTermConfig)]) -> Result<Fitness, CliError> {
    let mut sums = Sums::default();
    for (case, config) in scored {
        let one = fitness(std::iter::once(*case), config)?;
        sums.n += 1;
        let add = |slot: &mut (f64, usize), value: Option<f64>| {
            if let Some(v) = value {
                slot.0 += v;
                slot.1 += 1;
            }
        };
        add(&mut sums.locomo, one.locomo_recall_at_10);
        add(&mut sums.all_at_5, one.all_at_5);
        add(&mut sums.ndcg, one.ndcg_at_10);
        add(&mut sums.turns, one.turn_recall_at_10);
    }
    Ok(sums.fitness())
}

fn cell(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"))
}

fn row(name: &str, f: &Fitness) -> String {
    format!(
        "| {name} | {} | {} | {} | {} | {} | {:.4} |\n",
        f.n,
        cell(f.locomo_recall_at_10),
        cell(f.all_at_5),
        cell(f.ndcg_at_10),
        cell(f.turn_recall_at_10),
        f.objective
    )
}

const HEADER: &str = "| setting | n | LoCoMo recall@10 | LME all@5 | LME nDCG@10 | LME turn recall@10 | objective |\n|---|---|---|---|---|---|---|\n";

/// The report as Markdown tables.
pub fn render(report: &FitReport) -> String {
    let mut out = format!(
        "Ranking fit: {} LoCoMo questions (categories 1-4), {} LongMemEval questions (abstention left out)\n\n\
         Held out ({} folds, every question scored by a setting fitted without it):\n\n{HEADER}",
        report.locomo_questions,
        report.longmemeval_questions,
        report.folds.len()
    );
    out.push_str(&row("defaults", &report.held_out.0));
    out.push_str(&row("fitted on the other folds", &report.held_out.1));
    out.push_str("\nPer fold (held-out objective, defaults → fitted; the fold's setting):\n\n");
    for (n, fold) in report.folds.iter().enumerate() {
        let setting: Vec<String> = fold
            .setting
            .iter()
            .map(|(name, v)| format!("{name} {v}"))
            .collect();
        out.push_str(&format!(
            "- fold {n}: {:.4} → {:.4}; {}\n",
            fold.defaults.objective,
            fold.fitted.objective,
            setting.join(", ")
        ));
    }
    out.push_str("\nFitted on every question:\n\n| knob | default | fitted |\n|---|---|---|\n");
    for (name, default, fitted) in &report.fitted {
        out.push_str(&format!("| {name} | {default} | {fitted} |\n"));
    }
    out.push_str(&format!("\nAblation (every question):\n\n{HEADER}"));
    for (name, f) in &report.ablation {
        out.push_str(&row(name, f));
    }
    out.push_str(&format!(
        "\nPer question type (defaults, then fitted):\n\n{}",
        HEADER.replace("| setting |", "| type |")
    ));
    for (kind, (defaults, fitted)) in &report.per_type {
        out.push_str(&row(&format!("{kind}: defaults"), defaults));
        out.push_str(&row(&format!("{kind}: fitted"), fitted));
    }
    out
}
