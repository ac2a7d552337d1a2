use async_trait::async_trait;
use memory_core::ports::{IndexDocument, IndexHit, SearchIndex};
use memory_core::{Result, SearchMode, SearchQuery};
use sqlx::{Row, SqliteConnection};

use crate::database::SqliteDatabase;
use crate::error::db;
use crate::fts;

/// The [`SearchIndex`] on SQLite: documents per namespace with an FTS5 index (Porter
/// stemming, BM25) kept exact by triggers.
#[derive(Debug, Clone)]
pub struct SqliteSearchIndex {
    db: SqliteDatabase,
}

impl SqliteSearchIndex {
    /// An index over an open database.
    pub fn new(db: SqliteDatabase) -> Self {
        Self { db }
    }
}

async fn namespace_key(conn: &mut SqliteConnection, namespace: &str) -> Result<Option<i64>> {
    sqlx::query_scalar("SELECT key FROM index_namespaces WHERE name = ?")
        .bind(namespace)
        .fetch_optional(conn)
        .await
        .map_err(db)
}

#[async_trait]
impl SearchIndex for SqliteSearchIndex {
    async fn upsert(&self, namespace: &str, documents: Vec<IndexDocument>) -> Result<()> {
        let mut tx = self.db.write().await?;
        sqlx::query("INSERT OR IGNORE INTO index_namespaces(name) VALUES (?)")
            .bind(namespace)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let Some(key) = namespace_key(&mut tx, namespace).await? else {
            return Err(memory_core::MemoryError::not_found("namespace", namespace));
        };
        for doc in documents {
            sqlx::query(
                "INSERT INTO index_documents (namespace_key, id, text) VALUES (?, ?, ?) \
                 ON CONFLICT(namespace_key, id) DO UPDATE SET text = excluded.text",
            )
            .bind(key)
            .bind(&doc.id)
            .bind(&doc.text)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        }
        tx.commit().await.map_err(db)
    }

    async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64> {
        let mut tx = self.db.write().await?;
        let Some(key) = namespace_key(&mut tx, namespace).await? else {
            return Ok(0);
        };
        let mut deleted = 0;
        for id in ids {
            deleted +=
                sqlx::query("DELETE FROM index_documents WHERE namespace_key = ? AND id = ?")
                    .bind(key)
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?
                    .rows_affected();
        }
        tx.commit().await.map_err(db)?;
        Ok(deleted)
    }

    async fn search(
        &self,
        namespace: &str,
        query: &str,
        mode: SearchMode,
        limit: usize,
    ) -> Result<Vec<IndexHit>> {
        let query = SearchQuery::new(query).mode(mode).limit(limit);
        if query.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.db.reader.acquire().await.map_err(db)?;
        let Some(key) = namespace_key(&mut conn, namespace).await? else {
            return Ok(Vec::new());
        };
        let rows = sqlx::query(
            "SELECT d.id, d.text, f.rank FROM \
             (SELECT rowid, rank FROM index_fts WHERE index_fts MATCH ? ORDER BY rank LIMIT ?) f \
             JOIN index_documents d ON d.doc = f.rowid ORDER BY f.rank",
        )
        .bind(fts::match_expression(
            &query,
            "text",
            Some(format!("n{key}")),
        ))
        .bind(query.effective_limit() as i64)
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
        Ok(rows
            .iter()
            .map(|r| IndexHit {
                id: r.get(0),
                text: r.get(1),
                score: -r.get::<f64, _>(2),
            })
            .collect())
    }

    async fn count(&self, namespace: &str) -> Result<u64> {
        let count: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM index_documents \
             WHERE namespace_key = (SELECT key FROM index_namespaces WHERE name = ?)",
        )
        .bind(namespace)
        .fetch_one(&self.db.reader)
        .await
        .map_err(db)?;
        Ok(count.max(0) as u64)
    }

    async fn clear(&self, namespace: &str) -> Result<()> {
        let mut tx = self.db.write().await?;
        if let Some(key) = namespace_key(&mut tx, namespace).await? {
            for sql in [
                "DELETE FROM index_documents WHERE namespace_key = ?",
                "DELETE FROM index_namespaces WHERE key = ?",
            ] {
                sqlx::query(sql)
                    .bind(key)
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
            }
        }
        tx.commit().await.map_err(db)
    }
}
