use async_trait::async_trait;
use memory_core::ports::{
    TextDocument, TextFields, TextHit, TextIndex, TextIndexCapabilities, TextQuery,
    message_document_id, namespaces,
};
use memory_core::{MemoryError, Result};
use sqlx::Row;

use crate::database::PostgresDatabase;
use crate::error::{BACKEND, db};
use crate::text_index::{CAPABILITIES, tsquery};

/// The `messages` namespace of the [`TextIndex`] port over the `tsvector` that
/// [`crate::PostgresMessageStore`] writes in the same statement as each row (so it can never
/// miss a message). Its capabilities say `written_by_store`: the engine only searches it,
/// and writes through this port are `NotSupported`.
#[derive(Debug, Clone)]
pub struct PostgresMessageIndex {
    db: PostgresDatabase,
}

const STORE_WRITTEN: TextIndexCapabilities = TextIndexCapabilities {
    written_by_store: true,
    language: memory_core::TextLanguage::English,
    ..CAPABILITIES
};

fn written_by_store(operation: &'static str) -> MemoryError {
    MemoryError::NotSupported {
        operation,
        backend: BACKEND,
    }
}

impl PostgresMessageIndex {
    /// The index of the message store over the same database.
    pub fn new(db: PostgresDatabase) -> Self {
        Self { db }
    }

    fn check(namespace: &str) -> Result<()> {
        if namespace == namespaces::MESSAGES {
            Ok(())
        } else {
            Err(MemoryError::invalid(format!(
                "this PostgreSQL index is written by the message store and serves the namespace {:?}, not {namespace:?}",
                namespaces::MESSAGES
            )))
        }
    }
}

#[async_trait]
impl TextIndex for PostgresMessageIndex {
    fn backend_name(&self) -> &'static str {
        BACKEND
    }

    fn capabilities(&self) -> TextIndexCapabilities {
        STORE_WRITTEN
    }

    async fn upsert(&self, _namespace: &str, _documents: Vec<TextDocument>) -> Result<()> {
        Err(written_by_store(
            "upsert into the message index (the message store writes it)",
        ))
    }

    async fn delete(&self, _namespace: &str, _ids: &[String]) -> Result<u64> {
        Err(written_by_store(
            "delete from the message index (the message store writes it)",
        ))
    }

    async fn search(&self, namespace: &str, query: &TextQuery) -> Result<Vec<TextHit>> {
        self.db
            .idempotent(|| async {
                Self::check(namespace)?;
                let f = &query.filter;
                // Messages have a session and a role, never a kind, key or time field.
                let absent_field =
                    f.kind.is_some() || f.key.is_some() || f.from.is_some() || f.to.is_some();
                if query.is_empty() || absent_field {
                    return Ok(Vec::new());
                }
                // Conditions appear only for the filters given: a prepared statement's generic plan
                // must never have to cover "maybe a session" (it chose a join order 50x slower).
                let (words, expression) = tsquery(query, 4);
                let session_condition = if f.session.is_some() {
                    "AND m.session_key = (SELECT key FROM message_sessions WHERE session_id = $1)"
                } else {
                    "AND $1::text IS NULL"
                };
                let role_condition = if f.role.is_some() {
                    "AND m.role = $2"
                } else {
                    "AND $2::text IS NULL"
                };
                // The top hits come from `messages` alone; their session ids are joined after.
                let sql = format!(
                    "SELECT s.session_id, h.id, h.role, h.search_text, h.score FROM ( \
               SELECT m.session_key, m.seq, m.id, m.role, m.search_text, \
                 ts_rank_cd(m.tsv, q.query)::float8 AS score \
               FROM (SELECT {expression} AS query) q, messages m \
               WHERE m.tsv @@ q.query {session_condition} {role_condition} \
               ORDER BY score DESC, m.session_key, m.seq LIMIT $3) h \
             JOIN message_sessions s ON s.key = h.session_key \
             ORDER BY h.score DESC, h.session_key, h.seq"
                );
                let mut statement = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(&f.session)
                    .bind(&f.role)
                    .bind(i64::try_from(query.limit).unwrap_or(i64::MAX));
                for word in &words {
                    statement = statement.bind(word);
                }
                let rows = statement.fetch_all(&self.db.pool).await.map_err(db)?;
                Ok(rows
                    .iter()
                    .map(|row| {
                        let session: String = row.get(0);
                        let id: String = row.get(1);
                        TextHit {
                            id: message_document_id(&session, &id),
                            text: row.get(3),
                            fields: TextFields {
                                session: Some(session),
                                role: Some(row.get(2)),
                                ..TextFields::default()
                            },
                            score: row.get(4),
                        }
                    })
                    .collect())
            })
            .await
    }

    async fn count(&self, namespace: &str) -> Result<u64> {
        self.db
            .idempotent(|| async {
                Self::check(namespace)?;
                let count: i64 =
                    sqlx::query_scalar("SELECT COUNT(*) FROM messages WHERE search_text <> ''")
                        .fetch_one(&self.db.pool)
                        .await
                        .map_err(db)?;
                Ok(count.max(0) as u64)
            })
            .await
    }

    async fn clear(&self, _namespace: &str) -> Result<()> {
        Err(written_by_store(
            "clear the message index (the message store writes it)",
        ))
    }
}
