//! Appending a batch with few round trips: one probe, one parent lookup when needed, and
//! multi-row inserts. Parents, runs and outcomes are planned in memory.

use std::collections::{HashMap, HashSet};

use futures::FutureExt;
use futures::future::BoxFuture;
use memory_core::append_plan::{
    AppendBatch, AppendPlan, PlannedRow, StoredParent, TreeNode, parents_to_look_up, plan_append,
};
use memory_core::{AppendOutcome, Parent, Result, SessionId};
use sqlx::{AssertSqlSafe, Row, SqliteConnection};

use crate::error::db;
use crate::group_commit::{Batch, Written, guarded, statement_failed};
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
async fn single(
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
/// [`general`].
async fn one(conn: &mut SqliteConnection, write: AppendOne) -> Written<Vec<AppendOutcome>> {
    match single(conn, &write.session, &write.message, &write.parent).await? {
        Ok(Some(outcome)) => Ok(Ok(vec![outcome])),
        Ok(None) => general(conn, write).await,
        Err(refusal) => Ok(Err(refusal)),
    }
}

/// The general path for one message (probe, plan, insert) inside a savepoint of its own:
/// decides every case (new session, existing id, missing parent) and reports it.
async fn general(conn: &mut SqliteConnection, write: AppendOne) -> Written<Vec<AppendOutcome>> {
    let AppendOne {
        session,
        message,
        parent,
    } = write;
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

/// A single message appended by one caller: the group commit writes the single appends
/// queued beside it together ([`Batch::write_all`]).
pub(crate) struct AppendOne {
    pub(crate) session: SessionId,
    pub(crate) message: Encoded,
    pub(crate) parent: Parent,
}

impl Batch for AppendOne {
    type Output = Vec<AppendOutcome>;

    /// Appends onto the latest leaf of distinct sessions share one statement (a wave); a
    /// second append to a session in the wave starts the next wave, so it lands on the
    /// first, and so does one that would take the wave past [`MOST_WAVE_BYTES`] (a message
    /// that large alone is a wave of one); an append onto an explicit parent or the root
    /// runs alone, in its place.
    fn write_all(
        conn: &mut SqliteConnection,
        writes: Vec<Self>,
    ) -> BoxFuture<'_, Result<Vec<Result<Self::Output>>>> {
        async move {
            let mut results = Vec::with_capacity(writes.len());
            let mut wave: Vec<AppendOne> = Vec::new();
            let mut wave_bytes = 0;
            for write in writes {
                let onto_latest = matches!(write.parent, Parent::LatestLeaf);
                let bytes = write.message.json.len() + write.message.text.len();
                if !onto_latest
                    || wave.iter().any(|w| w.session == write.session)
                    || wave_bytes + bytes > MOST_WAVE_BYTES
                {
                    append_wave(conn, std::mem::take(&mut wave), &mut results).await?;
                    wave_bytes = 0;
                }
                if onto_latest {
                    wave_bytes += bytes;
                    wave.push(write);
                } else {
                    results.push(one(conn, write).await?);
                }
            }
            append_wave(conn, wave, &mut results).await?;
            Ok(results)
        }
        .boxed()
    }
}

/// The text a wave carries at most (content and search text of its messages), so that its one
/// parameter stays far below SQLite's limit on a value (a billion bytes) and the memory a
/// group holds stays small, however large the messages (up to [`crate::MAX_MESSAGE_BYTES`]
/// each).
const MOST_WAVE_BYTES: usize = 4 << 20;

/// Inserts a wave's messages, each onto its session's latest leaf, in one statement: the
/// sequence numbers follow the wave's order from the next free one, and a message whose
/// session is not known yet or whose id is already stored is not inserted (it is left to
/// [`general`]). The sessions of a wave are distinct, so every row reads the tree as it
/// was before the statement.
const WAVE: &str = "INSERT INTO messages \
    (seq, session_key, id, parent_seq, run_id, role, content, search_text, bytes) \
    SELECT n.next + w.key, k.key, w.value ->> 1, l.seq, COALESCE(l.run_id, n.next + w.key), \
           w.value ->> 2, w.value ->> 3, w.value ->> 4, w.value ->> 5 \
    FROM json_each(?1) w \
    JOIN session_keys k ON k.session_id = w.value ->> 0 \
    JOIN (SELECT IFNULL(MAX(seq), 0) + 1 AS next FROM messages) n \
    LEFT JOIN messages l ON l.seq = (SELECT m.seq FROM messages m WHERE m.session_key = k.key \
        AND NOT EXISTS (SELECT 1 FROM messages c WHERE c.parent_seq = m.seq) \
        ORDER BY m.seq DESC LIMIT 1) \
    WHERE NOT EXISTS (SELECT 1 FROM messages e WHERE e.session_key = k.key AND e.id = w.value ->> 1) \
    RETURNING (SELECT session_id FROM session_keys WHERE key = messages.session_key), \
        (SELECT p.id FROM messages p WHERE p.seq = messages.parent_seq)";

/// The wave's messages as [`WAVE`] reads them: a JSON array of `[session, id, role,
/// content, search text, bytes]`, in the wave's order.
fn wave_rows(wave: &[AppendOne]) -> Result<String> {
    let rows: Vec<_> = wave
        .iter()
        .map(|w| {
            let m = &w.message;
            (
                w.session.as_str(),
                m.id.as_str(),
                m.role.as_str(),
                &m.json,
                &m.text,
                m.json.len(),
            )
        })
        .collect();
    Ok(serde_json::to_string(&rows)?)
}

/// Appends a wave (appends onto the latest leaf of distinct sessions) and pushes one result
/// per append: one statement for all, then [`general`] for each it did not insert.
async fn append_wave(
    conn: &mut SqliteConnection,
    wave: Vec<AppendOne>,
    results: &mut Vec<Result<Vec<AppendOutcome>>>,
) -> Result<()> {
    if wave.len() < 2 {
        return each_alone(conn, wave, results).await;
    }
    let rows = wave_rows(&wave)?;
    let inserted: HashMap<String, Option<String>> =
        match sqlx::query(WAVE).bind(rows).fetch_all(&mut *conn).await {
            Ok(rows) => rows.iter().map(|r| (r.get(0), r.get(1))).collect(),
            Err(error) => {
                // A constraint refused the whole statement (SQLite undid it): each append
                // alone finds out whose it was. Any other error puts the group in doubt.
                let _refused = statement_failed::<()>(error)?;
                return each_alone(conn, wave, results).await;
            }
        };
    for write in wave {
        match inserted.get(write.session.as_str()) {
            Some(parent_id) => results.push(Ok(vec![AppendOutcome::Inserted {
                parent_id: parent_id.clone(),
            }])),
            None => results.push(general(conn, write).await?),
        }
    }
    Ok(())
}

/// Appends each of `writes` on its own ([`one`]), pushing one result per append.
async fn each_alone(
    conn: &mut SqliteConnection,
    writes: Vec<AppendOne>,
    results: &mut Vec<Result<Vec<AppendOutcome>>>,
) -> Result<()> {
    for write in writes {
        results.push(one(conn, write).await?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use memory_core::ports::{MessageStore, MessageStoreExt};
    use memory_core::{Role, UiMessage};

    use super::*;
    use crate::{SqliteConfig, SqliteDatabase, SqliteMessageStore};

    /// One single append: session, message id and parent (0 = latest leaf, 1 = root,
    /// 2 = the message `parent`).
    #[derive(Debug, Clone, Copy)]
    struct Op {
        session: u8,
        id: u8,
        parent_kind: u8,
        parent: u8,
    }

    fn session(s: u8) -> SessionId {
        SessionId::new(format!("s{s}")).unwrap()
    }

    fn parent(op: Op) -> Parent {
        match op.parent_kind {
            0 => Parent::LatestLeaf,
            1 => Parent::Root,
            _ => Parent::Message(format!("m{}", op.parent)),
        }
    }

    fn message(op: Op) -> UiMessage {
        // Characters JSON escapes, on their way through the wave's one JSON parameter.
        let text = format!("text {op:?} \"quoted\" back\\slash nul\0 line\u{2028} 🦀");
        UiMessage::text_message(format!("m{}", op.id), Role::User, text)
    }

    /// Random ops over five sessions (the last two never written before) and six ids, mostly
    /// onto the latest leaf, so that waves meet repeated sessions, stored ids, new sessions,
    /// explicit parents (some missing) and the root.
    fn ops(seed: u64, count: usize) -> Vec<Op> {
        let mut rng = memory_testkit::corpus::Rng::new(seed + 1);
        let mut next = move |bound: u64| u8::try_from(rng.next_u64() % bound).unwrap();
        (0..count)
            .map(|_| {
                let kind = next(10);
                Op {
                    session: next(5),
                    id: next(6),
                    parent_kind: match kind {
                        0 => 1,
                        1 | 2 => 2,
                        _ => 0,
                    },
                    parent: next(6),
                }
            })
            .collect()
    }

    async fn store(dir: &tempfile::TempDir, grouped: bool) -> SqliteMessageStore {
        open(dir, grouped).await.1
    }

    /// A database whose sessions s0 to s2 hold one message, m0.
    async fn open(dir: &tempfile::TempDir, grouped: bool) -> (SqliteDatabase, SqliteMessageStore) {
        let config = SqliteConfig::new(dir.path().join("m.db")).group_commit(grouped);
        let db = SqliteDatabase::open(config).await.unwrap();
        let store = SqliteMessageStore::new(db.clone());
        for s in 0..3 {
            store
                .append_one(
                    &session(s),
                    UiMessage::text_message("m0", Role::User, "first"),
                    Parent::LatestLeaf,
                )
                .await
                .unwrap();
        }
        (db, store)
    }

    /// What a store holds, as the port reads it: per session, the latest leaf and, per id,
    /// its children and its path from the root.
    async fn tree(store: &SqliteMessageStore) -> Vec<String> {
        let mut out = Vec::new();
        for s in 0..5 {
            let s = session(s);
            out.push(format!(
                "{s} leaf {:?}",
                store.latest_leaf(&s).await.unwrap()
            ));
            for id in (0..6).map(|i| format!("m{i}")) {
                let Some(stored) = store.get(&s, &id).await.unwrap() else {
                    continue;
                };
                out.push(format!("{s} {id} is {stored:?}"));
                let children: Vec<String> = store
                    .children(&s, &id)
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|m| m.id)
                    .collect();
                let path: Vec<String> = store
                    .path(&s, Some(id.clone()))
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|e| e.id)
                    .collect();
                out.push(format!("{s} {id} children {children:?} path {path:?}"));
            }
        }
        out
    }

    fn shown(outcome: &Result<AppendOutcome>) -> String {
        match outcome {
            Ok(outcome) => format!("{outcome:?}"),
            Err(error) => format!("refused: {error}"),
        }
    }

    /// Appends queued together (one group, written in waves) end as the same appends one at
    /// a time do: the same outcome for each, the same tree in every session.
    #[tokio::test]
    async fn a_group_of_single_appends_ends_as_one_at_a_time() {
        for seed in 0..40 {
            let ops = ops(seed, 48);
            let (one_dir, group_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            let alone = store(&one_dir, false).await;
            let mut expected = Vec::new();
            for op in &ops {
                let outcome = alone
                    .append_one(&session(op.session), message(*op), parent(*op))
                    .await;
                expected.push(shown(&outcome));
            }
            let grouped = store(&group_dir, true).await;
            // Joined in one task: every append is queued before the leader runs, so the
            // group holds them all.
            let got: Vec<String> = futures::future::join_all(ops.iter().map(|op| {
                let grouped = &grouped;
                async move {
                    let outcome = grouped
                        .append_one(&session(op.session), message(*op), parent(*op))
                        .await;
                    shown(&outcome)
                }
            }))
            .await;
            assert_eq!(got, expected, "seed {seed}: outcomes of {ops:?}");
            assert_eq!(
                tree(&grouped).await,
                tree(&alone).await,
                "seed {seed}: trees after {ops:?}"
            );
        }
    }

    /// Messages past the wave's byte budget split the group's waves (one larger than the
    /// budget goes alone) and land as they would one at a time.
    #[tokio::test]
    async fn large_messages_split_the_waves() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir, true).await;
        let big = |n: usize| "word ".repeat(n);
        let sizes = [
            MOST_WAVE_BYTES / 8,
            MOST_WAVE_BYTES / 3,
            MOST_WAVE_BYTES,
            10,
        ];
        let outcomes = futures::future::join_all(sizes.iter().enumerate().map(|(s, size)| {
            let store = &store;
            let text = big(size / 5);
            async move {
                let message = UiMessage::text_message("m1", Role::User, text);
                let session = session(u8::try_from(s).unwrap());
                store
                    .append_one(&session, message, Parent::LatestLeaf)
                    .await
            }
        }))
        .await;
        for (s, outcome) in outcomes.into_iter().enumerate() {
            let parent = (s < 3).then(|| "m0".to_owned());
            assert_eq!(
                outcome.unwrap(),
                AppendOutcome::Inserted { parent_id: parent }
            );
        }
        let kept = store.get(&session(2), "m1").await.unwrap().unwrap();
        assert_eq!(kept.text().len(), big(MOST_WAVE_BYTES / 5).len());
    }

    /// The wave statement itself: one row per session onto its latest leaf, sequence
    /// numbers in the wave's order, unknown sessions and stored ids left out.
    #[tokio::test]
    async fn a_wave_inserts_onto_each_latest_leaf_and_leaves_out_what_it_cannot_decide() {
        let dir = tempfile::tempdir().unwrap();
        let (db, _store) = open(&dir, true).await;
        let mut conn = db.writer.acquire().await.unwrap();
        let write = |s: u8, id: &str| AppendOne {
            session: session(s),
            message: crate::message_store::encode(&UiMessage::text_message(id, Role::User, "x"))
                .unwrap(),
            parent: Parent::LatestLeaf,
        };
        let wave = [
            write(0, "m1"),
            write(1, "m0"),
            write(4, "m1"),
            write(2, "m1"),
        ];
        let rows = wave_rows(&wave).unwrap();
        let mut returned: Vec<(String, Option<String>)> = sqlx::query(WAVE)
            .bind(rows)
            .fetch_all(&mut *conn)
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        returned.sort();
        assert_eq!(
            returned,
            vec![
                ("s0".to_owned(), Some("m0".to_owned())),
                ("s2".to_owned(), Some("m0".to_owned())),
            ],
            "s1's m0 is stored already and s4 has no key yet"
        );
        let seqs: Vec<i64> =
            sqlx::query_scalar("SELECT seq FROM messages WHERE id = 'm1' ORDER BY seq")
                .fetch_all(&mut *conn)
                .await
                .unwrap();
        assert_eq!(
            seqs,
            vec![4, 7],
            "the next free number plus the place in the wave"
        );
    }
}
