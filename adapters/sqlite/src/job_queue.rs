use async_trait::async_trait;
use memory_core::ports::{JobFilter, JobLease, JobPage, JobQueue, JobRecord, JobState, NewJob};
use memory_core::{MemoryError, Result, Timestamp};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::database::SqliteDatabase;
use crate::error::{BACKEND, db};

/// The [`JobQueue`] on SQLite: one table; a claim is one `UPDATE ... RETURNING` on the
/// single writer connection, so two claims can never take the same job, even from two
/// processes (SQLite serialises writers with its file lock).
#[derive(Debug, Clone)]
pub struct SqliteJobQueue {
    db: SqliteDatabase,
}

impl SqliteJobQueue {
    /// The queue in an open database.
    pub fn new(db: SqliteDatabase) -> Self {
        Self { db }
    }
}

const COLUMNS: &str = "id, kind, profile, state, stage, body, attempts, worker, lease_expires_at, created_at, updated_at, seq";

fn from_row(r: &SqliteRow) -> Result<JobRecord> {
    Ok(JobRecord {
        id: r.get(0),
        kind: r.get(1),
        profile: r.get(2),
        state: JobState::parse(r.get(3))?,
        stage: r.get(4),
        body: serde_json::from_str(r.get(5))?,
        attempts: u32::try_from(r.get::<i64, _>(6)).unwrap_or(u32::MAX),
        worker: r.get(7),
        lease_expires_at: r.get::<Option<i64>, _>(8).map(Timestamp),
        created_at: Timestamp(r.get(9)),
        updated_at: Timestamp(r.get(10)),
    })
}

/// `WHERE` clause of a claimable job at `?now`.
const CLAIMABLE: &str = "(state = 'queued' OR (state = 'running' AND lease_expires_at < ?4))";

impl SqliteJobQueue {
    async fn claim_where(
        &self,
        condition: &str,
        bind: Vec<Option<String>>,
        worker: &str,
        lease_millis: u64,
        now: Timestamp,
    ) -> Result<Option<(JobRecord, JobLease)>> {
        let token = uuid::Uuid::new_v4().to_string();
        let expires = JobLease::expiry(now, lease_millis);
        let sql = format!(
            "UPDATE job_queue SET state = 'running', worker = ?1, lease_token = ?2, lease_expires_at = ?3, updated_at = ?4 \
             WHERE seq = (SELECT seq FROM job_queue WHERE {CLAIMABLE} AND {condition} ORDER BY seq LIMIT 1) \
             RETURNING {COLUMNS}"
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(worker)
            .bind(&token)
            .bind(expires.millis())
            .bind(now.millis());
        for value in bind {
            query = query.bind(value);
        }
        let row = query.fetch_optional(&self.db.writer).await.map_err(db)?;
        let Some(row) = row else { return Ok(None) };
        let record = from_row(&row)?;
        let lease = JobLease {
            job_id: record.id.clone(),
            worker: worker.to_owned(),
            token,
            expires_at: expires,
        };
        Ok(Some((record, lease)))
    }

    /// Runs a write of a leased job; `Conflict` when the lease is no longer held.
    async fn leased_write(&self, lease: &JobLease, set: &str, binds: Vec<LeaseBind>) -> Result<()> {
        let sql = format!(
            "UPDATE job_queue SET {set} WHERE id = ?1 AND lease_token = ?2 AND state = 'running'"
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&lease.job_id)
            .bind(&lease.token);
        for value in binds {
            query = match value {
                LeaseBind::Text(s) => query.bind(s),
                LeaseBind::Int(i) => query.bind(i),
            };
        }
        let changed = query
            .execute(&self.db.writer)
            .await
            .map_err(db)?
            .rows_affected();
        if changed == 0 {
            return Err(lease.lost());
        }
        Ok(())
    }
}

enum LeaseBind {
    Text(String),
    Int(i64),
}

/// A listing's statement and the values its filter binds (after `?1`, the cursor's position,
/// and before the last, the limit). Only the filter's set fields are conditions: a condition
/// written as `(? IS NULL OR profile = ?)` hides the column from the planner, which then reads
/// every job ever queued (done jobs stay), as recall's check for failed ingests did.
fn list_query(filter: &JobFilter) -> (String, Vec<&str>) {
    let mut sql = format!("SELECT {COLUMNS} FROM job_queue WHERE seq > ?");
    let mut values = Vec::new();
    let fields = [
        ("profile", filter.profile.as_deref()),
        ("kind", filter.kind.as_deref()),
        ("state", filter.state.map(JobState::as_str)),
    ];
    for (column, value) in fields {
        if let Some(value) = value {
            sql.push_str(" AND ");
            sql.push_str(column);
            sql.push_str(" = ?");
            values.push(value);
        }
    }
    sql.push_str(" ORDER BY seq LIMIT ?");
    (sql, values)
}

#[async_trait]
impl JobQueue for SqliteJobQueue {
    fn backend_name(&self) -> &'static str {
        BACKEND
    }

    async fn enqueue(&self, job: NewJob, now: Timestamp) -> Result<JobRecord> {
        let result = sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO job_queue (id, kind, profile, state, stage, body, created_at, updated_at) \
             VALUES (?, ?, ?, 'queued', ?, ?, ?, ?) RETURNING {COLUMNS}"
        )))
        .bind(&job.id)
        .bind(&job.kind)
        .bind(&job.profile)
        .bind(&job.stage)
        .bind(job.body.to_string())
        .bind(now.millis())
        .bind(now.millis())
        .fetch_one(&self.db.writer)
        .await;
        match result {
            Ok(row) => from_row(&row),
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                Err(MemoryError::AlreadyExists {
                    kind: "job",
                    id: job.id,
                })
            }
            Err(e) => Err(db(e)),
        }
    }

    async fn claim(
        &self,
        filter: &JobFilter,
        worker: &str,
        lease_millis: u64,
        now: Timestamp,
    ) -> Result<Option<(JobRecord, JobLease)>> {
        self.claim_where(
            "(?5 IS NULL OR profile = ?5) AND (?6 IS NULL OR kind = ?6)",
            vec![filter.profile.clone(), filter.kind.clone()],
            worker,
            lease_millis,
            now,
        )
        .await
    }

    async fn claim_id(
        &self,
        id: &str,
        worker: &str,
        lease_millis: u64,
        now: Timestamp,
    ) -> Result<Option<(JobRecord, JobLease)>> {
        self.claim_where(
            "id = ?5",
            vec![Some(id.to_owned())],
            worker,
            lease_millis,
            now,
        )
        .await
    }

    async fn heartbeat(
        &self,
        lease: &JobLease,
        lease_millis: u64,
        now: Timestamp,
    ) -> Result<JobLease> {
        let expires = JobLease::expiry(now, lease_millis);
        self.leased_write(
            lease,
            "lease_expires_at = ?3, updated_at = ?4",
            vec![
                LeaseBind::Int(expires.millis()),
                LeaseBind::Int(now.millis()),
            ],
        )
        .await?;
        Ok(JobLease {
            expires_at: expires,
            ..lease.clone()
        })
    }

    async fn checkpoint(
        &self,
        lease: &JobLease,
        stage: &str,
        body: serde_json::Value,
        now: Timestamp,
    ) -> Result<()> {
        self.leased_write(
            lease,
            "stage = ?3, body = ?4, updated_at = ?5",
            vec![
                LeaseBind::Text(stage.to_owned()),
                LeaseBind::Text(body.to_string()),
                LeaseBind::Int(now.millis()),
            ],
        )
        .await
    }

    async fn complete(
        &self,
        lease: &JobLease,
        stage: &str,
        body: serde_json::Value,
        now: Timestamp,
    ) -> Result<()> {
        self.leased_write(
            lease,
            "state = 'done', stage = ?3, body = ?4, updated_at = ?5, worker = NULL, lease_token = NULL, lease_expires_at = NULL",
            vec![
                LeaseBind::Text(stage.to_owned()),
                LeaseBind::Text(body.to_string()),
                LeaseBind::Int(now.millis()),
            ],
        )
        .await
    }

    async fn fail(
        &self,
        lease: &JobLease,
        stage: &str,
        body: serde_json::Value,
        retry: bool,
        now: Timestamp,
    ) -> Result<()> {
        self.leased_write(
            lease,
            "state = ?6, stage = ?3, body = ?4, updated_at = ?5, attempts = attempts + 1, \
             worker = NULL, lease_token = NULL, lease_expires_at = NULL",
            vec![
                LeaseBind::Text(stage.to_owned()),
                LeaseBind::Text(body.to_string()),
                LeaseBind::Int(now.millis()),
                LeaseBind::Text(if retry { "queued" } else { "failed" }.to_owned()),
            ],
        )
        .await
    }

    async fn release(&self, lease: &JobLease, now: Timestamp) -> Result<()> {
        self.leased_write(
            lease,
            "state = 'queued', updated_at = ?3, worker = NULL, lease_token = NULL, lease_expires_at = NULL",
            vec![LeaseBind::Int(now.millis())],
        )
        .await
    }

    async fn retry(&self, id: &str, now: Timestamp) -> Result<bool> {
        let changed = sqlx::query(
            "UPDATE job_queue SET state = 'queued', updated_at = ? WHERE id = ? AND state = 'failed'",
        )
        .bind(now.millis())
        .bind(id)
        .execute(&self.db.writer)
        .await
        .map_err(db)?
        .rows_affected();
        Ok(changed > 0)
    }

    async fn cancel(&self, id: &str, body: serde_json::Value, now: Timestamp) -> Result<bool> {
        let changed = sqlx::query(
            "UPDATE job_queue SET state = 'cancelled', body = ?, updated_at = ?, worker = NULL, \
             lease_token = NULL, lease_expires_at = NULL WHERE id = ? AND state <> 'done'",
        )
        .bind(body.to_string())
        .bind(now.millis())
        .bind(id)
        .execute(&self.db.writer)
        .await
        .map_err(db)?
        .rows_affected();
        Ok(changed > 0)
    }

    async fn get(&self, id: &str) -> Result<Option<JobRecord>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM job_queue WHERE id = ?"
        )))
        .bind(id)
        .fetch_optional(&mut *self.db.reader.acquire().await?)
        .await
        .map_err(db)?;
        row.as_ref().map(from_row).transpose()
    }

    async fn list(
        &self,
        filter: &JobFilter,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<JobPage> {
        let after = memory_core::cursor::parse_position(cursor.as_deref())?.unwrap_or(0);
        let (sql, values) = list_query(filter);
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(after);
        for value in values {
            query = query.bind(value);
        }
        let rows = query
            .bind(memory_core::cursor::one_more(limit))
            .fetch_all(&mut *self.db.reader.acquire().await?)
            .await
            .map_err(db)?;
        let (jobs, next_cursor) =
            memory_core::cursor::page_of(&rows, limit, |row| row.get(11), from_row)?;
        Ok(JobPage { jobs, next_cursor })
    }

    async fn delete_profile_jobs(&self, profile: &str) -> Result<u64> {
        Ok(sqlx::query("DELETE FROM job_queue WHERE profile = ?")
            .bind(profile)
            .execute(&self.db.writer)
            .await
            .map_err(db)?
            .rows_affected())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::SqliteConfig;

    /// A listing by profile, by state, or by both is answered from an index, never by reading
    /// the table in `seq` order (where every done job would be read and dropped).
    #[tokio::test]
    async fn listings_by_profile_or_state_use_an_index() {
        let dir = tempfile::tempdir().unwrap();
        let db = SqliteDatabase::open(SqliteConfig::new(dir.path().join("q.db")))
            .await
            .unwrap();
        let profile = Some("p".to_owned());
        let kind = Some("ingest".to_owned());
        for (profile, kind, state, index) in [
            (
                profile.clone(),
                kind.clone(),
                Some(JobState::Failed),
                "job_queue_profile_state",
            ),
            (
                profile.clone(),
                None,
                Some(JobState::Queued),
                "job_queue_profile_state",
            ),
            (profile.clone(), kind.clone(), None, "job_queue_profile"),
            (
                None,
                kind.clone(),
                Some(JobState::Failed),
                "job_queue_claim",
            ),
            (None, None, Some(JobState::Done), "job_queue_claim"),
        ] {
            let filter = JobFilter {
                profile,
                kind,
                state,
            };
            let (sql, values) = list_query(&filter);
            let mut query =
                sqlx::query(sqlx::AssertSqlSafe(format!("EXPLAIN QUERY PLAN {sql}"))).bind(0_i64);
            for value in values {
                query = query.bind(value);
            }
            let plan: Vec<String> = query
                .bind(10_i64)
                .fetch_all(&mut *db.reader.acquire().await.unwrap())
                .await
                .unwrap()
                .iter()
                .map(|row| row.get::<String, _>(3))
                .collect();
            assert!(
                plan.iter()
                    .any(|step| step.contains(&format!("USING INDEX {index} "))),
                "{filter:?}: {plan:?}"
            );
        }
    }
}
