//! The benchmark's query vectors, embedded before anything is timed, so a recall's time and
//! CPU are the engine's own (the targets exclude the query's embedding).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use memory_core::Result;
use memory_core::ports::Embedder;

/// An embedder that answers the benchmark's queries from vectors it embedded up front and
/// passes every other text to the model.
pub(super) struct PreparedQueries {
    model: Arc<dyn Embedder>,
    vectors: HashMap<String, Vec<f32>>,
}

impl PreparedQueries {
    /// Embeds `queries` with `model` now, in batches of 64.
    pub(super) async fn embed(model: Arc<dyn Embedder>, queries: &[String]) -> Result<Self> {
        let mut vectors = HashMap::with_capacity(queries.len());
        for chunk in queries.chunks(64) {
            for (query, vector) in chunk.iter().zip(model.embed(chunk).await?) {
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
        let prepared: Option<Vec<Vec<f32>>> =
            texts.iter().map(|t| self.vectors.get(t).cloned()).collect();
        match prepared {
            Some(vectors) => Ok(vectors),
            None => self.model.embed(texts).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use memory_hashing::HashingEmbedder;

    use super::*;

    /// Prepared queries come back as the model made them; other texts still reach the model.
    #[tokio::test]
    async fn prepared_queries_answer_as_the_model_would() {
        let model: Arc<dyn Embedder> = Arc::new(HashingEmbedder::new(16));
        let queries = vec!["where is the flat".to_owned()];
        let prepared = PreparedQueries::embed(Arc::clone(&model), &queries)
            .await
            .unwrap();
        let texts = vec!["where is the flat".to_owned(), "a cello".to_owned()];
        assert_eq!(
            prepared.embed(&texts).await.unwrap(),
            model.embed(&texts).await.unwrap()
        );
        assert_eq!(prepared.embed(&queries[..1]).await.unwrap().len(), 1);
        assert_eq!(prepared.model_id(), model.model_id());
    }
}
