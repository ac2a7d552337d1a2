use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use async_trait::async_trait;
use memory_core::ports::{IndexDocument, IndexHit, SearchIndex};
use memory_core::{Result, SearchMode};

use super::{Bm25Corpus, lock};

/// Documents of one namespace: id to (insertion order, text).
type Documents = BTreeMap<String, (u64, String)>;

/// A [`SearchIndex`] ranking with BM25 over stemmed tokens.
#[derive(Default)]
pub struct InMemorySearchIndex {
    namespaces: Mutex<HashMap<String, Documents>>,
    next: Mutex<u64>,
}

impl InMemorySearchIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl SearchIndex for InMemorySearchIndex {
    async fn upsert(&self, namespace: &str, documents: Vec<IndexDocument>) -> Result<()> {
        let mut namespaces = lock(&self.namespaces);
        let docs = namespaces.entry(namespace.to_owned()).or_default();
        let mut next = lock(&self.next);
        for doc in documents {
            *next += 1;
            docs.insert(doc.id, (*next, doc.text));
        }
        Ok(())
    }

    async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64> {
        let mut namespaces = lock(&self.namespaces);
        let Some(docs) = namespaces.get_mut(namespace) else {
            return Ok(0);
        };
        Ok(ids.iter().filter(|id| docs.remove(*id).is_some()).count() as u64)
    }

    async fn search(
        &self,
        namespace: &str,
        query: &str,
        mode: SearchMode,
        limit: usize,
    ) -> Result<Vec<IndexHit>> {
        let namespaces = lock(&self.namespaces);
        let Some(docs) = namespaces.get(namespace) else {
            return Ok(Vec::new());
        };
        let mut ordered: Vec<(&String, &(u64, String))> = docs.iter().collect();
        ordered.sort_by_key(|(_, (order, _))| *order);
        let mut corpus = Bm25Corpus::new();
        for (id, (_, text)) in ordered {
            corpus.add((id.clone(), text.clone()), text);
        }
        Ok(corpus
            .search(query, mode, limit)
            .into_iter()
            .map(|((id, text), score)| IndexHit { id, text, score })
            .collect())
    }

    async fn count(&self, namespace: &str) -> Result<u64> {
        Ok(lock(&self.namespaces)
            .get(namespace)
            .map(|d| d.len() as u64)
            .unwrap_or(0))
    }

    async fn clear(&self, namespace: &str) -> Result<()> {
        lock(&self.namespaces).remove(namespace);
        Ok(())
    }
}
