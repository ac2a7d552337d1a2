use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::{SkillStore, SkillSummary};
use sqlx::Row;

use crate::database::SqliteDatabase;
use crate::error::db;

/// The [`SkillStore`] on SQLite: one table, partitioned by a namespace so several skill
/// collections share a database.
#[derive(Debug, Clone)]
pub struct SqliteSkillStore {
    db: SqliteDatabase,
    namespace: String,
}

impl SqliteSkillStore {
    /// The skills of `namespace`.
    pub fn new(db: SqliteDatabase, namespace: impl Into<String>) -> Self {
        Self {
            db,
            namespace: namespace.into(),
        }
    }
}

#[async_trait]
impl SkillStore for SqliteSkillStore {
    async fn list(&self) -> Result<Vec<SkillSummary>> {
        let rows =
            sqlx::query("SELECT key, description FROM skills WHERE namespace = ? ORDER BY key")
                .bind(&self.namespace)
                .fetch_all(&mut *self.db.reader.acquire().await?)
                .await
                .map_err(db)?;
        Ok(rows
            .iter()
            .map(|r| SkillSummary {
                key: r.get(0),
                description: r.get(1),
            })
            .collect())
    }

    async fn get(&self, key: &str) -> Result<Option<String>> {
        sqlx::query_scalar("SELECT content FROM skills WHERE namespace = ? AND key = ?")
            .bind(&self.namespace)
            .bind(key)
            .fetch_optional(&mut *self.db.reader.acquire().await?)
            .await
            .map_err(db)
    }

    async fn put(&self, key: &str, content: &str, description: Option<String>) -> Result<()> {
        sqlx::query(
            "INSERT INTO skills (namespace, key, content, description) VALUES (?, ?, ?, ?) \
             ON CONFLICT(namespace, key) DO UPDATE SET content = excluded.content, description = excluded.description",
        )
        .bind(&self.namespace)
        .bind(key)
        .bind(content)
        .bind(description)
        .execute(&self.db.writer)
        .await
        .map_err(db)?;
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result<bool> {
        let result = sqlx::query("DELETE FROM skills WHERE namespace = ? AND key = ?")
            .bind(&self.namespace)
            .bind(key)
            .execute(&self.db.writer)
            .await
            .map_err(db)?;
        Ok(result.rows_affected() > 0)
    }
}
