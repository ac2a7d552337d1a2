//! The OpenAI chat-completions wire format.

use memory_core::ports::{ChatMessage, ChatRequest, ChatRole, FinishReason, ResponseFormat};
use memory_core::structured::{schema_instruction, strict_schema_violations};
use memory_core::{MemoryError, Result, ToolCall};
use serde_json::{Value, json};

/// How a structured request is sent, strongest first (the order of fallback).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Format {
    /// `response_format: json_schema`, strict when the schema follows strict mode's rules.
    JsonSchema = 0,
    /// `response_format: json_object` with the schema beside it (llama.cpp servers enforce
    /// it there), and in the prompt.
    JsonObject = 1,
    /// No `response_format`, the schema in the prompt.
    Text = 2,
}

impl Format {
    pub(crate) fn from_level(level: u8) -> Self {
        match level {
            0 => Self::JsonSchema,
            1 => Self::JsonObject,
            _ => Self::Text,
        }
    }

    /// The next weaker format, if any.
    pub(crate) fn weaker(self) -> Option<Self> {
        match self {
            Self::JsonSchema => Some(Self::JsonObject),
            Self::JsonObject => Some(Self::Text),
            Self::Text => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::JsonSchema => "json_schema",
            Self::JsonObject => "json_object",
            Self::Text => "text",
        }
    }
}

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

/// The messages, with the schema instruction added to the system prompt (or as one) when
/// the format cannot enforce the schema.
fn messages(request: &ChatRequest, format: Format) -> Vec<Value> {
    let mut out: Vec<Value> = request.messages.iter().map(message).collect();
    if let (ResponseFormat::JsonSchema { schema, .. }, Format::JsonObject | Format::Text) =
        (&request.response_format, format)
    {
        let instruction = schema_instruction(schema);
        match request
            .messages
            .iter()
            .position(|m| m.role == ChatRole::System)
        {
            // One system prompt: templates of some local models refuse a second one.
            Some(i) => {
                out[i]["content"] =
                    Value::String(format!("{}\n\n{instruction}", request.messages[i].content));
            }
            None => out.insert(0, json!({"role": "system", "content": instruction})),
        }
    }
    out
}

/// The request body, structured output sent as `format`.
pub(crate) fn body(request: &ChatRequest, default_model: &str, format: Format) -> Value {
    let mut body = json!({
        "model": request.model.as_deref().unwrap_or(default_model),
        "messages": messages(request, format),
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
        match format {
            Format::JsonSchema => {
                let strict = strict_schema_violations(schema).is_empty();
                body["response_format"] = json!({"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": strict}});
            }
            // llama.cpp servers constrain the output to a `schema` beside `json_object`;
            // others ignore it and follow the schema in the prompt.
            Format::JsonObject => {
                body["response_format"] = json!({"type": "json_object", "schema": schema});
            }
            Format::Text => {}
        }
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
    pub finish_reason: FinishReason,
}

fn malformed(what: &str) -> MemoryError {
    crate::error::malformed("chat completion", what)
}

/// Parses a chat-completion response body.
pub(crate) fn parse(body: &Value) -> Result<Parsed> {
    let choice = body
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| malformed("no choices[0]"))?;
    let message = choice
        .get("message")
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
        finish_reason: FinishReason::from_wire(choice.get("finish_reason").and_then(Value::as_str)),
    })
}
