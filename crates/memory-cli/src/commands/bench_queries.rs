//! The benchmark's query vectors, embedded before anything is timed, so a recall's time and
//! CPU are the engine's own (the targets exclude the query's embedding).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::Embedder;

/// An embedder that answers the benchmark's queries from vectors it embedded up front (as
/// queries) and passes every other text to the model.
pub(super) struct PreparedQueries {
    model: Arc<dyn Embedder>,
    vectors: HashMap<String, Vec<f32>>,
}

impl PreparedQueries {
    /// Embeds `queries` with `model` now, in batches of 64.
    pub(super) async fn embed(model: Arc<dyn Embedder>, queries: &[String]) -> Result<Self> {
        let mut vectors = HashMap::with_capacity(queries.len());
        for chunk in queries.chunks(64) {
            for (query, vector) in chunk.iter().zip(model.embed_queries(chunk).await?) {
                vectors.insert(query.clone(), vector);
            }
        }
        Ok(Self { model, vectors })
    }
}

#[async_trait]
impl Embedder for PreparedQueries {
    fn model_id(&self) -> &str {
        self.model.model_id()
    }

    fn dimensions(&self) -> usize {
        self.model.dimensions()
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.model.embed(texts).await
    }

    async fn embed_queries(&self, queries: &[String]) -> Result<Vec<Vec<f32>>> {
        let prepared: Option<Vec<Vec<f32>>> = queries
            .iter()
            .map(|t| self.vectors.get(t).cloned())
            .collect();
        match prepared {
            Some(vectors) => Ok(vectors),
            None => self.model.embed_queries(queries).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use memory_hashing::HashingEmbedder;

    use super::*;

    /// The hashing embedder, counting the texts it is asked for.
    struct Counting {
        inner: HashingEmbedder,
        texts: AtomicUsize,
    }

    #[async_trait]
    impl Embedder for Counting {
        fn model_id(&self) -> &str {
            self.inner.model_id()
        }
        fn dimensions(&self) -> usize {
            self.inner.dimensions()
        }
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
            self.texts.fetch_add(texts.len(), Ordering::SeqCst);
            self.inner.embed(texts).await
        }
    }

    /// Prepared queries come back as the model made them without asking it again; other
    /// texts still reach the model.
    #[tokio::test]
    async fn prepared_queries_answer_without_the_model() {
        let model = Arc::new(Counting {
            inner: HashingEmbedder::new(16),
            texts: AtomicUsize::new(0),
        });
        let queries = vec!["where is the flat".to_owned(), "a cello".to_owned()];
        let prepared = PreparedQueries::embed(model.clone(), &queries)
            .await
            .unwrap();
        assert_eq!(model.texts.load(Ordering::SeqCst), 2);
        let expected = model.inner.embed(&queries).await.unwrap();
        assert_eq!(prepared.embed_queries(&queries).await.unwrap(), expected);
        assert_eq!(
            model.texts.load(Ordering::SeqCst),
            2,
            "answered from the prepared vectors"
        );
        let other = vec!["a violin".to_owned()];
        assert_eq!(
            prepared.embed_queries(&other).await.unwrap(),
            model.inner.embed(&other).await.unwrap()
        );
        assert_eq!(
            model.texts.load(Ordering::SeqCst),
            3,
            "other queries reach the model"
        );
        assert_eq!(
            prepared.embed(&queries).await.unwrap(),
            expected,
            "documents are the model's own"
        );
        assert_eq!(model.texts.load(Ordering::SeqCst), 5);
        assert_eq!(prepared.model_id(), model.model_id());
    }
}
