//! Appending a batch in few round trips: one statement locks the session, one reads what the
//! plan needs, one looks up explicit parents when there are any, and one inserts every row
//! (arrays through `UNNEST`) and advances the session's counter. Parents, runs and outcomes
//! are planned in memory by [`memory_core::append_plan`].

use std::collections::{HashMap, HashSet};

use memory_core::append_plan::{
    AppendBatch, AppendPlan, PlannedRow, StoredParent, TreeNode, parents_to_look_up, plan_append,
};
use memory_core::{Parent, Result, SessionId};
use sqlx::{PgConnection, Row};

use crate::error::{db, invariant};
use crate::message_store::Encoded;

/// What the database says before a batch, under the session's row lock.
pub(crate) struct Probe {
    key: i64,
    next_seq: i64,
    latest: Option<TreeNode>,
    existing: HashSet<String>,
}

/// Locks the session's row and reads its counter. (Alone in its statement: after waiting
/// for the lock, a read-committed statement sees the row's new version but keeps its old
/// snapshot for everything else, so the tree is read by the next statement.)
const LOCK: &str = "SELECT key, next_seq FROM message_sessions WHERE session_id = $1 FOR UPDATE";

/// The latest leaf (the newest message) and which of the batch's ids the session holds.
const TREE: &str = "SELECT l.seq, l.run_id, l.id, \
       ARRAY(SELECT e.id FROM messages e WHERE e.session_key = $1 AND e.id = ANY($2)) \
     FROM (SELECT 1) one LEFT JOIN LATERAL ( \
       SELECT seq, run_id, id FROM messages m WHERE m.session_key = $1 ORDER BY seq DESC LIMIT 1 \
     ) l ON true";

/// Locks the session (creating its row on its first write; two writers creating it at once
/// both end up waiting on the same row), then reads the tree under the lock.
pub(crate) async fn probe(
    conn: &mut PgConnection,
    session: &SessionId,
    batch: &[Encoded],
) -> Result<Probe> {
    let mut locked: Option<(i64, i64)> = None;
    for attempt in 0..2 {
        locked = sqlx::query_as(LOCK)
            .bind(session.as_str())
            .fetch_optional(&mut *conn)
            .await
            .map_err(db)?;
        if locked.is_some() {
            break;
        }
        if attempt == 0 {
            sqlx::query(
                "INSERT INTO message_sessions (session_id) VALUES ($1) ON CONFLICT (session_id) DO NOTHING",
            )
            .bind(session.as_str())
            .execute(&mut *conn)
            .await
            .map_err(db)?;
        }
    }
    let (key, next_seq) =
        locked.ok_or_else(|| invariant("a session row vanished inside its transaction"))?;
    let ids: Vec<&str> = batch.iter().map(|e| e.id.as_str()).collect();
    let row = sqlx::query(TREE)
        .bind(key)
        .bind(&ids)
        .fetch_one(&mut *conn)
        .await
        .map_err(db)?;
    let latest = row.get::<Option<i64>, _>(0).map(|seq| TreeNode {
        seq,
        run_id: row.get(1),
        id: row.get(2),
    });
    let existing: Vec<String> = row.get(3);
    Ok(Probe {
        key,
        next_seq,
        latest,
        existing: existing.into_iter().collect(),
    })
}

/// Explicit parents stored before the batch, by id.
async fn stored_parents(
    conn: &mut PgConnection,
    key: i64,
    ids: &HashSet<&str>,
) -> Result<HashMap<String, StoredParent>> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let list: Vec<&str> = ids.iter().copied().collect();
    let rows = sqlx::query(
        "SELECT m.id, m.seq, m.run_id, EXISTS (SELECT 1 FROM messages c \
           WHERE c.session_key = m.session_key AND c.parent_seq = m.seq) \
         FROM messages m WHERE m.session_key = $1 AND m.id = ANY($2)",
    )
    .bind(key)
    .bind(&list)
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

/// Plans the batch after looking up its explicit parents.
pub(crate) async fn plan(
    conn: &mut PgConnection,
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

/// Inserts the planned rows in one statement and advances the session's counter past them.
pub(crate) async fn insert_rows(
    conn: &mut PgConnection,
    probe: &Probe,
    batch: &[Encoded],
    rows: &[PlannedRow],
) -> Result<()> {
    let Some(last) = rows.last() else {
        return Ok(());
    };
    let encoded = |row: &PlannedRow| &batch[row.index];
    let seqs: Vec<i64> = rows.iter().map(|r| r.seq).collect();
    let ids: Vec<&str> = rows.iter().map(|r| encoded(r).id.as_str()).collect();
    let parents: Vec<Option<i64>> = rows.iter().map(|r| r.parent_seq).collect();
    let runs: Vec<i64> = rows.iter().map(|r| r.run_id).collect();
    let roles: Vec<&str> = rows.iter().map(|r| encoded(r).role.as_str()).collect();
    let contents: Vec<&str> = rows.iter().map(|r| encoded(r).json.as_str()).collect();
    let texts: Vec<&str> = rows.iter().map(|r| encoded(r).text.as_str()).collect();
    let bytes: Vec<i64> = rows.iter().map(|r| encoded(r).json.len() as i64).collect();
    sqlx::query(
        "WITH bump AS (UPDATE message_sessions SET next_seq = $2 WHERE key = $1) \
         INSERT INTO messages (session_key, seq, id, parent_seq, run_id, role, content, search_text, bytes) \
         SELECT $1, * FROM UNNEST($3::bigint[], $4::text[], $5::bigint[], $6::bigint[], \
                                  $7::text[], $8::text[], $9::text[], $10::bigint[])",
    )
    .bind(probe.key)
    .bind(last.seq + 1)
    .bind(&seqs)
    .bind(&ids)
    .bind(&parents)
    .bind(&runs)
    .bind(&roles)
    .bind(&contents)
    .bind(&texts)
    .bind(&bytes)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(())
}
