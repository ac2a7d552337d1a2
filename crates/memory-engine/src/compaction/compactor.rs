//! The `Compactor` seam and the summarizing compactor.

use std::sync::Arc;

use async_trait::async_trait;
use memory_core::ports::{
    ChatMessage, ChatRequest, ChatRole, FinishReason, LanguageModel, TokenCounter, TokenUsage,
};
use memory_core::{
    COMPACTION_PREFIX, MemoryError, Result, UiMessage, estimate_message_tokens,
    estimate_messages_tokens,
};

use super::boundaries::{align_end, align_start, tail_cut};
use super::prompt::summary_prompt;

/// A proposed compaction: replace `from..=to` with `summary`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactResult {
    /// First message of the range.
    pub from_message_id: String,
    /// Last message of the range.
    pub to_message_id: String,
    /// The summary.
    pub summary: String,
    /// Tokens the summarizer used.
    pub usage: TokenUsage,
}

/// Decides what to compact, given the history with overlays applied.
#[async_trait]
pub trait Compactor: Send + Sync {
    /// A range of `session_id`'s history and its summary, or `None` when there is nothing
    /// worth compacting. Errors (a failing summarizer) are returned, never swallowed.
    async fn compact(
        &self,
        session_id: &str,
        history: &[UiMessage],
        counter: &dyn TokenCounter,
    ) -> Result<Option<CompactResult>>;
}

/// Options of the [`SummarizingCompactor`] (the reference defaults).
#[derive(Debug, Clone)]
pub struct CompactorOptions {
    /// Messages at the start never compacted.
    pub protect_head: usize,
    /// Tokens of recent messages kept verbatim.
    pub tail_token_budget: usize,
    /// Recent messages always kept.
    pub min_tail_messages: usize,
    /// Model override for the summarizer.
    pub model: Option<String>,
    /// Header carrying the session id on every summarizer call, so a provider that routes
    /// by it reuses its prompt cache (`x-session-affinity`); `None` sends none.
    pub affinity_header: Option<String>,
}

impl Default for CompactorOptions {
    fn default() -> Self {
        Self {
            protect_head: 3,
            tail_token_budget: 20_000,
            min_tail_messages: 2,
            model: None,
            affinity_header: Some("x-session-affinity".to_owned()),
        }
    }
}

/// Summarizes the middle of a history with a language model: the head and a token-budgeted
/// tail stay verbatim; the previous summary (read from the history being compacted, never
/// from state kept between calls) is updated iteratively.
pub struct SummarizingCompactor {
    llm: Arc<dyn LanguageModel>,
    options: CompactorOptions,
}

impl SummarizingCompactor {
    /// A compactor over `llm`.
    pub fn new(llm: Arc<dyn LanguageModel>, options: CompactorOptions) -> Self {
        Self { llm, options }
    }

    /// The range `start..end` to compress, or `None` (everything but the LLM call).
    pub fn plan(
        &self,
        history: &[UiMessage],
        counter: &dyn TokenCounter,
    ) -> Option<(usize, usize)> {
        let o = &self.options;
        if history.len() <= o.protect_head + o.min_tail_messages {
            return None;
        }
        let start = align_start(history, o.protect_head);
        let end = tail_cut(
            history.len(),
            start,
            o.tail_token_budget,
            o.min_tail_messages,
            |i| estimate_message_tokens(counter, &history[i]),
        );
        let end = align_end(history, start, end);
        (end > start).then_some((start, end))
    }
}

#[async_trait]
impl Compactor for SummarizingCompactor {
    async fn compact(
        &self,
        session_id: &str,
        history: &[UiMessage],
        counter: &dyn TokenCounter,
    ) -> Result<Option<CompactResult>> {
        let Some((start, end)) = self.plan(history, counter) else {
            return Ok(None);
        };
        let middle: Vec<UiMessage> = history[start..end]
            .iter()
            .filter(|m| !m.id.starts_with(COMPACTION_PREFIX))
            .cloned()
            .collect();
        let (Some(first), Some(last)) = (middle.first(), middle.last()) else {
            return Ok(None);
        };
        let previous = history
            .iter()
            .find(|m| m.id.starts_with(COMPACTION_PREFIX))
            .map(UiMessage::text);
        let budget = (estimate_messages_tokens(counter, &middle) / 5).max(100);
        let prompt = summary_prompt(&middle, previous.as_deref(), budget);
        // Twice the summary's budget: room to finish, a bound on a runaway generation.
        let max_tokens = u32::try_from(budget.saturating_mul(2))
            .unwrap_or(u32::MAX)
            .clamp(256, 16_384);
        let request = ChatRequest {
            model: self.options.model.clone(),
            messages: vec![
                ChatMessage::new(
                    ChatRole::System,
                    "You summarize conversations for an AI agent's memory.",
                ),
                ChatMessage::new(ChatRole::User, prompt),
            ],
            max_tokens: Some(max_tokens),
            headers: self
                .options
                .affinity_header
                .iter()
                .map(|name| (name.clone(), session_id.to_owned()))
                .collect(),
            ..ChatRequest::default()
        };
        let response = self.llm.complete(request).await?;
        if response.finish_reason == FinishReason::Length {
            // A summary cut short would silently drop the end of the range from the context.
            return Err(MemoryError::backend(
                "compaction",
                format!(
                    "the summary reached the output limit of {max_tokens} tokens before it ended; nothing was compacted"
                ),
            ));
        }
        let summary = response.content.trim().to_owned();
        if summary.is_empty() {
            return Ok(None);
        }
        Ok(Some(CompactResult {
            from_message_id: first.id.clone(),
            to_message_id: last.id.clone(),
            summary,
            usage: response.usage,
        }))
    }
}

/// A compactor that never compacts, for wiring a threshold without an LLM (tests, dry runs).
pub struct NoCompaction;

#[async_trait]
impl Compactor for NoCompaction {
    async fn compact(
        &self,
        _: &str,
        _: &[UiMessage],
        _: &dyn TokenCounter,
    ) -> Result<Option<CompactResult>> {
        Ok(None)
    }
}
