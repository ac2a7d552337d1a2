//! Realistic sample messages for tests.

use memory_core::{Role, UiMessage};
use serde_json::json;

/// A text message.
pub fn text(id: &str, role: Role, text: &str) -> UiMessage {
    UiMessage::text_message(id, role, text)
}

/// A user text message.
pub fn user(id: &str, text: &str) -> UiMessage {
    UiMessage::text_message(id, Role::User, text)
}

/// An assistant text message.
pub fn assistant(id: &str, text: &str) -> UiMessage {
    UiMessage::text_message(id, Role::Assistant, text)
}

/// An assistant message with reasoning, a completed tool call and a closing text.
pub fn assistant_with_tool(
    id: &str,
    tool: &str,
    input: serde_json::Value,
    output: serde_json::Value,
    text: &str,
) -> UiMessage {
    serde_json::from_value(json!({
        "id": id,
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": format!("I should call {tool}.")},
            {"type": format!("tool-{tool}"), "toolCallId": format!("call_{id}"), "state": "output-available",
             "input": input, "output": output},
            {"type": "step-start"},
            {"type": "text", "text": text}
        ],
        "metadata": {"model": "test-model"}
    }))
    .unwrap_or_else(|_| UiMessage::text_message(id, Role::Assistant, text))
}
