use std::time::Duration;

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
    /// A config with defaults: 60 s timeout, 3 retries from 500 ms up to 30 s, no key.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(60),
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

    /// Sets the retry policy.
    pub fn retries(mut self, max_retries: u32, initial_backoff: Duration) -> Self {
        self.max_retries = max_retries;
        self.initial_backoff = initial_backoff;
        self
    }
}
