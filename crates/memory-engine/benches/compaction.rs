//! Compaction at scale: a simulated 2,000-turn tool-heavy conversation with a scripted
//! summarizer and auto-compaction, with and without compaction; and the cost of planning a
//! compaction of a 10,000-message history (everything but the LLM call).
//!
//! `cargo bench -p memory-engine --bench compaction`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use memory_core::ports::{ChatRequest, ChatResponse, LanguageModel, TokenUsage};
use memory_core::{HeuristicTokenCounter, Result, Role, SessionId, UiMessage};
use memory_engine::compaction::{CompactorOptions, SummarizingCompactor};
use memory_engine::{CompactionSettings, CompactionStatus, Session};
use memory_testkit::in_memory::InMemoryMessageStore;
use serde_json::json;

/// Summarizes deterministically: a fixed-size digest of the prompt.
struct Digest;

#[async_trait]
impl LanguageModel for Digest {
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse> {
        let chars: usize = request.messages.iter().map(|m| m.content.len()).sum();
        Ok(ChatResponse::new(
            format!(
                "## Goal\nShip the release.\n## Progress\nSummarized {chars} characters of earlier turns.\n## Identifiers\nrelease-4.2, src/parser.rs"
            ),
            "digest",
            TokenUsage::default(),
        ))
    }
}

fn turn(i: usize) -> [UiMessage; 2] {
    let user = UiMessage::text_message(
        format!("u{i}"),
        Role::User,
        format!("Step {i}: read the next file and fix what is wrong."),
    );
    let assistant: UiMessage = serde_json::from_value(json!({
        "id": format!("a{i}"), "role": "assistant", "parts": [
            {"type": "tool-read_file", "toolCallId": format!("c{i}"), "state": "output-available",
             "input": {"path": format!("src/module_{i}.rs")},
             "output": {"path": format!("src/module_{i}.rs"), "content": "fn main() { println!(\"hello\"); }\n".repeat(40)}},
            {"type": "text", "text": format!("Fixed module {i}.")}
        ]
    }))
    .unwrap();
    [user, assistant]
}

async fn simulate(threshold: Option<usize>, turns: usize) -> (Vec<usize>, usize, usize) {
    let store = Arc::new(InMemoryMessageStore::new());
    let compactor = SummarizingCompactor::new(
        Arc::new(Digest),
        CompactorOptions {
            tail_token_budget: 8_000,
            ..CompactorOptions::default()
        },
    );
    let mut settings = CompactionSettings::new(Arc::new(compactor));
    settings.threshold = threshold;
    let session =
        Session::new(store, SessionId::new("sim").unwrap()).with_compaction(Arc::new(settings));
    let mut per_turn = Vec::with_capacity(turns);
    let mut compactions = 0;
    let mut largest_turn = 0;
    for i in 0..turns {
        let before = session.estimate_tokens().await.unwrap();
        for message in turn(i) {
            let report = session.append(message).await.unwrap();
            if matches!(report.compaction, CompactionStatus::Compacted { .. }) {
                compactions += 1;
            }
        }
        let after = session.estimate_tokens().await.unwrap();
        largest_turn = largest_turn.max(after.saturating_sub(before));
        per_turn.push(after);
    }
    let _ = largest_turn;
    (per_turn, compactions, largest_turn)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    const TURNS: usize = 2_000;
    const THRESHOLD: usize = 32_000;
    let started = Instant::now();
    let (with, compactions, largest_turn) = simulate(Some(THRESHOLD), TURNS).await;
    let elapsed = started.elapsed();
    let (without, _, _) = simulate(None, TURNS).await;
    let max_with = *with.iter().max().unwrap();
    let overshoot = max_with.saturating_sub(THRESHOLD);
    println!(
        "simulated {TURNS} tool-heavy turns (user + assistant with a 1.3 KB tool output) in {:.1} s",
        elapsed.as_secs_f64()
    );
    println!(
        "threshold {THRESHOLD} tokens; {compactions} compactions; largest single turn {largest_turn} tokens"
    );
    println!(
        "max estimated prompt with compaction: {max_with} tokens (over the threshold by {overshoot}, at most one turn: {})",
        overshoot <= largest_turn
    );
    println!("tokens sent per turn (estimate of the next call):");
    println!("{:>6} {:>14} {:>14}", "turn", "compaction", "no compaction");
    for t in [1, 10, 50, 100, 250, 500, 1_000, 1_500, 2_000] {
        println!("{:>6} {:>14} {:>14}", t, with[t - 1], without[t - 1]);
    }
    let total_with: usize = with.iter().sum();
    let total_without: usize = without.iter().sum();
    println!(
        "total over all turns: {total_with} vs {total_without} tokens ({:.1}x fewer)",
        total_without as f64 / total_with as f64
    );

    // Planning a compaction of a 10,000-message history.
    let history: Vec<UiMessage> = (0..5_000).flat_map(turn).collect();
    let planner = SummarizingCompactor::new(Arc::new(Digest), CompactorOptions::default());
    let mut samples = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        std::hint::black_box(planner.plan(&history, &HeuristicTokenCounter));
        samples.push(t.elapsed());
    }
    samples.sort();
    let at = |p: f64| samples[((samples.len() - 1) as f64 * p).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "plan a compaction of {} messages: p50 {:.2} ms, p99 {:.2} ms",
        history.len(),
        ms(at(0.5)),
        ms(at(0.99))
    );
}
