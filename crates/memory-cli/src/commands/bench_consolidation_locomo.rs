//! `memory bench consolidation --locomo <file>`: LoCoMo recall@10 before and after an
//! LLM-free consolidation, on typed memories without an LLM. Each conversation's
//! observations (the facts the data set's authors extracted from each session, each with
//! the turns it draws on) are remembered as facts in a profile of their own, dated by their
//! session; the questions of categories 1-4 are recalled (10 hits); the profile is
//! consolidated; the questions are recalled again. A hit covers the turns of its memory and,
//! after consolidation, of the memories merged into it (the survivor keeps their
//! provenance), so recall@10 is the share of a question's evidence turns the first 10 hits
//! cover, averaged over questions.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use memory_core::ports::{Embedder, MemoryKind};
use memory_engine::long_term::{MemoryService, RecallItem, RecallRequest, RememberRequest};
use serde::Serialize;

use super::CliError;
use crate::eval::locomo;
use crate::output;

/// What to measure.
pub struct LocomoConsolidationBench {
    /// `locomo10.json`, read in place.
    pub data: PathBuf,
    /// Only the first N conversations.
    pub conversations: Option<usize>,
    /// The embedder's name, for the report.
    pub embedder_name: String,
    /// The embedder.
    pub embedder: Arc<dyn Embedder>,
}

/// One conversation's figures.
#[derive(Debug, Clone, Serialize)]
pub struct ConversationFigures {
    /// `conv-26`, ...
    pub id: String,
    /// Observations remembered.
    pub memories: usize,
    /// Memories merged into others.
    pub absorbed: u64,
    /// Questions asked (categories 1-4).
    pub questions: usize,
    /// Mean recall@10 before consolidation.
    pub before: f64,
    /// After.
    pub after: f64,
}

/// Everything measured.
#[derive(Debug, Clone, Serialize)]
pub struct LocomoConsolidationFigures {
    /// The embedder.
    pub embedder: String,
    /// Per conversation.
    pub conversations: Vec<ConversationFigures>,
    /// Questions asked in all.
    pub questions: usize,
    /// Mean recall@10 over every question, before.
    pub before: f64,
    /// After.
    pub after: f64,
    /// Memories remembered in all.
    pub memories: usize,
    /// Memories merged into others in all.
    pub absorbed: u64,
    /// Every merge's texts (survivor first), for reading what was merged.
    pub merges: Vec<Vec<String>>,
    /// Seconds for the whole run.
    pub seconds: f64,
}

/// Runs it.
pub async fn run(options: LocomoConsolidationBench, json: bool) -> Result<(), CliError> {
    let started = Instant::now();
    let mut samples = locomo::load(&options.data)?;
    if let Some(n) = options.conversations {
        samples.truncate(n);
    }
    let scratch = tempfile::Builder::new()
        .prefix("memory-bench-consolidation-locomo-")
        .tempdir()
        .map_err(|e| CliError::io("creating a scratch directory", e))?;
    let backends = crate::app::scratch_long_term(scratch.path(), true, None).await?;
    let service = MemoryService::new(backends, Arc::new(memory_core::ports::SystemClock))
        .with_embedder(Arc::clone(&options.embedder));
    let mut figures = LocomoConsolidationFigures {
        embedder: options.embedder_name.clone(),
        conversations: Vec::new(),
        questions: 0,
        before: 0.0,
        after: 0.0,
        memories: 0,
        absorbed: 0,
        merges: Vec::new(),
        seconds: 0.0,
    };
    let (mut before_sum, mut after_sum) = (0.0, 0.0);
    for sample in &samples {
        let profile = format!("locomo-{}", sample.id);
        let mut turns_of: HashMap<String, BTreeSet<String>> = HashMap::new();
        for observation in &sample.observations {
            let remembered = service
                .remember(
                    &profile,
                    RememberRequest {
                        content: observation.text.clone(),
                        kind: Some(MemoryKind::Fact),
                        ..RememberRequest::default()
                    },
                )
                .await?;
            turns_of
                .entry(remembered.id)
                .or_default()
                .extend(observation.dia_ids.iter().cloned());
        }
        let questions: Vec<&locomo::Question> = sample
            .questions
            .iter()
            .filter(|q| (1..=4).contains(&q.category))
            .collect();
        let before = recall_at_10(&service, &profile, &questions, &turns_of).await?;
        let report = service.consolidate(&profile, false).await?;
        for merge in &report.merges {
            let mut covered = turns_of
                .get(&merge.survivor.id)
                .cloned()
                .unwrap_or_default();
            for absorbed in &merge.absorbed {
                covered.extend(turns_of.get(&absorbed.id).cloned().unwrap_or_default());
            }
            turns_of.insert(merge.survivor.id.clone(), covered);
            figures.merges.push(
                std::iter::once(&merge.survivor)
                    .chain(&merge.absorbed)
                    .map(|m| m.content.clone())
                    .collect(),
            );
        }
        let after = recall_at_10(&service, &profile, &questions, &turns_of).await?;
        before_sum += before * questions.len() as f64;
        after_sum += after * questions.len() as f64;
        figures.questions += questions.len();
        figures.memories += sample.observations.len();
        figures.absorbed += report.absorbed;
        eprintln!(
            "{}: {} memories, {} merged away; recall@10 {before:.3} -> {after:.3}",
            sample.id,
            sample.observations.len(),
            report.absorbed
        );
        figures.conversations.push(ConversationFigures {
            id: sample.id.clone(),
            memories: sample.observations.len(),
            absorbed: report.absorbed,
            questions: questions.len(),
            before,
            after,
        });
    }
    let asked = figures.questions.max(1) as f64;
    figures.before = before_sum / asked;
    figures.after = after_sum / asked;
    figures.seconds = started.elapsed().as_secs_f64();
    if json {
        return output::json(&figures);
    }
    print(&figures);
    Ok(())
}

/// Mean share of each question's evidence turns covered by its first 10 hits.
async fn recall_at_10(
    service: &MemoryService,
    profile: &str,
    questions: &[&locomo::Question],
    turns_of: &HashMap<String, BTreeSet<String>>,
) -> Result<f64, CliError> {
    let mut sum = 0.0;
    for question in questions {
        let response = service
            .recall(profile, RecallRequest::new(question.text.clone(), 10))
            .await?;
        let mut covered = BTreeSet::new();
        for hit in &response.hits {
            if let RecallItem::Memory(m) = &hit.item
                && let Some(turns) = turns_of.get(&m.id)
            {
                covered.extend(turns.iter().filter(|t| question.gold.contains(*t)).cloned());
            }
        }
        sum += covered.len() as f64 / question.gold.len().max(1) as f64;
    }
    Ok(sum / questions.len().max(1) as f64)
}

fn print(f: &LocomoConsolidationFigures) {
    println!(
        "LoCoMo observations as facts, embedder {}: {} memories in {} conversations, {} merged away; {} questions (categories 1-4)",
        f.embedder,
        f.memories,
        f.conversations.len(),
        f.absorbed,
        f.questions
    );
    println!(
        "recall@10: {:.3} before consolidation, {:.3} after ({:+.3}); {:.0} s",
        f.before,
        f.after,
        f.after - f.before,
        f.seconds
    );
    for c in &f.conversations {
        println!(
            "  {}: {} memories, {} merged away, {} questions: {:.3} -> {:.3}",
            c.id, c.memories, c.absorbed, c.questions, c.before, c.after
        );
    }
    println!("merges (survivor first):");
    for merge in &f.merges {
        println!("- {}", merge.join("  <=  "));
    }
}
