use std::str::FromStr;

use memory_core::Result;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use tracing::{debug, warn};

use crate::config::PostgresConfig;
use crate::error::{PostgresError, db};

/// A connection pool whose every connection works in the configured schema. Cheap to clone.
#[derive(Debug, Clone)]
pub struct PostgresDatabase {
    pub(crate) pool: PgPool,
    schema: String,
    retry_for: std::time::Duration,
}

/// A schema name safe to put in SQL unquoted: lowercase letters, digits and `_`, starting
/// with a letter, at most 63 bytes (PostgreSQL's identifier limit).
fn valid_schema(name: &str) -> bool {
    name.len() <= 63
        && name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

impl PostgresDatabase {
    /// Connects, creates the schema when missing and applies pending migrations. Processes
    /// starting at once do not race: the schema is created under a transaction-scoped
    /// advisory lock, and sqlx's migrator holds a session advisory lock while it migrates.
    pub async fn connect(config: PostgresConfig) -> Result<Self> {
        if !valid_schema(&config.schema) {
            return Err(PostgresError::SchemaName(config.schema).into());
        }
        let options = PgConnectOptions::from_str(&config.url)
            .map_err(db)?
            // pgvector's type lives where the extension was created (`public`).
            .options([("search_path", format!("{}, public", config.schema).as_str())]);
        let pool = PgPoolOptions::new()
            .max_connections(config.max_connections)
            .acquire_timeout(config.acquire_timeout)
            .connect_with(options)
            .await
            .map_err(db)?;
        ensure_pgvector(&pool).await?;
        let mut tx = pool.begin().await.map_err(db)?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext('memory-postgres schema ' || $1))")
            .bind(&config.schema)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let create = format!("CREATE SCHEMA IF NOT EXISTS {}", config.schema);
        sqlx::query(sqlx::AssertSqlSafe(create))
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        crate::migrations::schema()
            .run(&pool)
            .await
            .map_err(PostgresError::Migrate)?;
        debug!(schema = %config.schema, "connected to postgres");
        Ok(Self {
            pool,
            schema: config.schema,
            retry_for: config.retry_for,
        })
    }

    /// Runs an idempotent operation, retrying transient failures (with backoff from 50 ms
    /// to 1 s) for up to [`PostgresConfig::retry_for`]; any other error, or a transient one
    /// past that time, is returned as it is.
    pub(crate) async fn idempotent<T, F, Fut>(&self, operation: F) -> Result<T>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let start = std::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(50);
        loop {
            match operation().await {
                Err(e) if e.is_transient() && start.elapsed() + pause < self.retry_for => {
                    warn!(error = %e, "postgres: transient failure, retrying");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(std::time::Duration::from_secs(1));
                }
                other => return other,
            }
        }
    }

    /// The schema this database works in.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Drops the schema and everything in it (a deployment's whole data). Irreversible.
    pub async fn drop_schema(&self) -> Result<()> {
        let drop = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema);
        sqlx::query(sqlx::AssertSqlSafe(drop))
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }

    /// Every table of the schema whose rows contain `text` (in any column, as PostgreSQL
    /// prints the row), with how many rows do: an erasure audit. A full scan of every table;
    /// for audits and tests, not for a request path.
    ///
    /// ```no_run
    /// # async fn audit(db: memory_postgres::PostgresDatabase) -> memory_core::Result<()> {
    /// assert!(db.tables_containing("the erased sentence").await?.is_empty());
    /// # Ok(()) }
    /// ```
    pub async fn tables_containing(&self, text: &str) -> Result<Vec<(String, u64)>> {
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT table_name::text FROM information_schema.tables \
             WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY 1",
        )
        .bind(&self.schema)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        let mut found = Vec::new();
        for table in tables {
            // The name comes from the catalogue, quoted as an identifier.
            let sql = format!(
                "SELECT COUNT(*) FROM {}.\"{}\" t WHERE strpos(t::text, $1) > 0",
                self.schema,
                table.replace('"', "\"\"")
            );
            let count: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                .bind(text)
                .fetch_one(&self.pool)
                .await
                .map_err(db)?;
            if count > 0 {
                found.push((table, count as u64));
            }
        }
        Ok(found)
    }

    /// Closes every connection.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Creates pgvector in `public` when the server has it but the database does not yet (under
/// a server-wide advisory lock: two first connects do not race). A server without pgvector
/// is a clear error naming it.
async fn ensure_pgvector(pool: &PgPool) -> Result<()> {
    let installed: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')")
            .fetch_one(pool)
            .await
            .map_err(db)?;
    if installed {
        return Ok(());
    }
    let mut tx = pool.begin().await.map_err(db)?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('memory-postgres pgvector'))")
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    sqlx::query("CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public")
        .execute(&mut *tx)
        .await
        .map_err(PostgresError::Pgvector)?;
    tx.commit().await.map_err(db)
}

#[cfg(test)]
mod tests {
    use super::valid_schema;

    #[test]
    fn schema_names_are_plain_identifiers() {
        assert!(valid_schema("memory"));
        assert!(valid_schema("team_2"));
        for bad in ["", "2x", "Memory", "a-b", "x; drop", &"a".repeat(64)] {
            assert!(!valid_schema(bad), "{bad}");
        }
    }
}
