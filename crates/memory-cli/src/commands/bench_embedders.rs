//! `memory bench embedders`: the local embedders side by side on the same LoCoMo turns, in
//! one run: texts per second through the `Embedder` port (batches as ingest sends them) and
//! how closely their vectors agree.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use memory_config::{EmbedderChoice, MemoryConfig};
use memory_core::ports::Embedder;
use serde::Serialize;

use super::CliError;
use crate::eval::locomo;
use crate::output;

/// What to measure.
pub struct EmbeddersBench {
    /// A LoCoMo file (`locomo10.json`).
    pub locomo: PathBuf,
    /// Turns embedded (from the first conversation on).
    pub texts: usize,
    /// Texts per embed call.
    pub batch: usize,
}

/// One embedder's figures.
#[derive(Debug, Clone, Serialize)]
pub struct EmbedderFigures {
    /// `[memory] embedder`.
    pub embedder: String,
    /// The model id its vectors carry.
    pub model: String,
    /// Turns alone, texts per second.
    pub turns_per_sec: f64,
    /// Turns preceded by the turn before (what ingest embeds for a raw message), texts per
    /// second.
    pub with_context_per_sec: f64,
}

/// Everything measured.
#[derive(Debug, Clone, Serialize)]
pub struct EmbeddersReport {
    /// Texts embedded per form.
    pub texts: usize,
    /// Mean characters of a turn.
    pub mean_turn_chars: f64,
    /// The installed local embedders, in the order measured.
    pub embedders: Vec<EmbedderFigures>,
    /// Mean and lowest cosine between the two embedders' vectors of the same text (both
    /// installed only).
    pub agreement: Option<(f64, f64)>,
}

/// Runs it.
pub async fn run(options: EmbeddersBench, json: bool) -> Result<(), CliError> {
    let samples = locomo::load(&options.locomo)?;
    // Each turn, and each turn after the one before it in its session (a session's first turn
    // alone), as ingest embeds a raw message.
    let (turns, with_context): (Vec<String>, Vec<String>) = samples
        .iter()
        .flat_map(|s| s.sessions.iter())
        .flat_map(|session| {
            session.turns.iter().enumerate().map(|(i, t)| {
                let context = match i.checked_sub(1) {
                    Some(p) => format!("{}\n{}", session.turns[p].text, t.text),
                    None => t.text.clone(),
                };
                (t.text.clone(), context)
            })
        })
        .take(options.texts)
        .unzip();
    if turns.is_empty() {
        return Err(CliError::Input(format!(
            "{}: no turns to embed",
            options.locomo.display()
        )));
    }
    let mut figures = Vec::new();
    let mut vectors = Vec::new();
    for (choice, name) in [
        (EmbedderChoice::Local, "local"),
        (EmbedderChoice::LocalInt8, "local-int8"),
    ] {
        let mut config = MemoryConfig::default();
        config.memory.embedder = choice;
        let (embedder, why) = memory_compose::embedder(&config)?;
        let Some(embedder) = embedder else {
            eprintln!("{name}: not measured ({})", why.unwrap_or_default());
            continue;
        };
        // One warm-up call, so neither pays for its first allocation in the timing.
        embedder.embed(&turns[..turns.len().min(8)]).await?;
        let (turns_per_sec, made) = throughput(&embedder, &turns, options.batch).await?;
        let (with_context_per_sec, _) = throughput(&embedder, &with_context, options.batch).await?;
        figures.push(EmbedderFigures {
            embedder: name.to_owned(),
            model: embedder.model_id().to_owned(),
            turns_per_sec,
            with_context_per_sec,
        });
        vectors.push(made);
    }
    let agreement = match vectors.as_slice() {
        [a, b] => {
            let cosines: Vec<f64> = a
                .iter()
                .zip(b)
                .map(|(x, y)| x.iter().zip(y).map(|(p, q)| f64::from(p * q)).sum())
                .collect();
            let mean = cosines.iter().sum::<f64>() / cosines.len().max(1) as f64;
            let lowest = cosines.iter().copied().fold(f64::INFINITY, f64::min);
            Some((mean, lowest))
        }
        _ => None,
    };
    let report = EmbeddersReport {
        texts: turns.len(),
        mean_turn_chars: turns.iter().map(|t| t.chars().count()).sum::<usize>() as f64
            / turns.len().max(1) as f64,
        embedders: figures,
        agreement,
    };
    if json {
        return output::json(&report);
    }
    println!(
        "{} LoCoMo turns (mean {:.0} characters), batches of {}",
        report.texts, report.mean_turn_chars, options.batch
    );
    for f in &report.embedders {
        println!(
            "{:<11} {:.0} turns/s, {:.0} turns/s with the turn before ({})",
            f.embedder, f.turns_per_sec, f.with_context_per_sec, f.model
        );
    }
    if let [float, int8] = report.embedders.as_slice() {
        println!(
            "local-int8 / local: {:.2}x (turns), {:.2}x (with the turn before)",
            int8.turns_per_sec / float.turns_per_sec,
            int8.with_context_per_sec / float.with_context_per_sec
        );
    }
    if let Some((mean, lowest)) = report.agreement {
        println!("cosine between the two vectors of a turn: mean {mean:.4}, lowest {lowest:.4}");
    }
    Ok(())
}

/// Texts per second over `texts` in batches, and the vectors made.
async fn throughput(
    embedder: &Arc<dyn Embedder>,
    texts: &[String],
    batch: usize,
) -> Result<(f64, Vec<Vec<f32>>), CliError> {
    let started = Instant::now();
    let mut vectors = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(batch.max(1)) {
        vectors.extend(embedder.embed(chunk).await?);
    }
    Ok((
        texts.len() as f64 / started.elapsed().as_secs_f64(),
        vectors,
    ))
}
