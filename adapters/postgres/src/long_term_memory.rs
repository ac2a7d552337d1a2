use std::sync::Arc;

use async_trait::async_trait;
use memory_core::ports::{
    ForgetRequest, LongTermMemoryStore, MemoryFilter, MemoryKind, MemoryMerge, MemoryPage,
    MemoryProfiles, MemoryRecord, MemoryRecordStore, MergeNote, RawMessage, RawMessageInsert,
    RawMessageStore,
};
use memory_core::{
    MemoryError, Metadata, MetadataFilter, Result, Timestamp, validate_profile_name,
};
use sqlx::Row;
use sqlx::postgres::PgRow;

use crate::database::PostgresDatabase;
use crate::error::{db, invariant, is_unique_violation};

/// One profile's records ([`RawMessageStore`] and [`MemoryRecordStore`]) on PostgreSQL:
/// rows of shared tables that all carry the profile's key, and every statement here names
/// that key as `profile_key = $1` (a test reads this file to hold it to that). Text search
/// and vectors are the [`crate::PostgresTextIndexes`] and [`crate::PostgresVectorIndexes`]
/// ports, kept in step by the engine.
#[derive(Debug, Clone)]
pub struct PostgresLongTermMemory {
    db: PostgresDatabase,
    profile_key: i64,
}

fn parse_kind(s: &str) -> Result<MemoryKind> {
    MemoryKind::parse(s)
        .ok_or_else(|| MemoryError::serialization(format!("unknown memory kind {s:?}")))
}

/// PostgreSQL text cannot hold NUL: refused before anything is written, naming the field.
fn check_text<'a>(fields: impl IntoIterator<Item = (&'static str, &'a str)>) -> Result<()> {
    match fields.into_iter().find(|(_, text)| text.contains('\0')) {
        Some((field, _)) => Err(MemoryError::invalid(format!(
            "{field} contains a NUL character, which PostgreSQL text cannot store"
        ))),
        None => Ok(()),
    }
}

const COLUMNS: &str = "pos, id, kind, content, key, questions, session_id, source_message_ids, recorded_at, valid_at, superseded_by, forgotten_reason, forgotten_at, source_lines, metadata::text, expires_at, merged_reason, merged_at, confirmed_at, recalled_at";

fn select(rest: &str) -> sqlx::AssertSqlSafe<String> {
    sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM memories WHERE profile_key = $1 {rest}"
    ))
}

fn from_row(row: &PgRow) -> Result<MemoryRecord> {
    let reason: Option<String> = row.get(11);
    let forgotten_at: Option<i64> = row.get(12);
    Ok(MemoryRecord {
        id: row.get(1),
        kind: parse_kind(row.get(2))?,
        content: row.get(3),
        key: row.get(4),
        questions: serde_json::from_str(row.get(5))?,
        session_id: row.get(6),
        source_message_ids: serde_json::from_str(row.get(7))?,
        source_lines: row
            .get::<Option<&str>, _>(13)
            .map(serde_json::from_str)
            .transpose()?,
        recorded_at: Timestamp(row.get(8)),
        valid_at: row.get::<Option<i64>, _>(9).map(Timestamp),
        superseded_by: row.get(10),
        forgotten: reason.map(|reason| ForgetRequest {
            reason,
            at: Timestamp(forgotten_at.unwrap_or(0)),
        }),
        metadata: Metadata::from_stored(row.get(1), row.get::<Option<&str>, _>(14))?,
        expires_at: row.get::<Option<i64>, _>(15).map(Timestamp),
        merged: row.get::<Option<String>, _>(16).map(|reason| MergeNote {
            reason,
            at: Timestamp(row.get::<Option<i64>, _>(17).unwrap_or(0)),
        }),
        confirmed_at: row.get::<Option<i64>, _>(18).map(Timestamp),
        recalled_at: row.get::<Option<i64>, _>(19).map(Timestamp),
    })
}

/// The columns of a raw message, in the order `raw_from_row` reads them.
const RAW_COLUMNS: &str = "r.id, r.session_id, r.role, r.content, r.created_at, r.metadata::text";

fn raw_from_row(r: &PgRow) -> Result<RawMessage> {
    raw_from_row_at(r, 0)
}

/// A raw message from [`RAW_COLUMNS`] starting at column `first`.
fn raw_from_row_at(r: &PgRow, first: usize) -> Result<RawMessage> {
    Ok(RawMessage {
        id: r.get(first),
        session_id: r.get(first + 1),
        role: r.get(first + 2),
        content: r.get(first + 3),
        created_at: Timestamp(r.get(first + 4)),
        metadata: Metadata::from_stored(r.get(first), r.get::<Option<&str>, _>(first + 5))?,
    })
}

#[async_trait]
impl RawMessageStore for PostgresLongTermMemory {
    async fn insert_raw(&self, messages: Vec<RawMessage>) -> Result<RawMessageInsert> {
        for m in &messages {
            check_text([
                ("raw message id", m.id.as_str()),
                ("raw message session", m.session_id.as_str()),
                ("raw message role", m.role.as_str()),
                ("raw message content", m.content.as_str()),
            ])?;
        }
        if messages.is_empty() {
            return Ok(RawMessageInsert::default());
        }
        let ids: Vec<&str> = messages.iter().map(|m| m.id.as_str()).collect();
        let sessions: Vec<&str> = messages.iter().map(|m| m.session_id.as_str()).collect();
        let roles: Vec<&str> = messages.iter().map(|m| m.role.as_str()).collect();
        let contents: Vec<&str> = messages.iter().map(|m| m.content.as_str()).collect();
        let times: Vec<i64> = messages.iter().map(|m| m.created_at.millis()).collect();
        let metadata: Vec<Option<String>> = messages
            .iter()
            .map(|m| (!m.metadata.is_empty()).then(|| m.metadata.to_json()))
            .collect();
        // One statement, rows in the given order (their `doc` follows it); a repeated or
        // known id is skipped.
        let inserted = sqlx::query(
            "INSERT INTO raw_messages (profile_key, id, session_id, role, content, created_at, metadata) \
             SELECT $1, u.id, u.session_id, u.role, u.content, u.created_at, u.metadata::jsonb \
             FROM UNNEST($2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[]) \
               WITH ORDINALITY AS u(id, session_id, role, content, created_at, metadata, ord) \
             ORDER BY u.ord ON CONFLICT (profile_key, id) DO NOTHING",
        )
        .bind(self.profile_key)
        .bind(&ids)
        .bind(&sessions)
        .bind(&roles)
        .bind(&contents)
        .bind(&times)
        .bind(&metadata)
        .execute(&self.db.pool)
        .await
        .map_err(db)?
        .rows_affected();
        Ok(RawMessageInsert {
            inserted,
            existing: messages.len() as u64 - inserted,
        })
    }

    async fn raw_page(
        &self,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<(Vec<RawMessage>, Option<String>)> {
        self.db
            .idempotent(|| async {
                let after = memory_core::cursor::parse_position(cursor.as_deref())?.unwrap_or(0);
                let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "SELECT {RAW_COLUMNS}, r.doc FROM raw_messages r \
                     WHERE r.profile_key = $1 AND r.doc > $2 ORDER BY r.doc LIMIT $3"
                )))
                .bind(self.profile_key)
                .bind(after)
                .bind(memory_core::cursor::one_more(limit))
                .fetch_all(&self.db.pool)
                .await
                .map_err(db)?;
                memory_core::cursor::page_of(&rows, limit, |r| r.get(6), raw_from_row)
            })
            .await
    }

    async fn raw_by_ids(&self, ids: &[String]) -> Result<Vec<RawMessage>> {
        self.db
            .idempotent(|| async {
                if ids.is_empty() {
                    return Ok(Vec::new());
                }
                let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "SELECT {RAW_COLUMNS} \
                     FROM UNNEST($2::text[]) WITH ORDINALITY AS u(id, ord) \
                     JOIN raw_messages r ON r.profile_key = $1 AND r.id = u.id ORDER BY u.ord"
                )))
                .bind(self.profile_key)
                .bind(ids)
                .fetch_all(&self.db.pool)
                .await
                .map_err(db)?;
                rows.iter().map(raw_from_row).collect()
            })
            .await
    }

    async fn raw_neighbors(&self, ids: &[String], radius: usize) -> Result<Vec<RawMessage>> {
        self.db
            .idempotent(|| async {

            if ids.is_empty() || radius == 0 {
                return Ok(Vec::new());
            }
            let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
                "WITH given AS (SELECT doc, session_id FROM raw_messages WHERE profile_key = $1 AND id = ANY($2)), \
                 near AS ( \
                   SELECT n.doc FROM given g CROSS JOIN LATERAL ( \
                     SELECT doc FROM raw_messages x WHERE x.profile_key = $1 AND x.session_id = g.session_id \
                       AND x.doc < g.doc AND NOT (x.id = ANY($2)) ORDER BY x.doc DESC LIMIT $3) n \
                   UNION \
                   SELECT n.doc FROM given g CROSS JOIN LATERAL ( \
                     SELECT doc FROM raw_messages x WHERE x.profile_key = $1 AND x.session_id = g.session_id \
                       AND x.doc > g.doc AND NOT (x.id = ANY($2)) ORDER BY x.doc LIMIT $3) n) \
                 SELECT {RAW_COLUMNS} FROM near \
                 JOIN raw_messages r ON r.profile_key = $1 AND r.doc = near.doc ORDER BY r.doc"
            )))
            .bind(self.profile_key)
            .bind(ids)
            .bind(i64::try_from(radius).unwrap_or(i64::MAX))
            .fetch_all(&self.db.pool)
            .await
            .map_err(db)?;
            rows.iter().map(raw_from_row).collect()
            })
            .await
    }

    async fn raw_neighbors_each(
        &self,
        ids: &[String],
        radius: usize,
    ) -> Result<Vec<Vec<RawMessage>>> {
        if ids.is_empty() || radius == 0 {
            return Ok(vec![Vec::new(); ids.len()]);
        }
        let rows = self
            .db
            .idempotent(|| async {
                // One statement: each asked id's neighbours tagged with its position in `ids`.
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "WITH given AS (SELECT a.at, r.doc, r.session_id \
                       FROM unnest($2::text[]) WITH ORDINALITY a(id, at) \
                       JOIN raw_messages r ON r.profile_key = $1 AND r.id = a.id), \
                     near AS ( \
                       SELECT g.at, n.doc FROM given g CROSS JOIN LATERAL ( \
                         SELECT doc FROM raw_messages x WHERE x.profile_key = $1 AND x.session_id = g.session_id \
                           AND x.doc < g.doc ORDER BY x.doc DESC LIMIT $3) n \
                       UNION ALL \
                       SELECT g.at, n.doc FROM given g CROSS JOIN LATERAL ( \
                         SELECT doc FROM raw_messages x WHERE x.profile_key = $1 AND x.session_id = g.session_id \
                           AND x.doc > g.doc ORDER BY x.doc LIMIT $3) n) \
                     SELECT near.at, {RAW_COLUMNS} FROM near \
                     JOIN raw_messages r ON r.profile_key = $1 AND r.doc = near.doc \
                     ORDER BY near.at, r.doc"
                )))
                .bind(self.profile_key)
                .bind(ids)
                .bind(i64::try_from(radius).unwrap_or(i64::MAX))
                .fetch_all(&self.db.pool)
                .await
                .map_err(db)
            })
            .await?;
        let mut each = vec![Vec::new(); ids.len()];
        for row in &rows {
            // WITH ORDINALITY counts from 1.
            let at = usize::try_from(row.get::<i64, _>(0) - 1).ok();
            let slot = at
                .and_then(|at| each.get_mut(at))
                .ok_or_else(|| invariant("raw_neighbors_each: a row of no asked id"))?;
            slot.push(raw_from_row_at(row, 1)?);
        }
        Ok(each)
    }

    async fn raw_matching(
        &self,
        filter: &MetadataFilter,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<(Vec<String>, Option<String>)> {
        self.db
            .idempotent(|| async {
                let after = memory_core::cursor::parse_position(cursor.as_deref())?.unwrap_or(0);
                // The filter's parameters follow the three fixed ones.
                let (condition, params) = crate::metadata_filter::condition(filter, 4);
                let mut query = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "SELECT id, doc FROM raw_messages WHERE profile_key = $1 AND doc > $2 \
                     AND ({condition}) ORDER BY doc LIMIT $3"
                )))
                .bind(self.profile_key)
                .bind(after)
                .bind(memory_core::cursor::one_more(limit));
                for param in &params {
                    query = query.bind(param);
                }
                let rows = query.fetch_all(&self.db.pool).await.map_err(db)?;
                memory_core::cursor::page_of(&rows, limit, |r| r.get(1), |r| Ok(r.get(0)))
            })
            .await
    }

    async fn purge_raw(&self, ids: &[String]) -> Result<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        Ok(
            sqlx::query("DELETE FROM raw_messages WHERE profile_key = $1 AND id = ANY($2)")
                .bind(self.profile_key)
                .bind(ids)
                .execute(&self.db.pool)
                .await
                .map_err(db)?
                .rows_affected(),
        )
    }
}

#[async_trait]
impl MemoryRecordStore for PostgresLongTermMemory {
    async fn insert_memory(&self, m: MemoryRecord) -> Result<()> {
        let questions = serde_json::to_string(&m.questions)?;
        let sources = serde_json::to_string(&m.source_message_ids)?;
        let reason = m.forgotten.as_ref().map(|f| f.reason.clone());
        check_text(
            [
                ("memory id", m.id.as_str()),
                ("memory content", m.content.as_str()),
                ("memory questions", questions.as_str()),
                ("memory sources", sources.as_str()),
            ]
            .into_iter()
            .chain(m.key.as_deref().map(|k| ("memory key", k)))
            .chain(m.session_id.as_deref().map(|s| ("memory session", s)))
            .chain(m.superseded_by.as_deref().map(|s| ("superseded_by", s)))
            .chain(reason.as_deref().map(|r| ("forget reason", r)))
            .chain(
                m.merged
                    .as_ref()
                    .map(|n| ("merge reason", n.reason.as_str())),
            ),
        )?;
        let result = sqlx::query(
            "INSERT INTO memories (profile_key, id, kind, content, key, questions, session_id, \
             source_message_ids, recorded_at, valid_at, superseded_by, forgotten_reason, forgotten_at, \
             source_lines, metadata, expires_at, merged_reason, merged_at, confirmed_at, recalled_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15::jsonb, $16, \
             $17, $18, $19, $20)",
        )
        .bind(self.profile_key)
        .bind(&m.id)
        .bind(m.kind.as_str())
        .bind(&m.content)
        .bind(&m.key)
        .bind(questions)
        .bind(&m.session_id)
        .bind(sources)
        .bind(m.recorded_at.millis())
        .bind(m.valid_at.map(Timestamp::millis))
        .bind(&m.superseded_by)
        .bind(reason)
        .bind(m.forgotten.as_ref().map(|f| f.at.millis()))
        .bind(m.source_lines.map(|l| format!("[{},{}]", l[0], l[1])))
        .bind((!m.metadata.is_empty()).then(|| m.metadata.to_json()))
        .bind(m.expires_at.map(Timestamp::millis))
        .bind(m.merged.as_ref().map(|n| n.reason.clone()))
        .bind(m.merged.as_ref().map(|n| n.at.millis()))
        .bind(m.confirmed_at.map(Timestamp::millis))
        .bind(m.recalled_at.map(Timestamp::millis))
        .execute(&self.db.pool)
        .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if is_unique_violation(&e) => Err(MemoryError::AlreadyExists {
                kind: "memory",
                id: m.id,
            }),
            Err(e) => Err(db(e)),
        }
    }

    async fn get_memory(&self, id: &str) -> Result<Option<MemoryRecord>> {
        self.db
            .idempotent(|| async {
                let row = sqlx::query(select("AND id = $2"))
                    .bind(self.profile_key)
                    .bind(id)
                    .fetch_optional(&self.db.pool)
                    .await
                    .map_err(db)?;
                row.as_ref().map(from_row).transpose()
            })
            .await
    }

    async fn get_memories(&self, ids: &[String]) -> Result<Vec<MemoryRecord>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = self
            .db
            .idempotent(|| async {
                sqlx::query(select("AND id = ANY($2)"))
                    .bind(self.profile_key)
                    .bind(ids)
                    .fetch_all(&self.db.pool)
                    .await
                    .map_err(db)
            })
            .await?;
        let found: std::collections::HashMap<String, MemoryRecord> = rows
            .iter()
            .map(|row| from_row(row).map(|m| (m.id.clone(), m)))
            .collect::<Result<_>>()?;
        Ok(ids.iter().filter_map(|id| found.get(id).cloned()).collect())
    }

    async fn current_by_key(&self, kind: MemoryKind, key: &str) -> Result<Option<MemoryRecord>> {
        self.db
            .idempotent(|| async {
                let row = sqlx::query(select(
                "AND kind = $2 AND key = $3 AND superseded_by IS NULL AND forgotten_reason IS NULL \
                 ORDER BY pos DESC LIMIT 1",
            ))
            .bind(self.profile_key)
            .bind(kind.as_str())
            .bind(key)
            .fetch_optional(&self.db.pool)
            .await
            .map_err(db)?;
                row.as_ref().map(from_row).transpose()
            })
            .await
    }

    async fn supersede(&self, old_id: &str, new_id: &str) -> Result<()> {
        // One statement: the new memory must exist in this profile, the old one is updated.
        let row = sqlx::query(
            "WITH new AS (SELECT 1 FROM memories WHERE profile_key = $1 AND id = $3), \
             changed AS (UPDATE memories SET superseded_by = $3 \
               WHERE profile_key = $1 AND id = $2 AND EXISTS (SELECT 1 FROM new) RETURNING 1) \
             SELECT EXISTS (SELECT 1 FROM new), (SELECT COUNT(*) FROM changed)",
        )
        .bind(self.profile_key)
        .bind(old_id)
        .bind(new_id)
        .fetch_one(&self.db.pool)
        .await
        .map_err(db)?;
        let (new_exists, changed): (bool, i64) = (row.get(0), row.get(1));
        if !new_exists {
            return Err(MemoryError::not_found("memory", new_id));
        }
        if changed == 0 {
            return Err(MemoryError::not_found("memory", old_id));
        }
        Ok(())
    }

    async fn versions(&self, kind: MemoryKind, key: &str) -> Result<Vec<MemoryRecord>> {
        self.db
            .idempotent(|| async {
                let rows = sqlx::query(select("AND kind = $2 AND key = $3 ORDER BY pos"))
                    .bind(self.profile_key)
                    .bind(kind.as_str())
                    .bind(key)
                    .fetch_all(&self.db.pool)
                    .await
                    .map_err(db)?;
                rows.iter().map(from_row).collect()
            })
            .await
    }

    async fn list(
        &self,
        filter: &MemoryFilter,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<MemoryPage> {
        self.db
            .idempotent(|| async {

            let after = memory_core::cursor::parse_position(cursor.as_deref())?.unwrap_or(0);
            // The metadata filter's parameters follow the eleven fixed ones.
            let (metadata, params) = match &filter.metadata {
                Some(f) => {
                    let (sql, params) = crate::metadata_filter::condition(f, 12);
                    (format!("AND ({sql})"), params)
                }
                None => (String::new(), Vec::new()),
            };
            let mut query = sqlx::query(select(&format!(
                "AND pos > $2 AND ($3::text IS NULL OR kind = $3) AND ($4::text IS NULL OR key = $4) \
                 AND ($5::text IS NULL OR session_id = $5) \
                 AND ($6::bigint IS NULL OR recorded_at >= $6) AND ($7::bigint IS NULL OR recorded_at < $7) \
                 AND ($8 OR superseded_by IS NULL) AND ($9 OR forgotten_reason IS NULL) \
                 AND ($9 OR $11::bigint IS NULL OR expires_at IS NULL OR expires_at > $11) \
                 {metadata} ORDER BY pos LIMIT $10",
            )))
            .bind(self.profile_key)
            .bind(after)
            .bind(filter.kind.map(MemoryKind::as_str))
            .bind(&filter.key)
            .bind(&filter.session_id)
            .bind(filter.from.map(Timestamp::millis))
            .bind(filter.to.map(Timestamp::millis))
            .bind(filter.include_superseded)
            .bind(filter.include_forgotten)
            .bind(memory_core::cursor::one_more(limit))
            .bind(filter.current_at.map(Timestamp::millis));
            for param in &params {
                query = query.bind(param);
            }
            let rows = query.fetch_all(&self.db.pool).await.map_err(db)?;
            let (memories, next_cursor) =
                memory_core::cursor::page_of(&rows, limit, |row| row.get(0), from_row)?;
            Ok(MemoryPage {
                memories,
                next_cursor,
            })
            })
            .await
    }

    async fn forget(&self, id: &str, request: ForgetRequest) -> Result<()> {
        check_text([("forget reason", request.reason.as_str())])?;
        let changed = sqlx::query(
            "UPDATE memories SET forgotten_reason = $3, forgotten_at = $4 \
             WHERE profile_key = $1 AND id = $2",
        )
        .bind(self.profile_key)
        .bind(id)
        .bind(&request.reason)
        .bind(request.at.millis())
        .execute(&self.db.pool)
        .await
        .map_err(db)?
        .rows_affected();
        if changed == 0 {
            return Err(MemoryError::not_found("memory", id));
        }
        Ok(())
    }

    async fn purge(&self, id: &str) -> Result<bool> {
        // One statement: the predecessor takes the erased version's place in the chain.
        let deleted: i64 = sqlx::query_scalar(
            "WITH gone AS (DELETE FROM memories WHERE profile_key = $1 AND id = $2 \
               RETURNING superseded_by), \
             relinked AS (UPDATE memories SET superseded_by = (SELECT superseded_by FROM gone) \
               WHERE profile_key = $1 AND superseded_by = $2 AND EXISTS (SELECT 1 FROM gone)) \
             SELECT COUNT(*) FROM gone",
        )
        .bind(self.profile_key)
        .bind(id)
        .fetch_one(&self.db.pool)
        .await
        .map_err(db)?;
        Ok(deleted > 0)
    }

    async fn expired(&self, at: Timestamp, limit: usize) -> Result<Vec<String>> {
        self.db
            .idempotent(|| async {
                // Served by the partial index `memories_expiry`.
                let ids: Vec<String> = sqlx::query_scalar(
                    "SELECT id FROM memories WHERE profile_key = $1 AND expires_at IS NOT NULL \
                     AND forgotten_reason IS NULL AND expires_at <= $2 ORDER BY expires_at, pos LIMIT $3",
                )
                .bind(self.profile_key)
                .bind(at.millis())
                .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                .fetch_all(&self.db.pool)
                .await
                .map_err(db)?;
                Ok(ids)
            })
            .await
    }

    async fn merge(&self, merge: &MemoryMerge) -> Result<()> {
        merge.validate()?;
        check_text([("merge reason", merge.note.reason.as_str())])?;
        let ids: Vec<String> = std::iter::once(&merge.survivor)
            .chain(&merge.absorbed)
            .cloned()
            .collect();
        // Read under row locks and written in one transaction: a merge planned on records
        // that changed since is refused whole.
        let mut tx = self.db.pool.begin().await.map_err(db)?;
        let rows = sqlx::query(select("AND id = ANY($2) ORDER BY pos FOR UPDATE"))
            .bind(self.profile_key)
            .bind(&ids)
            .fetch_all(&mut *tx)
            .await
            .map_err(db)?;
        let found = rows.iter().map(from_row).collect::<Result<Vec<_>>>()?;
        let (survivor, absorbed) = merge.check_current(&found)?;
        let absorbed: Vec<MemoryRecord> = absorbed.into_iter().cloned().collect();
        sqlx::query(
            "UPDATE memories SET source_message_ids = $3, confirmed_at = $4 \
             WHERE profile_key = $1 AND id = $2",
        )
        .bind(self.profile_key)
        .bind(&merge.survivor)
        .bind(serde_json::to_string(&MemoryMerge::merged_sources(
            survivor, &absorbed,
        ))?)
        .bind(MemoryMerge::merged_confirmation(survivor, &absorbed).map(Timestamp::millis))
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        sqlx::query(
            "UPDATE memories SET superseded_by = $3, merged_reason = $4, merged_at = $5 \
             WHERE profile_key = $1 AND id = ANY($2)",
        )
        .bind(self.profile_key)
        .bind(&merge.absorbed)
        .bind(&merge.survivor)
        .bind(&merge.note.reason)
        .bind(merge.note.at.millis())
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        tx.commit().await.map_err(db)
    }

    async fn merged_into(&self, id: &str) -> Result<Vec<MemoryRecord>> {
        self.db
            .idempotent(|| async {
                let rows = sqlx::query(select(
                    "AND superseded_by = $2 AND merged_reason IS NOT NULL ORDER BY pos",
                ))
                .bind(self.profile_key)
                .bind(id)
                .fetch_all(&self.db.pool)
                .await
                .map_err(db)?;
                rows.iter().map(from_row).collect()
            })
            .await
    }

    async fn mark_recalled(&self, ids: &[String], at: Timestamp) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        // Repeating it changes nothing.
        self.db
            .idempotent(|| async {
                sqlx::query(
                    "UPDATE memories SET recalled_at = $3 WHERE profile_key = $1 AND id = ANY($2) \
                     AND (recalled_at IS NULL OR recalled_at < $3)",
                )
                .bind(self.profile_key)
                .bind(ids)
                .bind(at.millis())
                .execute(&self.db.pool)
                .await
                .map_err(db)?;
                Ok(())
            })
            .await
    }
}

/// Long-term memory profiles on PostgreSQL: a row per profile in `profiles`, and every
/// record of a profile carrying its key. Deleting a profile is one statement that cascades
/// to its raw messages and memories.
#[derive(Debug, Clone)]
pub struct PostgresProfiles {
    db: PostgresDatabase,
}

impl PostgresProfiles {
    /// Profiles over a connected database.
    pub fn new(db: PostgresDatabase) -> Self {
        Self { db }
    }
}

#[async_trait]
impl MemoryProfiles for PostgresProfiles {
    async fn open(&self, name: &str) -> Result<Arc<dyn LongTermMemoryStore>> {
        validate_profile_name(name)?;
        sqlx::query("INSERT INTO profiles (name) VALUES ($1) ON CONFLICT (name) DO NOTHING")
            .bind(name)
            .execute(&self.db.pool)
            .await
            .map_err(db)?;
        let key: Option<i64> = sqlx::query_scalar("SELECT key FROM profiles WHERE name = $1")
            .bind(name)
            .fetch_optional(&self.db.pool)
            .await
            .map_err(db)?;
        let profile_key = key.ok_or_else(|| invariant("a profile vanished as it was opened"))?;
        Ok(Arc::new(PostgresLongTermMemory {
            db: self.db.clone(),
            profile_key,
        }))
    }

    async fn list(&self) -> Result<Vec<String>> {
        sqlx::query_scalar("SELECT name FROM profiles ORDER BY name")
            .fetch_all(&self.db.pool)
            .await
            .map_err(db)
    }

    async fn list_page(&self, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        sqlx::query_scalar(
            "SELECT name FROM profiles WHERE $1::text IS NULL OR name > $1 ORDER BY name LIMIT $2",
        )
        .bind(after)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.db.pool)
        .await
        .map_err(db)
    }

    async fn exists(&self, name: &str) -> Result<bool> {
        validate_profile_name(name)?;
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM profiles WHERE name = $1)")
            .bind(name)
            .fetch_one(&self.db.pool)
            .await
            .map_err(db)
    }

    async fn delete(&self, name: &str) -> Result<bool> {
        validate_profile_name(name)?;
        let deleted = sqlx::query("DELETE FROM profiles WHERE name = $1")
            .bind(name)
            .execute(&self.db.pool)
            .await
            .map_err(db)?
            .rows_affected();
        Ok(deleted > 0)
    }
}

#[cfg(test)]
mod tests {
    /// Every statement over a profile's tables names the profile's key: no query can reach
    /// another profile's rows. (Statements are read from this file's source.)
    #[test]
    fn every_statement_on_profile_tables_names_the_profile_key() {
        let source = include_str!("long_term_memory.rs");
        let code = source.split("#[cfg(test)]").next().unwrap_or_default();
        let mut checked = 0;
        for statement in code.split("sqlx::query").skip(1) {
            let sql: String = statement
                .split(".bind(")
                .next()
                .unwrap_or_default()
                .to_owned();
            let tables = sql.matches(" raw_messages").count() + sql.matches(" memories").count();
            if tables > 0 || sql.contains("select(") {
                checked += 1;
                // Each mention of a profile table is matched by a condition on the key (or,
                // in an insert, by the key as the first column).
                let keyed =
                    sql.matches("profile_key = $1").count() + sql.matches("(profile_key,").count();
                assert!(
                    keyed >= tables || sql.contains("select("),
                    "a statement does not name the profile key for every table: {sql}"
                );
            }
        }
        // `select(..)` prefixes `WHERE profile_key = $1` itself.
        assert!(super::select("").0.contains("WHERE profile_key = $1"));
        assert!(checked >= 12, "only {checked} statements found");
    }
}
