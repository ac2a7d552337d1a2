//! What one server accepts at once and for how long, and the errors past those limits.

use std::time::Duration;

use axum::BoxError;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// The server's limits. Past them a request gets a clear error, never a hang.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Requests handled at once; more are refused at once with 503 and `Retry-After`.
    pub max_concurrent_requests: usize,
    /// How long one request may run; longer is a 503 with `Retry-After` (the work it did
    /// stands or not as the service's own atomicity says: appends and remembers are atomic).
    pub request_timeout: Duration,
}

impl Default for Limits {
    /// 64 requests at once, 30 s each.
    fn default() -> Self {
        Self {
            max_concurrent_requests: 64,
            request_timeout: Duration::from_secs(30),
        }
    }
}

/// The response for a request refused by a limit.
pub async fn refused(error: BoxError) -> Response {
    if error.is::<tower::load_shed::error::Overloaded>() {
        return ApiError::unavailable(
            "busy",
            "the server is handling as many requests as it takes; retry shortly",
        )
        .into_response();
    }
    if error.is::<tower::timeout::error::Elapsed>() {
        return ApiError::unavailable("timeout", "the request ran past the server's time limit")
            .into_response();
    }
    tracing::error!(%error, "middleware failed");
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "the server could not complete the request (see its log)",
    )
    .into_response()
}
