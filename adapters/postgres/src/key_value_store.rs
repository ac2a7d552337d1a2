use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::KeyValueStore;

use crate::database::PostgresDatabase;
use crate::error::db;

/// The [`KeyValueStore`] on PostgreSQL (one table, keys in byte order).
#[derive(Debug, Clone)]
pub struct PostgresKeyValueStore {
    db: PostgresDatabase,
}

impl PostgresKeyValueStore {
    /// A store over a connected database.
    pub fn new(db: PostgresDatabase) -> Self {
        Self { db }
    }
}

/// A LIKE pattern matching keys that start with `prefix` literally (`\` escapes).
fn prefix_like(prefix: &str) -> String {
    let mut pattern = String::with_capacity(prefix.len() + 1);
    for c in prefix.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

#[async_trait]
impl KeyValueStore for PostgresKeyValueStore {
    async fn get(&self, key: &str) -> Result<Option<String>> {
        self.db
            .idempotent(|| async {
                sqlx::query_scalar("SELECT value FROM kv WHERE key = $1")
                    .bind(key)
                    .fetch_optional(&self.db.pool)
                    .await
                    .map_err(db)
            })
            .await
    }

    async fn set(&self, key: &str, value: &str) -> Result<()> {
        self.db
            .idempotent(|| async {
                sqlx::query(
                    "INSERT INTO kv (key, value) VALUES ($1, $2) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                )
                .bind(key)
                .bind(value)
                .execute(&self.db.pool)
                .await
                .map_err(db)?;
                Ok(())
            })
            .await
    }

    async fn delete(&self, key: &str) -> Result<bool> {
        let result = sqlx::query("DELETE FROM kv WHERE key = $1")
            .bind(key)
            .execute(&self.db.pool)
            .await
            .map_err(db)?;
        Ok(result.rows_affected() > 0)
    }

    async fn compare_and_set(
        &self,
        key: &str,
        expected: Option<String>,
        value: &str,
    ) -> Result<bool> {
        // Not retried on a transient failure: a first attempt that committed would make the
        // retry answer `false` for a write that happened.
        let result = match expected {
            None => {
                sqlx::query(
                    "INSERT INTO kv (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
                )
                .bind(key)
                .bind(value)
                .execute(&self.db.pool)
                .await
            }
            Some(expected) => {
                sqlx::query("UPDATE kv SET value = $1 WHERE key = $2 AND value = $3")
                    .bind(value)
                    .bind(key)
                    .bind(expected)
                    .execute(&self.db.pool)
                    .await
            }
        }
        .map_err(db)?;
        Ok(result.rows_affected() == 1)
    }

    async fn keys(&self, prefix: &str) -> Result<Vec<String>> {
        sqlx::query_scalar("SELECT key FROM kv WHERE key LIKE $1 ESCAPE '\\' ORDER BY key")
            .bind(prefix_like(prefix))
            .fetch_all(&self.db.pool)
            .await
            .map_err(db)
    }

    async fn delete_prefix(&self, prefix: &str) -> Result<u64> {
        let result = sqlx::query("DELETE FROM kv WHERE key LIKE $1 ESCAPE '\\'")
            .bind(prefix_like(prefix))
            .execute(&self.db.pool)
            .await
            .map_err(db)?;
        Ok(result.rows_affected())
    }
}
