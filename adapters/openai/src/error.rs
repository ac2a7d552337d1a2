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
            _ => false,
        };
        if transient {
            MemoryError::transient(BACKEND, error)
        } else {
            MemoryError::backend(BACKEND, error)
        }
    }
}

/// True when an error status may pass on a later attempt: a rate limit or a server error,
/// unless the body says the request's format itself was refused (a server that does not
/// accept `response_format: json_schema` answers so, some with a 500).
pub(crate) fn retryable_status(status: reqwest::StatusCode, body: &str) -> bool {
    let refused_format = {
        let body = body.to_ascii_lowercase();
        ["response_format", "json_schema", "input should be"]
            .iter()
            .any(|marker| body.contains(marker))
    };
    (status == reqwest::StatusCode::TOO_MANY_REQUESTS || status.is_server_error())
        && !refused_format
}

/// A reply of the wrong shape.
pub(crate) fn malformed(what: &'static str, detail: impl Into<String>) -> MemoryError {
    OpenAiError::Malformed {
        what,
        detail: detail.into(),
    }
    .into()
}
