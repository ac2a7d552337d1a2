//! `eval` commands.

use std::path::Path;

use memory_config::MemoryConfig;

use super::CliError;
use crate::cli::{AnswerArgs, EvalCommand, RecallKnobs};
use crate::eval::fit::{self, FitOptions, run_fit};
use crate::eval::judge::Answering;
use crate::eval::longmemeval_run::{self, LongMemEvalOptions, run_longmemeval};
use crate::eval::{EvalOptions, render, run_locomo};
use crate::output;
use memory_engine::long_term::MemoryService;

pub async fn run(data_dir: &Path, command: EvalCommand) -> Result<(), CliError> {
    match command {
        EvalCommand::Locomo {
            data,
            conversations,
            skip,
            keep,
            knobs,
            answers,
            format,
        } => {
            let config =
                MemoryConfig::load_dir(data_dir).map_err(|e| CliError::Input(e.to_string()))?;
            let scratch = tempfile_dir()?;
            let root = keep.clone().unwrap_or_else(|| scratch.path().to_owned());
            let service = eval_service(&config, &root, knobs).await?;
            let options = EvalOptions {
                data,
                conversations,
                skip,
                keep,
                answering: answering(&config, &answers)?,
            };
            let progress = output::progress_bar(format.json, "turns + questions");
            let report = run_locomo(&service, &options, &progress).await?;
            progress.finish_and_clear();
            if format.json {
                return output::json(&report);
            }
            print!("{}", render(&report));
            Ok(())
        }
        EvalCommand::Fit {
            locomo,
            longmemeval,
            limit,
            keep,
            folds,
            knobs,
            format,
        } => {
            let config =
                MemoryConfig::load_dir(data_dir).map_err(|e| CliError::Input(e.to_string()))?;
            let service = eval_service(&config, &keep, knobs).await?;
            let options = FitOptions {
                locomo,
                longmemeval,
                limit,
                keep,
                folds,
            };
            let progress = output::progress_bar(format.json, "conversations + questions");
            let report = run_fit(&service, &options, &progress).await?;
            progress.finish_and_clear();
            if format.json {
                return output::json(&report);
            }
            print!("{}", fit::render(&report));
            Ok(())
        }
        EvalCommand::LongMemEval {
            data,
            types,
            limit,
            shard,
            results,
            fresh,
            keep,
            knobs,
            answers,
            format,
        } => {
            let shard = shard.as_deref().map(parse_shard).transpose()?;
            let results = results.unwrap_or_else(|| {
                let name = data
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or("data")
                    .trim_end_matches(".gz")
                    .trim_end_matches(".json")
                    .to_owned();
                data_dir
                    .join("eval")
                    .join(format!("longmemeval-{name}.jsonl"))
            });
            if fresh {
                match std::fs::remove_file(&results) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => {
                        return Err(CliError::io(format!("removing {}", results.display()), e));
                    }
                }
            }
            let config =
                MemoryConfig::load_dir(data_dir).map_err(|e| CliError::Input(e.to_string()))?;
            let scratch = tempfile_dir()?;
            let root = keep.clone().unwrap_or_else(|| scratch.path().to_owned());
            let service = eval_service(&config, &root, knobs).await?;
            let options = LongMemEvalOptions {
                data,
                types,
                limit,
                shard,
                results: results.clone(),
                keep,
                answering: answering(&config, &answers)?,
            };
            let quiet = format.json;
            let report = run_longmemeval(&service, &options, |n, of, result, eta| {
                if !quiet {
                    eprintln!(
                        "[{n}/{of}] {} ({}): any@5 {} all@5 {} (bm25 {} {}) · eta {}",
                        result.id,
                        result.kind,
                        result.pipeline.sessions.recall_any_at_5,
                        result.pipeline.sessions.recall_all_at_5,
                        result.bm25.sessions.recall_any_at_5,
                        result.bm25.sessions.recall_all_at_5,
                        duration(eta)
                    );
                }
            })
            .await?;
            if format.json {
                return output::json(&report);
            }
            print!("{}", longmemeval_run::render(&report));
            println!("results: {}", results.display());
            Ok(())
        }
    }
}

/// The judge and answer size of `--answer` (`None` without it); refused without `[llm]`.
fn answering(config: &MemoryConfig, args: &AnswerArgs) -> Result<Option<Answering>, CliError> {
    if !args.answer {
        return Ok(None);
    }
    let llm = config.llm.as_ref().ok_or_else(|| {
        CliError::Input(
            "--answer needs a language model: add an [llm] section to memory.toml".into(),
        )
    })?;
    let judge = memory_compose::chat_model(llm, args.judge_model.as_deref())
        .map_err(|e| CliError::Input(e.to_string()))?;
    Ok(Some(Answering {
        judge,
        limit: args.answer_limit,
    }))
}

/// The service over `root` with the evaluation's overrides applied (what it runs without is
/// printed as a note).
async fn eval_service(
    config: &MemoryConfig,
    root: &Path,
    knobs: RecallKnobs,
) -> Result<MemoryService, CliError> {
    let (service, note) = crate::app::memory_service_with(config, root).await?;
    if let Some(note) = note {
        eprintln!("note: {note}");
    }
    // Which models the figures are of.
    eprintln!(
        "models: embedder {}, reranker {}",
        service.embedder_model().unwrap_or("none"),
        service.reranker_model().unwrap_or("none")
    );
    Ok(with_knobs(service, knobs))
}

/// The service with the evaluation's overrides applied.
fn with_knobs(service: MemoryService, knobs: RecallKnobs) -> MemoryService {
    let mut long_term = service.config().clone();
    if let Some(w) = knobs.raw_fts_weight {
        long_term.weights.raw_fts = w;
    }
    if let Some(w) = knobs.raw_vector_weight {
        long_term.weights.raw_vector = w;
    }
    if let Some(r) = knobs.context_radius {
        long_term.context_radius = r;
    }
    if let Some(w) = knobs.context_weight {
        long_term.context_weight = w;
    }
    if let Some(k) = knobs.rrf_k {
        long_term.rrf_k = k;
    }
    if let Some(s) = knobs.session_spread {
        long_term.session_spread = s;
    }
    if let Some(w) = knobs.dated_weight {
        long_term.weights.dated = w;
    }
    if let Some(w) = knobs.recency_weight {
        long_term.weights.recency = w;
    }
    service.with_config(long_term)
}

/// `K/N` with `K < N`.
fn parse_shard(text: &str) -> Result<(usize, usize), CliError> {
    let bad = || CliError::Input(format!("--shard {text:?}: expected K/N with 0 <= K < N"));
    let (k, n) = text.split_once('/').ok_or_else(bad)?;
    let (k, n): (usize, usize) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if k >= n {
        return Err(bad());
    }
    Ok((k, n))
}

/// `1h02m`, `4m10s`, `12s`.
fn duration(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}

/// A scratch directory for the evaluation's profiles, removed afterwards.
fn tempfile_dir() -> Result<tempfile::TempDir, CliError> {
    tempfile::Builder::new()
        .prefix("memory-eval-")
        .tempdir()
        .map_err(|e| CliError::io("creating a scratch directory", e))
}
