//! One JSON error shape for every failure, with a stable code per core error kind and the
//! HTTP status that says what happened (never a 200 for something that did not happen,
//! never a stack trace).

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use memory_core::MemoryError;
use serde::Serialize;
use utoipa::ToSchema;

/// The body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// A stable code and a sentence.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable, machine-readable: `invalid_input`, `not_found`, `already_exists`, `conflict`,
    /// `refused`, `not_supported`, `unavailable`, `busy`, `timeout`, `unauthorized`,
    /// `forbidden`, `rate_limited`, `too_large`, `method_not_allowed`,
    /// `unsupported_media_type`, `not_acceptable`, `internal`.
    pub code: &'static str,
    /// A sentence for people.
    pub message: String,
}

/// An error on its way to becoming a response.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    retry_after: Option<u64>,
    /// Why a 503 refused (kept from the caller, counted and logged by the metrics layer).
    cause: Option<String>,
}

/// A 503's reason, on its response for the metrics layer: counted per route and code, and
/// logged at most once a second per route with how many were refused (never a line per
/// refused request, which under overload would drown the log).
#[derive(Debug, Clone)]
pub struct Refusal {
    /// The error code (`busy`, `timeout`, `unavailable`, ...).
    pub code: &'static str,
    /// What refused it, for the log.
    pub cause: String,
}

/// Seconds a client should wait before retrying a transient failure.
const RETRY_AFTER_SECS: &str = "1";

impl ApiError {
    /// An error of any status and code.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after: None,
            cause: None,
        }
    }

    /// A 400 for input the handler refuses before calling a service.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_input", message)
    }

    /// A 413 for a body, message or batch past a limit.
    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", message)
    }

    /// A 401 for a missing or unknown API key.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    /// A 429 with `Retry-After`: the key made more requests than its rate allows.
    pub fn rate_limited(wait: std::time::Duration) -> Self {
        let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        Self {
            retry_after: Some(seconds.max(1)),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                format!("this key is past its request rate; retry in {wait:?}"),
            )
        }
    }

    /// A 503 with `Retry-After` (a limit was reached, or a backend is away for a moment).
    pub fn unavailable(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, code, message)
    }

    /// The status this error answers with.
    pub fn status(&self) -> StatusCode {
        self.status
    }
}

/// The error code of a 503 whose backend failed outright (logged at ERROR, not WARN).
pub const BACKEND_FAILED: &str = "backend_failed";

impl From<MemoryError> for ApiError {
    fn from(error: MemoryError) -> Self {
        let (status, code) = match &error {
            MemoryError::InvalidInput { .. } => (StatusCode::BAD_REQUEST, "invalid_input"),
            MemoryError::TooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "too_large"),
            MemoryError::NotFound { .. } => (StatusCode::NOT_FOUND, "not_found"),
            MemoryError::AlreadyExists { .. } => (StatusCode::CONFLICT, "already_exists"),
            MemoryError::Conflict { .. } => (StatusCode::CONFLICT, "conflict"),
            MemoryError::Refused { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "refused"),
            MemoryError::NotSupported { .. } => (StatusCode::NOT_IMPLEMENTED, "not_supported"),
            MemoryError::Transient { .. } => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            // A backend that failed outright (a lost index directory, a full disk) is the
            // deployment's trouble, not the request's: a 503 the caller may retry once an
            // operator has seen the cause in the log, never a 500.
            MemoryError::Backend { .. } => (StatusCode::SERVICE_UNAVAILABLE, BACKEND_FAILED),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        if status == StatusCode::SERVICE_UNAVAILABLE {
            // Counted and logged (at most once a second per route) by the metrics layer.
            let message = if code == BACKEND_FAILED {
                "a backend failed; retry later (the cause is in the server's log)"
            } else {
                "a backend is unavailable for a moment; retry shortly"
            };
            return Self {
                cause: Some(error.to_string()),
                ..Self::unavailable(code, message)
            };
        }
        let message = if status.is_server_error() {
            // The cause goes to the log, not to the caller.
            tracing::error!(error = %error, "request failed");
            "the server failed to complete the request (see its log)".to_owned()
        } else {
            error.to_string()
        };
        Self::new(status, code, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let refusal = (self.status == StatusCode::SERVICE_UNAVAILABLE).then(|| Refusal {
            code: self.code,
            cause: self.cause.clone().unwrap_or_else(|| self.message.clone()),
        });
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: self.message,
            },
        };
        let mut response = (self.status, Json(body)).into_response();
        let headers = response.headers_mut();
        if let Some(seconds) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        } else if self.status == StatusCode::SERVICE_UNAVAILABLE {
            headers.insert(
                header::RETRY_AFTER,
                HeaderValue::from_static(RETRY_AFTER_SECS),
            );
        }
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(refusal) = refusal {
            response.extensions_mut().insert(refusal);
        }
        response
    }
}

/// A handler's result.
pub type ApiResult<T> = Result<T, ApiError>;

/// Middleware: a failure answered outside the handlers (axum's own rejections of a body too
/// large, malformed JSON, an unknown route or method) gets the same JSON shape as every
/// other error. Malformed JSON, which axum answers with 422, is a 400 here: 422 means over
/// budget or read-only.
pub async fn json_errors(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json") || v.starts_with("text/event-stream"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = match axum::body::to_bytes(body, 64 * 1024).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
        Err(_) => String::new(),
    };
    let (status, code) = match status {
        StatusCode::UNPROCESSABLE_ENTITY | StatusCode::BAD_REQUEST => {
            (StatusCode::BAD_REQUEST, "invalid_input")
        }
        StatusCode::PAYLOAD_TOO_LARGE => (status, "too_large"),
        StatusCode::NOT_FOUND => (status, "not_found"),
        StatusCode::METHOD_NOT_ALLOWED => (status, "method_not_allowed"),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => (status, "unsupported_media_type"),
        StatusCode::NOT_ACCEPTABLE => (status, "not_acceptable"),
        StatusCode::FORBIDDEN => (status, "forbidden"),
        StatusCode::UNAUTHORIZED => (status, "unauthorized"),
        StatusCode::SERVICE_UNAVAILABLE => (status, "unavailable"),
        s if s.is_server_error() => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        s => (s, "invalid_input"),
    };
    // A 503 is counted and logged by the metrics layer (its Refusal), not here.
    let message = if status.is_server_error() && status != StatusCode::SERVICE_UNAVAILABLE {
        tracing::error!(%status, body = %text, "request failed outside a handler");
        "the server could not complete the request (see its log)".to_owned()
    } else if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_owned()
    } else {
        text
    };
    let mut out = ApiError::new(status, code, message).into_response();
    for name in [header::ALLOW, header::RETRY_AFTER] {
        if let Some(value) = parts.headers.get(&name) {
            out.headers_mut().insert(name, value.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A backend that failed outright is the deployment's trouble: a 503 with `Retry-After`
    /// and its own code, the cause kept for the log but not told to the caller.
    #[test]
    fn a_failed_backend_is_a_503_with_retry_after_never_a_500() {
        let cause = "opening /data/tantivy/meta.json: No such file or directory";
        let response = ApiError::from(MemoryError::backend("tantivy", cause)).into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(response.headers().contains_key(header::RETRY_AFTER));
        let refusal = response.extensions().get::<Refusal>().unwrap();
        assert_eq!(refusal.code, BACKEND_FAILED);
        assert!(refusal.cause.contains(cause), "{}", refusal.cause);

        let transient = ApiError::from(MemoryError::transient("redis", "connection refused"));
        assert_eq!(transient.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(transient.code, "unavailable");
        let bug = ApiError::from(MemoryError::serialization("bad row"));
        assert_eq!(bug.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }
}
