//! One JSON POST to an OpenAI-compatible endpoint, with authentication, extra headers and
//! retries (429, 5xx, timeouts, connection errors; `Retry-After` honoured), all within the
//! call's deadline.

use std::time::{Duration, Instant};

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

/// A successful reply and the requests it took.
pub(crate) struct Reply {
    pub body: Value,
    pub attempts: u32,
}

impl Endpoint {
    pub(crate) fn new(config: OpenAiConfig) -> memory_core::Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .build()
            .map_err(OpenAiError::Client)?;
        Ok(Self { client, config })
    }

    /// When a call starting now must end.
    pub(crate) fn deadline(&self) -> Instant {
        Instant::now() + self.config.deadline
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
    /// attempt. No attempt runs, and no backoff sleeps, past `deadline`.
    pub(crate) async fn post(
        &self,
        route: &str,
        body: &Value,
        headers: &[(String, String)],
        deadline: Instant,
    ) -> Result<Reply, OpenAiError> {
        let url = match &self.config.query {
            Some(query) => format!("{}/{route}?{query}", self.config.base_url),
            None => format!("{}/{route}", self.config.base_url),
        };
        let mut attempt = 0;
        let mut last: Option<String> = None;
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(OpenAiError::Deadline {
                    url,
                    deadline: self.config.deadline,
                    attempts: attempt,
                    last,
                });
            }
            let mut http = self
                .client
                .post(&url)
                .timeout(remaining.min(self.config.timeout))
                .json(body);
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
                        return match response.json().await {
                            Ok(body) => Ok(Reply {
                                body,
                                attempts: attempt + 1,
                            }),
                            Err(e) => Err(OpenAiError::NotJson(e)),
                        };
                    }
                    let text = response.text().await.unwrap_or_default();
                    let excerpt: String = text.chars().take(300).collect();
                    let retryable = crate::error::retryable_status(status, &text);
                    let error = OpenAiError::Status {
                        status,
                        url: url.clone(),
                        excerpt,
                        attempts: attempt + 1,
                        refused_format: crate::error::refuses_format(status, &text),
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
                return Err(error);
            }
            let wait = self.backoff(attempt, retry_after);
            if Instant::now() + wait >= deadline {
                // Sleeping would end past the deadline: stop now, with the last error.
                return Err(OpenAiError::Deadline {
                    url,
                    deadline: self.config.deadline,
                    attempts: attempt + 1,
                    last: Some(error.to_string()),
                });
            }
            warn!(attempt, ?wait, %error, route, "retrying");
            last = Some(error.to_string());
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
        use crate::error::refuses_format;
        let llama = r#"{"detail":[{"msg":"Input should be 'text' or 'json_object'"}]}"#;
        assert!(refuses_format(StatusCode::INTERNAL_SERVER_ERROR, llama));
        assert!(refuses_format(
            StatusCode::BAD_REQUEST,
            "response_format json_schema is not supported"
        ));
        assert!(!refuses_format(
            StatusCode::UNAUTHORIZED,
            "bad key for response_format"
        ));
        assert!(!refuses_format(
            StatusCode::SERVICE_UNAVAILABLE,
            "json_schema backend overloaded"
        ));
        assert!(!refuses_format(StatusCode::BAD_REQUEST, "context too long"));
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
