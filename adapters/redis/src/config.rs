//! How to reach Redis and which keys are the deployment's.

use std::time::Duration;

/// The connection URL and the key prefix of a deployment.
///
/// ```
/// let config = memory_redis::RedisConfig::new("redis://127.0.0.1:6379/").key_prefix("memory:acme:");
/// assert_eq!(config.prefix(), "memory:acme:");
/// ```
#[derive(Clone)]
pub struct RedisConfig {
    pub(crate) url: String,
    pub(crate) prefix: String,
    pub(crate) response_timeout: Duration,
}

impl std::fmt::Debug for RedisConfig {
    /// The URL is left out: it may hold a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConfig")
            .field("prefix", &self.prefix)
            .field("response_timeout", &self.response_timeout)
            .finish_non_exhaustive()
    }
}

impl RedisConfig {
    /// `url` (`redis://[user:password@]host:port/db`), keys under `memory:`.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            prefix: "memory:".into(),
            response_timeout: Duration::from_secs(5),
        }
    }

    /// Every key of the deployment starts with `prefix` (it must end in `:`); deleting a
    /// session or a profile removes only keys under it. Two deployments on one server need
    /// prefixes of which neither starts with the other (`memory:a:` and `memory:b:`, not
    /// `memory:` and `memory:b:`).
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long one command may wait for its answer before it fails as transient (5 s).
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}
