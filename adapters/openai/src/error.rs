//! This adapter's own errors, and how each maps into the core's kinds (the cause stays
//! reachable as the source).

use memory_core::MemoryError;

pub(crate) const BACKEND: &str = "openai";

/// What can go wrong talking to an OpenAI-compatible endpoint.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenAiError {
    /// The HTTP client could not be built.
    #[error("building the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    /// The server answered with an error status on every attempt.
    #[error("HTTP {status} from {url}: {excerpt} (after {attempts} attempt(s))")]
    Status {
        /// The last status.
        status: reqwest::StatusCode,
        /// The URL.
        url: String,
        /// The start of the body.
        excerpt: String,
        /// Attempts made.
        attempts: u32,
        /// The body says the request's `response_format` was refused.
        refused_format: bool,
    },
    /// The call's deadline passed before an attempt succeeded.
    #[error("no answer from {url} within the call's deadline of {deadline:?} ({attempts} attempt(s){})", last.as_ref().map(|l| format!("; last error: {l}")).unwrap_or_default())]
    Deadline {
        /// The URL.
        url: String,
        /// The deadline.
        deadline: std::time::Duration,
        /// Attempts made.
        attempts: u32,
        /// The last attempt's error, if one failed before the deadline.
        last: Option<String>,
    },
    /// The request failed on every attempt (timeout, connection).
    #[error("request to {url} failed: {source} (after {attempts} attempt(s))")]
    Request {
        /// The URL.
        url: String,
        /// The last cause.
        #[source]
        source: reqwest::Error,
        /// Attempts made.
        attempts: u32,
    },
    /// A success status whose body is not JSON.
    #[error("response is not JSON: {0}")]
    NotJson(#[source] reqwest::Error),
    /// JSON of the wrong shape.
    #[error("malformed {what}: {detail}")]
    Malformed {
        /// Which reply (`chat completion`, `/embeddings reply`).
        what: &'static str,
        /// What is wrong with it.
        detail: String,
    },
}

impl From<OpenAiError> for MemoryError {
    fn from(error: OpenAiError) -> Self {
        let transient = match &error {
            OpenAiError::Status {
                status, excerpt, ..
            } => retryable_status(*status, excerpt),
            OpenAiError::Request { source, .. } => source.is_timeout() || source.is_connect(),
            OpenAiError::Deadline { .. } => true,
            _ => false,
        };
        if transient {
            MemoryError::transient(BACKEND, error)
        } else {
            MemoryError::backend(BACKEND, error)
        }
    }
}

impl OpenAiError {
    /// Requests sent before this error.
    pub(crate) fn attempts(&self) -> u32 {
        match self {
            Self::Status { attempts, .. }
            | Self::Request { attempts, .. }
            | Self::Deadline { attempts, .. } => *attempts,
            Self::Client(_) | Self::NotJson(_) | Self::Malformed { .. } => 1,
        }
    }
}

/// True when an error reply refuses the request's `response_format`: a client error or a
/// deterministic server error whose body names the format (llama-cpp-python answers a
/// `json_schema` request with a 500 "Input should be 'text' or 'json_object'"; others send a
/// 400 naming `response_format`). Authentication, not-found and rate-limit replies never are.
pub(crate) fn refuses_format(status: reqwest::StatusCode, body: &str) -> bool {
    use reqwest::StatusCode;
    let excluded = [
        StatusCode::UNAUTHORIZED,
        StatusCode::FORBIDDEN,
        StatusCode::NOT_FOUND,
        StatusCode::REQUEST_TIMEOUT,
        StatusCode::TOO_MANY_REQUESTS,
        StatusCode::BAD_GATEWAY,
        StatusCode::SERVICE_UNAVAILABLE,
        StatusCode::GATEWAY_TIMEOUT,
    ];
    if !(status.is_client_error() || status.is_server_error()) || excluded.contains(&status) {
        return false;
    }
    let body = body.to_ascii_lowercase();
    [
        "response_format",
        "json_schema",
        "json_object",
        "input should be 'text'",
    ]
    .iter()
    .any(|marker| body.contains(marker))
}

/// True when an error status may pass on a later attempt: a rate limit or a server error,
/// unless the body says the request's format itself was refused.
pub(crate) fn retryable_status(status: reqwest::StatusCode, body: &str) -> bool {
    (status == reqwest::StatusCode::TOO_MANY_REQUESTS || status.is_server_error())
        && !refuses_format(status, body)
}

/// A reply of the wrong shape.
pub(crate) fn malformed(what: &'static str, detail: impl Into<String>) -> MemoryError {
    OpenAiError::Malformed {
        what,
        detail: detail.into(),
    }
    .into()
}
