//! The connection every store of a deployment shares, the key prefix, and what the server
//! promises about acknowledged writes.

use memory_core::{MemoryError, Result};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::config::RedisConfig;
use crate::error::{RedisAdapterError, redis};

/// What the server does with an acknowledged write, read from its configuration at connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Durability {
    /// AOF with `appendfsync always`: an acknowledged write survives a crash of the server.
    EveryWrite,
    /// AOF with `appendfsync everysec`: up to about a second of acknowledged writes can be
    /// lost when the server crashes.
    AboutASecond,
    /// No AOF (`appendfsync no`, or snapshots only, or nothing): acknowledged writes since
    /// the last snapshot are lost when the server crashes.
    Snapshots,
    /// The server does not say (`CONFIG` is disabled, as on several managed services, or
    /// the user may not run it): the operator must know the setting.
    Unknown,
}

/// A Redis deployment: one multiplexed, self-reconnecting connection and the key prefix.
#[derive(Clone)]
pub struct RedisDatabase {
    pub(crate) connection: ConnectionManager,
    pub(crate) prefix: String,
    durability: Durability,
}

impl std::fmt::Debug for RedisDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisDatabase")
            .field("prefix", &self.prefix)
            .field("durability", &self.durability)
            .finish_non_exhaustive()
    }
}

fn valid_prefix(prefix: &str) -> bool {
    (1..=128).contains(&prefix.len())
        && prefix.ends_with(':')
        && prefix.bytes().all(|b| b.is_ascii_graphic())
}

impl RedisDatabase {
    /// Connects, and reads the server's persistence settings: a warning is logged when
    /// acknowledged writes can be lost in a crash (no AOF, or `appendfsync everysec`).
    pub async fn connect(config: RedisConfig) -> Result<Self> {
        if !valid_prefix(&config.prefix) {
            return Err(MemoryError::invalid(
                RedisAdapterError::BadPrefix(config.prefix).to_string(),
            ));
        }
        let client = redis::Client::open(config.url.as_str()).map_err(redis)?;
        let manager_config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(config.response_timeout))
            .set_connection_timeout(Some(config.response_timeout))
            .set_number_of_retries(3);
        let connection = ConnectionManager::new_with_config(client, manager_config)
            .await
            .map_err(redis)?;
        let durability = match read_durability(&mut connection.clone()).await {
            Ok(durability) => durability,
            Err(error) => {
                tracing::warn!(%error, "cannot read redis's persistence settings (CONFIG GET refused); durability unknown");
                Durability::Unknown
            }
        };
        match durability {
            Durability::EveryWrite | Durability::Unknown => {}
            Durability::AboutASecond => tracing::warn!(
                "redis runs with appendfsync everysec: up to a second of acknowledged writes can be lost in a crash"
            ),
            Durability::Snapshots => tracing::warn!(
                "redis runs without an fsync'd append-only file: acknowledged writes since the last snapshot are lost in a crash"
            ),
        }
        Ok(Self {
            connection,
            prefix: config.prefix,
            durability,
        })
    }

    /// What the server promises about acknowledged writes.
    pub fn durability(&self) -> &Durability {
        &self.durability
    }

    /// The deployment's key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The full key of `parts` under the prefix.
    pub(crate) fn key(&self, parts: &str) -> String {
        format!("{}{parts}", self.prefix)
    }

    /// Runs a prepared script on the shared connection.
    pub(crate) async fn invoke<T: redis::FromRedisValue>(
        &self,
        invocation: &redis::ScriptInvocation<'_>,
    ) -> Result<T> {
        invocation
            .invoke_async(&mut self.connection.clone())
            .await
            .map_err(redis)
    }

    /// Every key under the prefix (a SCAN: for audits and tests, not the hot path).
    pub async fn all_keys(&self) -> Result<Vec<String>> {
        let mut connection = self.connection.clone();
        let pattern = format!("{}*", escape_glob(&self.prefix));
        let mut cursor: u64 = 0;
        let mut out = Vec::new();
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1_000)
                .query_async(&mut connection)
                .await
                .map_err(redis)?;
            out.extend(keys);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        out.sort();
        Ok(out)
    }

    /// Deletes every key under the prefix; returns how many (for tests and teardown).
    pub async fn drop_all(&self) -> Result<u64> {
        let keys = self.all_keys().await?;
        let mut connection = self.connection.clone();
        let mut removed = 0u64;
        for chunk in keys.chunks(1_000) {
            let n: u64 = redis::cmd("UNLINK")
                .arg(chunk)
                .query_async(&mut connection)
                .await
                .map_err(redis)?;
            removed += n;
        }
        Ok(removed)
    }
}

/// The field/value pairs of an `HGETALL` reply as a map.
pub(crate) fn hash_fields(pairs: &[String]) -> std::collections::HashMap<&str, &str> {
    pairs
        .chunks(2)
        .filter_map(|pair| Some((pair.first()?.as_str(), pair.get(1)?.as_str())))
        .collect()
}

/// `glob` with Redis's pattern characters escaped.
fn escape_glob(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

async fn read_durability(connection: &mut ConnectionManager) -> Result<Durability> {
    let setting = |pairs: &[String], name: &str| -> Option<String> {
        pairs
            .chunks(2)
            .find(|pair| pair.first().is_some_and(|k| k == name))
            .and_then(|pair| pair.get(1).cloned())
    };
    let pairs: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("append*")
        .query_async(connection)
        .await
        .map_err(redis)?;
    let aof = setting(&pairs, "appendonly").is_some_and(|v| v == "yes");
    let fsync = setting(&pairs, "appendfsync").unwrap_or_default();
    Ok(match (aof, fsync.as_str()) {
        (true, "always") => Durability::EveryWrite,
        (true, "everysec") => Durability::AboutASecond,
        _ => Durability::Snapshots,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_must_be_plain_and_end_in_a_colon() {
        assert!(valid_prefix("memory:"));
        assert!(valid_prefix("memory:t:acme:"));
        for bad in ["", "memory", "has space:", "tab\t:"] {
            assert!(!valid_prefix(bad), "{bad:?}");
        }
        assert_eq!(escape_glob("a*b?[c]:"), "a\\*b\\?\\[c\\]:");
    }
}
