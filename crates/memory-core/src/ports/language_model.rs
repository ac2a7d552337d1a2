use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Result;

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
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Speaker.
    pub role: ChatRole,
    /// Text.
    pub content: String,
}

/// The shape of the answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum ResponseFormat {
    /// Free text.
    #[default]
    Text,
    /// JSON matching `schema`.
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
}

/// Tokens a call consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
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
}

/// A chat-completion model.
///
/// # Contract
/// - With [`ResponseFormat::JsonSchema`], `content` is JSON text (callers still validate it).
/// - Every response reports usage (zeros only when the provider reports none).
#[async_trait]
pub trait LanguageModel: Send + Sync {
    /// Runs one completion.
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse>;
}
