use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::{
    ChatRequest, ChatResponse, FinishReason, LanguageModel, ResponseFormat, TokenUsage,
};
use memory_core::structured::json_in_reply;
use tracing::warn;

use crate::config::{OpenAiConfig, StructuredOutput};
use crate::error::OpenAiError;
use crate::http::Endpoint;
use crate::wire::{self, Format};

/// The [`LanguageModel`] over an OpenAI-compatible `/chat/completions` endpoint.
///
/// Structured requests go out in the strongest format the server accepts (see
/// [`StructuredOutput`]); with `Auto`, a refusal moves this client, its clones and the
/// clients made from it with [`OpenAiChat::with_model`] to the next weaker format for good,
/// so only the first call pays for the discovery.
#[derive(Debug, Clone)]
pub struct OpenAiChat {
    endpoint: Endpoint,
    /// The [`Format`] structured requests use now (learned under `Auto`).
    format: Arc<AtomicU8>,
}

impl OpenAiChat {
    /// A client for `config`.
    pub fn new(config: OpenAiConfig) -> Result<Self> {
        let start = match config.structured_output {
            StructuredOutput::Auto | StructuredOutput::JsonSchema => Format::JsonSchema,
            StructuredOutput::JsonObject => Format::JsonObject,
            StructuredOutput::Text => Format::Text,
        };
        Ok(Self {
            endpoint: Endpoint::new(config)?,
            format: Arc::new(AtomicU8::new(start as u8)),
        })
    }

    /// A client of the same endpoint (and connection pool) for another model, sharing what
    /// this one learned about the server's structured output.
    pub fn with_model(&self, model: impl Into<String>) -> Self {
        let mut endpoint = self.endpoint.clone();
        endpoint.config.model = model.into();
        Self {
            endpoint,
            format: Arc::clone(&self.format),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.endpoint.config
    }

    /// The structured-output format this client sends now: `json_schema`, `json_object` or
    /// `text` (learned from refusals under [`StructuredOutput::Auto`]).
    pub fn structured_format(&self) -> &'static str {
        Format::from_level(self.format.load(Ordering::Relaxed)).name()
    }

    /// Moves to the format after `refused` unless another call already did, or the mode is
    /// fixed. Returns the format to try next.
    fn fall_back(&self, refused: Format, error: &OpenAiError) -> Option<Format> {
        if self.endpoint.config.structured_output != StructuredOutput::Auto {
            return None;
        }
        let weaker = refused.weaker()?;
        match self.format.compare_exchange(
            refused as u8,
            weaker as u8,
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            Ok(_) => {
                warn!(
                    refused = refused.name(),
                    next = weaker.name(),
                    %error,
                    url = %self.endpoint.config.base_url,
                    "the server refused this structured-output format; falling back for every later call"
                );
                Some(weaker)
            }
            // Another call moved first: use what it settled on.
            Err(now) => Some(Format::from_level(now).max(weaker)),
        }
    }
}

#[async_trait]
impl LanguageModel for OpenAiChat {
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse> {
        let structured = matches!(request.response_format, ResponseFormat::JsonSchema { .. });
        let deadline = self.endpoint.deadline();
        let mut format = Format::from_level(self.format.load(Ordering::Relaxed));
        let mut requests = 0;
        let parsed = loop {
            let body = wire::body(&request, &self.endpoint.config.model, format);
            match self
                .endpoint
                .post("chat/completions", &body, &request.headers, deadline)
                .await
            {
                Ok(reply) => {
                    requests += reply.attempts;
                    break wire::parse(&reply.body)?;
                }
                Err(error) => {
                    requests += error.attempts();
                    let refused = matches!(
                        error,
                        OpenAiError::Status {
                            refused_format: true,
                            ..
                        }
                    );
                    match (structured && refused)
                        .then(|| self.fall_back(format, &error))
                        .flatten()
                    {
                        Some(next) => format = next,
                        None => return Err(error.into()),
                    }
                }
            }
        };
        let model = parsed.model.clone().unwrap_or_else(|| {
            request
                .model
                .clone()
                .unwrap_or_else(|| self.endpoint.config.model.clone())
        });
        // Structured replies lose a fence or prose around the object; the caller validates
        // and repairs (one repair layer, in the caller, where the expected type is known).
        let content = if structured
            && parsed.tool_calls.is_empty()
            && parsed.finish_reason != FinishReason::Length
        {
            json_in_reply(&parsed.content).to_owned()
        } else {
            parsed.content
        };
        Ok(ChatResponse {
            content,
            model,
            usage: TokenUsage {
                input_tokens: parsed.input_tokens,
                output_tokens: parsed.output_tokens,
            },
            tool_calls: parsed.tool_calls,
            finish_reason: parsed.finish_reason,
            requests,
        })
    }
}
