//! Which bucket, where, and with which credentials.

use std::time::Duration;

/// Where the credentials come from.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    /// An access key and secret given directly (read from the environment variables that
    /// `[storage.s3]` names).
    Static {
        /// The access key id.
        access_key_id: String,
        /// The secret access key.
        secret_access_key: String,
    },
    /// A named profile of `~/.aws/credentials` / `~/.aws/config`.
    Profile(String),
    /// The SDK's default chain (environment, profile, web identity, container, instance).
    Default,
}

impl std::fmt::Debug for Credentials {
    /// Secrets are left out.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Static { access_key_id, .. } => f
                .debug_struct("Static")
                .field("access_key_id", access_key_id)
                .finish_non_exhaustive(),
            Self::Profile(name) => f.debug_tuple("Profile").field(name).finish(),
            Self::Default => f.write_str("Default"),
        }
    }
}

/// A bucket, the prefix of every key, and how to reach it.
///
/// ```
/// let config = memory_s3::S3Config::new("agent-memory")
///     .endpoint("http://127.0.0.1:8333")
///     .prefix("tenants/acme/");
/// assert_eq!(config.bucket(), "agent-memory");
/// ```
#[derive(Debug, Clone)]
pub struct S3Config {
    pub(crate) bucket: String,
    pub(crate) prefix: String,
    pub(crate) endpoint: Option<String>,
    pub(crate) region: String,
    pub(crate) credentials: Credentials,
    pub(crate) conditional_writes: bool,
    pub(crate) max_attempts: u32,
    pub(crate) timeout: Duration,
}

impl S3Config {
    /// `bucket` on AWS (region `us-east-1`, the default credential chain, no prefix).
    pub fn new(bucket: impl Into<String>) -> Self {
        Self {
            bucket: bucket.into(),
            prefix: String::new(),
            endpoint: None,
            region: "us-east-1".into(),
            credentials: Credentials::Default,
            conditional_writes: true,
            max_attempts: 5,
            timeout: Duration::from_secs(60),
        }
    }

    /// Every key starts with `prefix` (empty, or ending in `/`).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// A custom endpoint (R2, MinIO, SeaweedFS), addressed path-style.
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// The region (`auto` for R2).
    pub fn region(mut self, region: impl Into<String>) -> Self {
        self.region = region.into();
        self
    }

    /// An access key and secret.
    pub fn static_credentials(
        mut self,
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<String>,
    ) -> Self {
        self.credentials = Credentials::Static {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
        };
        self
    }

    /// Where the credentials come from.
    pub fn credentials(mut self, credentials: Credentials) -> Self {
        self.credentials = credentials;
        self
    }

    /// Whether the server honours `If-None-Match: *` and `If-Match` on writes (AWS, R2 and
    /// SeaweedFS do). Off: create-only puts are `NotSupported`, never silent overwrites.
    pub fn conditional_writes(mut self, on: bool) -> Self {
        self.conditional_writes = on;
        self
    }

    /// Attempts per request (with backoff) before a throttled or failing request is
    /// reported as transient (5).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// How long one attempt may take (60 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The bucket.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The key prefix.
    pub fn key_prefix(&self) -> &str {
        &self.prefix
    }
}
