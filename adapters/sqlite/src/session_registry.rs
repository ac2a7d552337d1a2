use std::collections::HashSet;

use async_trait::async_trait;
use futures::FutureExt;
use futures::future::BoxFuture;
use memory_core::ports::SessionRegistry;
use memory_core::{
    MemoryError, NewSession, Result, SessionId, SessionInfo, SessionPatch, SessionUsage, Timestamp,
};
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use crate::database::SqliteDatabase;
use crate::error::db;
use crate::group_commit::{Batch, Written, statement_failed};

/// The [`SessionRegistry`] on SQLite.
#[derive(Debug, Clone)]
pub struct SqliteSessionRegistry {
    db: SqliteDatabase,
}

impl SqliteSessionRegistry {
    /// A registry over an open database.
    pub fn new(db: SqliteDatabase) -> Self {
        Self { db }
    }
}

const COLUMNS: &str = "id, name, parent_session_id, model, source, input_tokens, output_tokens, cost, end_reason, created_at, updated_at, profile";

fn from_row(row: &SqliteRow) -> Result<SessionInfo> {
    let parent: Option<String> = row.get(2);
    let input: i64 = row.get(5);
    let output: i64 = row.get(6);
    Ok(SessionInfo {
        id: SessionId::new(row.get::<String, _>(0))?,
        name: row.get(1),
        parent_session_id: parent.map(SessionId::new).transpose()?,
        model: row.get(3),
        source: row.get(4),
        usage: SessionUsage {
            input_tokens: input.max(0) as u64,
            output_tokens: output.max(0) as u64,
            cost: row.get(7),
        },
        end_reason: row.get(8),
        created_at: Timestamp(row.get(9)),
        updated_at: Timestamp(row.get(10)),
        profile: row.get(11),
    })
}

/// The affected session's row, or not-found when the statement matched none.
fn returned(id: &SessionId, row: Option<SqliteRow>) -> Result<SessionInfo> {
    match row {
        Some(row) => from_row(&row),
        None => Err(MemoryError::not_found("session", id.as_str())),
    }
}

#[async_trait]
impl SessionRegistry for SqliteSessionRegistry {
    async fn create(
        &self,
        id: &SessionId,
        spec: &NewSession,
        now: Timestamp,
    ) -> Result<SessionInfo> {
        let sql = sqlx::AssertSqlSafe(format!(
            "INSERT INTO sessions (id, name, parent_session_id, model, source, created_at, updated_at, profile) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING {COLUMNS}"
        ));
        let result = sqlx::query(sql)
            .bind(id.as_str())
            .bind(&spec.name)
            .bind(spec.parent_session_id.as_ref().map(SessionId::as_str))
            .bind(&spec.model)
            .bind(&spec.source)
            .bind(now.millis())
            .bind(now.millis())
            .bind(&spec.profile)
            .fetch_optional(&self.db.writer)
            .await;
        match result {
            Ok(row) => returned(id, row),
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                Err(MemoryError::AlreadyExists {
                    kind: "session",
                    id: id.to_string(),
                })
            }
            Err(e) => Err(db(e)),
        }
    }

    async fn restore(&self, info: &SessionInfo) -> Result<bool> {
        let done = sqlx::query(
            "INSERT INTO sessions (id, name, parent_session_id, model, source, input_tokens, \
             output_tokens, cost, end_reason, created_at, updated_at, profile) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
        )
        .bind(info.id.as_str())
        .bind(&info.name)
        .bind(info.parent_session_id.as_ref().map(SessionId::as_str))
        .bind(&info.model)
        .bind(&info.source)
        .bind(i64::try_from(info.usage.input_tokens).unwrap_or(i64::MAX))
        .bind(i64::try_from(info.usage.output_tokens).unwrap_or(i64::MAX))
        .bind(info.usage.cost)
        .bind(&info.end_reason)
        .bind(info.created_at.millis())
        .bind(info.updated_at.millis())
        .bind(&info.profile)
        .execute(&self.db.writer)
        .await
        .map_err(db)?;
        Ok(done.rows_affected() == 1)
    }

    async fn get(&self, id: &SessionId) -> Result<Option<SessionInfo>> {
        let sql = sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM sessions WHERE id = ?"));
        let row = sqlx::query(sql)
            .bind(id.as_str())
            .fetch_optional(&mut *self.db.reader.acquire().await?)
            .await
            .map_err(db)?;
        row.as_ref().map(from_row).transpose()
    }

    async fn list(&self, limit: usize, offset: usize) -> Result<Vec<SessionInfo>> {
        let sql = sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM sessions ORDER BY updated_at DESC, ord DESC LIMIT ? OFFSET ?"
        ));
        let rows = sqlx::query(sql)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .bind(i64::try_from(offset).unwrap_or(i64::MAX))
            .fetch_all(&mut *self.db.reader.acquire().await?)
            .await
            .map_err(db)?;
        rows.iter().map(from_row).collect()
    }

    async fn update(
        &self,
        id: &SessionId,
        patch: &SessionPatch,
        now: Timestamp,
    ) -> Result<SessionInfo> {
        let sql = sqlx::AssertSqlSafe(format!(
            "UPDATE sessions SET name = COALESCE(?, name), model = COALESCE(?, model), \
             end_reason = COALESCE(?, end_reason), updated_at = ?, \
             profile = CASE WHEN ? THEN ? ELSE profile END WHERE id = ? RETURNING {COLUMNS}"
        ));
        let row = sqlx::query(sql)
            .bind(&patch.name)
            .bind(&patch.model)
            .bind(&patch.end_reason)
            .bind(now.millis())
            .bind(patch.profile.is_some())
            .bind(patch.profile.clone().flatten())
            .bind(id.as_str())
            .fetch_optional(&self.db.writer)
            .await
            .map_err(db)?;
        returned(id, row)
    }

    async fn add_usage(
        &self,
        id: &SessionId,
        usage: SessionUsage,
        now: Timestamp,
    ) -> Result<SessionInfo> {
        let sql = sqlx::AssertSqlSafe(format!(
            "UPDATE sessions SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, \
             cost = cost + ?, updated_at = ? WHERE id = ? RETURNING {COLUMNS}"
        ));
        let row = sqlx::query(sql)
            .bind(i64::try_from(usage.input_tokens).unwrap_or(i64::MAX))
            .bind(i64::try_from(usage.output_tokens).unwrap_or(i64::MAX))
            .bind(usage.cost)
            .bind(now.millis())
            .bind(id.as_str())
            .fetch_optional(&self.db.writer)
            .await
            .map_err(db)?;
        returned(id, row)
    }

    /// Joins concurrent appends' transactions (group commit): an append's touch commits with
    /// the appends queued beside it, and the touches of a group share one statement.
    async fn touch(&self, id: &SessionId, now: Timestamp) -> Result<()> {
        self.touch_and_name(id, now, None).await
    }

    /// A touch that also names an unnamed session, in the same statement (and the same group
    /// commit): no read before it.
    async fn touch_and_name(
        &self,
        id: &SessionId,
        now: Timestamp,
        name: Option<String>,
    ) -> Result<()> {
        self.db
            .group
            .run(Touch {
                id: id.clone(),
                now,
                name,
            })
            .await
    }

    async fn delete(&self, id: &SessionId) -> Result<bool> {
        let result = sqlx::query("DELETE FROM sessions WHERE id = ?")
            .bind(id.as_str())
            .execute(&self.db.writer)
            .await
            .map_err(db)?;
        Ok(result.rows_affected() > 0)
    }
}

/// A session's touch (its `updated_at` set to `now`, and its name to `name` if it has none),
/// written with the touches queued beside it.
struct Touch {
    id: SessionId,
    now: Timestamp,
    name: Option<String>,
}

/// Every touch of a group in one statement; a session touched twice keeps the later time (the
/// larger, where one at a time the last queued would win: they differ only when two callers'
/// clocks disagree, and then the later time is the truer one) and the name of the first
/// touch that gave one (the list carries only that one, see [`touch_list`]).
const TOUCH_ALL: &str = "WITH t AS (SELECT value ->> 0 AS id, MAX(value ->> 1) AS now, \
    MAX(value ->> 2) AS name FROM json_each(?) GROUP BY 1) \
    UPDATE sessions SET updated_at = t.now, name = COALESCE(sessions.name, t.name) FROM t \
    WHERE sessions.id = t.id RETURNING sessions.id";

/// A group's touches as `TOUCH_ALL` reads them: `[id, now, name]`, the name kept only on the
/// first touch of each session that gives one (as one at a time, the first would name it).
fn touch_list(writes: &[Touch]) -> Result<String> {
    let mut named = HashSet::new();
    let list: Vec<(&str, i64, Option<&str>)> = writes
        .iter()
        .map(|t| {
            let name = t.name.as_deref().filter(|_| named.insert(t.id.as_str()));
            (t.id.as_str(), t.now.millis(), name)
        })
        .collect();
    Ok(serde_json::to_string(&list)?)
}

/// One touch in one statement (no savepoint needed in the group).
async fn touch_one(conn: &mut SqliteConnection, touch: &Touch) -> Written<()> {
    match sqlx::query("UPDATE sessions SET updated_at = ?, name = COALESCE(name, ?) WHERE id = ?")
        .bind(touch.now.millis())
        .bind(touch.name.as_deref())
        .bind(touch.id.as_str())
        .execute(conn)
        .await
    {
        Ok(done) if done.rows_affected() == 0 => {
            Ok(Err(MemoryError::not_found("session", touch.id.as_str())))
        }
        Ok(_) => Ok(Ok(())),
        Err(error) => statement_failed(error),
    }
}

impl Batch for Touch {
    type Output = ();

    fn write_all(
        conn: &mut SqliteConnection,
        writes: Vec<Self>,
    ) -> BoxFuture<'_, Result<Vec<Result<()>>>> {
        async move {
            if writes.len() > 1 {
                let list = touch_list(&writes)?;
                match sqlx::query(TOUCH_ALL)
                    .bind(list)
                    .fetch_all(&mut *conn)
                    .await
                {
                    Ok(rows) => {
                        let found: HashSet<String> = rows.iter().map(|r| r.get(0)).collect();
                        return Ok(writes
                            .iter()
                            .map(|t| {
                                if found.contains(t.id.as_str()) {
                                    Ok(())
                                } else {
                                    Err(MemoryError::not_found("session", t.id.as_str()))
                                }
                            })
                            .collect());
                    }
                    Err(error) => {
                        // A constraint refused the statement (SQLite undid it): each touch
                        // alone finds out whose it was. Any other error puts the group in doubt.
                        let _refused = statement_failed::<()>(error)?;
                    }
                }
            }
            let mut results = Vec::with_capacity(writes.len());
            for touch in &writes {
                results.push(touch_one(conn, touch).await?);
            }
            Ok(results)
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::SqliteConfig;

    /// A registry in `dir` holding unnamed sessions `ids`, created at time 1.
    async fn with_sessions(dir: &tempfile::TempDir, ids: &[&str]) -> SqliteSessionRegistry {
        let db = SqliteDatabase::open(SqliteConfig::new(dir.path().join("r.db")))
            .await
            .unwrap();
        let registry = SqliteSessionRegistry::new(db);
        for id in ids {
            registry
                .create(
                    &SessionId::new(*id).unwrap(),
                    &NewSession::default(),
                    Timestamp(1),
                )
                .await
                .unwrap();
        }
        registry
    }

    /// Touches queued together share one statement: each found session takes its time (the
    /// later of two for one session), and each missing one is refused alone.
    #[tokio::test]
    async fn a_group_of_touches_answers_each_caller() {
        let dir = tempfile::tempdir().unwrap();
        let registry = with_sessions(&dir, &["a", "b"]).await;
        let id = |s: &str| SessionId::new(s).unwrap();
        let (a, b, nope) = (id("a"), id("b"), id("nope"));
        let (a, missing, b, a_again) = tokio::join!(
            registry.touch(&a, Timestamp(30)),
            registry.touch(&nope, Timestamp(10)),
            registry.touch(&b, Timestamp(20)),
            registry.touch(&a, Timestamp(40)),
        );
        a.unwrap();
        b.unwrap();
        a_again.unwrap();
        assert!(
            matches!(missing, Err(MemoryError::NotFound { .. })),
            "{missing:?}"
        );
        let updated = |s: &'static str| {
            let registry = registry.clone();
            async move { registry.get(&id(s)).await.unwrap().unwrap().updated_at }
        };
        assert_eq!(updated("a").await, Timestamp(40));
        assert_eq!(updated("b").await, Timestamp(20));
    }

    /// Touches that name, queued together: an unnamed session takes the first name given
    /// for it in the group, a named one keeps its own, and a touch without a name names
    /// nothing.
    #[tokio::test]
    async fn a_group_of_touches_names_only_the_unnamed_with_the_first_name() {
        let dir = tempfile::tempdir().unwrap();
        let registry = with_sessions(&dir, &["fresh", "named", "plain"]).await;
        let id = |s: &str| SessionId::new(s).unwrap();
        let rename = SessionPatch {
            name: Some("kept".into()),
            ..SessionPatch::default()
        };
        registry
            .update(&id("named"), &rename, Timestamp(2))
            .await
            .unwrap();
        let (fresh, named, plain) = (id("fresh"), id("named"), id("plain"));
        let results = tokio::join!(
            registry.touch_and_name(&fresh, Timestamp(10), None),
            registry.touch_and_name(&fresh, Timestamp(11), Some("first".into())),
            registry.touch_and_name(&named, Timestamp(12), Some("ignored".into())),
            registry.touch_and_name(&fresh, Timestamp(13), Some("second".into())),
            registry.touch_and_name(&plain, Timestamp(14), None),
        );
        for result in [results.0, results.1, results.2, results.3, results.4] {
            result.unwrap();
        }
        let info = |s: &'static str| {
            let registry = registry.clone();
            async move { registry.get(&id(s)).await.unwrap().unwrap() }
        };
        let fresh = info("fresh").await;
        assert_eq!(fresh.name.as_deref(), Some("first"));
        assert_eq!(fresh.updated_at, Timestamp(13));
        assert_eq!(info("named").await.name.as_deref(), Some("kept"));
        assert_eq!(info("plain").await.name, None);
        assert_eq!(info("plain").await.updated_at, Timestamp(14));
    }
}
