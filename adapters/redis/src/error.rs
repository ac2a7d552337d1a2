//! Redis's errors mapped into the one public error: a lost connection, a timeout or a
//! server that is loading, busy or failing over (`LOADING`, `TRYAGAIN`, `READONLY`, ...) is
//! `Transient` (a retry may succeed); anything else (a wrong password, a reply that does not
//! parse) is `Backend`, with the driver's error kept as the source.

use memory_core::MemoryError;
use redis::{RedisError, RetryMethod};

/// Why a Redis deployment cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum RedisAdapterError {
    /// A key prefix that could collide with another deployment's keys.
    #[error("key prefix {0:?} must be 1-128 printable ASCII characters ending in ':'")]
    BadPrefix(String),
}

/// The public error of a Redis failure.
pub(crate) fn redis(error: RedisError) -> MemoryError {
    let transient = error.is_io_error()
        || error.is_timeout()
        || error.is_connection_dropped()
        || error.is_connection_refusal()
        || matches!(
            error.retry_method(),
            RetryMethod::WaitAndRetry | RetryMethod::RefreshSlotsAndRetry
        );
    if transient {
        MemoryError::transient("redis", error)
    } else {
        MemoryError::backend("redis", error)
    }
}

/// A value stored by this adapter that it cannot read back (written by something else).
pub(crate) fn corrupt(what: &str, detail: impl Into<String>) -> MemoryError {
    MemoryError::backend("redis", format!("unreadable {what}: {}", detail.into()))
}
