use std::sync::Arc;

use async_trait::async_trait;
use memory_core::ports::{
    TextDocument, TextFields, TextHit, TextIndex, TextIndexCapabilities, TextIndexes, TextQuery,
};
use memory_core::{Result, SearchMode, Timestamp, phrase_terms, search_terms};
use sqlx::Row;

use crate::database::PostgresDatabase;
use crate::error::{BACKEND, db};

/// PostgreSQL's `english` configuration: Snowball stemming and stop words; `ts_rank_cd`
/// ranks by cover density, without the rarity (IDF) weighting of BM25.
pub(crate) const CAPABILITIES: TextIndexCapabilities = TextIndexCapabilities {
    stemming: true,
    stop_words: true,
    phrase: true,
    rarity_ranking: false,
    written_by_store: false,
    language: memory_core::TextLanguage::English,
};

/// The [`TextIndex`] on PostgreSQL for any namespace: a stored `tsvector` with a GIN index.
/// User words are bound as parameters of `phraseto_tsquery`, one per word, and joined with
/// tsquery operators: input is never parsed as query syntax.
#[derive(Debug, Clone)]
pub struct PostgresTextIndex {
    db: PostgresDatabase,
    /// `""` for the deployment-wide index, else a profile's name.
    scope: String,
}

impl PostgresTextIndex {
    /// The deployment-wide index over a connected database.
    pub fn new(db: PostgresDatabase) -> Self {
        Self {
            db,
            scope: String::new(),
        }
    }
}

/// [`TextIndexes`] on PostgreSQL: each profile's index is a scope of one table, so a
/// profile's documents are never seen by another's queries, and deleting its index is one
/// statement.
#[derive(Debug, Clone)]
pub struct PostgresTextIndexes {
    db: PostgresDatabase,
}

impl PostgresTextIndexes {
    /// Per-profile indexes over a connected database.
    pub fn new(db: PostgresDatabase) -> Self {
        Self { db }
    }
}

#[async_trait]
impl TextIndexes for PostgresTextIndexes {
    async fn text_index(&self, profile: &str) -> Result<Arc<dyn TextIndex>> {
        memory_core::validate_profile_name(profile)?;
        Ok(Arc::new(PostgresTextIndex {
            db: self.db.clone(),
            scope: profile.to_owned(),
        }))
    }

    async fn delete_text_index(&self, profile: &str) -> Result<()> {
        memory_core::validate_profile_name(profile)?;
        sqlx::query("DELETE FROM text_documents WHERE scope = $1")
            .bind(profile)
            .execute(&self.db.pool)
            .await
            .map_err(db)?;
        Ok(())
    }
}

/// The words to bind and the tsquery expression over them (parameters from `$first`).
pub(crate) fn tsquery(query: &TextQuery, first: usize) -> (Vec<String>, String) {
    let words: Vec<String> = match query.mode {
        SearchMode::Phrase => vec![phrase_terms(&query.text).join(" ")],
        SearchMode::AllWords | SearchMode::AnyWords => search_terms(&query.text)
            .into_iter()
            .map(str::to_owned)
            .collect(),
    };
    let join = if query.mode == SearchMode::AnyWords {
        " || "
    } else {
        " && "
    };
    let expression = (0..words.len())
        .map(|i| format!("phraseto_tsquery('english', ${})", first + i))
        .collect::<Vec<_>>()
        .join(join);
    (words, expression)
}

#[async_trait]
impl TextIndex for PostgresTextIndex {
    fn backend_name(&self) -> &'static str {
        BACKEND
    }

    fn capabilities(&self) -> TextIndexCapabilities {
        CAPABILITIES
    }

    async fn upsert(&self, namespace: &str, documents: Vec<TextDocument>) -> Result<()> {
        self.db
            .idempotent(|| async {

            let mut tx = self.db.pool.begin().await.map_err(db)?;
            for doc in &documents {
                sqlx::query(
                    "INSERT INTO text_documents (namespace, id, text, session, role, kind, key, time, scope) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
                     ON CONFLICT (scope, namespace, id) DO UPDATE SET text = excluded.text, \
                     session = excluded.session, role = excluded.role, kind = excluded.kind, \
                     key = excluded.key, time = excluded.time",
                )
                .bind(namespace)
                .bind(&doc.id)
                // PostgreSQL text cannot hold NUL; as a word separator it indexes the same.
                .bind(doc.text.replace('\0', " "))
                .bind(&doc.fields.session)
                .bind(&doc.fields.role)
                .bind(&doc.fields.kind)
                .bind(&doc.fields.key)
                .bind(doc.fields.time.map(Timestamp::millis))
                .bind(&self.scope)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
            }
            tx.commit().await.map_err(db)
            })
            .await
    }

    async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64> {
        self.db
            .idempotent(|| async {
                Ok(sqlx::query(
                "DELETE FROM text_documents WHERE scope = $3 AND namespace = $1 AND id = ANY($2)",
            )
            .bind(namespace)
            .bind(ids)
            .bind(&self.scope)
            .execute(&self.db.pool)
            .await
            .map_err(db)?
            .rows_affected())
            })
            .await
    }

    async fn search(&self, namespace: &str, query: &TextQuery) -> Result<Vec<TextHit>> {
        self.db
            .idempotent(|| async {
                if query.is_empty() {
                    return Ok(Vec::new());
                }
                let (words, expression) = tsquery(query, 10);
                let f = &query.filter;
                // A condition per filter given, and none for the others (a generic plan must never
                // cover "maybe this filter"); the unused parameters are still bound, as NULLs.
                let conditions = [
                    (f.session.is_some(), "d.session = $2", "$2::text"),
                    (f.role.is_some(), "d.role = $3", "$3::text"),
                    (f.kind.is_some(), "d.kind = $4", "$4::text"),
                    (f.key.is_some(), "d.key = $5", "$5::text"),
                    (f.from.is_some(), "d.time >= $6", "$6::bigint"),
                    (f.to.is_some(), "d.time < $7", "$7::bigint"),
                ]
                .iter()
                .map(|(given, condition, unused)| {
                    if *given {
                        format!(" AND {condition}")
                    } else {
                        format!(" AND {unused} IS NULL")
                    }
                })
                .collect::<String>();
                let sql = format!(
                    "SELECT d.id, d.text, d.session, d.role, d.kind, d.key, d.time, \
                 ts_rank_cd(d.tsv, q.query)::float8 AS score \
                 FROM text_documents d, (SELECT {expression} AS query) q \
                 WHERE d.scope = $9 AND d.namespace = $1 AND d.tsv @@ q.query{conditions} \
                 ORDER BY score DESC, d.id LIMIT $8"
                );
                let mut statement = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(namespace)
                    .bind(&f.session)
                    .bind(&f.role)
                    .bind(&f.kind)
                    .bind(&f.key)
                    .bind(f.from.map(Timestamp::millis))
                    .bind(f.to.map(Timestamp::millis))
                    .bind(i64::try_from(query.limit).unwrap_or(i64::MAX))
                    .bind(&self.scope);
                for word in words {
                    statement = statement.bind(word);
                }
                let rows = statement.fetch_all(&self.db.pool).await.map_err(db)?;
                Ok(rows
                    .iter()
                    .map(|r| TextHit {
                        id: r.get(0),
                        text: r.get(1),
                        fields: TextFields {
                            session: r.get(2),
                            role: r.get(3),
                            kind: r.get(4),
                            key: r.get(5),
                            time: r.get::<Option<i64>, _>(6).map(Timestamp),
                        },
                        score: r.get(7),
                    })
                    .collect())
            })
            .await
    }

    async fn count(&self, namespace: &str) -> Result<u64> {
        self.db
            .idempotent(|| async {
                let count: i64 = sqlx::query_scalar(
                    "SELECT COUNT(*) FROM text_documents WHERE scope = $2 AND namespace = $1",
                )
                .bind(namespace)
                .bind(&self.scope)
                .fetch_one(&self.db.pool)
                .await
                .map_err(db)?;
                Ok(count.max(0) as u64)
            })
            .await
    }

    async fn clear(&self, namespace: &str) -> Result<()> {
        sqlx::query("DELETE FROM text_documents WHERE scope = $2 AND namespace = $1")
            .bind(namespace)
            .bind(&self.scope)
            .execute(&self.db.pool)
            .await
            .map_err(db)?;
        Ok(())
    }
}
