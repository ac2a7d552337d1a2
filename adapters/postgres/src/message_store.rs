use std::collections::HashMap;

use async_trait::async_trait;
use memory_core::ports::{Clock, MessageStore, StoreCapabilities, SystemClock};
use memory_core::{
    AppendOutcome, CompactionRecord, MemoryError, MessagePage, NewCompaction, NewMessage, Parent,
    PathEntry, PathTail, Result, Role, SessionId, StoredMessage, Timestamp, UiMessage,
    validate_message_id,
};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use crate::append;
use crate::database::PostgresDatabase;
use crate::error::{BACKEND, db, invariant};
use memory_core::size::check_item_size;

/// The [`MessageStore`] on PostgreSQL. Appends to one session serialize on the session's
/// row (`FOR UPDATE`), so concurrent writers in any number of processes lose nothing and
/// leave one latest leaf; the `messages` text index is a stored `tsvector` written in the
/// same transaction (searched through [`crate::PostgresMessageIndex`]).
#[derive(Debug, Clone)]
pub struct PostgresMessageStore {
    db: PostgresDatabase,
}

impl PostgresMessageStore {
    /// A store over a connected database.
    pub fn new(db: PostgresDatabase) -> Self {
        Self { db }
    }

    /// Reads a root-to-leaf path in one repeatable-read transaction: resolve the leaf, find
    /// its runs with one statement that hops run to run (a recursion per run, never per
    /// message), then read each run's range through the `(session, run, seq)` index, which
    /// returns it in order: no sort of the rows. A path of very many runs (a much-regenerated
    /// conversation) is read in one statement instead, sorted by `seq` (an ancestor is always
    /// older than its descendants).
    async fn read_path<T>(
        &self,
        session: &SessionId,
        leaf: Option<String>,
        columns: &'static str,
        map: impl Fn(&PgRow) -> Result<T>,
    ) -> Result<Vec<T>> {
        self.db
            .idempotent(|| async {
                let mut tx = self.db.pool.begin().await.map_err(db)?;
                sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                let Some((key, leaf)) = resolve_leaf(&mut tx, session, leaf.clone()).await? else {
                    return Ok(Vec::new());
                };
                let segments: Vec<(i64, i64)> = sqlx::query_as(SEGMENTS)
                    .bind(key)
                    .bind(leaf)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(db)?;
                let mut out = Vec::new();
                if segments.len() <= MAX_RUN_READS {
                    let sql = format!(
                        "SELECT {columns} FROM messages m WHERE m.session_key = $1 \
                         AND m.run_id = $2 AND m.seq <= $3 ORDER BY m.seq"
                    );
                    for (run_id, upto) in segments.iter().rev() {
                        let rows = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
                            .bind(key)
                            .bind(run_id)
                            .bind(upto)
                            .fetch_all(&mut *tx)
                            .await
                            .map_err(db)?;
                        for row in &rows {
                            out.push(map(row)?);
                        }
                    }
                } else {
                    let runs: Vec<i64> = segments.iter().map(|s| s.0).collect();
                    let uptos: Vec<i64> = segments.iter().map(|s| s.1).collect();
                    let sql = format!(
                        "SELECT {columns} FROM UNNEST($2::bigint[], $3::bigint[]) AS s(run_id, upto) \
                         JOIN messages m ON m.session_key = $1 AND m.run_id = s.run_id \
                           AND m.seq <= s.upto ORDER BY m.seq"
                    );
                    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(key)
                        .bind(&runs)
                        .bind(&uptos)
                        .fetch_all(&mut *tx)
                        .await
                        .map_err(db)?;
                    for row in &rows {
                        out.push(map(row)?);
                    }
                }
                tx.commit().await.map_err(db)?;
                Ok(out)
            })
            .await
    }
}

/// The runs of the path to a leaf, leaf first: `(run, last seq of the run on the path)`.
const SEGMENTS: &str = "WITH RECURSIVE seg(run_id, upto, depth) AS ( \
       SELECT run_id, seq, 0 FROM messages WHERE session_key = $1 AND seq = $2 \
       UNION ALL \
       SELECT p.run_id, p.seq, s.depth + 1 FROM seg s JOIN messages p \
         ON p.session_key = $1 AND p.seq = (SELECT h.parent_seq FROM messages h \
           WHERE h.session_key = $1 AND h.run_id = s.run_id ORDER BY h.seq LIMIT 1) \
       WHERE p.seq < s.upto) \
     SELECT run_id, upto FROM seg ORDER BY depth";

/// Up to this many runs on a path are read one ordered range each; more in one statement.
const MAX_RUN_READS: usize = 16;

/// A row of `id, role, bytes` as a path entry.
fn path_entry(row: &PgRow) -> Result<PathEntry> {
    let role: &str = row.get(1);
    let bytes: i64 = row.get(2);
    Ok(PathEntry {
        id: row.get(0),
        role: Role::parse(role)?,
        bytes: bytes.max(0) as u64,
    })
}

/// A message encoded for storage.
pub(crate) struct Encoded {
    pub(crate) id: String,
    pub(crate) role: Role,
    pub(crate) json: String,
    pub(crate) text: String,
}

pub(crate) fn encode(message: &UiMessage) -> Result<Encoded> {
    validate_message_id(&message.id)?;
    let json = serde_json::to_string(message)?;
    check_item_size(&format!("message {:?}", message.id), json.len())?;
    Ok(Encoded {
        id: message.id.clone(),
        role: message.role,
        // PostgreSQL text cannot hold NUL; as a word separator it indexes the same. (The
        // JSON escapes it, so the message itself keeps it.)
        text: message.text().replace('\0', " "),
        json,
    })
}

fn decode(json: &str) -> Result<UiMessage> {
    serde_json::from_str(json).map_err(|e| {
        MemoryError::serialization(format!("stored message is not a valid UIMessage: {e}"))
    })
}

/// A row found by id.
struct Found {
    seq: i64,
    parent_seq: Option<i64>,
    role: String,
}

/// The session's key, if it has ever been written.
pub(crate) async fn session_key(
    conn: &mut PgConnection,
    session: &SessionId,
) -> Result<Option<i64>> {
    sqlx::query_scalar("SELECT key FROM message_sessions WHERE session_id = $1")
        .bind(session.as_str())
        .fetch_optional(conn)
        .await
        .map_err(db)
}

/// Locks the session's row for the rest of the transaction: writers of one session take
/// turns, writers of different sessions do not wait for each other.
async fn lock_session(conn: &mut PgConnection, session: &SessionId) -> Result<Option<i64>> {
    sqlx::query_scalar("SELECT key FROM message_sessions WHERE session_id = $1 FOR UPDATE")
        .bind(session.as_str())
        .fetch_optional(conn)
        .await
        .map_err(db)
}

async fn find(conn: &mut PgConnection, key: i64, id: &str) -> Result<Option<Found>> {
    let row = sqlx::query(
        "SELECT seq, parent_seq, role FROM messages WHERE session_key = $1 AND id = $2",
    )
    .bind(key)
    .bind(id)
    .fetch_optional(conn)
    .await
    .map_err(db)?;
    Ok(row.map(|r| Found {
        seq: r.get(0),
        parent_seq: r.get(1),
        role: r.get(2),
    }))
}

/// Resolves the leaf of a read to `(session key, leaf seq)`: a given id (not found is an
/// error) or the latest leaf (`None` for an empty session).
async fn resolve_leaf(
    conn: &mut PgConnection,
    session: &SessionId,
    leaf: Option<String>,
) -> Result<Option<(i64, i64)>> {
    let key = session_key(conn, session).await?;
    match (key, leaf) {
        (Some(key), Some(id)) => match find(conn, key, &id).await? {
            Some(found) => Ok(Some((key, found.seq))),
            None => Err(MemoryError::not_found("message", id)),
        },
        (None, Some(id)) => Err(MemoryError::not_found("message", id)),
        (Some(key), None) => {
            // The latest leaf is the newest message: a child is always newer than its parent
            // (deletes relink children to older ancestors), so the newest has no children.
            let seq: Option<i64> = sqlx::query_scalar(
                "SELECT seq FROM messages WHERE session_key = $1 ORDER BY seq DESC LIMIT 1",
            )
            .bind(key)
            .fetch_optional(conn)
            .await
            .map_err(db)?;
            Ok(seq.map(|seq| (key, seq)))
        }
        (None, None) => Ok(None),
    }
}

fn compaction_from_row(row: &PgRow) -> CompactionRecord {
    let seq: i64 = row.get(0);
    CompactionRecord {
        id: seq.to_string(),
        summary: row.get(1),
        from_message_id: row.get(2),
        to_message_id: row.get(3),
        created_at: Timestamp(row.get(4)),
        seq,
    }
}

#[async_trait]
impl MessageStore for PostgresMessageStore {
    fn backend_name(&self) -> &'static str {
        BACKEND
    }

    fn capabilities(&self) -> StoreCapabilities {
        StoreCapabilities {
            max_message_bytes: Some(crate::MAX_MESSAGE_BYTES),
        }
    }

    async fn append(
        &self,
        session: &SessionId,
        messages: Vec<NewMessage>,
    ) -> Result<Vec<AppendOutcome>> {
        let encoded = messages
            .iter()
            .map(|m| encode(&m.message))
            .collect::<Result<Vec<_>>>()?;
        let parents: Vec<Parent> = messages.into_iter().map(|m| m.parent).collect();
        let mut tx = self.db.pool.begin().await.map_err(db)?;
        let probe = append::probe(&mut tx, session, &encoded).await?;
        let plan = append::plan(&mut tx, &probe, &encoded, parents).await?;
        append::insert_rows(&mut tx, &probe, &encoded, &plan.rows).await?;
        tx.commit().await.map_err(db)?;
        Ok(plan.outcomes)
    }

    async fn update(&self, session: &SessionId, mut message: UiMessage) -> Result<()> {
        validate_message_id(&message.id)?;
        let mut conn = self.db.pool.acquire().await.map_err(db)?;
        let found = match session_key(&mut conn, session).await? {
            Some(key) => find(&mut conn, key, &message.id).await?.map(|f| (key, f)),
            None => None,
        };
        let (key, found) =
            found.ok_or_else(|| MemoryError::not_found("message", message.id.as_str()))?;
        message.role = Role::parse(&found.role)?;
        let enc = encode(&message)?;
        let changed = sqlx::query(
            "UPDATE messages SET content = $1, search_text = $2, bytes = $3 \
             WHERE session_key = $4 AND seq = $5",
        )
        .bind(&enc.json)
        .bind(&enc.text)
        .bind(enc.json.len() as i64)
        .bind(key)
        .bind(found.seq)
        .execute(&mut *conn)
        .await
        .map_err(db)?
        .rows_affected();
        if changed == 0 {
            // Deleted between the lookup and the write.
            return Err(MemoryError::not_found("message", message.id.as_str()));
        }
        Ok(())
    }

    async fn delete(&self, session: &SessionId, ids: &[String]) -> Result<u64> {
        let mut tx = self.db.pool.begin().await.map_err(db)?;
        let Some(key) = lock_session(&mut tx, session).await? else {
            return Ok(0);
        };
        let mut deleted = 0;
        for id in ids {
            let Some(found) = find(&mut tx, key, id).await? else {
                continue;
            };
            sqlx::query(
                "UPDATE messages SET parent_seq = $1 WHERE session_key = $2 AND parent_seq = $3",
            )
            .bind(found.parent_seq)
            .bind(key)
            .bind(found.seq)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
            sqlx::query("DELETE FROM messages WHERE session_key = $1 AND seq = $2")
                .bind(key)
                .bind(found.seq)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
            deleted += 1;
        }
        tx.commit().await.map_err(db)?;
        Ok(deleted)
    }

    async fn clear(&self, session: &SessionId) -> Result<()> {
        // Row locks only: writers of other sessions never wait for this one.
        sqlx::query("DELETE FROM message_sessions WHERE session_id = $1")
            .bind(session.as_str())
            .execute(&self.db.pool)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn get(&self, session: &SessionId, id: &str) -> Result<Option<UiMessage>> {
        self.db
            .idempotent(|| async {
                let json: Option<String> = sqlx::query_scalar(
                "SELECT m.content FROM messages m JOIN message_sessions s ON s.key = m.session_key \
                 WHERE s.session_id = $1 AND m.id = $2",
            )
            .bind(session.as_str())
            .bind(id)
            .fetch_optional(&self.db.pool)
            .await
            .map_err(db)?;
                json.as_deref().map(decode).transpose()
            })
            .await
    }

    async fn get_many(&self, session: &SessionId, ids: &[String]) -> Result<Vec<UiMessage>> {
        self.db
            .idempotent(|| async {

            if ids.is_empty() {
                return Ok(Vec::new());
            }
            let rows = sqlx::query(
                "SELECT m.id, m.content FROM messages m JOIN message_sessions s ON s.key = m.session_key \
                 WHERE s.session_id = $1 AND m.id = ANY($2)",
            )
            .bind(session.as_str())
            .bind(ids)
            .fetch_all(&self.db.pool)
            .await
            .map_err(db)?;
            let mut found: HashMap<String, UiMessage> = HashMap::with_capacity(rows.len());
            for row in &rows {
                found.insert(row.get(0), decode(row.get::<&str, _>(1))?);
            }
            Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
            })
            .await
    }

    async fn latest_leaf(&self, session: &SessionId) -> Result<Option<String>> {
        self.db
            .idempotent(|| async {

            sqlx::query_scalar(
                "SELECT m.id FROM messages m WHERE m.session_key = \
                 (SELECT key FROM message_sessions WHERE session_id = $1) ORDER BY m.seq DESC LIMIT 1",
            )
            .bind(session.as_str())
            .fetch_optional(&self.db.pool)
            .await
            .map_err(db)
            })
            .await
    }

    async fn latest_leaf_under(&self, session: &SessionId, id: &str) -> Result<String> {
        self.db
            .idempotent(|| async {
                // Children are always newer than their parent, so the subtree's newest
                // message is its newest leaf.
                let found: Option<(String,)> = sqlx::query_as(
                    "WITH RECURSIVE sub(key, seq) AS ( \
                       SELECT p.session_key, p.seq FROM messages p \
                         JOIN message_sessions s ON s.key = p.session_key \
                         WHERE s.session_id = $1 AND p.id = $2 \
                       UNION ALL \
                       SELECT m.session_key, m.seq FROM sub \
                         JOIN messages m ON m.session_key = sub.key AND m.parent_seq = sub.seq) \
                     SELECT m.id FROM messages m JOIN ( \
                       SELECT key, max(seq) AS seq FROM sub GROUP BY key) t \
                       ON m.session_key = t.key AND m.seq = t.seq",
                )
                .bind(session.as_str())
                .bind(id)
                .fetch_optional(&self.db.pool)
                .await
                .map_err(db)?;
                found
                    .map(|(leaf,)| leaf)
                    .ok_or_else(|| MemoryError::not_found("message", id))
            })
            .await
    }

    async fn children(&self, session: &SessionId, id: &str) -> Result<Vec<UiMessage>> {
        self.db
            .idempotent(|| async {
                let rows: Vec<(Option<String>,)> = sqlx::query_as(
                "SELECT c.content FROM messages p JOIN message_sessions s ON s.key = p.session_key \
                 LEFT JOIN messages c ON c.session_key = p.session_key AND c.parent_seq = p.seq \
                 WHERE s.session_id = $1 AND p.id = $2 ORDER BY c.seq",
            )
            .bind(session.as_str())
            .bind(id)
            .fetch_all(&self.db.pool)
            .await
            .map_err(db)?;
                if rows.is_empty() {
                    return Err(MemoryError::not_found("message", id));
                }
                rows.iter()
                    .filter_map(|(json,)| json.as_deref())
                    .map(decode)
                    .collect()
            })
            .await
    }

    async fn path(&self, session: &SessionId, leaf: Option<String>) -> Result<Vec<PathEntry>> {
        self.read_path(session, leaf, "m.id, m.role, m.bytes", path_entry)
            .await
    }

    async fn path_tail(
        &self,
        session: &SessionId,
        leaf: Option<String>,
        limit: usize,
    ) -> Result<PathTail> {
        self.db
            .idempotent(|| async {
                let mut tx = self.db.pool.begin().await.map_err(db)?;
                sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                let Some((key, leaf)) = resolve_leaf(&mut tx, session, leaf.clone()).await? else {
                    return Ok(PathTail::default());
                };
                // Leaf first; every run counted in one statement by its index range.
                let segments: Vec<(i64, i64)> = sqlx::query_as(SEGMENTS)
                    .bind(key)
                    .bind(leaf)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(db)?;
                let runs: Vec<i64> = segments.iter().map(|s| s.0).collect();
                let uptos: Vec<i64> = segments.iter().map(|s| s.1).collect();
                let counts: Vec<i64> = sqlx::query_scalar(
                    "SELECT (SELECT count(*) FROM messages m WHERE m.session_key = $1 \
                       AND m.run_id = s.run_id AND m.seq <= s.upto) \
                     FROM UNNEST($2::bigint[], $3::bigint[]) WITH ORDINALITY AS s(run_id, upto, n) \
                     ORDER BY s.n",
                )
                .bind(key)
                .bind(&runs)
                .bind(&uptos)
                .fetch_all(&mut *tx)
                .await
                .map_err(db)?;
                let mut tail = PathTail {
                    entries: Vec::new(),
                    total: counts
                        .iter()
                        .map(|c| usize::try_from(*c).unwrap_or(0))
                        .sum(),
                };
                for (run_id, upto) in &segments {
                    let wanted = limit.saturating_sub(tail.entries.len());
                    if wanted == 0 {
                        break;
                    }
                    let rows = sqlx::query(
                        "SELECT m.id, m.role, m.bytes FROM messages m WHERE m.session_key = $1 \
                         AND m.run_id = $2 AND m.seq <= $3 ORDER BY m.seq DESC LIMIT $4",
                    )
                    .bind(key)
                    .bind(run_id)
                    .bind(upto)
                    .bind(i64::try_from(wanted).unwrap_or(i64::MAX))
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(db)?;
                    for row in &rows {
                        tail.entries.push(path_entry(row)?);
                    }
                }
                tx.commit().await.map_err(db)?;
                tail.entries.reverse();
                Ok(tail)
            })
            .await
    }

    async fn forks(
        &self,
        session: &SessionId,
        ids: &[String],
    ) -> Result<std::collections::BTreeMap<String, Vec<String>>> {
        let unique: Vec<String> = ids
            .iter()
            .cloned()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        self.db
            .idempotent(|| async {
                let rows: Vec<(String, String)> = sqlx::query_as(
                    "SELECT p.id, c.id FROM message_sessions s \
                     JOIN messages p ON p.session_key = s.key AND p.id = ANY($2) \
                     JOIN messages c ON c.session_key = p.session_key AND c.parent_seq = p.seq \
                     WHERE s.session_id = $1 ORDER BY p.seq, c.seq",
                )
                .bind(session.as_str())
                .bind(&unique)
                .fetch_all(&self.db.pool)
                .await
                .map_err(db)?;
                Ok(memory_core::forks_from_pairs(rows))
            })
            .await
    }

    async fn history(&self, session: &SessionId, leaf: Option<String>) -> Result<Vec<UiMessage>> {
        self.read_path(session, leaf, "m.content", |row| {
            decode(row.get::<&str, _>(0))
        })
        .await
    }

    async fn messages(
        &self,
        session: &SessionId,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<MessagePage> {
        self.db
            .idempotent(|| async {
                let after =
                    memory_core::cursor::parse_position(cursor.as_deref())?.unwrap_or(i64::MIN);
                let rows = sqlx::query(
                    "SELECT m.seq, m.content, p.id FROM messages m \
                 LEFT JOIN messages p ON p.session_key = m.session_key AND p.seq = m.parent_seq \
                 WHERE m.session_key = (SELECT key FROM message_sessions WHERE session_id = $1) \
                   AND m.seq > $2 ORDER BY m.seq LIMIT $3",
                )
                .bind(session.as_str())
                .bind(after)
                .bind(memory_core::cursor::one_more(limit))
                .fetch_all(&self.db.pool)
                .await
                .map_err(db)?;
                let (messages, next_cursor) = memory_core::cursor::page_of(
                    &rows,
                    limit,
                    |row| row.get(0),
                    |row| {
                        Ok(StoredMessage {
                            message: decode(row.get::<&str, _>(1))?,
                            parent_id: row.get(2),
                        })
                    },
                )?;
                Ok(MessagePage {
                    messages,
                    next_cursor,
                })
            })
            .await
    }

    async fn add_compaction(
        &self,
        session: &SessionId,
        compaction: NewCompaction,
    ) -> Result<CompactionRecord> {
        let mut tx = self.db.pool.begin().await.map_err(db)?;
        let key = lock_session(&mut tx, session).await?;
        for id in [&compaction.from_message_id, &compaction.to_message_id] {
            let found = match key {
                Some(key) => find(&mut tx, key, id).await?,
                None => None,
            };
            if found.is_none() {
                return Err(MemoryError::not_found("message", id.as_str()));
            }
        }
        let key = key.ok_or_else(|| invariant("a session with messages has no key"))?;
        let row = sqlx::query(
            "INSERT INTO compactions (session_key, summary, from_message_id, to_message_id, created_at) \
             VALUES ($1, $2, $3, $4, $5) RETURNING seq, summary, from_message_id, to_message_id, created_at",
        )
        .bind(key)
        .bind(&compaction.summary)
        .bind(&compaction.from_message_id)
        .bind(&compaction.to_message_id)
        .bind(SystemClock.now().millis())
        .fetch_one(&mut *tx)
        .await
        .map_err(db)?;
        let record = compaction_from_row(&row);
        tx.commit().await.map_err(db)?;
        Ok(record)
    }

    async fn compactions(&self, session: &SessionId) -> Result<Vec<CompactionRecord>> {
        self.db
            .idempotent(|| async {

            let rows = sqlx::query(
                "SELECT seq, summary, from_message_id, to_message_id, created_at FROM compactions \
                 WHERE session_key = (SELECT key FROM message_sessions WHERE session_id = $1) ORDER BY seq",
            )
            .bind(session.as_str())
            .fetch_all(&self.db.pool)
            .await
            .map_err(db)?;
            Ok(rows.iter().map(compaction_from_row).collect())
            })
            .await
    }
}
