//! A model-free reranker: the share of the query's words a document holds.

use std::collections::HashSet;
use std::sync::Mutex;

use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::Reranker;

use super::lock;
use memory_hashing::tokenize;

/// Scores a document by the share of the query's distinct words it holds (0 to 1), and
/// remembers every call's documents, so a test can check what a recall showed it.
#[derive(Debug, Default)]
pub struct WordOverlapReranker {
    calls: Mutex<Vec<Vec<String>>>,
}

impl WordOverlapReranker {
    /// A reranker that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// The documents of every call so far, in order.
    pub fn calls(&self) -> Vec<Vec<String>> {
        lock(&self.calls).clone()
    }
}

#[async_trait]
impl Reranker for WordOverlapReranker {
    fn model_id(&self) -> &str {
        "word-overlap"
    }

    async fn score(&self, query: &str, documents: &[String]) -> Result<Vec<f32>> {
        if documents.is_empty() {
            return Ok(Vec::new());
        }
        lock(&self.calls).push(documents.to_vec());
        let wanted: HashSet<String> = tokenize(query).into_iter().collect();
        Ok(documents
            .iter()
            .map(|document| {
                let held: HashSet<String> = tokenize(document).into_iter().collect();
                let shared = wanted.intersection(&held).count();
                shared as f32 / wanted.len().max(1) as f32
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn passes_the_reranker_contract() {
        let reranker = WordOverlapReranker::new();
        crate::contract::reranker::run_all(
            &reranker,
            "where does Maria live",
            "Maria moved and now lives in Lisbon; Maria likes it",
            "the weather was grey all week",
        )
        .await;
    }
}
