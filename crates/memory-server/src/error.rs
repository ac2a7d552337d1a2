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
    /// `refused`, `not_supported`, `unavailable`, `busy`, `timeout`, `internal`.
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
}

/// Seconds a client should wait before retrying a transient failure.
const RETRY_AFTER_SECS: &str = "1";

impl ApiError {
    /// A 400 for input the handler refuses before calling a service.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code: "invalid_input",
            message: message.into(),
        }
    }

    /// A 503 with `Retry-After` (a limit was reached, or a backend is away for a moment).
    pub fn unavailable(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code,
            message: message.into(),
        }
    }

    /// The status this error answers with.
    pub fn status(&self) -> StatusCode {
        self.status
    }
}

impl From<MemoryError> for ApiError {
    fn from(error: MemoryError) -> Self {
        let (status, code) = match &error {
            MemoryError::InvalidInput { .. } => (StatusCode::BAD_REQUEST, "invalid_input"),
            MemoryError::NotFound { .. } => (StatusCode::NOT_FOUND, "not_found"),
            MemoryError::AlreadyExists { .. } => (StatusCode::CONFLICT, "already_exists"),
            MemoryError::Conflict { .. } => (StatusCode::CONFLICT, "conflict"),
            MemoryError::Refused { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "refused"),
            MemoryError::NotSupported { .. } => (StatusCode::NOT_IMPLEMENTED, "not_supported"),
            MemoryError::Transient { .. } => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        let message = if status == StatusCode::INTERNAL_SERVER_ERROR {
            // The cause goes to the log, not to the caller.
            tracing::error!(error = %error, "request failed");
            "the server failed to complete the request (see its log)".to_owned()
        } else {
            error.to_string()
        };
        Self {
            status,
            code,
            message,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: self.message,
            },
        };
        let mut response = (self.status, Json(body)).into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from_static(RETRY_AFTER_SECS),
            );
        }
        response
    }
}

/// A handler's result.
pub type ApiResult<T> = Result<T, ApiError>;
