//! S3's errors mapped into the one public error: a timeout, a lost connection, throttling
//! (`SlowDown`, 503) or a 5xx answer (after the SDK's own retries with backoff) is
//! `Transient`; anything else (access denied, a missing bucket, a bad signature) is `Backend`,
//! with the SDK's error kept as the source.

use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use memory_core::MemoryError;

pub(crate) const BACKEND: &str = "s3";

/// Why a bucket cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum S3AdapterError {
    /// A prefix that does not end in `/` (or is not a valid key start).
    #[error("key prefix {0:?} must be empty or '/'-separated names ending in '/'")]
    BadPrefix(String),
    /// The bucket does not answer (missing, or the credentials may not use it).
    #[error("bucket {bucket:?}: {message}")]
    Bucket {
        /// The bucket.
        bucket: String,
        /// What the server said.
        message: String,
    },
}

/// An operation's failure, with what was being done.
#[derive(Debug, thiserror::Error)]
#[error("{operation}: {message}")]
struct OperationError {
    operation: &'static str,
    message: String,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

/// The HTTP status of a service error, if the server answered.
pub(crate) fn status<E, R>(error: &SdkError<E, R>) -> Option<u16>
where
    R: HttpStatus,
{
    error.raw_response().map(HttpStatus::status_code)
}

/// Access to the status of the SDK's raw response type.
pub(crate) trait HttpStatus {
    fn status_code(&self) -> u16;
}

impl HttpStatus for aws_sdk_s3::config::http::HttpResponse {
    fn status_code(&self) -> u16 {
        self.status().as_u16()
    }
}

/// The public error of a failed S3 operation.
pub(crate) fn s3<E>(
    operation: &'static str,
    error: SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
) -> MemoryError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let code = error.code().map(str::to_owned);
    let status = status(&error);
    let transient = match &error {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            true
        }
        _ => {
            matches!(status, Some(500 | 502 | 503 | 504))
                || matches!(
                    code.as_deref(),
                    Some("SlowDown" | "RequestTimeout" | "InternalError" | "ServiceUnavailable")
                )
        }
    };
    let message = match (&code, status) {
        (Some(code), Some(status)) => format!(
            "{code} (HTTP {status}){}",
            error
                .message()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        ),
        _ => aws_sdk_s3::error::DisplayErrorContext(&error).to_string(),
    };
    let wrapped = OperationError {
        operation,
        message,
        source: Box::new(error),
    };
    if transient {
        MemoryError::transient(BACKEND, wrapped)
    } else {
        MemoryError::backend(BACKEND, wrapped)
    }
}

/// A stored value this adapter cannot read back.
pub(crate) fn corrupt(what: &str, detail: impl Into<String>) -> MemoryError {
    MemoryError::backend(BACKEND, format!("unreadable {what}: {}", detail.into()))
}
