//! Appending a batch with few round trips: one probe, one parent lookup when needed, and
//! multi-row inserts. Parents, runs and outcomes are planned in memory.

use std::collections::{HashMap, HashSet};

use futures::FutureExt;
use memory_core::append_plan::{
    AppendBatch, AppendPlan, PlannedRow, StoredParent, TreeNode, parents_to_look_up, plan_append,
};
use memory_core::{AppendOutcome, Parent, Result, SessionId};
use sqlx::{AssertSqlSafe, Row, SqliteConnection};

use crate::error::db;
use crate::group_commit::{Written, guarded, statement_failed};
use crate::message_store::{Encoded, ensure_session_key};

/// What the database says before a batch: the session key, the next sequence number, the
/// latest leaf and which of the batch's ids already exist.
pub(crate) struct Probe {
    pub(crate) key: i64,
    next_seq: i64,
    latest: Option<TreeNode>,
    existing: HashSet<String>,
}

const PROBE: &str = "WITH k AS (SELECT key FROM session_keys WHERE session_id = ?1) \
    SELECT (SELECT key FROM k), \
           (SELECT IFNULL(MAX(seq), 0) + 1 FROM messages), \
           l.seq, l.run_id, l.id, \
           (SELECT json_group_array(id) FROM messages \
             WHERE session_key = (SELECT key FROM k) AND id IN (SELECT value FROM json_each(?2))) \
    FROM (SELECT 1) LEFT JOIN ( \
        SELECT seq, run_id, id FROM messages m WHERE session_key = (SELECT key FROM k) \
        AND NOT EXISTS (SELECT 1 FROM messages c WHERE c.parent_seq = m.seq) \
        ORDER BY seq DESC LIMIT 1) l";

/// Reads the session key (creating it on the first write), the next sequence number, the
/// latest leaf and the batch ids already stored, in one statement (two for a new session).
pub(crate) async fn probe(
    conn: &mut SqliteConnection,
    session: &SessionId,
    batch: &[Encoded],
) -> Result<Probe> {
    let ids = serde_json::to_string(&batch.iter().map(|e| e.id.as_str()).collect::<Vec<_>>())?;
    let row = sqlx::query(PROBE)
        .bind(session.as_str())
        .bind(&ids)
        .fetch_one(&mut *conn)
        .await
        .map_err(db)?;
    let key: Option<i64> = row.get(0);
    let next_seq: i64 = row.get(1);
    let Some(key) = key else {
        // First write to this session: nothing of it exists yet.
        let key = ensure_session_key(conn, session).await?;
        return Ok(Probe {
            key,
            next_seq,
            latest: None,
            existing: HashSet::new(),
        });
    };
    let latest = row.get::<Option<i64>, _>(2).map(|seq| TreeNode {
        seq,
        run_id: row.get(3),
        id: row.get(4),
    });
    let existing_json: Option<String> = row.get(5);
    let existing: HashSet<String> = match existing_json {
        Some(json) => serde_json::from_str(&json)?,
        None => HashSet::new(),
    };
    Ok(Probe {
        key,
        next_seq,
        latest,
        existing,
    })
}

/// Explicit parents stored before the batch, by id.
async fn stored_parents(
    conn: &mut SqliteConnection,
    key: i64,
    ids: &HashSet<&str>,
) -> Result<HashMap<String, StoredParent>> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let list = serde_json::to_string(&ids.iter().collect::<Vec<_>>())?;
    let rows = sqlx::query(
        "SELECT id, seq, run_id, EXISTS (SELECT 1 FROM messages c WHERE c.parent_seq = m.seq) \
         FROM messages m WHERE session_key = ? AND id IN (SELECT value FROM json_each(?))",
    )
    .bind(key)
    .bind(list)
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    Ok(rows
        .iter()
        .map(|r| {
            let id: String = r.get(0);
            let node = TreeNode {
                seq: r.get(1),
                run_id: r.get(2),
                id: id.clone(),
            };
            let has_children = r.get::<bool, _>(3);
            (id, StoredParent { node, has_children })
        })
        .collect())
}

/// Plans the batch (see [`memory_core::append_plan`]) after looking up its explicit parents.
pub(crate) async fn plan(
    conn: &mut SqliteConnection,
    probe: &Probe,
    batch: &[Encoded],
    parents: Vec<Parent>,
) -> Result<AppendPlan> {
    let ids: Vec<&str> = batch.iter().map(|e| e.id.as_str()).collect();
    let wanted = parents_to_look_up(&ids, &parents, &probe.existing);
    let stored = stored_parents(conn, probe.key, &wanted).await?;
    plan_append(
        AppendBatch {
            ids: &ids,
            parents,
            existing: &probe.existing,
            latest: probe.latest.clone(),
            next_seq: probe.next_seq,
        },
        &stored,
    )
}

const COLUMNS: &str = "INSERT INTO messages (seq, session_key, id, parent_seq, run_id, role, content, search_text, bytes) VALUES ";
const ROW: &str = "(?, ?, ?, ?, ?, ?, ?, ?, ?)";

fn insert_sql(rows: usize) -> String {
    let mut sql = String::from(COLUMNS);
    for i in 0..rows {
        if i > 0 {
            sql.push(',');
        }
        sql.push_str(ROW);
    }
    sql
}

/// Inserts planned rows with multi-row statements of 64, 32, ..., 1 rows (few distinct
/// statements, so the prepared-statement cache keeps them all).
pub(crate) async fn insert_rows(
    conn: &mut SqliteConnection,
    key: i64,
    batch: &[Encoded],
    rows: &[PlannedRow],
) -> Result<()> {
    let mut rest = rows;
    while !rest.is_empty() {
        let size = [64, 32, 16, 8, 4, 2, 1]
            .into_iter()
            .find(|s| *s <= rest.len())
            .unwrap_or(1);
        let (chunk, tail) = rest.split_at(size);
        let sql = insert_sql(size);
        let mut query = sqlx::query(AssertSqlSafe(sql));
        for row in chunk {
            let enc = &batch[row.index];
            query = query
                .bind(row.seq)
                .bind(key)
                .bind(enc.id.as_str())
                .bind(row.parent_seq)
                .bind(row.run_id)
                .bind(enc.role.as_str())
                .bind(enc.json.as_str())
                .bind(enc.text.as_str())
                .bind(enc.json.len() as i64);
        }
        query.execute(&mut *conn).await.map_err(db)?;
        rest = tail;
    }
    Ok(())
}

const SINGLE_HEAD: &str = "INSERT INTO messages (seq, session_key, id, parent_seq, run_id, role, content, search_text, bytes) ";
const SINGLE_TAIL: &str = " WHERE NOT EXISTS (SELECT 1 FROM messages e WHERE e.session_key = k.key AND e.id = ?2) \
    RETURNING seq, (SELECT p.id FROM messages p WHERE p.seq = messages.parent_seq)";
const KEY_AND_NEXT: &str = "FROM (SELECT key FROM session_keys WHERE session_id = ?1) k \
    JOIN (SELECT IFNULL(MAX(seq), 0) + 1 AS next FROM messages) n ";

fn single_sql(parent: &Parent) -> String {
    let body = match parent {
        Parent::LatestLeaf => "SELECT n.next, k.key, ?2, l.seq, COALESCE(l.run_id, n.next), ?3, ?4, ?5, ?6 "
            .to_owned()
            + KEY_AND_NEXT
            + "LEFT JOIN (SELECT seq, run_id FROM messages m \
                 WHERE m.session_key = (SELECT key FROM session_keys WHERE session_id = ?1) \
                 AND NOT EXISTS (SELECT 1 FROM messages c WHERE c.parent_seq = m.seq) \
                 ORDER BY seq DESC LIMIT 1) l ON 1",
        Parent::Root => "SELECT n.next, k.key, ?2, NULL, n.next, ?3, ?4, ?5, ?6 ".to_owned() + KEY_AND_NEXT,
        Parent::Message(_) => "SELECT n.next, k.key, ?2, p.seq, \
                 CASE WHEN EXISTS (SELECT 1 FROM messages c WHERE c.parent_seq = p.seq) THEN n.next ELSE p.run_id END, \
                 ?3, ?4, ?5, ?6 "
            .to_owned()
            + KEY_AND_NEXT
            + "JOIN (SELECT seq, run_id FROM messages \
                 WHERE session_key = (SELECT key FROM session_keys WHERE session_id = ?1) AND id = ?7) p",
    };
    format!("{SINGLE_HEAD}{body}{SINGLE_TAIL}")
}

/// The common case in one statement: a single new message of a known session. `Ok(None)`
/// means "not decided here" (new session, existing id, missing parent): the caller runs the
/// general path, which decides and reports correctly. Runs inside a group's transaction
/// (see [`crate::group_commit::Written`] for what its error means there).
pub(crate) async fn single(
    conn: &mut SqliteConnection,
    session: &SessionId,
    message: &Encoded,
    parent: &Parent,
) -> Written<Option<AppendOutcome>> {
    let sql = single_sql(parent);
    let mut query = sqlx::query(AssertSqlSafe(sql))
        .bind(session.as_str())
        .bind(message.id.as_str())
        .bind(message.role.as_str())
        .bind(message.json.as_str())
        .bind(message.text.as_str())
        .bind(message.json.len() as i64);
    if let Parent::Message(p) = parent {
        query = query.bind(p.as_str());
    }
    match query.fetch_optional(conn).await {
        Ok(row) => Ok(Ok(row.map(|row| AppendOutcome::Inserted {
            parent_id: row.get(1),
        }))),
        Err(error) => statement_failed(error),
    }
}

/// One message in a group's transaction: [`single`] (one statement, no savepoint), else
/// the general path (probe, plan, insert) inside a savepoint of its own.
pub(crate) async fn one(
    conn: &mut SqliteConnection,
    session: &SessionId,
    message: Encoded,
    parent: Parent,
) -> Written<Vec<AppendOutcome>> {
    match single(conn, session, &message, &parent).await? {
        Ok(Some(outcome)) => return Ok(Ok(vec![outcome])),
        Ok(None) => {}
        Err(refusal) => return Ok(Err(refusal)),
    }
    let session = session.clone();
    guarded(conn, move |conn| {
        async move {
            let batch = [message];
            let probe = probe(conn, &session, &batch).await?;
            let plan = plan(conn, &probe, &batch, vec![parent]).await?;
            insert_rows(conn, probe.key, &batch, &plan.rows).await?;
            Ok(plan.outcomes)
        }
        .boxed()
    })
    .await
}
