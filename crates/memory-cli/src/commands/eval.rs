//! `eval` commands.

use std::path::Path;

use memory_config::MemoryConfig;

use super::CliError;
use crate::cli::EvalCommand;
use crate::eval::{EvalOptions, render, run_locomo};
use crate::output;

pub async fn run(data_dir: &Path, command: EvalCommand) -> Result<(), CliError> {
    match command {
        EvalCommand::Locomo {
            data,
            conversations,
            skip,
            raw_fts_weight,
            raw_vector_weight,
            context_radius,
            context_weight,
            rrf_k,
            format,
        } => {
            let config =
                MemoryConfig::load_dir(data_dir).map_err(|e| CliError::Input(e.to_string()))?;
            let scratch = tempfile_dir()?;
            let (service, note) = crate::app::memory_service_with(&config, scratch.path()).await?;
            let mut long_term = service.config().clone();
            if let Some(w) = raw_fts_weight {
                long_term.weights.raw_fts = w;
            }
            if let Some(w) = raw_vector_weight {
                long_term.weights.raw_vector = w;
            }
            if let Some(r) = context_radius {
                long_term.context_radius = r;
            }
            if let Some(w) = context_weight {
                long_term.context_weight = w;
            }
            if let Some(k) = rrf_k {
                long_term.rrf_k = k;
            }
            let service = service.with_config(long_term);
            if let Some(note) = note {
                eprintln!("note: {note}");
            }
            let options = EvalOptions {
                data,
                conversations,
                skip,
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
    }
}

/// A scratch directory for the evaluation's profiles, removed afterwards.
fn tempfile_dir() -> Result<tempfile::TempDir, CliError> {
    tempfile::Builder::new()
        .prefix("memory-eval-")
        .tempdir()
        .map_err(|e| CliError::io("creating a scratch directory", e))
}
