use async_trait::async_trait;
use memory_core::ports::{
    ForgetRequest, MemoryFilter, MemoryKind, MemoryMerge, MemoryPage, MemoryRecord,
    MemoryRecordStore, MergeNote, RawMessage, RawMessageInsert, RawMessageStore,
};
use memory_core::{MemoryError, Metadata, MetadataFilter, Result, Timestamp};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::database::SqliteDatabase;
use crate::error::{BACKEND, db};

/// One profile's records ([`RawMessageStore`] and [`MemoryRecordStore`]) in its own SQLite
/// database, with FTS5 indexes written by triggers in the same transactions (searched through
/// [`crate::SqliteProfileIndex`]).
#[derive(Clone)]
pub struct SqliteLongTermMemory {
    db: SqliteDatabase,
    /// Keeps the open profile this store came from open while the store lives.
    _lease: Option<crate::profiles::Lease>,
}

impl std::fmt::Debug for SqliteLongTermMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteLongTermMemory")
            .field("db", &self.db)
            .finish_non_exhaustive()
    }
}

impl SqliteLongTermMemory {
    /// The store over an open database.
    pub fn new(db: SqliteDatabase) -> Self {
        Self { db, _lease: None }
    }

    /// The store of an open profile, holding it open while the store lives.
    pub(crate) fn leased(db: SqliteDatabase, lease: crate::profiles::Lease) -> Self {
        Self {
            db,
            _lease: Some(lease),
        }
    }
}

fn parse_kind(s: &str) -> Result<MemoryKind> {
    MemoryKind::parse(s)
        .ok_or_else(|| MemoryError::serialization(format!("unknown memory kind {s:?}")))
}

const COLUMNS: &str = "pos, id, kind, content, key, questions, session_id, source_message_ids, recorded_at, valid_at, superseded_by, forgotten_reason, forgotten_at, source_lines, metadata, expires_at, merged_reason, merged_at, confirmed_at, recalled_at";

fn from_row(row: &SqliteRow) -> Result<MemoryRecord> {
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
const RAW_COLUMNS: &str = "r.id, r.session_id, r.role, r.content, r.created_at, r.metadata";

fn raw_from_row(r: &SqliteRow) -> Result<RawMessage> {
    raw_from_row_at(r, 0)
}

/// A raw message from [`RAW_COLUMNS`] starting at column `first`.
fn raw_from_row_at(r: &SqliteRow, first: usize) -> Result<RawMessage> {
    Ok(RawMessage {
        id: r.get(first),
        session_id: r.get(first + 1),
        role: r.get(first + 2),
        content: r.get(first + 3),
        created_at: Timestamp(r.get(first + 4)),
        metadata: Metadata::from_stored(r.get(first), r.get::<Option<&str>, _>(first + 5))?,
    })
}

fn select(rest: &str) -> sqlx::AssertSqlSafe<String> {
    sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM memories {rest}"))
}

#[async_trait]
impl RawMessageStore for SqliteLongTermMemory {
    async fn insert_raw(&self, messages: Vec<RawMessage>) -> Result<RawMessageInsert> {
        let mut tx = self.db.write().await?;
        let mut counts = RawMessageInsert::default();
        for m in &messages {
            let inserted = sqlx::query(
                "INSERT OR IGNORE INTO raw_messages (id, session_id, role, content, created_at, metadata) VALUES (?, ?, ?, ?, ?, ?)",
            )
            .bind(&m.id)
            .bind(&m.session_id)
            .bind(&m.role)
            .bind(&m.content)
            .bind(m.created_at.millis())
            .bind((!m.metadata.is_empty()).then(|| m.metadata.to_json()))
            .execute(&mut *tx)
            .await
            .map_err(db)?
            .rows_affected();
            if inserted > 0 {
                counts.inserted += 1;
            } else {
                counts.existing += 1;
            }
        }
        tx.commit().await.map_err(db)?;
        Ok(counts)
    }

    async fn raw_page(
        &self,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<(Vec<RawMessage>, Option<String>)> {
        let after = memory_core::cursor::parse_position(cursor.as_deref())?.unwrap_or(0);
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {RAW_COLUMNS}, r.doc FROM raw_messages r WHERE r.doc > ? ORDER BY r.doc LIMIT ?"
        )))
        .bind(after)
        .bind(memory_core::cursor::one_more(limit))
        .fetch_all(&mut *self.db.reader.acquire().await?)
        .await
        .map_err(db)?;
        memory_core::cursor::page_of(&rows, limit, |r| r.get(6), raw_from_row)
    }

    async fn raw_by_ids(&self, ids: &[String]) -> Result<Vec<RawMessage>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        // CROSS JOIN keeps the asked ids the outer loop (see `SqliteVectorIndex::get`).
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {RAW_COLUMNS} FROM json_each(?) j \
             CROSS JOIN raw_messages r ON r.id = j.value ORDER BY j.key"
        )))
        .bind(serde_json::to_string(ids)?)
        .fetch_all(&mut *self.db.reader.acquire().await?)
        .await
        .map_err(db)?;
        rows.iter().map(raw_from_row).collect()
    }

    async fn raw_neighbors(&self, ids: &[String], radius: usize) -> Result<Vec<RawMessage>> {
        if ids.is_empty() || radius == 0 {
            return Ok(Vec::new());
        }
        let radius = i64::try_from(radius).unwrap_or(i64::MAX);
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "WITH given AS (SELECT r.doc, r.session_id FROM json_each(?1) j CROSS JOIN raw_messages r ON r.id = j.value), \
             near AS ( \
               SELECT n.doc FROM given g JOIN raw_messages n ON n.doc IN ( \
                 SELECT doc FROM raw_messages WHERE session_id = g.session_id AND doc < g.doc \
                   AND id NOT IN (SELECT value FROM json_each(?1)) ORDER BY doc DESC LIMIT ?2) \
               UNION \
               SELECT n.doc FROM given g JOIN raw_messages n ON n.doc IN ( \
                 SELECT doc FROM raw_messages WHERE session_id = g.session_id AND doc > g.doc \
                   AND id NOT IN (SELECT value FROM json_each(?1)) ORDER BY doc LIMIT ?2)) \
             SELECT {RAW_COLUMNS} FROM near JOIN raw_messages r ON r.doc = near.doc ORDER BY r.doc"
        )))
        .bind(serde_json::to_string(ids)?)
        .bind(radius)
        .fetch_all(&mut *self.db.reader.acquire().await?)
        .await
        .map_err(db)?;
        rows.iter().map(raw_from_row).collect()
    }

    async fn raw_neighbors_each(
        &self,
        ids: &[String],
        radius: usize,
    ) -> Result<Vec<Vec<RawMessage>>> {
        let mut each = vec![Vec::new(); ids.len()];
        if ids.is_empty() || radius == 0 {
            return Ok(each);
        }
        let radius = i64::try_from(radius).unwrap_or(i64::MAX);
        // One statement: each asked id's neighbours tagged with the id's position in `ids`.
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "WITH given AS (SELECT j.key AS at, r.doc, r.session_id FROM json_each(?1) j \
               CROSS JOIN raw_messages r ON r.id = j.value), \
             near AS ( \
               SELECT g.at, n.doc FROM given g JOIN raw_messages n ON n.doc IN ( \
                 SELECT doc FROM raw_messages WHERE session_id = g.session_id AND doc < g.doc \
                   ORDER BY doc DESC LIMIT ?2) \
               UNION ALL \
               SELECT g.at, n.doc FROM given g JOIN raw_messages n ON n.doc IN ( \
                 SELECT doc FROM raw_messages WHERE session_id = g.session_id AND doc > g.doc \
                   ORDER BY doc LIMIT ?2)) \
             SELECT near.at, {RAW_COLUMNS} FROM near JOIN raw_messages r ON r.doc = near.doc \
             ORDER BY near.at, r.doc"
        )))
        .bind(serde_json::to_string(ids)?)
        .bind(radius)
        .fetch_all(&mut *self.db.reader.acquire().await?)
        .await
        .map_err(db)?;
        for row in &rows {
            let at = usize::try_from(row.get::<i64, _>(0)).ok();
            let slot = at.and_then(|at| each.get_mut(at)).ok_or_else(|| {
                MemoryError::backend(BACKEND, "raw_neighbors_each: a row of no asked id")
            })?;
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
        let after = memory_core::cursor::parse_position(cursor.as_deref())?.unwrap_or(0);
        // The filter's parameters follow the two fixed ones.
        let (condition, params) = crate::metadata_filter::condition(filter, 3);
        let mut query = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT id, doc FROM raw_messages WHERE doc > ?1 AND ({condition}) ORDER BY doc LIMIT ?2"
        )))
        .bind(after)
        .bind(memory_core::cursor::one_more(limit));
        query = crate::metadata_filter::bind_all(query, params);
        let rows = query
            .fetch_all(&mut *self.db.reader.acquire().await?)
            .await
            .map_err(db)?;
        memory_core::cursor::page_of(&rows, limit, |r| r.get(1), |r| Ok(r.get(0)))
    }

    async fn purge_raw(&self, ids: &[String]) -> Result<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let deleted =
            sqlx::query("DELETE FROM raw_messages WHERE id IN (SELECT value FROM json_each(?))")
                .bind(serde_json::to_string(ids)?)
                .execute(&self.db.writer)
                .await
                .map_err(db)?
                .rows_affected();
        if deleted > 0 {
            self.db.erase_traces("raw_fts").await?;
        }
        Ok(deleted)
    }
}

#[async_trait]
impl MemoryRecordStore for SqliteLongTermMemory {
    async fn insert_memory(&self, m: MemoryRecord) -> Result<()> {
        let search_text = format!("{}\n{}", m.content, m.questions.join("\n"));
        let result = sqlx::query(
            "INSERT INTO memories (id, kind, content, key, questions, session_id, source_message_ids, recorded_at, valid_at, \
             superseded_by, forgotten_reason, forgotten_at, search_text, source_lines, metadata, expires_at, \
             merged_reason, merged_at, confirmed_at, recalled_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&m.id)
        .bind(m.kind.as_str())
        .bind(&m.content)
        .bind(&m.key)
        .bind(serde_json::to_string(&m.questions)?)
        .bind(&m.session_id)
        .bind(serde_json::to_string(&m.source_message_ids)?)
        .bind(m.recorded_at.millis())
        .bind(m.valid_at.map(Timestamp::millis))
        .bind(&m.superseded_by)
        .bind(m.forgotten.as_ref().map(|f| f.reason.clone()))
        .bind(m.forgotten.as_ref().map(|f| f.at.millis()))
        .bind(search_text)
        .bind(m.source_lines.map(|l| format!("[{},{}]", l[0], l[1])))
        .bind((!m.metadata.is_empty()).then(|| m.metadata.to_json()))
        .bind(m.expires_at.map(Timestamp::millis))
        .bind(m.merged.as_ref().map(|n| n.reason.clone()))
        .bind(m.merged.as_ref().map(|n| n.at.millis()))
        .bind(m.confirmed_at.map(Timestamp::millis))
        .bind(m.recalled_at.map(Timestamp::millis))
        .execute(&self.db.writer)
        .await;
        match result {
            Ok(_) => Ok(()),
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                Err(MemoryError::AlreadyExists {
                    kind: "memory",
                    id: m.id,
                })
            }
            Err(e) => Err(db(e)),
        }
    }

    async fn get_memory(&self, id: &str) -> Result<Option<MemoryRecord>> {
        let row = sqlx::query(select("WHERE id = ?"))
            .bind(id)
            .fetch_optional(&mut *self.db.reader.acquire().await?)
            .await
            .map_err(db)?;
        row.as_ref().map(from_row).transpose()
    }

    async fn get_memories(&self, ids: &[String]) -> Result<Vec<MemoryRecord>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = sqlx::query(select("WHERE id IN (SELECT value FROM json_each(?))"))
            .bind(serde_json::to_string(ids)?)
            .fetch_all(&mut *self.db.reader.acquire().await?)
            .await
            .map_err(db)?;
        let found: std::collections::HashMap<String, MemoryRecord> = rows
            .iter()
            .map(|row| from_row(row).map(|m| (m.id.clone(), m)))
            .collect::<Result<_>>()?;
        Ok(ids.iter().filter_map(|id| found.get(id).cloned()).collect())
    }

    async fn current_by_key(&self, kind: MemoryKind, key: &str) -> Result<Option<MemoryRecord>> {
        let row = sqlx::query(select(
            "WHERE kind = ? AND key = ? AND superseded_by IS NULL AND forgotten_reason IS NULL ORDER BY pos DESC LIMIT 1",
        ))
        .bind(kind.as_str())
        .bind(key)
        .fetch_optional(&mut *self.db.reader.acquire().await?)
        .await
        .map_err(db)?;
        row.as_ref().map(from_row).transpose()
    }

    async fn current_by_keys(&self, kinds: &[MemoryKind], key: &str) -> Result<Vec<MemoryRecord>> {
        if kinds.is_empty() {
            return Ok(Vec::new());
        }
        let marks = vec!["?"; kinds.len()].join(", ");
        let mut query = sqlx::query(select(&format!(
            "WHERE kind IN ({marks}) AND key = ? AND superseded_by IS NULL AND forgotten_reason IS NULL ORDER BY pos DESC"
        )));
        for kind in kinds {
            query = query.bind(kind.as_str());
        }
        let rows = query
            .bind(key)
            .fetch_all(&mut *self.db.reader.acquire().await?)
            .await
            .map_err(db)?;
        let mut newest: Vec<Option<MemoryRecord>> = kinds.iter().map(|_| None).collect();
        for row in &rows {
            let memory = from_row(row)?;
            if let Some(slot) = kinds.iter().position(|k| *k == memory.kind)
                && newest[slot].is_none()
            {
                newest[slot] = Some(memory);
            }
        }
        Ok(newest.into_iter().flatten().collect())
    }

    async fn supersede(&self, old_id: &str, new_id: &str) -> Result<()> {
        if self.get_memory(new_id).await?.is_none() {
            return Err(MemoryError::not_found("memory", new_id));
        }
        let changed = sqlx::query("UPDATE memories SET superseded_by = ? WHERE id = ?")
            .bind(new_id)
            .bind(old_id)
            .execute(&self.db.writer)
            .await
            .map_err(db)?
            .rows_affected();
        if changed == 0 {
            return Err(MemoryError::not_found("memory", old_id));
        }
        Ok(())
    }

    async fn versions(&self, kind: MemoryKind, key: &str) -> Result<Vec<MemoryRecord>> {
        let rows = sqlx::query(select("WHERE kind = ? AND key = ? ORDER BY pos"))
            .bind(kind.as_str())
            .bind(key)
            .fetch_all(&mut *self.db.reader.acquire().await?)
            .await
            .map_err(db)?;
        rows.iter().map(from_row).collect()
    }

    async fn list(
        &self,
        filter: &MemoryFilter,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<MemoryPage> {
        let after = memory_core::cursor::parse_position(cursor.as_deref())?.unwrap_or(0);
        // The metadata filter's parameters follow the ten fixed ones.
        let (metadata, params) = match &filter.metadata {
            Some(f) => {
                let (sql, params) = crate::metadata_filter::condition(f, 11);
                (format!("AND ({sql})"), params)
            }
            None => (String::new(), Vec::new()),
        };
        let query = select(&format!(
            "WHERE pos > ?1 AND (?2 IS NULL OR kind = ?2) AND (?3 IS NULL OR key = ?3) AND (?4 IS NULL OR session_id = ?4) \
             AND (?5 IS NULL OR recorded_at >= ?5) AND (?6 IS NULL OR recorded_at < ?6) \
             AND (?7 OR superseded_by IS NULL) AND (?8 OR forgotten_reason IS NULL) \
             AND (?8 OR ?10 IS NULL OR expires_at IS NULL OR expires_at > ?10) {metadata} ORDER BY pos LIMIT ?9",
        ));
        let mut query = sqlx::query(query)
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
        query = crate::metadata_filter::bind_all(query, params);
        let rows = query
            .fetch_all(&mut *self.db.reader.acquire().await?)
            .await
            .map_err(db)?;
        let (memories, next_cursor) =
            memory_core::cursor::page_of(&rows, limit, |row| row.get(0), from_row)?;
        Ok(MemoryPage {
            memories,
            next_cursor,
        })
    }

    async fn forget(&self, id: &str, request: ForgetRequest) -> Result<()> {
        let changed =
            sqlx::query("UPDATE memories SET forgotten_reason = ?, forgotten_at = ? WHERE id = ?")
                .bind(&request.reason)
                .bind(request.at.millis())
                .bind(id)
                .execute(&self.db.writer)
                .await
                .map_err(db)?
                .rows_affected();
        if changed == 0 {
            return Err(MemoryError::not_found("memory", id));
        }
        Ok(())
    }

    async fn purge(&self, id: &str) -> Result<bool> {
        let mut tx = self.db.write().await?;
        // The predecessor takes the erased version's place in the chain.
        sqlx::query(
            "UPDATE memories SET superseded_by = (SELECT superseded_by FROM memories WHERE id = ?1) \
             WHERE superseded_by = ?1",
        )
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        let deleted = sqlx::query("DELETE FROM memories WHERE id = ?")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db)?
            .rows_affected();
        tx.commit().await.map_err(db)?;
        if deleted > 0 {
            self.db.erase_traces("memories_fts").await?;
        }
        Ok(deleted > 0)
    }

    async fn expired(&self, at: Timestamp, limit: usize) -> Result<Vec<String>> {
        // Served by the partial index `memories_expiry`.
        let rows = sqlx::query(
            "SELECT id FROM memories WHERE expires_at IS NOT NULL AND forgotten_reason IS NULL \
             AND expires_at <= ? ORDER BY expires_at, pos LIMIT ?",
        )
        .bind(at.millis())
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&mut *self.db.reader.acquire().await?)
        .await
        .map_err(db)?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    async fn merge(&self, merge: &MemoryMerge) -> Result<()> {
        merge.validate()?;
        let ids: Vec<&String> = std::iter::once(&merge.survivor)
            .chain(&merge.absorbed)
            .collect();
        // Read and written in one transaction: a merge planned on records that changed
        // since is refused whole.
        let mut tx = self.db.write().await?;
        let rows = sqlx::query(select("WHERE id IN (SELECT value FROM json_each(?))"))
            .bind(serde_json::to_string(&ids)?)
            .fetch_all(&mut *tx)
            .await
            .map_err(db)?;
        let found = rows.iter().map(from_row).collect::<Result<Vec<_>>>()?;
        let (survivor, absorbed) = merge.check_current(&found)?;
        let absorbed: Vec<MemoryRecord> = absorbed.into_iter().cloned().collect();
        sqlx::query("UPDATE memories SET source_message_ids = ?, confirmed_at = ? WHERE id = ?")
            .bind(serde_json::to_string(&MemoryMerge::merged_sources(
                survivor, &absorbed,
            ))?)
            .bind(MemoryMerge::merged_confirmation(survivor, &absorbed).map(Timestamp::millis))
            .bind(&merge.survivor)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        sqlx::query(
            "UPDATE memories SET superseded_by = ?, merged_reason = ?, merged_at = ? \
             WHERE id IN (SELECT value FROM json_each(?))",
        )
        .bind(&merge.survivor)
        .bind(&merge.note.reason)
        .bind(merge.note.at.millis())
        .bind(serde_json::to_string(&merge.absorbed)?)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        tx.commit().await.map_err(db)
    }

    async fn merged_into(&self, id: &str) -> Result<Vec<MemoryRecord>> {
        let rows = sqlx::query(select(
            "WHERE superseded_by = ? AND merged_reason IS NOT NULL ORDER BY pos",
        ))
        .bind(id)
        .fetch_all(&mut *self.db.reader.acquire().await?)
        .await
        .map_err(db)?;
        rows.iter().map(from_row).collect()
    }

    async fn mark_recalled(&self, ids: &[String], at: Timestamp) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        sqlx::query(
            "UPDATE memories SET recalled_at = ?1 WHERE id IN (SELECT value FROM json_each(?2)) \
             AND (recalled_at IS NULL OR recalled_at < ?1)",
        )
        .bind(at.millis())
        .bind(serde_json::to_string(ids)?)
        .execute(&self.db.writer)
        .await
        .map_err(db)?;
        Ok(())
    }
}
