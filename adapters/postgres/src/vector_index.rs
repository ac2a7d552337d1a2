//! [`VectorIndex`] on pgvector: one `vectors` table, each namespace with its model and
//! dimensions recorded in `vector_namespaces` and its own partial HNSW index (cosine).

use std::sync::Arc;

use async_trait::async_trait;
use memory_core::ports::{
    VectorFields, VectorFilter, VectorHit, VectorIndex, VectorIndexes, VectorQuery, VectorRecord,
};
use memory_core::{MemoryError, Result, Timestamp, validate_profile_name};
use sqlx::{PgConnection, Row};

use crate::database::PostgresDatabase;
use crate::error::db;

/// pgvector's HNSW index takes at most this many dimensions; wider namespaces are searched
/// exactly.
const MAX_HNSW_DIMENSIONS: usize = 2000;

/// A namespace gets its HNSW index once it holds this many vectors; a smaller one is
/// scanned exactly (through the `(namespace_key, id)` key), which is fast at that size and
/// costs the table no index: a partial index per namespace, for every profile however
/// small, made each insert check every index's predicate and each new namespace take a
/// table lock (tens of thousands of profiles slowed every write, and concurrent first
/// writes of two profiles deadlocked).
pub const HNSW_FROM_VECTORS: i64 = 10_000;

/// The widest `k` an HNSW search serves (`hnsw.ef_search` tops out at 1,000); a larger `k`
/// is answered by an exact scan.
const MAX_HNSW_K: usize = 500;

/// Nearest-neighbour search on pgvector.
///
/// A namespace of [`HNSW_FROM_VECTORS`] vectors or more gets a partial HNSW index
/// (`vector_cosine_ops`, pgvector's defaults `m = 16`, `ef_construction = 64`), built
/// `CONCURRENTLY` after the write that reached the size (inserts into the table go on
/// meanwhile; one build at a time), and each search sets `hnsw.ef_search` to at least
/// twice `k` (at least 100), so results are approximate only past tens of thousands of
/// vectors (recall measured in `docs/benchmarks.md`); a smaller namespace is searched
/// exactly. The model check reads the namespace row `FOR SHARE` inside the
/// write's transaction: two writers with different models never both win, in any number of
/// processes.
#[derive(Debug, Clone)]
pub struct PostgresVectorIndex {
    db: PostgresDatabase,
    /// `""` for the deployment-wide index, else a profile's name.
    scope: String,
}

/// A namespace's key, model and dimensions.
struct Namespace {
    key: i64,
    model: String,
    dims: usize,
}

impl PostgresVectorIndex {
    /// The deployment-wide index over a connected database.
    pub fn new(db: PostgresDatabase) -> Self {
        Self {
            db,
            scope: String::new(),
        }
    }

    async fn namespace(
        &self,
        conn: &mut PgConnection,
        namespace: &str,
        lock: &str,
    ) -> Result<Option<Namespace>> {
        let sql = format!(
            "SELECT key, model, dims FROM vector_namespaces WHERE scope = $1 AND namespace = $2 {lock}"
        );
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&self.scope)
            .bind(namespace)
            .fetch_optional(conn)
            .await
            .map_err(db)?;
        Ok(row.map(|r| Namespace {
            key: r.get(0),
            model: r.get(1),
            dims: r.get::<i32, _>(2).max(0) as usize,
        }))
    }
}

impl PostgresVectorIndex {
    /// The `k` nearest rows of the namespace that match `filter`, through its HNSW index or
    /// by an exact scan.
    async fn nearest(
        &self,
        tx: &mut PgConnection,
        ns: &Namespace,
        vector: &[f32],
        k: usize,
        filter: &VectorFilter,
        exact: bool,
    ) -> Result<Vec<VectorHit>> {
        if exact {
            sqlx::query("SET LOCAL enable_indexscan = off")
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        } else {
            let ef_search = (2 * k).max(100);
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SET LOCAL hnsw.ef_search = {ef_search}"
            )))
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        }
        // The namespace key and dimensions are inlined (integers read from the database), so
        // the planner matches the namespace's partial index.
        // The query vector is an InitPlan, computed once (a bare `$1::vector` cast is
        // evaluated per row when the planner scans instead of using the index).
        let distance = format!(
            "{} <=> (SELECT $1::real[]::vector({}))",
            typed(ns.dims),
            ns.dims
        );
        // Exact and HNSW reads are different statements: a plan cached for one (prepared
        // statements are cached per connection, and a cached plan ignores later
        // `enable_indexscan` settings) must never serve the other.
        let method = if exact { "exact" } else { "hnsw" };
        let sql = format!(
            "SELECT /* {method} */ id, ({distance})::float8 FROM vectors \
             WHERE namespace_key = {}{} ORDER BY {distance} LIMIT $2",
            ns.key,
            filter_sql(filter, 3)
        );
        let query = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(vector)
            .bind(i64::try_from(k).unwrap_or(i64::MAX));
        let rows = bind_filter(query, filter)
            .fetch_all(&mut *tx)
            .await
            .map_err(db)?;
        Ok(rows
            .iter()
            .map(|r| {
                let distance: f64 = r.get(1);
                // A zero vector has no direction: pgvector says NaN, the port says 0.
                let score = if distance.is_nan() {
                    0.0
                } else {
                    1.0 - distance
                };
                VectorHit {
                    id: r.get(0),
                    score: score as f32,
                }
            })
            .collect())
    }
}

impl PostgresVectorIndex {
    /// Builds the namespace's HNSW index once it holds [`HNSW_FROM_VECTORS`] vectors (and
    /// has none, or only one a failed build left invalid). The build is `CONCURRENTLY`, so
    /// writes to the table go on; an advisory lock keeps builds one at a time (a write that
    /// finds another build running leaves this one to the namespace's next write).
    async fn index_when_large(&self, ns: &Namespace) -> Result<()> {
        if ns.dims > MAX_HNSW_DIMENSIONS || self.has_valid_index(ns.key).await? {
            return Ok(());
        }
        let held: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM (SELECT 1 FROM vectors WHERE namespace_key = $1 LIMIT $2) AS v",
        )
        .bind(ns.key)
        .bind(HNSW_FROM_VECTORS)
        .fetch_one(&self.db.pool)
        .await
        .map_err(db)?;
        if held < HNSW_FROM_VECTORS {
            return Ok(());
        }
        let mut conn = self.db.pool.acquire().await.map_err(db)?;
        let locked: bool = sqlx::query_scalar(
            "SELECT pg_try_advisory_lock(hashtext('memory-postgres hnsw build'))",
        )
        .fetch_one(&mut *conn)
        .await
        .map_err(db)?;
        if !locked {
            // Another build runs: this namespace is looked at again by its next write.
            return Ok(());
        }
        let built = self.build_index(&mut conn, ns).await;
        let unlocked =
            sqlx::query("SELECT pg_advisory_unlock(hashtext('memory-postgres hnsw build'))")
                .execute(&mut *conn)
                .await
                .map_err(db);
        built.and(unlocked.map(|_| ()))
    }

    /// Whether the namespace's HNSW index exists and is valid.
    async fn has_valid_index(&self, key: i64) -> Result<bool> {
        let valid: Option<bool> = sqlx::query_scalar(
            "SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass($1)",
        )
        .bind(hnsw_index(key))
        .fetch_optional(&self.db.pool)
        .await
        .map_err(db)?;
        Ok(valid == Some(true))
    }

    /// Under the build lock: drops an invalid index a failed build left, and builds it.
    async fn build_index(&self, conn: &mut PgConnection, ns: &Namespace) -> Result<()> {
        if self.has_valid_index(ns.key).await? {
            return Ok(());
        }
        let name = hnsw_index(ns.key);
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP INDEX CONCURRENTLY IF EXISTS {name}"
        )))
        .execute(&mut *conn)
        .await
        .map_err(db)?;
        let create = format!(
            "CREATE INDEX CONCURRENTLY {name} ON vectors USING hnsw (({}) vector_cosine_ops) \
             WHERE namespace_key = {}",
            typed(ns.dims),
            ns.key
        );
        sqlx::query(sqlx::AssertSqlSafe(create))
            .execute(&mut *conn)
            .await
            .map_err(db)?;
        tracing::info!(index = %name, "built a vector namespace's HNSW index");
        Ok(())
    }
}

/// The name of a namespace's HNSW index.
fn hnsw_index(key: i64) -> String {
    format!("vectors_hnsw_{key}")
}

/// The namespace's vectors as `vector(dims)`, the expression its HNSW index is built on.
fn typed(dims: usize) -> String {
    format!("embedding::vector({dims})")
}

/// The SQL condition of `filter`, its values in parameters from `$first` on, bound by
/// [`bind_filter`] in the order session, kind, from, to (values are never spliced in).
fn filter_sql(filter: &VectorFilter, first: usize) -> String {
    let mut sql = String::new();
    let mut param = first;
    for (set, column) in [
        (filter.session.is_some(), "session ="),
        (filter.kind.is_some(), "kind ="),
        (filter.from.is_some(), "time >="),
        (filter.to.is_some(), "time <"),
    ] {
        if set {
            sql.push_str(&format!(" AND {column} ${param}"));
            param += 1;
        }
    }
    sql
}

/// Binds the values of [`filter_sql`].
fn bind_filter<'q>(
    mut query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    filter: &'q VectorFilter,
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    for text in [&filter.session, &filter.kind].into_iter().flatten() {
        query = query.bind(text);
    }
    for time in [filter.from, filter.to].into_iter().flatten() {
        query = query.bind(time.millis());
    }
    query
}

fn mismatch(namespace: &str, ns: &Namespace, bad: &VectorRecord) -> MemoryError {
    MemoryError::invalid(format!(
        "namespace {namespace:?} holds {}-dimension vectors of model {:?}; \
         got {} dimensions of model {:?} (clear the namespace to re-embed)",
        ns.dims,
        ns.model,
        bad.vector.len(),
        bad.model
    ))
}

#[async_trait]
impl VectorIndex for PostgresVectorIndex {
    async fn upsert(&self, namespace: &str, records: Vec<VectorRecord>) -> Result<()> {
        self.db
            .idempotent(|| async {

            let Some(first) = records.first() else {
                return Ok(());
            };
            if first.vector.is_empty() {
                return Err(MemoryError::invalid("an empty vector cannot be indexed"));
            }
            VectorRecord::check_finite(&records)?;
            let mut tx = self.db.pool.begin().await.map_err(db)?;
            sqlx::query(
                "INSERT INTO vector_namespaces (scope, namespace, model, dims) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (scope, namespace) DO NOTHING",
            )
            .bind(&self.scope)
            .bind(namespace)
            .bind(&first.model)
            .bind(i32::try_from(first.vector.len()).unwrap_or(i32::MAX))
            .execute(&mut *tx)
            .await
            .map_err(db)?;
            let ns = self
                .namespace(&mut tx, namespace, "FOR SHARE")
                .await?
                .ok_or_else(|| {
                    crate::error::invariant("a vector namespace vanished as it was written")
                })?;
            if let Some(bad) = records
                .iter()
                .find(|r| r.model != ns.model || r.vector.len() != ns.dims)
            {
                return Err(mismatch(namespace, &ns, bad));
            }
            let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
            let sessions: Vec<Option<&str>> =
                records.iter().map(|r| r.fields.session.as_deref()).collect();
            let kinds: Vec<Option<&str>> =
                records.iter().map(|r| r.fields.kind.as_deref()).collect();
            let times: Vec<Option<i64>> =
                records.iter().map(|r| r.fields.time.map(Timestamp::millis)).collect();
            // Each vector as a JSON array of numbers, which pgvector reads as its text form.
            let vectors: Vec<String> = records
                .iter()
                .map(|r| serde_json::to_string(&r.vector))
                .collect::<serde_json::Result<_>>()?;
            sqlx::query(
                "INSERT INTO vectors (namespace_key, id, embedding, session, kind, time) \
                 SELECT DISTINCT ON (u.id) $1, u.id, u.v::vector, u.session, u.kind, u.time \
                 FROM UNNEST($2::text[], $3::text[], $4::text[], $5::text[], $6::int8[]) \
                 WITH ORDINALITY AS u(id, v, session, kind, time, ord) \
                 ORDER BY u.id, u.ord DESC \
                 ON CONFLICT (namespace_key, id) DO UPDATE SET embedding = excluded.embedding, \
                 session = excluded.session, kind = excluded.kind, time = excluded.time",
            )
            .bind(ns.key)
            .bind(&ids)
            .bind(&vectors)
            .bind(&sessions)
            .bind(&kinds)
            .bind(&times)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
            tx.commit().await.map_err(db)?;
            self.index_when_large(&ns).await
            })
            .await
    }

    async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64> {
        Ok(sqlx::query(
            "DELETE FROM vectors WHERE id = ANY($3) AND namespace_key = \
             (SELECT key FROM vector_namespaces WHERE scope = $1 AND namespace = $2)",
        )
        .bind(&self.scope)
        .bind(namespace)
        .bind(ids)
        .execute(&self.db.pool)
        .await
        .map_err(db)?
        .rows_affected())
    }

    async fn search(&self, namespace: &str, query: &VectorQuery) -> Result<Vec<VectorHit>> {
        let (vector, k, filter) = (query.vector.as_slice(), query.k, &query.filter);
        self.db
            .idempotent(|| async {
                let mut tx = self.db.pool.begin().await.map_err(db)?;
                let Some(ns) = self.namespace(&mut tx, namespace, "").await? else {
                    return Ok(Vec::new());
                };
                if vector.len() != ns.dims {
                    return Err(MemoryError::invalid(format!(
                        "query vector has {} dimensions; namespace {namespace:?} holds {}",
                        vector.len(),
                        ns.dims
                    )));
                }
                if k == 0 {
                    return Ok(Vec::new());
                }
                let exact = k > MAX_HNSW_K || ns.dims > MAX_HNSW_DIMENSIONS;
                let mut hits = self.nearest(&mut tx, &ns, vector, k, filter, exact).await?;
                // HNSW filters the candidates it found; when too few of them match, the
                // matching rows are ranked exactly (so a filter never hides a match).
                if !exact && !filter.is_empty() && hits.len() < k {
                    hits = self.nearest(&mut tx, &ns, vector, k, filter, true).await?;
                }
                tx.commit().await.map_err(db)?;
                Ok(hits)
            })
            .await
    }

    async fn count(&self, namespace: &str, filter: &VectorFilter) -> Result<u64> {
        self.db
            .idempotent(|| async {
                let sql = format!(
                    "SELECT count(*) FROM vectors WHERE namespace_key = \
                     (SELECT key FROM vector_namespaces WHERE scope = $1 AND namespace = $2){}",
                    filter_sql(filter, 3)
                );
                let query = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(&self.scope)
                    .bind(namespace);
                let row = bind_filter(query, filter)
                    .fetch_one(&self.db.pool)
                    .await
                    .map_err(db)?;
                Ok(row.get::<i64, _>(0).max(0) as u64)
            })
            .await
    }

    async fn get(&self, namespace: &str, ids: &[String]) -> Result<Vec<VectorRecord>> {
        self.db
            .idempotent(|| async {
                if ids.is_empty() {
                    return Ok(Vec::new());
                }
                let rows = sqlx::query(
                    "SELECT v.id, v.embedding::real[], n.model, v.session, v.kind, v.time \
                 FROM UNNEST($3::text[]) WITH ORDINALITY AS u(id, ord) \
                 JOIN vector_namespaces n ON n.scope = $1 AND n.namespace = $2 \
                 JOIN vectors v ON v.namespace_key = n.key AND v.id = u.id ORDER BY u.ord",
                )
                .bind(&self.scope)
                .bind(namespace)
                .bind(ids)
                .fetch_all(&self.db.pool)
                .await
                .map_err(db)?;
                Ok(rows
                    .iter()
                    .map(|r| VectorRecord {
                        id: r.get(0),
                        vector: r.get(1),
                        model: r.get(2),
                        fields: VectorFields {
                            session: r.get(3),
                            kind: r.get(4),
                            time: r.get::<Option<i64>, _>(5).map(Timestamp),
                        },
                    })
                    .collect())
            })
            .await
    }

    async fn model(&self, namespace: &str) -> Result<Option<String>> {
        self.db
            .idempotent(|| async {
                sqlx::query_scalar(
                    "SELECT model FROM vector_namespaces WHERE scope = $1 AND namespace = $2",
                )
                .bind(&self.scope)
                .bind(namespace)
                .fetch_optional(&self.db.pool)
                .await
                .map_err(db)
            })
            .await
    }

    async fn clear(&self, namespace: &str) -> Result<()> {
        let mut tx = self.db.pool.begin().await.map_err(db)?;
        let key: Option<i64> = sqlx::query_scalar(
            "DELETE FROM vector_namespaces WHERE scope = $1 AND namespace = $2 RETURNING key",
        )
        .bind(&self.scope)
        .bind(namespace)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db)?;
        if let Some(key) = key {
            let drop = format!("DROP INDEX IF EXISTS {}", hnsw_index(key));
            sqlx::query(sqlx::AssertSqlSafe(drop))
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        }
        tx.commit().await.map_err(db)
    }
}

/// [`VectorIndexes`] on pgvector: each profile's index is a scope of the same tables.
#[derive(Debug, Clone)]
pub struct PostgresVectorIndexes {
    db: PostgresDatabase,
}

impl PostgresVectorIndexes {
    /// Per-profile indexes over a connected database.
    pub fn new(db: PostgresDatabase) -> Self {
        Self { db }
    }
}

#[async_trait]
impl VectorIndexes for PostgresVectorIndexes {
    async fn vector_index(&self, profile: &str) -> Result<Arc<dyn VectorIndex>> {
        validate_profile_name(profile)?;
        Ok(Arc::new(PostgresVectorIndex {
            db: self.db.clone(),
            scope: profile.to_owned(),
        }))
    }

    async fn delete_vector_index(&self, profile: &str) -> Result<()> {
        validate_profile_name(profile)?;
        let index = PostgresVectorIndex {
            db: self.db.clone(),
            scope: profile.to_owned(),
        };
        let names: Vec<String> =
            sqlx::query_scalar("SELECT namespace FROM vector_namespaces WHERE scope = $1")
                .bind(profile)
                .fetch_all(&self.db.pool)
                .await
                .map_err(db)?;
        for namespace in names {
            index.clear(&namespace).await?;
        }
        Ok(())
    }
}
