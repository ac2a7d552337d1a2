use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::{SkillStore, SkillSummary};
use sqlx::Row;

use crate::database::PostgresDatabase;
use crate::error::db;

/// The [`SkillStore`] on PostgreSQL: one table, partitioned by a namespace so several skill
/// collections share a database.
#[derive(Debug, Clone)]
pub struct PostgresSkillStore {
    db: PostgresDatabase,
    namespace: String,
}

impl PostgresSkillStore {
    /// The skills of `namespace`.
    pub fn new(db: PostgresDatabase, namespace: impl Into<String>) -> Self {
        Self {
            db,
            namespace: namespace.into(),
        }
    }
}

#[async_trait]
impl SkillStore for PostgresSkillStore {
    async fn list(&self) -> Result<Vec<SkillSummary>> {
        self.db
            .idempotent(|| async {
                let rows = sqlx::query(
                    "SELECT key, description FROM skills WHERE namespace = $1 ORDER BY key",
                )
                .bind(&self.namespace)
                .fetch_all(&self.db.pool)
                .await
                .map_err(db)?;
                Ok(rows
                    .iter()
                    .map(|r| SkillSummary {
                        key: r.get(0),
                        description: r.get(1),
                    })
                    .collect())
            })
            .await
    }

    async fn get(&self, key: &str) -> Result<Option<String>> {
        self.db
            .idempotent(|| async {
                sqlx::query_scalar("SELECT content FROM skills WHERE namespace = $1 AND key = $2")
                    .bind(&self.namespace)
                    .bind(key)
                    .fetch_optional(&self.db.pool)
                    .await
                    .map_err(db)
            })
            .await
    }

    async fn put(&self, key: &str, content: &str, description: Option<String>) -> Result<()> {
        self.db
            .idempotent(|| async {
                sqlx::query(
                "INSERT INTO skills (namespace, key, content, description) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (namespace, key) DO UPDATE SET content = excluded.content, \
                 description = excluded.description",
            )
            .bind(&self.namespace)
            .bind(key)
            .bind(content)
            .bind(description.as_deref())
            .execute(&self.db.pool)
            .await
            .map_err(db)?;
                Ok(())
            })
            .await
    }

    async fn delete(&self, key: &str) -> Result<bool> {
        let result = sqlx::query("DELETE FROM skills WHERE namespace = $1 AND key = $2")
            .bind(&self.namespace)
            .bind(key)
            .execute(&self.db.pool)
            .await
            .map_err(db)?;
        Ok(result.rows_affected() > 0)
    }
}
