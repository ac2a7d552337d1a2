use async_trait::async_trait;
use memory_core::ports::SessionRegistry;
use memory_core::{
    MemoryError, NewSession, Result, SessionId, SessionInfo, SessionPatch, SessionUsage, Timestamp,
};
use sqlx::Row;
use sqlx::postgres::PgRow;

use crate::database::PostgresDatabase;
use crate::error::db;

/// The [`SessionRegistry`] on PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresSessionRegistry {
    db: PostgresDatabase,
}

impl PostgresSessionRegistry {
    /// A registry over an open database.
    pub fn new(db: PostgresDatabase) -> Self {
        Self { db }
    }
}

const COLUMNS: &str = "id, name, parent_session_id, model, source, input_tokens, output_tokens, cost, end_reason, created_at, updated_at, profile";

fn from_row(row: &PgRow) -> Result<SessionInfo> {
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
fn returned(id: &SessionId, row: Option<PgRow>) -> Result<SessionInfo> {
    match row {
        Some(row) => from_row(&row),
        None => Err(MemoryError::not_found("session", id.as_str())),
    }
}

#[async_trait]
impl SessionRegistry for PostgresSessionRegistry {
    async fn create(
        &self,
        id: &SessionId,
        spec: &NewSession,
        now: Timestamp,
    ) -> Result<SessionInfo> {
        let sql = sqlx::AssertSqlSafe(format!(
            "INSERT INTO sessions (id, name, parent_session_id, model, source, created_at, updated_at, profile) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING {COLUMNS}"
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
            .fetch_optional(&self.db.pool)
            .await;
        match result {
            Ok(row) => returned(id, row),
            Err(e) if crate::error::is_unique_violation(&e) => Err(MemoryError::AlreadyExists {
                kind: "session",
                id: id.to_string(),
            }),
            Err(e) => Err(db(e)),
        }
    }

    async fn restore(&self, info: &SessionInfo) -> Result<bool> {
        let done = sqlx::query(
            "INSERT INTO sessions (id, name, parent_session_id, model, source, input_tokens, \
             output_tokens, cost, end_reason, created_at, updated_at, profile) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (id) DO NOTHING",
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
        .execute(&self.db.pool)
        .await
        .map_err(db)?;
        Ok(done.rows_affected() == 1)
    }

    async fn get(&self, id: &SessionId) -> Result<Option<SessionInfo>> {
        self.db
            .idempotent(|| async {
                let sql =
                    sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM sessions WHERE id = $1"));
                let row = sqlx::query(sql)
                    .bind(id.as_str())
                    .fetch_optional(&self.db.pool)
                    .await
                    .map_err(db)?;
                row.as_ref().map(from_row).transpose()
            })
            .await
    }

    async fn list(&self, limit: usize, offset: usize) -> Result<Vec<SessionInfo>> {
        self.db
            .idempotent(|| async {

            let sql = sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM sessions ORDER BY updated_at DESC, ord DESC LIMIT $1 OFFSET $2"
            ));
            let rows = sqlx::query(sql)
                .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                .bind(i64::try_from(offset).unwrap_or(i64::MAX))
                .fetch_all(&self.db.pool)
                .await
                .map_err(db)?;
            rows.iter().map(from_row).collect()
            })
            .await
    }

    async fn update(
        &self,
        id: &SessionId,
        patch: &SessionPatch,
        now: Timestamp,
    ) -> Result<SessionInfo> {
        let sql = sqlx::AssertSqlSafe(format!(
            "UPDATE sessions SET name = COALESCE($1, name), model = COALESCE($2, model), \
             end_reason = COALESCE($3, end_reason), updated_at = $4, \
             profile = CASE WHEN $6 THEN $7 ELSE profile END WHERE id = $5 RETURNING {COLUMNS}"
        ));
        let row = sqlx::query(sql)
            .bind(&patch.name)
            .bind(&patch.model)
            .bind(&patch.end_reason)
            .bind(now.millis())
            .bind(id.as_str())
            .bind(patch.profile.is_some())
            .bind(patch.profile.clone().flatten())
            .fetch_optional(&self.db.pool)
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
            "UPDATE sessions SET input_tokens = input_tokens + $1, output_tokens = output_tokens + $2, \
             cost = cost + $3, updated_at = $4 WHERE id = $5 RETURNING {COLUMNS}"
        ));
        let row = sqlx::query(sql)
            .bind(i64::try_from(usage.input_tokens).unwrap_or(i64::MAX))
            .bind(i64::try_from(usage.output_tokens).unwrap_or(i64::MAX))
            .bind(usage.cost)
            .bind(now.millis())
            .bind(id.as_str())
            .fetch_optional(&self.db.pool)
            .await
            .map_err(db)?;
        returned(id, row)
    }

    async fn touch(&self, id: &SessionId, now: Timestamp) -> Result<()> {
        self.touch_and_name(id, now, None).await
    }

    /// One statement: the name goes in only where there is none.
    async fn touch_and_name(
        &self,
        id: &SessionId,
        now: Timestamp,
        name: Option<String>,
    ) -> Result<()> {
        let result = sqlx::query(
            "UPDATE sessions SET updated_at = $1, name = COALESCE(name, $2) WHERE id = $3",
        )
        .bind(now.millis())
        .bind(name)
        .bind(id.as_str())
        .execute(&self.db.pool)
        .await
        .map_err(db)?;
        if result.rows_affected() == 0 {
            return Err(MemoryError::not_found("session", id.as_str()));
        }
        Ok(())
    }

    async fn delete(&self, id: &SessionId) -> Result<bool> {
        let result = sqlx::query("DELETE FROM sessions WHERE id = $1")
            .bind(id.as_str())
            .execute(&self.db.pool)
            .await
            .map_err(db)?;
        Ok(result.rows_affected() > 0)
    }
}
