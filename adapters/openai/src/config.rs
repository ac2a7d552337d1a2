use std::time::Duration;

/// Which structured-output request a server accepts, strongest first.
///
/// | mode | request | who needs it |
/// |---|---|---|
/// | `JsonSchema` | `response_format: json_schema` (strict when the schema allows) | OpenAI, recent vLLM, Ollama, LM Studio |
/// | `JsonObject` | `response_format: json_object` with the schema beside it (llama.cpp servers enforce it) and in the prompt | llama.cpp servers, older vLLM and gateways |
/// | `Text` | no `response_format`, schema in the prompt | anything else |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StructuredOutput {
    /// Start with `JsonSchema`; when the server refuses a format, fall back to the next one,
    /// and remember it for every later call of this client (and its clones).
    #[default]
    Auto,
    /// Always `json_schema`; a refusal is an error.
    JsonSchema,
    /// Always `json_object` with the schema in the prompt; a refusal is an error.
    JsonObject,
    /// Never a `response_format`; the schema goes in the prompt.
    Text,
}

impl std::str::FromStr for StructuredOutput {
    type Err = String;

    /// `auto`, `json_schema`, `json_object` or `text`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Self::Auto),
            "json_schema" => Ok(Self::JsonSchema),
            "json_object" => Ok(Self::JsonObject),
            "text" => Ok(Self::Text),
            other => Err(format!(
                "unknown structured output mode {other:?} (expected auto, json_schema, json_object or text)"
            )),
        }
    }
}

/// Where and how to call an OpenAI-compatible endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Base URL up to and including the version (`https://api.openai.com/v1`).
    pub base_url: String,
    /// Default model.
    pub model: String,
    /// Bearer token; `None` sends no `Authorization` header (local servers).
    pub api_key: Option<String>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Limit on one whole call: every retry, backoff and format fallback included.
    pub deadline: Duration,
    /// Which structured-output request the server accepts.
    pub structured_output: StructuredOutput,
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First backoff; doubles each retry.
    pub initial_backoff: Duration,
    /// Backoff cap (also caps `Retry-After`).
    pub max_backoff: Duration,
    /// Query string appended to every URL (Azure: `api-version=2024-10-21`).
    pub query: Option<String>,
    /// Send the key in this header instead of `Authorization: Bearer` (Azure: `api-key`).
    pub api_key_header: Option<String>,
}

impl OpenAiConfig {
    /// A config with defaults: 60 s per request, 180 s per call, 3 retries from 500 ms up to
    /// 30 s, structured output learned per endpoint, no key.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(60),
            deadline: Duration::from_secs(180),
            structured_output: StructuredOutput::Auto,
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            query: None,
            api_key_header: None,
        }
    }

    /// An Azure OpenAI deployment: `https://{resource}.openai.azure.com/openai/deployments/{deployment}`
    /// as the base URL, the `api-version` query and the `api-key` header.
    pub fn azure(
        base_url: impl Into<String>,
        deployment: impl Into<String>,
        api_version: &str,
    ) -> Self {
        let mut config = Self::new(base_url, deployment);
        config.query = Some(format!("api-version={api_version}"));
        config.api_key_header = Some("api-key".into());
        config
    }

    /// Reads the API key from the environment variable `var` (unset means no key).
    pub fn api_key_from_env(mut self, var: &str) -> Self {
        self.api_key = std::env::var(var).ok().filter(|k| !k.is_empty());
        self
    }

    /// Sets the API key.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sets the timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the limit on a whole call, retries included.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Sets which structured-output request the server accepts.
    pub fn structured_output(mut self, mode: StructuredOutput) -> Self {
        self.structured_output = mode;
        self
    }

    /// Sets the retry policy.
    pub fn retries(mut self, max_retries: u32, initial_backoff: Duration) -> Self {
        self.max_retries = max_retries;
        self.initial_backoff = initial_backoff;
        self
    }
}
