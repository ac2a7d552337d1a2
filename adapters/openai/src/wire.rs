//! The OpenAI chat-completions wire format.

use memory_core::ports::{ChatMessage, ChatRequest, ChatRole, ResponseFormat};
use memory_core::{MemoryError, Result, ToolCall};
use serde_json::{Value, json};

fn role(role: ChatRole) -> &'static str {
    match role {
        ChatRole::System => "system",
        ChatRole::User => "user",
        ChatRole::Assistant => "assistant",
        ChatRole::Tool => "tool",
    }
}

fn message(m: &ChatMessage) -> Value {
    let mut out = json!({"role": role(m.role), "content": m.content});
    if !m.tool_calls.is_empty() {
        out["tool_calls"] = Value::Array(
            m.tool_calls
                .iter()
                .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments.to_string()}}))
                .collect(),
        );
    }
    if let Some(id) = &m.tool_call_id {
        out["tool_call_id"] = Value::String(id.clone());
    }
    out
}

/// The request body.
pub(crate) fn body(request: &ChatRequest, default_model: &str) -> Value {
    let mut body = json!({
        "model": request.model.as_deref().unwrap_or(default_model),
        "messages": request.messages.iter().map(message).collect::<Vec<_>>(),
    });
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(m) = request.max_tokens {
        body["max_tokens"] = json!(m);
    }
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(request.tools.iter().map(|t| t.to_openai()).collect());
    }
    if let ResponseFormat::JsonSchema { name, schema } = &request.response_format {
        body["response_format"] = json!({"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": true}});
    }
    body
}

/// A parsed response: content, tool calls, usage, model.
pub(crate) struct Parsed {
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub model: Option<String>,
}

fn malformed(what: &str) -> MemoryError {
    crate::error::malformed("chat completion", what)
}

/// Parses a chat-completion response body.
pub(crate) fn parse(body: &Value) -> Result<Parsed> {
    let message = body
        .get("choices")
        .and_then(|c| c.get(0))
        .and_then(|c| c.get("message"))
        .ok_or_else(|| malformed("no choices[0].message"))?;
    let content = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(_) => return Err(malformed("content is not a string")),
    };
    let mut tool_calls = Vec::new();
    if let Some(Value::Array(calls)) = message.get("tool_calls") {
        for call in calls {
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let function = call
                .get("function")
                .ok_or_else(|| malformed("tool call without function"))?;
            let name = function
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed("tool call without name"))?;
            let arguments = match function.get("arguments") {
                Some(Value::String(s)) if s.trim().is_empty() => json!({}),
                Some(Value::String(s)) => {
                    serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
                }
                Some(other) => other.clone(),
                None => json!({}),
            };
            tool_calls.push(ToolCall {
                id,
                name: name.to_owned(),
                arguments,
            });
        }
    }
    let usage = body.get("usage");
    let count = |key: &str| {
        usage
            .and_then(|u| u.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Ok(Parsed {
        content,
        tool_calls,
        input_tokens: count("prompt_tokens"),
        output_tokens: count("completion_tokens"),
        model: body.get("model").and_then(Value::as_str).map(str::to_owned),
    })
}

/// Strips a Markdown code fence around JSON, as local models often add one.
pub(crate) fn unfence(text: &str) -> &str {
    let t = text.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}
