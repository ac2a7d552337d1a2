use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::{
    TextDocument, TextFields, TextHit, TextIndex, TextIndexCapabilities, TextIndexes, TextQuery,
};

use super::{Bm25Corpus, lock};

/// What the in-memory indexes do: English stemming, no stop words, phrases, BM25.
pub(crate) const IN_MEMORY_CAPABILITIES: TextIndexCapabilities = TextIndexCapabilities {
    stemming: true,
    stop_words: false,
    phrase: true,
    rarity_ranking: true,
    written_by_store: false,
    language: memory_core::TextLanguage::English,
};

/// Documents of one namespace: id to (insertion order, document).
type Documents = BTreeMap<String, (u64, TextDocument)>;

/// A [`TextIndex`] ranking with BM25 over stemmed tokens, written by its caller.
#[derive(Default)]
pub struct InMemoryTextIndex {
    namespaces: Mutex<HashMap<String, Documents>>,
    next: Mutex<u64>,
}

impl InMemoryTextIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }
}

/// Ranks `(id, text, fields)` documents in insertion order against a query (the filter is
/// applied before ranking).
pub(crate) fn rank_documents<'a>(
    documents: impl Iterator<Item = (&'a str, &'a str, &'a TextFields)>,
    query: &TextQuery,
) -> Vec<TextHit> {
    if query.is_empty() {
        return Vec::new();
    }
    let mut corpus = Bm25Corpus::new();
    for (id, text, fields) in documents {
        if query.filter.matches(fields) {
            corpus.add((id.to_owned(), text.to_owned(), fields.clone()), text);
        }
    }
    corpus
        .search(&query.text, query.mode, query.limit)
        .into_iter()
        .map(|((id, text, fields), score)| TextHit {
            id,
            text,
            fields,
            score,
        })
        .collect()
}

#[async_trait]
impl TextIndex for InMemoryTextIndex {
    fn backend_name(&self) -> &'static str {
        "in-memory"
    }

    fn capabilities(&self) -> TextIndexCapabilities {
        IN_MEMORY_CAPABILITIES
    }

    async fn upsert(&self, namespace: &str, documents: Vec<TextDocument>) -> Result<()> {
        let mut namespaces = lock(&self.namespaces);
        let docs = namespaces.entry(namespace.to_owned()).or_default();
        let mut next = lock(&self.next);
        for doc in documents {
            *next += 1;
            docs.insert(doc.id.clone(), (*next, doc));
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

    async fn search(&self, namespace: &str, query: &TextQuery) -> Result<Vec<TextHit>> {
        let namespaces = lock(&self.namespaces);
        let Some(docs) = namespaces.get(namespace) else {
            return Ok(Vec::new());
        };
        let mut ordered: Vec<&(u64, TextDocument)> = docs.values().collect();
        ordered.sort_by_key(|(order, _)| *order);
        Ok(rank_documents(
            ordered
                .into_iter()
                .map(|(_, d)| (d.id.as_str(), d.text.as_str(), &d.fields)),
            query,
        ))
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

/// [`TextIndexes`] with one [`InMemoryTextIndex`] per profile, written by the engine (the
/// shape of a search engine beside the records, like Tantivy beside Postgres).
#[derive(Default)]
pub struct InMemoryTextIndexes {
    profiles: Mutex<HashMap<String, Arc<InMemoryTextIndex>>>,
}

impl InMemoryTextIndexes {
    /// No profiles yet.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl TextIndexes for InMemoryTextIndexes {
    async fn text_index(&self, profile: &str) -> Result<Arc<dyn TextIndex>> {
        memory_core::validate_profile_name(profile)?;
        Ok(lock(&self.profiles)
            .entry(profile.to_owned())
            .or_default()
            .clone())
    }

    async fn delete_text_index(&self, profile: &str) -> Result<()> {
        lock(&self.profiles).remove(profile);
        Ok(())
    }
}
