//! The structured summary prompt.

use memory_core::{Part, UiMessage};
use serde_json::Value;

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

/// Renders a value for the transcript: strings as they are, anything else as JSON (never
/// `[object Object]`).
fn render(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One message as transcript text: `[role]`, its text, and its tool calls with inputs and
/// outputs (or errors) clipped to 500 characters.
pub fn transcript_entry(message: &UiMessage) -> String {
    let mut out = format!("[{}]", message.role);
    for part in &message.parts {
        match part {
            Part::Text(t) => {
                out.push('\n');
                out.push_str(&t.text);
            }
            Part::Tool(t) | Part::DynamicTool(t) => {
                out.push_str(&format!("\n[Tool: {}]", t.tool_name));
                if let Some(input) = &t.input {
                    out.push_str(&format!("\nInput: {}", clip(&render(input), 500)));
                }
                if let Some(output) = &t.output {
                    out.push_str(&format!("\nOutput: {}", clip(&render(output), 500)));
                }
                if let Some(error) = &t.error_text {
                    out.push_str(&format!("\nError: {}", clip(error, 500)));
                }
            }
            _ => {}
        }
    }
    out
}

const SECTIONS: &str = "Use this structure:\n\
## Goal\n[What the user is trying to achieve]\n\n\
## Progress\n[What has been done and what is in progress]\n\n\
## Decisions\n[Choices made and why]\n\n\
## Identifiers\n[Exact names, paths, ids, numbers, versions and values that later turns may need]\n\n\
## Next Steps\n[Open questions, pending tasks, what comes next]";

/// The summary prompt; with a previous summary, an iterative update of it.
pub fn summary_prompt(messages: &[UiMessage], previous: Option<&str>, budget: usize) -> String {
    let transcript = messages
        .iter()
        .map(transcript_entry)
        .collect::<Vec<_>>()
        .join("\n\n---\n\n");
    let closing = format!(
        "Target ~{budget} tokens. Be factual: do not invent file paths, commands or details. Write only the summary body."
    );
    match previous {
        None => format!(
            "Write a concise summary of the conversation below, keeping every piece of information later turns may need.\n\n\
             CONVERSATION TO SUMMARIZE:\n{transcript}\n\n{SECTIONS}\n\n{closing}"
        ),
        Some(previous) => format!(
            "You are updating a summary of an earlier part of a conversation with new turns.\n\n\
             PREVIOUS SUMMARY:\n{previous}\n\nNEW TURNS TO INCORPORATE:\n{transcript}\n\n\
             Preserve what is still relevant, add the new information, and remove only what is clearly obsolete.\n\n{SECTIONS}\n\n{closing}"
        ),
    }
}
