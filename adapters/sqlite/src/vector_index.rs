//! [`VectorIndex`] in the profile's own SQLite file: vectors are stored as little-endian
//! `f32` blobs and searched exactly over an in-memory matrix loaded on first use.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use memory_core::Timestamp;
use memory_core::ports::{
    VectorFields, VectorFilter, VectorHit, VectorIndex, VectorQuery, VectorRecord,
};
use memory_core::{MemoryError, Result};
use sqlx::Row;

use crate::database::SqliteDatabase;
use crate::error::db;
use crate::vector_matrix::VectorMatrix;

/// Exact cosine search over vectors kept in SQLite.
///
/// Each namespace's matrix is cached in memory and kept in step with the writes made through
/// this instance. Every write also bumps the namespace's version in the file, and every read
/// compares it (one primary-key lookup): a write by another instance or another process
/// makes the cache reload, so no read is served from stale data.
#[derive(Debug, Clone)]
pub struct SqliteVectorIndex {
    db: SqliteDatabase,
    cache: Arc<RwLock<HashMap<String, Arc<RwLock<Namespace>>>>>,
}

#[derive(Debug)]
struct Namespace {
    /// The version in the file when this was loaded or last written (`None`: no namespace).
    version: Option<i64>,
    model: Option<(String, usize)>,
    matrix: VectorMatrix,
}

/// Bumps the write counter inside a write transaction; returns the new version.
async fn next_version(conn: &mut sqlx::SqliteConnection) -> Result<i64> {
    sqlx::query_scalar("UPDATE vector_epoch SET epoch = epoch + 1 WHERE id = 1 RETURNING epoch")
        .fetch_one(conn)
        .await
        .map_err(db)
}

/// The namespace's version in the file.
async fn stored_version(
    conn: impl sqlx::SqliteExecutor<'_>,
    namespace: &str,
) -> Result<Option<i64>> {
    sqlx::query_scalar("SELECT version FROM vector_namespaces WHERE namespace = ?")
        .bind(namespace)
        .fetch_optional(conn)
        .await
        .map_err(db)
}

/// The fields stored in columns `first..first + 3` (session, kind, time).
fn fields_from_row(row: &sqlx::sqlite::SqliteRow, first: usize) -> VectorFields {
    VectorFields {
        session: row.get(first),
        kind: row.get(first + 1),
        time: row.get::<Option<i64>, _>(first + 2).map(Timestamp),
    }
}

/// The SQL condition of `filter` on table alias `v`; its values are bound in this order:
/// session, kind, from, to (values are always bound, never spliced into the SQL).
fn filter_sql(filter: &VectorFilter) -> String {
    let mut sql = String::new();
    for (set, condition) in [
        (filter.session.is_some(), " AND v.session = ?"),
        (filter.kind.is_some(), " AND v.kind = ?"),
        (filter.from.is_some(), " AND v.time >= ?"),
        (filter.to.is_some(), " AND v.time < ?"),
    ] {
        if set {
            sql.push_str(condition);
        }
    }
    sql
}

fn poisoned() -> MemoryError {
    crate::error::invariant("vector cache lock poisoned")
}

fn encode(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode(bytes: &[u8]) -> Result<Vec<f32>> {
    if !bytes.len().is_multiple_of(4) {
        return Err(MemoryError::serialization(format!(
            "vector blob of {} bytes is not a whole number of f32s",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

impl SqliteVectorIndex {
    /// The index over an open database.
    pub fn new(db: SqliteDatabase) -> Self {
        Self {
            db,
            cache: Arc::new(RwLock::new(HashMap::new())),
        }
    }

    /// The namespace's matrix: the cached one while its version matches the file's, else
    /// loaded afresh (on first use, and after a write by another instance or process).
    async fn namespace(&self, namespace: &str) -> Result<Arc<RwLock<Namespace>>> {
        let current = stored_version(&self.db.reader, namespace).await?;
        let cached = self
            .cache
            .read()
            .map_err(|_| poisoned())?
            .get(namespace)
            .map(Arc::clone);
        if let Some(ns) = cached
            && ns.read().map_err(|_| poisoned())?.version == current
        {
            return Ok(ns);
        }
        // One read transaction: the version, the model and the rows agree.
        let mut tx = self.db.reader.begin().await.map_err(db)?;
        let head =
            sqlx::query("SELECT model, dims, version FROM vector_namespaces WHERE namespace = ?")
                .bind(namespace)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db)?;
        let version = head.as_ref().map(|r| r.get::<i64, _>(2));
        let model = head.map(|r| (r.get::<String, _>(0), r.get::<i64, _>(1) as usize));
        let mut matrix = VectorMatrix::new(model.as_ref().map_or(0, |m| m.1));
        let rows = sqlx::query(
            "SELECT id, vector, session, kind, time FROM vectors WHERE namespace = ? ORDER BY id",
        )
        .bind(namespace)
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?;
        for row in rows {
            matrix.upsert(
                row.get::<&str, _>(0),
                &decode(row.get::<&[u8], _>(1))?,
                fields_from_row(&row, 2),
            );
        }
        tx.commit().await.map_err(db)?;
        let loaded = Arc::new(RwLock::new(Namespace {
            version,
            model,
            matrix,
        }));
        self.cache
            .write()
            .map_err(|_| poisoned())?
            .insert(namespace.to_owned(), Arc::clone(&loaded));
        Ok(loaded)
    }

    /// After a write that moved the namespace from `before` to `after`: apply it to the
    /// cached matrix when the cache was exactly at `before`, else drop the cache (the next
    /// read reloads).
    fn after_write(
        &self,
        namespace: &str,
        ns: &Arc<RwLock<Namespace>>,
        before: Option<i64>,
        after: Option<i64>,
        apply: impl FnOnce(&mut Namespace),
    ) -> Result<()> {
        let mut cached = ns.write().map_err(|_| poisoned())?;
        if cached.version == before && cached.model.is_some() {
            apply(&mut cached);
            cached.version = after;
            return Ok(());
        }
        drop(cached);
        self.cache
            .write()
            .map_err(|_| poisoned())?
            .remove(namespace);
        Ok(())
    }
}

#[async_trait]
impl VectorIndex for SqliteVectorIndex {
    async fn upsert(&self, namespace: &str, records: Vec<VectorRecord>) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let ns = self.namespace(namespace).await?;
        // The namespace's model is read inside the write transaction (writes are serialised),
        // so two writers with different models can never both win.
        let mut tx = self.db.write().await?;
        let head =
            sqlx::query("SELECT model, dims, version FROM vector_namespaces WHERE namespace = ?")
                .bind(namespace)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db)?;
        let before = head.as_ref().map(|r| r.get::<i64, _>(2));
        let stored = head.map(|r| (r.get::<String, _>(0), r.get::<i64, _>(1) as usize));
        let (model, dims) = stored
            .clone()
            .unwrap_or_else(|| (records[0].model.clone(), records[0].vector.len()));
        if dims == 0 {
            return Err(MemoryError::invalid("an empty vector cannot be indexed"));
        }
        if let Some(bad) = records
            .iter()
            .find(|r| r.model != model || r.vector.len() != dims)
        {
            return Err(MemoryError::invalid(format!(
                "namespace {namespace:?} holds {dims}-dimension vectors of model {model:?}; \
                 got {} dimensions of model {:?} (clear the namespace to re-embed)",
                bad.vector.len(),
                bad.model
            )));
        }
        let version = next_version(&mut tx).await?;
        sqlx::query(
            "INSERT INTO vector_namespaces(namespace, model, dims, version) VALUES (?, ?, ?, ?) \
             ON CONFLICT(namespace) DO UPDATE SET version = excluded.version",
        )
        .bind(namespace)
        .bind(&model)
        .bind(dims as i64)
        .bind(version)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        for record in &records {
            sqlx::query(
                "INSERT INTO vectors(namespace, id, vector, session, kind, time) \
                 VALUES (?, ?, ?, ?, ?, ?) \
                 ON CONFLICT(namespace, id) DO UPDATE SET vector = excluded.vector, \
                 session = excluded.session, kind = excluded.kind, time = excluded.time",
            )
            .bind(namespace)
            .bind(&record.id)
            .bind(encode(&record.vector))
            .bind(&record.fields.session)
            .bind(&record.fields.kind)
            .bind(record.fields.time.map(Timestamp::millis))
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        }
        tx.commit().await.map_err(db)?;
        self.after_write(namespace, &ns, before, Some(version), |cached| {
            for record in &records {
                cached
                    .matrix
                    .upsert(&record.id, &record.vector, record.fields.clone());
            }
        })
    }

    async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64> {
        let ns = self.namespace(namespace).await?;
        let mut tx = self.db.write().await?;
        let Some(before) = stored_version(&mut *tx, namespace).await? else {
            return Ok(0);
        };
        let mut removed = 0;
        for id in ids {
            removed += sqlx::query("DELETE FROM vectors WHERE namespace = ? AND id = ?")
                .bind(namespace)
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(db)?
                .rows_affected();
        }
        let after = if removed > 0 {
            let version = next_version(&mut tx).await?;
            sqlx::query("UPDATE vector_namespaces SET version = ? WHERE namespace = ?")
                .bind(version)
                .bind(namespace)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
            version
        } else {
            before
        };
        tx.commit().await.map_err(db)?;
        self.after_write(namespace, &ns, Some(before), Some(after), |cached| {
            for id in ids {
                cached.matrix.remove(id);
            }
        })?;
        Ok(removed)
    }

    async fn search(&self, namespace: &str, query: &VectorQuery) -> Result<Vec<VectorHit>> {
        let ns = self.namespace(namespace).await?;
        let (k, filter) = (query.k, query.filter.clone());
        let (query, name) = (query.vector.clone(), namespace.to_owned());
        // The scan is CPU work: off the async workers, so concurrent channels scan in parallel.
        tokio::task::spawn_blocking(move || {
            let ns = ns.read().map_err(|_| poisoned())?;
            let Some((_, dims)) = &ns.model else {
                return Ok(Vec::new());
            };
            if *dims != query.len() {
                return Err(MemoryError::invalid(format!(
                    "query vector has {} dimensions; namespace {name:?} holds {dims}",
                    query.len()
                )));
            }
            Ok(ns
                .matrix
                .top_k(&query, k, &filter)
                .into_iter()
                .map(|(id, score)| VectorHit { id, score })
                .collect())
        })
        .await
        .map_err(crate::error::task_failed)?
    }

    async fn count(&self, namespace: &str, filter: &VectorFilter) -> Result<u64> {
        let sql = format!(
            "SELECT count(*) FROM vectors v WHERE v.namespace = ?{}",
            filter_sql(filter)
        );
        let mut query = sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql)).bind(namespace);
        for text in [&filter.session, &filter.kind].into_iter().flatten() {
            query = query.bind(text);
        }
        for time in [filter.from, filter.to].into_iter().flatten() {
            query = query.bind(time.millis());
        }
        let count = query.fetch_one(&self.db.reader).await.map_err(db)?;
        Ok(count.max(0) as u64)
    }

    async fn get(&self, namespace: &str, ids: &[String]) -> Result<Vec<VectorRecord>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = sqlx::query(
            "SELECT v.id, v.vector, n.model, v.session, v.kind, v.time FROM json_each(?) j \
             JOIN vectors v ON v.namespace = ? AND v.id = j.value \
             JOIN vector_namespaces n ON n.namespace = v.namespace ORDER BY j.key",
        )
        .bind(serde_json::to_string(ids)?)
        .bind(namespace)
        .fetch_all(&self.db.reader)
        .await
        .map_err(db)?;
        rows.iter()
            .map(|r| {
                Ok(VectorRecord {
                    id: r.get(0),
                    vector: decode(r.get::<&[u8], _>(1))?,
                    model: r.get(2),
                    fields: fields_from_row(r, 3),
                })
            })
            .collect()
    }

    async fn model(&self, namespace: &str) -> Result<Option<String>> {
        let ns = self.namespace(namespace).await?;
        let ns = ns.read().map_err(|_| poisoned())?;
        Ok(ns.model.as_ref().map(|(m, _)| m.clone()))
    }

    async fn clear(&self, namespace: &str) -> Result<()> {
        let mut tx = self.db.write().await?;
        next_version(&mut tx).await?;
        sqlx::query("DELETE FROM vector_namespaces WHERE namespace = ?")
            .bind(namespace)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        self.cache
            .write()
            .map_err(|_| poisoned())?
            .remove(namespace);
        Ok(())
    }
}
