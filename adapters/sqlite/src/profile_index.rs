use async_trait::async_trait;
use memory_core::ports::{
    TextDocument, TextFields, TextHit, TextIndex, TextIndexCapabilities, TextQuery, namespaces,
};
use memory_core::{Result, Timestamp};
use sqlx::Row;

use crate::database::SqliteDatabase;
use crate::error::{BACKEND, db};
use crate::fts;
use crate::store_written_index::{
    STORE_WRITTEN, needs_absent_field, unknown_namespace, written_by_store,
};

const SERVED: [&str; 2] = [namespaces::RAW, namespaces::MEMORIES];

/// The `raw` and `memories` namespaces of one profile's [`TextIndex`], over the FTS5 indexes
/// that [`crate::SqliteLongTermMemory`] writes in the same transactions as the rows. Its
/// capabilities say `written_by_store`: writes through this port are `NotSupported`.
#[derive(Clone)]
pub struct SqliteProfileIndex {
    db: SqliteDatabase,
    /// Keeps the open profile this index came from open while the index lives.
    _lease: Option<crate::profiles::Lease>,
}

impl std::fmt::Debug for SqliteProfileIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteProfileIndex")
            .field("db", &self.db)
            .finish_non_exhaustive()
    }
}

impl SqliteProfileIndex {
    /// The index of the profile store over the same database.
    pub fn new(db: SqliteDatabase) -> Self {
        Self { db, _lease: None }
    }

    /// The index of an open profile, holding it open while the index lives.
    pub(crate) fn leased(db: SqliteDatabase, lease: crate::profiles::Lease) -> Self {
        Self {
            db,
            _lease: Some(lease),
        }
    }

    async fn search_raw(&self, query: &TextQuery) -> Result<Vec<TextHit>> {
        if needs_absent_field(&query.filter, false, true) {
            return Ok(Vec::new());
        }
        let f = &query.filter;
        let expression = fts::match_expression(&query.text, query.mode, "content", None);
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        // Unfiltered (what recall asks): the best `limit` by score first (see the `fts`
        // module), then only those are joined to their rows. Every index row has its
        // message, so none is lost.
        let unfiltered =
            f.session.is_none() && f.role.is_none() && f.from.is_none() && f.to.is_none();
        let sql = if unfiltered {
            "SELECT r.id, r.content, r.session_id, r.role, r.created_at, f.score \
             FROM (SELECT rowid, bm25(raw_fts) AS score FROM raw_fts WHERE raw_fts MATCH ?1 \
                   ORDER BY score LIMIT ?6) f \
             JOIN raw_messages r ON r.doc = f.rowid \
             WHERE ?2 IS NULL AND ?3 IS NULL AND ?4 IS NULL AND ?5 IS NULL ORDER BY f.score"
        } else {
            "SELECT r.id, r.content, r.session_id, r.role, r.created_at, f.rank \
             FROM raw_fts f JOIN raw_messages r ON r.doc = f.rowid \
             WHERE raw_fts MATCH ?1 AND (?2 IS NULL OR r.session_id = ?2) AND (?3 IS NULL OR r.role = ?3) \
               AND (?4 IS NULL OR r.created_at >= ?4) AND (?5 IS NULL OR r.created_at < ?5) \
             ORDER BY f.rank LIMIT ?6"
        };
        let rows = sqlx::query(sql)
            .bind(expression)
            .bind(&f.session)
            .bind(&f.role)
            .bind(f.from.map(Timestamp::millis))
            .bind(f.to.map(Timestamp::millis))
            .bind(limit)
            .fetch_all(&mut *self.db.reader.acquire().await?)
            .await
            .map_err(db)?;
        Ok(rows
            .iter()
            .map(|r| TextHit {
                id: r.get(0),
                text: r.get(1),
                fields: TextFields {
                    session: r.get(2),
                    role: r.get(3),
                    time: Some(Timestamp(r.get(4))),
                    ..TextFields::default()
                },
                score: -r.get::<f64, _>(5),
            })
            .collect())
    }

    async fn search_memories(&self, query: &TextQuery) -> Result<Vec<TextHit>> {
        if query.filter.role.is_some() {
            return Ok(Vec::new());
        }
        let f = &query.filter;
        let unfiltered = f.session.is_none()
            && f.kind.is_none()
            && f.key.is_none()
            && f.from.is_none()
            && f.to.is_none();
        if unfiltered {
            // The best few index rows by score first, joined only then; older versions of a
            // key and forgotten memories are dropped after, so a margin is taken. The page is whole
            // when it is full, or when the index had fewer rows than were taken (every match
            // was seen); only a page cut short by dropped memories asks the full query below.
            let taken = query.limit.saturating_add(RANKED_MARGIN);
            let rows = self
                .memory_rows(MEMORIES_RANKED_FIRST, query, taken)
                .await?;
            let every_match_seen = rows.first().is_some_and(|(_, seen)| *seen < taken);
            if rows.len() >= query.limit || every_match_seen {
                return Ok(rows.into_iter().map(|(hit, _)| hit).collect());
            }
        }
        let rows = self.memory_rows(MEMORIES_FILTERED, query, 0).await?;
        Ok(rows.into_iter().map(|(hit, _)| hit).collect())
    }

    /// The hits of `sql` (one of the two statements below) for `query`, each with the
    /// number of index rows the statement ranked (`usize::MAX` when it does not say);
    /// `taken` binds `?8`.
    async fn memory_rows(
        &self,
        sql: &'static str,
        query: &TextQuery,
        taken: usize,
    ) -> Result<Vec<(TextHit, usize)>> {
        let f = &query.filter;
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let rows = sqlx::query(sql)
            .bind(fts::match_expression(
                &query.text,
                query.mode,
                "search_text",
                None,
            ))
            .bind(&f.session)
            .bind(&f.kind)
            .bind(&f.key)
            .bind(f.from.map(Timestamp::millis))
            .bind(f.to.map(Timestamp::millis))
            .bind(limit)
            .bind(i64::try_from(taken).unwrap_or(i64::MAX))
            .fetch_all(&mut *self.db.reader.acquire().await?)
            .await
            .map_err(db)?;
        Ok(rows
            .iter()
            .map(|r| {
                let hit = TextHit {
                    id: r.get(0),
                    text: r.get(1),
                    fields: TextFields {
                        session: r.get(2),
                        kind: Some(r.get(3)),
                        key: r.get(4),
                        time: Some(Timestamp(r.get(5))),
                        ..TextFields::default()
                    },
                    score: -r.get::<f64, _>(6),
                };
                let seen = r.get::<Option<i64>, _>(7);
                (
                    hit,
                    seen.and_then(|n| usize::try_from(n).ok())
                        .unwrap_or(usize::MAX),
                )
            })
            .collect())
    }
}

/// Index rows ranked beyond the page, for older versions and forgotten memories to drop out of.
const RANKED_MARGIN: usize = 32;

/// Unfiltered: the best `?8` index rows by score (see the `fts` module), and how many there
/// were (`seen`), then the searchable memories among them (current, or merged into another:
/// [`memory_core::ports::MemoryRecord::is_searchable`]), best `?7` first (`?2`–`?6` unused;
/// binds as below).
const MEMORIES_RANKED_FIRST: &str = "SELECT m.id, m.search_text, m.session_id, m.kind, m.key, m.recorded_at, f.score, f.seen \
     FROM (SELECT rowid, score, COUNT(*) OVER () AS seen \
           FROM (SELECT rowid, bm25(memories_fts) AS score FROM memories_fts \
                 WHERE memories_fts MATCH ?1 ORDER BY score LIMIT ?8)) f \
     JOIN memories m ON m.pos = f.rowid \
     WHERE (m.superseded_by IS NULL OR m.merged_reason IS NOT NULL) AND m.forgotten_reason IS NULL \
       AND ?2 IS NULL AND ?3 IS NULL AND ?4 IS NULL AND ?5 IS NULL AND ?6 IS NULL \
     ORDER BY f.score LIMIT ?7";

/// Every match filtered, then ranked: session, kind, key, from, to, limit (`?8` unused;
/// `seen` is not counted).
const MEMORIES_FILTERED: &str = "SELECT m.id, m.search_text, m.session_id, m.kind, m.key, m.recorded_at, f.rank, NULL \
     FROM memories_fts f JOIN memories m ON m.pos = f.rowid \
     WHERE memories_fts MATCH ?1 AND (m.superseded_by IS NULL OR m.merged_reason IS NOT NULL) AND m.forgotten_reason IS NULL \
       AND (?2 IS NULL OR m.session_id = ?2) AND (?3 IS NULL OR m.kind = ?3) \
       AND (?4 IS NULL OR m.key = ?4) AND (?5 IS NULL OR m.recorded_at >= ?5) \
       AND (?6 IS NULL OR m.recorded_at < ?6) AND ?8 IS NOT NULL \
     ORDER BY f.rank LIMIT ?7";

#[async_trait]
impl TextIndex for SqliteProfileIndex {
    fn backend_name(&self) -> &'static str {
        BACKEND
    }

    fn capabilities(&self) -> TextIndexCapabilities {
        STORE_WRITTEN
    }

    async fn upsert(&self, _namespace: &str, _documents: Vec<TextDocument>) -> Result<()> {
        Err(written_by_store(
            "upsert into a profile index (the profile store writes it)",
        ))
    }

    async fn delete(&self, _namespace: &str, _ids: &[String]) -> Result<u64> {
        Err(written_by_store(
            "delete from a profile index (the profile store writes it)",
        ))
    }

    async fn search(&self, namespace: &str, query: &TextQuery) -> Result<Vec<TextHit>> {
        if !SERVED.contains(&namespace) {
            return Err(unknown_namespace(namespace, &SERVED));
        }
        if query.is_empty() {
            return Ok(Vec::new());
        }
        if namespace == namespaces::RAW {
            self.search_raw(query).await
        } else {
            self.search_memories(query).await
        }
    }

    async fn count(&self, namespace: &str) -> Result<u64> {
        let sql = match namespace {
            namespaces::RAW => "SELECT COUNT(*) FROM raw_messages",
            namespaces::MEMORIES => {
                "SELECT COUNT(*) FROM memories \
                 WHERE (superseded_by IS NULL OR merged_reason IS NOT NULL) AND forgotten_reason IS NULL"
            }
            other => return Err(unknown_namespace(other, &SERVED)),
        };
        let count: i64 = sqlx::query_scalar(sql)
            .fetch_one(&mut *self.db.reader.acquire().await?)
            .await
            .map_err(db)?;
        Ok(count.max(0) as u64)
    }

    async fn clear(&self, _namespace: &str) -> Result<()> {
        Err(written_by_store(
            "clear a profile index (the profile store writes it)",
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use memory_core::SearchMode;

    use super::*;
    use crate::SqliteConfig;
    use crate::fts::sentence;

    /// The top of every match ranked by FTS5's `rank` (no limit), as (row, score).
    async fn ranked(db: &SqliteDatabase, table: &str, expression: &str) -> Vec<(i64, f64)> {
        let sql =
            format!("SELECT rowid, rank FROM {table} WHERE {table} MATCH ?1 ORDER BY rank, rowid");
        sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(expression)
            .fetch_all(&mut *db.reader.acquire().await.unwrap())
            .await
            .unwrap()
    }

    /// The unfiltered searches take their top by score with a bounded sort, not with FTS5's
    /// `ORDER BY rank`: the hits must be the same rows at the same scores (ties may come in
    /// another order, so each hit's score is checked against the full ranking).
    #[tokio::test]
    async fn the_top_by_score_is_the_top_by_rank() {
        let dir = tempfile::tempdir().unwrap();
        let db = SqliteDatabase::open(SqliteConfig::new(dir.path().join("p.db")))
            .await
            .unwrap();
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for i in 0..400 {
            let words = 3 + (i % 9);
            sqlx::query(
                "INSERT INTO raw_messages (id, session_id, role, content, created_at) \
                 VALUES (?, 's', 'user', ?, 0)",
            )
            .bind(format!("r{i}"))
            .bind(sentence(&mut state, words))
            .execute(&db.writer)
            .await
            .unwrap();
            sqlx::query(
                "INSERT INTO memories (id, kind, content, questions, source_message_ids, \
                 recorded_at, search_text) VALUES (?, 'fact', '', '[]', '[]', 0, ?)",
            )
            .bind(format!("m{i}"))
            .bind(sentence(&mut state, words * 2))
            .execute(&db.writer)
            .await
            .unwrap();
        }
        let index = SqliteProfileIndex::new(db.clone());
        for (text, limit) in [
            ("lisbon cello", 10),
            ("river piano train", 7),
            ("lantern", 25),
            ("market bridge violin harbour", 1),
        ] {
            let query = TextQuery::new(text, limit).mode(SearchMode::AnyWords);
            for (namespace, table, column, prefix) in [
                (namespaces::RAW, "raw_fts", "content", "r"),
                (namespaces::MEMORIES, "memories_fts", "search_text", "m"),
            ] {
                let expression = fts::match_expression(text, SearchMode::AnyWords, column, None);
                let all = ranked(&db, table, &expression).await;
                assert!(all.len() > 100, "{text}: too few matches to test");
                let hits = index.search(namespace, &query).await.unwrap();
                assert_eq!(hits.len(), limit, "{text} in {namespace}");
                for (hit, (_, expected)) in hits.iter().zip(&all) {
                    let row: i64 = hit.id[prefix.len()..].parse::<i64>().unwrap() + 1;
                    let (_, score) = all.iter().find(|(r, _)| *r == row).unwrap();
                    assert_eq!(hit.score, -score, "{text}: {} scored as ranked", hit.id);
                    assert_eq!(hit.score, -expected, "{text}: {} is not in the top", hit.id);
                }
            }
        }
    }

    /// Superseded and forgotten memories drop out of an unfiltered page whether it is cut
    /// short by them (the full query answers) or holds every match (the ranked rows answer):
    /// either way the page is the best current memories, as many as there are.
    #[tokio::test]
    async fn a_page_leaves_out_memories_that_are_not_current() {
        let dir = tempfile::tempdir().unwrap();
        let db = SqliteDatabase::open(SqliteConfig::new(dir.path().join("p.db")))
            .await
            .unwrap();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let current = |i: i64| i % 3 != 0 && i % 5 != 0;
        for i in 0..300_i64 {
            sqlx::query(
                "INSERT INTO memories (id, kind, content, questions, source_message_ids, \
                 recorded_at, search_text, superseded_by, forgotten_reason) \
                 VALUES (?, 'fact', '', '[]', '[]', 0, ?, ?, ?)",
            )
            .bind(format!("m{i}"))
            .bind(match i % 20 {
                // A rare word, in fewer rows than any page takes with its margin.
                0 | 1 => format!("{} zebra", sentence(&mut state, 3)),
                _ => sentence(&mut state, 4 + (i % 7) as usize),
            })
            .bind((i % 3 == 0).then_some("newer"))
            .bind((i % 5 == 0).then_some("wrong"))
            .execute(&db.writer)
            .await
            .unwrap();
        }
        let index = SqliteProfileIndex::new(db.clone());
        let (mut cases, mut fallbacks) = (0, 0);
        for text in [
            "lisbon cello",
            "lantern",
            "river piano train",
            "harbour",
            "zebra",
        ] {
            let expression = fts::match_expression(text, SearchMode::AnyWords, "search_text", None);
            let all = ranked(&db, "memories_fts", &expression).await;
            let best: Vec<f64> = all
                .iter()
                .filter(|(row, _)| current(row - 1))
                .map(|(_, score)| -score)
                .collect();
            for limit in [1, 5, 20, best.len(), best.len() + 3, 200] {
                let query = TextQuery::new(text, limit).mode(SearchMode::AnyWords);
                let hits = index.search(namespaces::MEMORIES, &query).await.unwrap();
                let scores: Vec<f64> = hits.iter().map(|h| h.score).collect();
                let expected = &best[..limit.min(best.len())];
                assert_eq!(scores, expected, "{text}, limit {limit}");
                for hit in &hits {
                    let i: i64 = hit.id[1..].parse().unwrap();
                    assert!(current(i), "{text}: {} is not current", hit.id);
                }
                // Pages short of current memories, answered from the ranked rows alone and
                // by the full query.
                let whole = all.len() < limit + RANKED_MARGIN;
                cases += usize::from(limit > best.len() && whole);
                fallbacks += usize::from(limit > best.len() && !whole);
            }
        }
        assert!(
            cases > 0 && fallbacks > 0,
            "{cases} whole, {fallbacks} cut short"
        );
    }
}
