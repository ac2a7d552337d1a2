use async_trait::async_trait;
use memory_core::ports::{JobFilter, JobLease, JobPage, JobQueue, JobRecord, JobState, NewJob};
use memory_core::{MemoryError, Result, Timestamp};
use sqlx::Row;
use sqlx::postgres::PgRow;

use crate::database::PostgresDatabase;
use crate::error::{BACKEND, db, is_unique_violation};

/// The [`JobQueue`] on PostgreSQL: one table; a claim is one `UPDATE ... RETURNING` whose
/// candidate row is picked `FOR UPDATE SKIP LOCKED`, so concurrent workers (in any number of
/// processes and servers) each take a different job and never wait on each other's rows.
#[derive(Debug, Clone)]
pub struct PostgresJobQueue {
    db: PostgresDatabase,
}

impl PostgresJobQueue {
    /// The queue in an open database.
    pub fn new(db: PostgresDatabase) -> Self {
        Self { db }
    }
}

const COLUMNS: &str = "id, kind, profile, state, stage, body, attempts, worker, lease_expires_at, created_at, updated_at, seq";

fn from_row(r: &PgRow) -> Result<JobRecord> {
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
const CLAIMABLE: &str = "(state = 'queued' OR (state = 'running' AND lease_expires_at < $4))";

impl PostgresJobQueue {
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
            "UPDATE job_queue SET state = 'running', worker = $1, lease_token = $2, lease_expires_at = $3, updated_at = $4 \
             WHERE seq = (SELECT seq FROM job_queue WHERE {CLAIMABLE} AND {condition} ORDER BY seq LIMIT 1 \
             FOR UPDATE SKIP LOCKED) \
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
        let row = query.fetch_optional(&self.db.pool).await.map_err(db)?;
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
            "UPDATE job_queue SET {set} WHERE id = $1 AND lease_token = $2 AND state = 'running'"
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
            .execute(&self.db.pool)
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

/// A listing's statement and the values its filter binds (after `$1`, the cursor's position,
/// and before the last, the limit). Only the filter's set fields are conditions: a condition
/// written as `($2 IS NULL OR profile = $2)` hides the column from a generic plan, which then
/// reads every job ever queued (done jobs stay), as recall's check for failed ingests did.
fn list_query(filter: &JobFilter) -> (String, Vec<&str>) {
    let mut sql = format!("SELECT {COLUMNS} FROM job_queue WHERE seq > $1");
    let mut values = Vec::new();
    let fields = [
        ("profile", filter.profile.as_deref()),
        ("kind", filter.kind.as_deref()),
        ("state", filter.state.map(JobState::as_str)),
    ];
    for (column, value) in fields {
        if let Some(value) = value {
            values.push(value);
            sql.push_str(&format!(" AND {column} = ${}", values.len() + 1));
        }
    }
    sql.push_str(&format!(" ORDER BY seq LIMIT ${}", values.len() + 2));
    (sql, values)
}

#[async_trait]
impl JobQueue for PostgresJobQueue {
    fn backend_name(&self) -> &'static str {
        BACKEND
    }

    async fn enqueue(&self, job: NewJob, now: Timestamp) -> Result<JobRecord> {
        let result = sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO job_queue (id, kind, profile, state, stage, body, created_at, updated_at) \
             VALUES ($1, $2, $3, 'queued', $4, $5, $6, $7) RETURNING {COLUMNS}"
        )))
        .bind(&job.id)
        .bind(&job.kind)
        .bind(&job.profile)
        .bind(&job.stage)
        .bind(job.body.to_string())
        .bind(now.millis())
        .bind(now.millis())
        .fetch_one(&self.db.pool)
        .await;
        match result {
            Ok(row) => from_row(&row),
            Err(e) if is_unique_violation(&e) => Err(MemoryError::AlreadyExists {
                kind: "job",
                id: job.id,
            }),
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
            "($5::text IS NULL OR profile = $5) AND ($6::text IS NULL OR kind = $6)",
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
            "id = $5",
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
            "lease_expires_at = $3, updated_at = $4",
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
            "stage = $3, body = $4, updated_at = $5",
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
            "state = 'done', stage = $3, body = $4, updated_at = $5, worker = NULL, lease_token = NULL, lease_expires_at = NULL",
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
            "state = $6, stage = $3, body = $4, updated_at = $5, attempts = attempts + 1, \
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
            "state = 'queued', updated_at = $3, worker = NULL, lease_token = NULL, lease_expires_at = NULL",
            vec![LeaseBind::Int(now.millis())],
        )
        .await
    }

    async fn retry(&self, id: &str, now: Timestamp) -> Result<bool> {
        let changed = sqlx::query(
            "UPDATE job_queue SET state = 'queued', updated_at = $1 WHERE id = $2 AND state = 'failed'",
        )
        .bind(now.millis())
        .bind(id)
        .execute(&self.db.pool)
        .await
        .map_err(db)?
        .rows_affected();
        Ok(changed > 0)
    }

    async fn cancel(&self, id: &str, body: serde_json::Value, now: Timestamp) -> Result<bool> {
        let changed = sqlx::query(
            "UPDATE job_queue SET state = 'cancelled', body = $1, updated_at = $2, worker = NULL, \
             lease_token = NULL, lease_expires_at = NULL WHERE id = $3 AND state <> 'done'",
        )
        .bind(body.to_string())
        .bind(now.millis())
        .bind(id)
        .execute(&self.db.pool)
        .await
        .map_err(db)?
        .rows_affected();
        Ok(changed > 0)
    }

    async fn get(&self, id: &str) -> Result<Option<JobRecord>> {
        self.db
            .idempotent(|| async {
                let row = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "SELECT {COLUMNS} FROM job_queue WHERE id = $1"
                )))
                .bind(id)
                .fetch_optional(&self.db.pool)
                .await
                .map_err(db)?;
                row.as_ref().map(from_row).transpose()
            })
            .await
    }

    async fn list(
        &self,
        filter: &JobFilter,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<JobPage> {
        self.db
            .idempotent(|| async {
                let after = memory_core::cursor::parse_position(cursor.as_deref())?.unwrap_or(0);
                let (sql, values) = list_query(filter);
                let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(after);
                for value in values {
                    query = query.bind(value);
                }
                let rows = query
                    .bind(memory_core::cursor::one_more(limit))
                    .fetch_all(&self.db.pool)
                    .await
                    .map_err(db)?;
                let (jobs, next_cursor) =
                    memory_core::cursor::page_of(&rows, limit, |row| row.get(11), from_row)?;
                Ok(JobPage { jobs, next_cursor })
            })
            .await
    }

    async fn delete_profile_jobs(&self, profile: &str) -> Result<u64> {
        Ok(sqlx::query("DELETE FROM job_queue WHERE profile = $1")
            .bind(profile)
            .execute(&self.db.pool)
            .await
            .map_err(db)?
            .rows_affected())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the filter's set fields are conditions, numbered in order after the cursor, and
    /// the limit takes the next number.
    #[test]
    fn a_listing_names_only_the_fields_it_filters_on() {
        let tail = |sql: String| sql[sql.find("WHERE").unwrap_or(0)..].to_owned();
        let filter = |profile: Option<&str>, kind: Option<&str>, state| JobFilter {
            profile: profile.map(str::to_owned),
            kind: kind.map(str::to_owned),
            state,
        };
        let all = filter(Some("p"), Some("ingest"), Some(JobState::Failed));
        let (sql, values) = list_query(&all);
        assert_eq!(
            tail(sql),
            "WHERE seq > $1 AND profile = $2 AND kind = $3 AND state = $4 ORDER BY seq LIMIT $5"
        );
        assert_eq!(values, ["p", "ingest", "failed"]);
        let two = filter(Some("p"), None, Some(JobState::Queued));
        let (sql, values) = list_query(&two);
        assert_eq!(
            tail(sql),
            "WHERE seq > $1 AND profile = $2 AND state = $3 ORDER BY seq LIMIT $4"
        );
        assert_eq!(values, ["p", "queued"]);
        let none = filter(None, None, None);
        let (sql, values) = list_query(&none);
        assert_eq!(tail(sql), "WHERE seq > $1 ORDER BY seq LIMIT $2");
        assert!(values.is_empty());
    }
}
