use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use async_trait::async_trait;
use memory_core::ports::{
    VectorFields, VectorFilter, VectorHit, VectorIndex, VectorQuery, VectorRecord,
};
use memory_core::{MemoryError, Result};

use super::lock;

#[derive(Default)]
struct Namespace {
    model: Option<(String, usize)>,
    vectors: BTreeMap<String, (Vec<f32>, VectorFields)>,
}

/// A brute-force cosine [`VectorIndex`].
#[derive(Default)]
pub struct InMemoryVectorIndex {
    namespaces: Mutex<HashMap<String, Namespace>>,
}

impl InMemoryVectorIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

#[async_trait]
impl VectorIndex for InMemoryVectorIndex {
    async fn upsert(&self, namespace: &str, records: Vec<VectorRecord>) -> Result<()> {
        VectorRecord::check_finite(&records)?;
        let mut namespaces = lock(&self.namespaces);
        let ns = namespaces.entry(namespace.to_owned()).or_default();
        let mut model = ns.model.clone();
        for record in &records {
            match &model {
                Some((m, dims)) if *m != record.model || *dims != record.vector.len() => {
                    return Err(MemoryError::invalid(format!(
                        "namespace {namespace:?} holds {dims}-dimension vectors of model {m:?}; \
                         got {} dimensions of model {:?} (clear the namespace to re-embed)",
                        record.vector.len(),
                        record.model
                    )));
                }
                Some(_) => {}
                None => model = Some((record.model.clone(), record.vector.len())),
            }
        }
        ns.model = model;
        for record in records {
            ns.vectors.insert(record.id, (record.vector, record.fields));
        }
        Ok(())
    }

    async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64> {
        let mut namespaces = lock(&self.namespaces);
        let Some(ns) = namespaces.get_mut(namespace) else {
            return Ok(0);
        };
        Ok(ids
            .iter()
            .filter(|id| ns.vectors.remove(*id).is_some())
            .count() as u64)
    }

    async fn search(&self, namespace: &str, query: &VectorQuery) -> Result<Vec<VectorHit>> {
        let vector = query.vector.as_slice();
        let namespaces = lock(&self.namespaces);
        let Some(ns) = namespaces.get(namespace) else {
            return Ok(Vec::new());
        };
        if let Some((_, dims)) = &ns.model
            && *dims != vector.len()
        {
            return Err(MemoryError::invalid(format!(
                "query vector has {} dimensions; namespace {namespace:?} holds {dims}",
                vector.len()
            )));
        }
        let mut hits: Vec<VectorHit> = ns
            .vectors
            .iter()
            .filter(|(_, (_, fields))| query.filter.matches(fields))
            .map(|(id, (v, _))| VectorHit {
                id: id.clone(),
                score: cosine(vector, v),
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
        hits.truncate(query.k);
        Ok(hits)
    }

    async fn count(&self, namespace: &str, filter: &VectorFilter) -> Result<u64> {
        Ok(lock(&self.namespaces).get(namespace).map_or(0, |ns| {
            ns.vectors
                .values()
                .filter(|(_, fields)| filter.matches(fields))
                .count() as u64
        }))
    }

    async fn get(&self, namespace: &str, ids: &[String]) -> Result<Vec<VectorRecord>> {
        let namespaces = lock(&self.namespaces);
        let Some(ns) = namespaces.get(namespace) else {
            return Ok(Vec::new());
        };
        let model = ns
            .model
            .as_ref()
            .map(|(m, _)| m.clone())
            .unwrap_or_default();
        Ok(ids
            .iter()
            .filter_map(|id| {
                ns.vectors.get(id).map(|(v, fields)| {
                    VectorRecord::new(id.clone(), v.clone(), model.clone())
                        .with_fields(fields.clone())
                })
            })
            .collect())
    }

    async fn model(&self, namespace: &str) -> Result<Option<String>> {
        Ok(lock(&self.namespaces)
            .get(namespace)
            .and_then(|ns| ns.model.as_ref().map(|(m, _)| m.clone())))
    }

    async fn clear(&self, namespace: &str) -> Result<()> {
        lock(&self.namespaces).remove(namespace);
        Ok(())
    }
}
