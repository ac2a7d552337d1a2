use std::time::Duration;

use async_trait::async_trait;
use memory_core::ports::{
    ChatMessage, ChatRequest, ChatResponse, ChatRole, LanguageModel, ResponseFormat, TokenUsage,
};
use memory_core::{MemoryError, Result};
use reqwest::StatusCode;
use serde_json::Value;
use tracing::{debug, warn};

use crate::config::OpenAiConfig;
use crate::wire::{self, Parsed, unfence};

const BACKEND: &str = "openai";

/// The [`LanguageModel`] over an OpenAI-compatible `/chat/completions` endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiChat {
    client: reqwest::Client,
    config: OpenAiConfig,
}

impl OpenAiChat {
    /// A client for `config`.
    pub fn new(config: OpenAiConfig) -> Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .build()
            .map_err(|e| MemoryError::backend(BACKEND, e))?;
        Ok(Self { client, config })
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let exponential = self
            .config
            .initial_backoff
            .saturating_mul(2u32.saturating_pow(attempt));
        retry_after
            .unwrap_or(exponential)
            .min(self.config.max_backoff)
    }

    /// One HTTP exchange with retries; returns the parsed body.
    async fn call(&self, request: &ChatRequest) -> Result<Parsed> {
        let url = match &self.config.query {
            Some(query) => format!("{}/chat/completions?{query}", self.config.base_url),
            None => format!("{}/chat/completions", self.config.base_url),
        };
        let body = wire::body(request, &self.config.model);
        let mut attempt = 0;
        loop {
            let mut http = self.client.post(&url).json(&body);
            match (&self.config.api_key, &self.config.api_key_header) {
                (Some(key), Some(header)) => http = http.header(header.as_str(), key.as_str()),
                (Some(key), None) => http = http.bearer_auth(key),
                (None, _) => {}
            }
            for (name, value) in &request.headers {
                http = http.header(name, value);
            }
            let (retryable, retry_after, error) = match http.send().await {
                Ok(response) => {
                    let status = response.status();
                    let retry_after = response
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(Duration::from_secs);
                    if status.is_success() {
                        let value: Value = response.json().await.map_err(|e| {
                            MemoryError::backend(BACKEND, format!("response is not JSON: {e}"))
                        })?;
                        return wire::parse(&value);
                    }
                    let text = response.text().await.unwrap_or_default();
                    let excerpt: String = text.chars().take(300).collect();
                    let retryable =
                        status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error();
                    (
                        retryable,
                        retry_after,
                        format!("HTTP {status} from {url}: {excerpt}"),
                    )
                }
                Err(e) => (
                    e.is_timeout() || e.is_connect() || e.is_request(),
                    None,
                    format!("request to {url} failed: {e}"),
                ),
            };
            if !retryable || attempt >= self.config.max_retries {
                let tries = attempt + 1;
                return Err(MemoryError::backend(
                    BACKEND,
                    format!("{error} (after {tries} attempt(s))"),
                ));
            }
            let wait = self.backoff(attempt, retry_after);
            warn!(attempt, ?wait, %error, "retrying chat completion");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
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
                .unwrap_or_else(|| self.config.model.clone())
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
