use async_trait::async_trait;
use memory_core::ports::{
    ChatMessage, ChatRequest, ChatResponse, ChatRole, LanguageModel, ResponseFormat, TokenUsage,
};
use memory_core::{MemoryError, Result};
use serde_json::Value;
use tracing::debug;

use crate::config::OpenAiConfig;
use crate::http::Endpoint;
use crate::wire::{self, Parsed, unfence};

/// The [`LanguageModel`] over an OpenAI-compatible `/chat/completions` endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiChat {
    endpoint: Endpoint,
}

impl OpenAiChat {
    /// A client for `config`.
    pub fn new(config: OpenAiConfig) -> Result<Self> {
        Ok(Self {
            endpoint: Endpoint::new(config)?,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.endpoint.config
    }

    /// One HTTP exchange with retries; returns the parsed body.
    async fn call(&self, request: &ChatRequest) -> Result<Parsed> {
        let body = wire::body(request, &self.endpoint.config.model);
        let value = self
            .endpoint
            .post("chat/completions", &body, &request.headers)
            .await?;
        wire::parse(&value)
    }
}

fn add(usage: &mut TokenUsage, parsed: &Parsed) {
    usage.input_tokens += parsed.input_tokens;
    usage.output_tokens += parsed.output_tokens;
}

#[async_trait]
impl LanguageModel for OpenAiChat {
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse> {
        let mut usage = TokenUsage::default();
        let first = self.call(&request).await?;
        add(&mut usage, &first);
        let model = first.model.clone().unwrap_or_else(|| {
            request
                .model
                .clone()
                .unwrap_or_else(|| self.endpoint.config.model.clone())
        });
        if !matches!(request.response_format, ResponseFormat::JsonSchema { .. })
            || !first.tool_calls.is_empty()
        {
            return Ok(ChatResponse {
                content: first.content,
                model,
                usage,
                tool_calls: first.tool_calls,
            });
        }
        // Structured output: validate, and repair once.
        let error = match serde_json::from_str::<Value>(unfence(&first.content)) {
            Ok(value) => {
                return Ok(ChatResponse {
                    content: value.to_string(),
                    model,
                    usage,
                    tool_calls: Vec::new(),
                });
            }
            Err(e) => e.to_string(),
        };
        debug!(%error, "invalid JSON from the model; asking for a repair");
        let mut repair = request.clone();
        repair
            .messages
            .push(ChatMessage::new(ChatRole::Assistant, first.content.clone()));
        repair.messages.push(ChatMessage::new(
            ChatRole::User,
            format!("Your previous reply was not valid JSON ({error}). Reply again with only the JSON value that matches the schema, no prose and no code fence."),
        ));
        let second = self.call(&repair).await?;
        add(&mut usage, &second);
        match serde_json::from_str::<Value>(unfence(&second.content)) {
            Ok(value) => Ok(ChatResponse {
                content: value.to_string(),
                model,
                usage,
                tool_calls: Vec::new(),
            }),
            Err(e) => Err(MemoryError::serialization(format!(
                "the model returned invalid JSON twice (last error: {e}); tokens used: {} in, {} out",
                usage.input_tokens, usage.output_tokens
            ))),
        }
    }
}
