//! [`VectorIndex`] in the profile's own SQLite file: vectors are stored as little-endian
//! `f32` blobs and searched exactly over an in-memory matrix loaded on first use.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use memory_core::ports::{VectorHit, VectorIndex, VectorRecord};
use memory_core::{MemoryError, Result};
use sqlx::Row;

use crate::database::SqliteDatabase;
use crate::error::db;
use crate::vector_matrix::VectorMatrix;

/// Exact cosine search over vectors kept in SQLite.
///
/// Keep one instance per database file (as [`crate::SqliteProfiles`] does): the in-memory
/// matrix of each namespace is loaded once and then kept in step with every write made
/// through this instance.
#[derive(Debug, Clone)]
pub struct SqliteVectorIndex {
    db: SqliteDatabase,
    cache: Arc<RwLock<HashMap<String, Arc<RwLock<Namespace>>>>>,
}

#[derive(Debug)]
struct Namespace {
    model: Option<(String, usize)>,
    matrix: VectorMatrix,
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

    /// The namespace's cached matrix, loading it from SQLite on first use.
    async fn namespace(&self, namespace: &str) -> Result<Arc<RwLock<Namespace>>> {
        if let Some(ns) = self.cache.read().map_err(|_| poisoned())?.get(namespace) {
            return Ok(Arc::clone(ns));
        }
        let model = sqlx::query("SELECT model, dims FROM vector_namespaces WHERE namespace = ?")
            .bind(namespace)
            .fetch_optional(&self.db.reader)
            .await
            .map_err(db)?
            .map(|r| (r.get::<String, _>(0), r.get::<i64, _>(1) as usize));
        let mut matrix = VectorMatrix::new(model.as_ref().map_or(0, |m| m.1));
        let rows = sqlx::query("SELECT id, vector FROM vectors WHERE namespace = ? ORDER BY id")
            .bind(namespace)
            .fetch_all(&self.db.reader)
            .await
            .map_err(db)?;
        for row in rows {
            matrix.upsert(row.get::<&str, _>(0), &decode(row.get::<&[u8], _>(1))?);
        }
        let loaded = Arc::new(RwLock::new(Namespace { model, matrix }));
        let mut cache = self.cache.write().map_err(|_| poisoned())?;
        Ok(Arc::clone(
            cache.entry(namespace.to_owned()).or_insert(loaded),
        ))
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
        let stored = sqlx::query("SELECT model, dims FROM vector_namespaces WHERE namespace = ?")
            .bind(namespace)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
            .map(|r| (r.get::<String, _>(0), r.get::<i64, _>(1) as usize));
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
        if stored.is_none() {
            sqlx::query("INSERT INTO vector_namespaces(namespace, model, dims) VALUES (?, ?, ?)")
                .bind(namespace)
                .bind(&model)
                .bind(dims as i64)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        }
        for record in &records {
            sqlx::query(
                "INSERT INTO vectors(namespace, id, vector) VALUES (?, ?, ?) \
                 ON CONFLICT(namespace, id) DO UPDATE SET vector = excluded.vector",
            )
            .bind(namespace)
            .bind(&record.id)
            .bind(encode(&record.vector))
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        }
        tx.commit().await.map_err(db)?;
        let mut cached = ns.write().map_err(|_| poisoned())?;
        if cached.model.as_ref() != Some(&(model.clone(), dims)) {
            // The cache was loaded before another writer created the namespace: reload it.
            drop(cached);
            self.cache
                .write()
                .map_err(|_| poisoned())?
                .remove(namespace);
            return Ok(());
        }
        for record in &records {
            cached.matrix.upsert(&record.id, &record.vector);
        }
        Ok(())
    }

    async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64> {
        let ns = self.namespace(namespace).await?;
        let mut tx = self.db.write().await?;
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
        tx.commit().await.map_err(db)?;
        let mut ns = ns.write().map_err(|_| poisoned())?;
        for id in ids {
            ns.matrix.remove(id);
        }
        Ok(removed)
    }

    async fn query(&self, namespace: &str, vector: &[f32], k: usize) -> Result<Vec<VectorHit>> {
        let ns = self.namespace(namespace).await?;
        let (query, name) = (vector.to_vec(), namespace.to_owned());
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
                .top_k(&query, k)
                .into_iter()
                .map(|(id, score)| VectorHit { id, score })
                .collect())
        })
        .await
        .map_err(crate::error::task_failed)?
    }

    async fn get(&self, namespace: &str, ids: &[String]) -> Result<Vec<VectorRecord>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = sqlx::query(
            "SELECT v.id, v.vector, n.model FROM json_each(?) j \
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
        sqlx::query("DELETE FROM vector_namespaces WHERE namespace = ?")
            .bind(namespace)
            .execute(&self.db.writer)
            .await
            .map_err(db)?;
        self.cache
            .write()
            .map_err(|_| poisoned())?
            .remove(namespace);
        Ok(())
    }
}
