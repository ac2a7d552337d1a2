use async_trait::async_trait;
use memory_core::ports::{
    TextDocument, TextFields, TextHit, TextIndex, TextIndexCapabilities, TextQuery,
};
use memory_core::{Result, Timestamp};
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use crate::database::SqliteDatabase;
use crate::error::{BACKEND, db};
use crate::fts;

/// What every FTS5 table of this adapter does: `porter unicode61`, no stop words, BM25.
pub(crate) const FTS5_CAPABILITIES: TextIndexCapabilities = TextIndexCapabilities {
    stemming: true,
    stop_words: false,
    phrase: true,
    rarity_ranking: true,
    written_by_store: false,
    language: memory_core::TextLanguage::English,
};

/// The [`TextIndex`] on SQLite for any namespace: documents with fields and an FTS5 index
/// (Porter stemming, BM25) kept exact by triggers. The engine writes it (searchable context
/// blocks; message or memory search when the rows live elsewhere).
#[derive(Debug, Clone)]
pub struct SqliteTextIndex {
    db: SqliteDatabase,
}

impl SqliteTextIndex {
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

/// Fields read from columns `first..first + 5` (session, role, kind, key, time).
pub(crate) fn fields_from_row(row: &SqliteRow, first: usize) -> TextFields {
    TextFields {
        session: row.get(first),
        role: row.get(first + 1),
        kind: row.get(first + 2),
        key: row.get(first + 3),
        time: row.get::<Option<i64>, _>(first + 4).map(Timestamp),
    }
}

#[async_trait]
impl TextIndex for SqliteTextIndex {
    fn backend_name(&self) -> &'static str {
        BACKEND
    }

    fn capabilities(&self) -> TextIndexCapabilities {
        FTS5_CAPABILITIES
    }

    async fn upsert(&self, namespace: &str, documents: Vec<TextDocument>) -> Result<()> {
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
            // Delete then insert, so the FTS triggers see one clean replacement.
            sqlx::query("DELETE FROM index_documents WHERE namespace_key = ? AND id = ?")
                .bind(key)
                .bind(&doc.id)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
            sqlx::query(
                "INSERT INTO index_documents (namespace_key, id, text, session, role, kind, key, time) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(key)
            .bind(&doc.id)
            .bind(&doc.text)
            .bind(&doc.fields.session)
            .bind(&doc.fields.role)
            .bind(&doc.fields.kind)
            .bind(&doc.fields.key)
            .bind(doc.fields.time.map(Timestamp::millis))
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
        let deleted = sqlx::query(
            "DELETE FROM index_documents WHERE namespace_key = ? AND id IN (SELECT value FROM json_each(?))",
        )
        .bind(key)
        .bind(serde_json::to_string(ids)?)
        .execute(&mut *tx)
        .await
        .map_err(db)?
        .rows_affected();
        tx.commit().await.map_err(db)?;
        Ok(deleted)
    }

    async fn search(&self, namespace: &str, query: &TextQuery) -> Result<Vec<TextHit>> {
        if query.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.db.reader.acquire().await?;
        let Some(key) = namespace_key(&mut conn, namespace).await? else {
            return Ok(Vec::new());
        };
        let f = &query.filter;
        let rows = sqlx::query(
            "SELECT d.id, d.text, d.session, d.role, d.kind, d.key, d.time, f.rank \
             FROM index_fts f JOIN index_documents d ON d.doc = f.rowid \
             WHERE index_fts MATCH ?1 \
               AND (?2 IS NULL OR d.session = ?2) AND (?3 IS NULL OR d.role = ?3) \
               AND (?4 IS NULL OR d.kind = ?4) AND (?5 IS NULL OR d.key = ?5) \
               AND (?6 IS NULL OR d.time >= ?6) AND (?7 IS NULL OR d.time < ?7) \
             ORDER BY f.rank LIMIT ?8",
        )
        .bind(fts::match_expression(
            &query.text,
            query.mode,
            "text",
            Some(format!("n{key}")),
        ))
        .bind(&f.session)
        .bind(&f.role)
        .bind(&f.kind)
        .bind(&f.key)
        .bind(f.from.map(Timestamp::millis))
        .bind(f.to.map(Timestamp::millis))
        .bind(i64::try_from(query.limit).unwrap_or(i64::MAX))
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
        Ok(rows
            .iter()
            .map(|r| TextHit {
                id: r.get(0),
                text: r.get(1),
                fields: fields_from_row(r, 2),
                score: -r.get::<f64, _>(7),
            })
            .collect())
    }

    async fn count(&self, namespace: &str) -> Result<u64> {
        let count: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM index_documents \
             WHERE namespace_key = (SELECT key FROM index_namespaces WHERE name = ?)",
        )
        .bind(namespace)
        .fetch_one(&mut *self.db.reader.acquire().await?)
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
