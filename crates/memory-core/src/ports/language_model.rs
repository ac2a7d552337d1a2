use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Result, ToolCall, ToolDefinition};

/// The speaker of a chat message sent to a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    /// Instructions.
    System,
    /// Input.
    User,
    /// Earlier model output.
    Assistant,
    /// The result of a tool call.
    Tool,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Speaker.
    pub role: ChatRole,
    /// Text.
    pub content: String,
    /// Tool calls the assistant made in this message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For [`ChatRole::Tool`] messages: the call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    /// A message with text only.
    pub fn new(role: ChatRole, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// A tool result answering `call_id`.
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: ChatRole::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }
}

/// The shape of the answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum ResponseFormat {
    /// Free text.
    #[default]
    Text,
    /// JSON matching `schema`. Write schemas to strict mode's rules
    /// ([`strict_schema_violations`](crate::structured::strict_schema_violations) is empty):
    /// the adapter can then have the server enforce them; a server that cannot gets the schema
    /// in the prompt instead.
    JsonSchema {
        /// Schema name.
        name: String,
        /// The JSON Schema.
        schema: Value,
    },
}

/// A chat completion request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    /// Model override; `None` uses the adapter's configured model.
    pub model: Option<String>,
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Output token limit.
    pub max_tokens: Option<u32>,
    /// Text or structured JSON.
    pub response_format: ResponseFormat,
    /// Extra request headers (for example a session-affinity key for prompt caching).
    pub headers: Vec<(String, String)>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
}

/// Tokens a call consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

/// Why the model stopped generating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// It finished its answer.
    #[default]
    Stop,
    /// It ran into `max_tokens`: the content is cut off (for JSON, unclosed).
    Length,
    /// It asked for tools.
    ToolCalls,
    /// The provider's filter stopped it.
    ContentFilter,
    /// Anything else the provider reported.
    Other,
}

impl FinishReason {
    /// The reason from an OpenAI-style `finish_reason` string (`None` or unknown: `Stop` when
    /// absent, `Other` when unrecognised).
    pub fn from_wire(reason: Option<&str>) -> Self {
        match reason {
            None | Some("stop") | Some("eos") | Some("end_turn") => Self::Stop,
            Some("length") | Some("max_tokens") => Self::Length,
            Some("tool_calls") | Some("function_call") | Some("tool_use") => Self::ToolCalls,
            Some("content_filter") => Self::ContentFilter,
            Some(_) => Self::Other,
        }
    }
}

fn one() -> u32 {
    1
}

/// A chat completion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The answer text (JSON text for [`ResponseFormat::JsonSchema`]).
    pub content: String,
    /// The model that answered.
    pub model: String,
    /// Tokens used.
    pub usage: TokenUsage,
    /// Tools the model asked to run (empty when it answered in text).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Why generation stopped.
    #[serde(default)]
    pub finish_reason: FinishReason,
    /// Requests this answer took over the wire: retries and format fallbacks included
    /// (1 for an in-process model).
    #[serde(default = "one")]
    pub requests: u32,
}

impl ChatResponse {
    /// A finished text answer from one request.
    pub fn new(content: impl Into<String>, model: impl Into<String>, usage: TokenUsage) -> Self {
        Self {
            content: content.into(),
            model: model.into(),
            usage,
            tool_calls: Vec::new(),
            finish_reason: FinishReason::Stop,
            requests: 1,
        }
    }
}

/// A chat-completion model.
///
/// # Contract
/// - With [`ResponseFormat::JsonSchema`], `content` is the reply with any code fence or prose
///   around the JSON object removed ([`json_in_reply`](crate::structured::json_in_reply));
///   callers still validate it, and repair (the adapter does not ask twice).
/// - `finish_reason` says when `content` was cut off by `max_tokens`; it is never silently
///   passed on as a complete answer.
/// - Every response reports usage (zeros only when the provider reports none).
#[async_trait]
pub trait LanguageModel: Send + Sync {
    /// Runs one completion.
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse>;
}
