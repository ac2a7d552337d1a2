//! The reference token heuristic: `max(chars / 4, words × 1.3)`, plus 4 per message.

use crate::ports::TokenCounter;
use crate::{Part, UiMessage};

/// Characters per token.
pub const CHARS_PER_TOKEN: f64 = 4.0;
/// Tokens per whitespace-separated word.
pub const WORDS_TOKEN_MULTIPLIER: f64 = 1.3;
/// Overhead tokens per message.
pub const TOKENS_PER_MESSAGE: usize = 4;

/// The default [`TokenCounter`]: `ceil(max(len / 4, words × 1.3))`, where `len` counts UTF-16
/// code units (as the reference does) and `words` the whitespace-separated pieces.
///
/// ```
/// use memory_core::HeuristicTokenCounter;
/// use memory_core::ports::TokenCounter;
/// assert_eq!(HeuristicTokenCounter.count(""), 0);
/// assert_eq!(HeuristicTokenCounter.count("hello world"), 3); // max(11/4, 2*1.3) = 2.75
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct HeuristicTokenCounter;

impl TokenCounter for HeuristicTokenCounter {
    fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        let len = text.encode_utf16().count() as f64;
        let words = text.split_whitespace().count() as f64;
        (len / CHARS_PER_TOKEN)
            .max(words * WORDS_TOKEN_MULTIPLIER)
            .ceil() as usize
    }
}

fn value_tokens(counter: &dyn TokenCounter, value: &serde_json::Value) -> usize {
    match value {
        serde_json::Value::Null => 0,
        serde_json::Value::String(s) => counter.count(s),
        other => counter.count(&other.to_string()),
    }
}

/// Tokens of one message: 4 plus its text, reasoning, tool inputs and outputs (files, data
/// and step markers do not reach the model as text and count 0).
pub fn estimate_message_tokens(counter: &dyn TokenCounter, message: &UiMessage) -> usize {
    let parts: usize = message
        .parts
        .iter()
        .map(|part| match part {
            Part::Text(t) => counter.count(&t.text),
            Part::Reasoning(r) => counter.count(&r.text),
            Part::Tool(t) | Part::DynamicTool(t) => {
                t.input.as_ref().map_or(0, |v| value_tokens(counter, v))
                    + t.output.as_ref().map_or(0, |v| value_tokens(counter, v))
                    + t.error_text.as_deref().map_or(0, |e| counter.count(e))
            }
            _ => 0,
        })
        .sum();
    TOKENS_PER_MESSAGE + parts
}

/// Tokens of a message list.
pub fn estimate_messages_tokens(counter: &dyn TokenCounter, messages: &[UiMessage]) -> usize {
    messages
        .iter()
        .map(|m| estimate_message_tokens(counter, m))
        .sum()
}
