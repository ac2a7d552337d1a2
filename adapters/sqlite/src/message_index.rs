use async_trait::async_trait;
use memory_core::ports::{
    TextDocument, TextFields, TextHit, TextIndex, TextIndexCapabilities, TextQuery,
    message_document_id, namespaces,
};
use memory_core::{Result, SessionId};
use sqlx::Row;

use crate::database::SqliteDatabase;
use crate::error::{BACKEND, db};
use crate::fts;
use crate::message_store::session_key;
use crate::store_written_index::{
    STORE_WRITTEN, needs_absent_field, unknown_namespace, written_by_store,
};

/// The `messages` namespace of the [`TextIndex`] port over the FTS5 index that
/// [`crate::SqliteMessageStore`] writes in the same transaction as the rows (so it can never
/// miss a message). Its capabilities say `written_by_store`: the engine only searches it, and
/// writes through this port are `NotSupported`.
#[derive(Debug, Clone)]
pub struct SqliteMessageIndex {
    db: SqliteDatabase,
}

impl SqliteMessageIndex {
    /// The index of the message store over the same database.
    pub fn new(db: SqliteDatabase) -> Self {
        Self { db }
    }

    fn check(namespace: &str) -> Result<()> {
        if namespace == namespaces::MESSAGES {
            Ok(())
        } else {
            Err(unknown_namespace(namespace, &[namespaces::MESSAGES]))
        }
    }
}

#[async_trait]
impl TextIndex for SqliteMessageIndex {
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
        Self::check(namespace)?;
        if query.is_empty() || needs_absent_field(&query.filter, false, false) {
            return Ok(Vec::new());
        }
        let mut conn = self.db.reader.acquire().await?;
        let key = match &query.filter.session {
            Some(session) => match session_key(&mut conn, &SessionId::new(session.clone())?).await?
            {
                Some(key) => Some(key),
                None => return Ok(Vec::new()),
            },
            None => None,
        };
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        // Without a role filter the FTS limit applies first (the fast path); with one, rows are
        // filtered before the limit.
        let sql = if query.filter.role.is_none() {
            // The table's rank function called by name, to take the best first (see `fts`).
            "SELECT k.session_id, m.id, m.role, m.search_text, f.score FROM \
             (SELECT rowid, bm25(messages_fts, 1.0, 0.0) AS score FROM messages_fts \
              WHERE messages_fts MATCH ?1 ORDER BY score LIMIT ?2) f \
             JOIN messages m ON m.seq = f.rowid JOIN session_keys k ON k.key = m.session_key \
             ORDER BY f.score"
        } else {
            "SELECT k.session_id, m.id, m.role, m.search_text, f.rank FROM messages_fts f \
             JOIN messages m ON m.seq = f.rowid JOIN session_keys k ON k.key = m.session_key \
             WHERE messages_fts MATCH ?1 AND m.role = ?3 ORDER BY f.rank LIMIT ?2"
        };
        let rows = sqlx::query(sql)
            .bind(fts::match_expression(
                &query.text,
                query.mode,
                "search_text",
                key.map(|k| format!("s{k}")),
            ))
            .bind(limit)
            .bind(&query.filter.role)
            .fetch_all(&mut *conn)
            .await
            .map_err(db)?;
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
                    score: -row.get::<f64, _>(4),
                }
            })
            .collect())
    }

    async fn count(&self, namespace: &str) -> Result<u64> {
        Self::check(namespace)?;
        let count: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM messages WHERE search_text <> ''")
                .fetch_one(&mut *self.db.reader.acquire().await?)
                .await
                .map_err(db)?;
        Ok(count.max(0) as u64)
    }

    async fn clear(&self, _namespace: &str) -> Result<()> {
        Err(written_by_store(
            "clear the message index (the message store writes it)",
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use memory_core::ports::MessageStore;
    use memory_core::{NewMessage, Role, SearchMode, UiMessage};

    use super::*;
    use crate::fts::sentence;
    use crate::{SqliteConfig, SqliteMessageStore};

    /// Unfiltered message search takes its top by score with a bounded sort (see `fts`):
    /// the same messages at the same scores as FTS5's `ORDER BY rank` over every match, in
    /// every session and within one (ties may come in another order).
    #[tokio::test]
    async fn the_top_by_score_is_the_top_by_rank() {
        let dir = tempfile::tempdir().unwrap();
        let db = SqliteDatabase::open(SqliteConfig::new(dir.path().join("m.db")))
            .await
            .unwrap();
        let store = SqliteMessageStore::new(db.clone());
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for session in ["a", "b"] {
            let messages = (0..300)
                .map(|i| {
                    let text = sentence(&mut state, 3 + i % 9);
                    NewMessage::new(UiMessage::text_message(format!("m{i}"), Role::User, text))
                })
                .collect();
            store
                .append(&SessionId::new(session).unwrap(), messages)
                .await
                .unwrap();
        }
        let index = SqliteMessageIndex::new(db.clone());
        for (text, limit, session) in [
            ("lisbon cello", 10, None),
            ("river piano train", 7, Some("b")),
            ("lantern", 25, None),
            ("market bridge violin harbour", 1, Some("a")),
        ] {
            let mut query = TextQuery::new(text, limit).mode(SearchMode::AnyWords);
            query.filter.session = session.map(str::to_owned);
            let scope = match session {
                Some(s) => {
                    let mut conn = db.reader.acquire().await.unwrap();
                    let key = session_key(&mut conn, &SessionId::new(s).unwrap())
                        .await
                        .unwrap()
                        .unwrap();
                    Some(format!("s{key}"))
                }
                None => None,
            };
            let expression =
                fts::match_expression(text, SearchMode::AnyWords, "search_text", scope);
            let all: Vec<(String, String, f64)> = sqlx::query_as(
                "SELECT k.session_id, m.id, f.rank FROM messages_fts f \
                 JOIN messages m ON m.seq = f.rowid JOIN session_keys k ON k.key = m.session_key \
                 WHERE messages_fts MATCH ?1 ORDER BY f.rank",
            )
            .bind(expression)
            .fetch_all(&mut *db.reader.acquire().await.unwrap())
            .await
            .unwrap();
            assert!(all.len() > 100, "{text}: too few matches to test");
            let hits = index.search(namespaces::MESSAGES, &query).await.unwrap();
            assert_eq!(hits.len(), limit, "{text}");
            for (hit, (_, _, expected)) in hits.iter().zip(&all) {
                let (_, _, score) = all
                    .iter()
                    .find(|(s, m, _)| message_document_id(s, m) == hit.id)
                    .unwrap();
                assert_eq!(hit.score, -score, "{text}: {} scored as ranked", hit.id);
                assert_eq!(hit.score, -expected, "{text}: {} is not in the top", hit.id);
            }
        }
    }
}
