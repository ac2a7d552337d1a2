//! Tokenizing, stemming and BM25 ranking for the in-memory adapters (the same model as
//! SQLite FTS5 with `porter unicode61`: lowercase alphanumeric runs, English stemming).

use std::collections::HashMap;

use memory_core::SearchMode;
use memory_hashing::tokenize;

/// A set of tokenized documents ranked with BM25 (k1 = 1.2, b = 0.75).
#[derive(Debug, Default)]
pub struct Bm25Corpus<K> {
    docs: Vec<(K, Vec<String>)>,
}

impl<K: Clone> Bm25Corpus<K> {
    /// An empty corpus.
    pub fn new() -> Self {
        Self { docs: Vec::new() }
    }

    /// Adds a document.
    pub fn add(&mut self, key: K, text: &str) {
        self.docs.push((key, tokenize(text)));
    }

    /// Keys of matching documents with scores, best first (ties keep insertion order).
    pub fn search(&self, query: &str, mode: SearchMode, limit: usize) -> Vec<(K, f64)> {
        let words = match mode {
            SearchMode::Phrase => memory_core::phrase_terms(query),
            SearchMode::AllWords | SearchMode::AnyWords => memory_core::search_terms(query),
        };
        let terms: Vec<Vec<String>> = words
            .into_iter()
            .map(tokenize)
            .filter(|t| !t.is_empty())
            .collect();
        if terms.is_empty() || limit == 0 || self.docs.is_empty() {
            return Vec::new();
        }
        let n = self.docs.len() as f64;
        let avg_len = self.docs.iter().map(|(_, t)| t.len()).sum::<usize>() as f64 / n;
        let all_terms: Vec<&String> = terms.iter().flatten().collect();
        let mut doc_freq: HashMap<&String, f64> = HashMap::new();
        for term in &all_terms {
            let df = self.docs.iter().filter(|(_, t)| t.contains(term)).count();
            doc_freq.insert(term, df as f64);
        }
        let mut hits: Vec<(usize, f64)> = Vec::new();
        for (index, (_, tokens)) in self.docs.iter().enumerate() {
            let matches = match mode {
                SearchMode::AllWords => terms.iter().all(|word| contains_sequence(tokens, word)),
                SearchMode::AnyWords => terms.iter().any(|word| contains_sequence(tokens, word)),
                SearchMode::Phrase => {
                    let phrase: Vec<String> = terms.iter().flatten().cloned().collect();
                    contains_sequence(tokens, &phrase)
                }
            };
            if !matches {
                continue;
            }
            let len = tokens.len() as f64;
            let mut score = 0.0;
            for term in &all_terms {
                let tf = tokens.iter().filter(|t| t == term).count() as f64;
                let df = doc_freq.get(term).copied().unwrap_or(0.0);
                let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len / avg_len.max(1.0)));
            }
            hits.push((index, score));
        }
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(limit);
        hits.into_iter()
            .map(|(index, score)| (self.docs[index].0.clone(), score))
            .collect()
    }
}

fn contains_sequence(tokens: &[String], sequence: &[String]) -> bool {
    if sequence.is_empty() {
        return false;
    }
    tokens.windows(sequence.len()).any(|w| w == sequence)
}
