use std::time::Duration;

/// Where and how to connect.
///
/// ```
/// use memory_postgres::PostgresConfig;
/// let config = PostgresConfig::new("postgres://app@127.0.0.1:5432/app").schema("memory").max_connections(20);
/// assert_eq!(config.schema, "memory");
/// ```
#[derive(Debug, Clone)]
pub struct PostgresConfig {
    /// The connection URL (credentials included; read it from a secret, not a file).
    pub url: String,
    /// The schema every table lives in (created when missing).
    pub schema: String,
    /// Most connections in the pool.
    pub max_connections: u32,
    /// How long to wait for a connection from the pool.
    pub acquire_timeout: Duration,
    /// How long an idempotent operation (every read, and writes whose repeat changes
    /// nothing) keeps retrying a transient failure (a lost connection, a server restart, a
    /// serialization failure) before returning it; zero turns retries off.
    pub retry_for: Duration,
}

impl PostgresConfig {
    /// Defaults: schema `memory`, 10 connections, 10 s to acquire one, idempotent operations
    /// retried for 10 s.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            schema: "memory".to_owned(),
            max_connections: 10,
            acquire_timeout: Duration::from_secs(10),
            retry_for: Duration::from_secs(10),
        }
    }

    /// Sets how long to wait for a pooled connection.
    pub fn acquire_timeout(mut self, timeout: Duration) -> Self {
        self.acquire_timeout = timeout;
        self
    }

    /// Sets how long idempotent operations retry transient failures.
    pub fn retry_for(mut self, duration: Duration) -> Self {
        self.retry_for = duration;
        self
    }

    /// Sets the schema.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// Sets the pool size (at least 1).
    pub fn max_connections(mut self, n: u32) -> Self {
        self.max_connections = n.max(1);
        self
    }
}
