//! One JSON POST to an OpenAI-compatible endpoint, with authentication, extra headers and
//! retries (429, 5xx, timeouts, connection errors; `Retry-After` honoured).

use std::time::Duration;

use memory_core::Result;
use serde_json::Value;
use tracing::warn;

use crate::config::OpenAiConfig;
use crate::error::OpenAiError;

/// A configured client for one endpoint.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    client: reqwest::Client,
    pub(crate) config: OpenAiConfig,
}

impl Endpoint {
    pub(crate) fn new(config: OpenAiConfig) -> Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .build()
            .map_err(OpenAiError::Client)?;
        Ok(Self { client, config })
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

    /// POSTs `body` to `{base_url}/{route}` and returns the JSON reply of the first successful
    /// attempt.
    pub(crate) async fn post(
        &self,
        route: &str,
        body: &Value,
        headers: &[(String, String)],
    ) -> Result<Value> {
        let url = match &self.config.query {
            Some(query) => format!("{}/{route}?{query}", self.config.base_url),
            None => format!("{}/{route}", self.config.base_url),
        };
        let mut attempt = 0;
        loop {
            let mut http = self.client.post(&url).json(body);
            match (&self.config.api_key, &self.config.api_key_header) {
                (Some(key), Some(header)) => http = http.header(header.as_str(), key.as_str()),
                (Some(key), None) => http = http.bearer_auth(key),
                (None, _) => {}
            }
            for (name, value) in headers {
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
                        return response
                            .json()
                            .await
                            .map_err(|e| OpenAiError::NotJson(e).into());
                    }
                    let text = response.text().await.unwrap_or_default();
                    let excerpt: String = text.chars().take(300).collect();
                    let retryable = crate::error::retryable_status(status, &text);
                    let error = OpenAiError::Status {
                        status,
                        url: url.clone(),
                        excerpt,
                        attempts: attempt + 1,
                    };
                    (retryable, retry_after, error)
                }
                Err(e) => (
                    e.is_timeout() || e.is_connect() || e.is_request(),
                    None,
                    OpenAiError::Request {
                        url: url.clone(),
                        source: e,
                        attempts: attempt + 1,
                    },
                ),
            };
            if !retryable || attempt >= self.config.max_retries {
                return Err(error.into());
            }
            let wait = self.backoff(attempt, retry_after);
            warn!(attempt, ?wait, %error, route, "retrying");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::error::retryable_status;
    use reqwest::StatusCode;

    #[test]
    fn format_refusals_are_recognised() {
        let refusal = r#"{"detail":[{"msg":"Input should be 'text' or 'json_object'","loc":["body","response_format","type"]}]}"#;
        assert!(!retryable_status(
            StatusCode::INTERNAL_SERVER_ERROR,
            refusal
        ));
        assert!(retryable_status(
            StatusCode::SERVICE_UNAVAILABLE,
            "upstream overloaded"
        ));
    }
}
