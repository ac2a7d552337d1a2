use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::KeyValueStore;

use crate::database::SqliteDatabase;
use crate::error::db;

/// The [`KeyValueStore`] on SQLite (one `WITHOUT ROWID` table).
#[derive(Debug, Clone)]
pub struct SqliteKeyValueStore {
    db: SqliteDatabase,
}

impl SqliteKeyValueStore {
    /// A store over an open database.
    pub fn new(db: SqliteDatabase) -> Self {
        Self { db }
    }
}

/// A GLOB pattern matching keys that start with `prefix` literally.
fn prefix_glob(prefix: &str) -> String {
    let mut pattern = String::with_capacity(prefix.len() + 1);
    for c in prefix.chars() {
        match c {
            '*' | '?' | '[' => {
                pattern.push('[');
                pattern.push(c);
                pattern.push(']');
            }
            _ => pattern.push(c),
        }
    }
    pattern.push('*');
    pattern
}

#[async_trait]
impl KeyValueStore for SqliteKeyValueStore {
    async fn get(&self, key: &str) -> Result<Option<String>> {
        sqlx::query_scalar("SELECT value FROM kv WHERE key = ?")
            .bind(key)
            .fetch_optional(&mut *self.db.reader.acquire().await?)
            .await
            .map_err(db)
    }

    async fn set(&self, key: &str, value: &str) -> Result<()> {
        sqlx::query("INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
            .bind(key)
            .bind(value)
            .execute(&self.db.writer)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result<bool> {
        let result = sqlx::query("DELETE FROM kv WHERE key = ?")
            .bind(key)
            .execute(&self.db.writer)
            .await
            .map_err(db)?;
        Ok(result.rows_affected() > 0)
    }

    async fn keys(&self, prefix: &str) -> Result<Vec<String>> {
        sqlx::query_scalar("SELECT key FROM kv WHERE key GLOB ? ORDER BY key")
            .bind(prefix_glob(prefix))
            .fetch_all(&mut *self.db.reader.acquire().await?)
            .await
            .map_err(db)
    }

    async fn compare_and_set(
        &self,
        key: &str,
        expected: Option<String>,
        value: &str,
    ) -> Result<bool> {
        let result = match expected {
            None => {
                sqlx::query("INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) DO NOTHING")
                    .bind(key)
                    .bind(value)
                    .execute(&self.db.writer)
                    .await
            }
            Some(expected) => {
                sqlx::query("UPDATE kv SET value = ? WHERE key = ? AND value = ?")
                    .bind(value)
                    .bind(key)
                    .bind(expected)
                    .execute(&self.db.writer)
                    .await
            }
        }
        .map_err(db)?;
        Ok(result.rows_affected() == 1)
    }

    async fn delete_prefix(&self, prefix: &str) -> Result<u64> {
        let result = sqlx::query("DELETE FROM kv WHERE key GLOB ?")
            .bind(prefix_glob(prefix))
            .execute(&self.db.writer)
            .await
            .map_err(db)?;
        Ok(result.rows_affected())
    }
}
