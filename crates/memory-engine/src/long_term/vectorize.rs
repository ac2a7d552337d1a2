//! Embedding memories and raw messages into the profile's vector index.
//!
//! A memory is embedded as its search questions prepended to its content, which bridges
//! declarative writes ("prefers dark mode") and interrogative reads ("what theme?"). Tasks are
//! never embedded (full text only). Forgotten memories and older versions of a key lose their
//! vectors; a memory consolidation merged into another keeps its own, which leads recall to
//! the survivor ([`MemoryRecord::is_searchable`]). Every vector records its model, and a
//! namespace never mixes two models: after a model change, [`super::MemoryService::reembed`]
//! rebuilds the index.

use memory_core::ports::{
    Embedder, MemoryKind, MemoryRecord, RawMessage, VectorFields, VectorIndex, VectorRecord,
};
use memory_core::{MemoryError, Result};

use super::accounting::Meter;

/// Namespace of memory vectors.
pub const MEMORY_NAMESPACE: &str = "memories";
/// Namespace of raw-message vectors.
pub const RAW_NAMESPACE: &str = "raw";

/// The text embedded for a memory: questions first, then the content.
pub fn memory_embedding_text(memory: &MemoryRecord) -> String {
    let mut text = memory.questions.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&memory.content);
    text
}

/// True if a memory gets a vector: not a task, and searchable (current, or merged into a
/// survivor; never forgotten).
pub fn is_vectorized(memory: &MemoryRecord) -> bool {
    memory.kind != MemoryKind::Task && memory.is_searchable()
}

/// The filterable fields of a memory's vector: its kind, session and recording time (as its
/// text-index document has).
pub fn memory_vector_fields(memory: &MemoryRecord) -> VectorFields {
    VectorFields {
        session: memory.session_id.clone(),
        kind: Some(memory.kind.as_str().to_owned()),
        time: Some(memory.recorded_at),
    }
}

/// The filterable fields of a raw message's vector: its session and time.
pub fn raw_vector_fields(message: &RawMessage) -> VectorFields {
    VectorFields {
        session: Some(message.session_id.clone()),
        kind: None,
        time: Some(message.created_at),
    }
}

/// The text embedded for a raw message: the message, preceded by the message before it in
/// the same conversation when known (a reply such as "yes, in May" only means something
/// next to its question).
pub fn raw_embedding_text(previous: Option<&RawMessage>, message: &RawMessage) -> String {
    match previous {
        Some(p) => format!("{}\n{}", p.content, message.content),
        None => message.content.clone(),
    }
}

/// Embeds and upserts in batches, checking the model first.
pub(crate) struct Vectorizer<'a> {
    pub embedder: &'a dyn Embedder,
    pub index: &'a dyn VectorIndex,
    pub meter: &'a Meter,
    pub batch: usize,
}

impl Vectorizer<'_> {
    /// Fails with [`MemoryError::Conflict`] when `namespace` holds another model's vectors.
    pub async fn check_model(&self, namespace: &str) -> Result<()> {
        match self.index.model(namespace).await? {
            Some(model) if model != self.embedder.model_id() => Err(MemoryError::Conflict {
                message: format!(
                    "the {namespace:?} vectors were made by {model:?} but the embedder is {:?}; \
                     run `memory profile reembed` to rebuild them",
                    self.embedder.model_id()
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Embeds `(id, text, fields)` items into `namespace`; returns how many were stored.
    ///
    /// Batches flow through two stages that overlap: while one batch's vectors are written to
    /// the index, the next batch is being embedded (the embedder runs on threads of its own),
    /// so a long ingest pays for the slower stage, not for both.
    pub async fn upsert(
        &self,
        namespace: &str,
        items: Vec<(String, String, VectorFields)>,
    ) -> Result<usize> {
        if items.is_empty() {
            return Ok(0);
        }
        self.check_model(namespace).await?;
        let mut chunks = items.chunks(self.batch.max(1));
        let mut stored = 0;
        let Some(first) = chunks.next() else {
            return Ok(0);
        };
        let mut embedded = self.embed(first).await?;
        for next in chunks {
            let (written, following) =
                futures::future::try_join(self.store(namespace, embedded), self.embed(next))
                    .await?;
            stored += written;
            embedded = following;
        }
        stored += self.store(namespace, embedded).await?;
        Ok(stored)
    }

    /// One batch's vector records, embedded.
    async fn embed(&self, chunk: &[(String, String, VectorFields)]) -> Result<Vec<VectorRecord>> {
        let texts: Vec<String> = chunk.iter().map(|(_, t, _)| t.clone()).collect();
        let vectors = self.meter.embed("embedding", self.embedder, &texts).await?;
        if vectors.len() != chunk.len() {
            return Err(MemoryError::backend(
                "embedder",
                format!("{} vectors for {} texts", vectors.len(), chunk.len()),
            ));
        }
        Ok(chunk
            .iter()
            .zip(vectors)
            .map(|((id, _, fields), vector)| {
                VectorRecord::new(id.clone(), vector, self.embedder.model_id())
                    .with_fields(fields.clone())
            })
            .collect())
    }

    /// Writes one embedded batch; returns how many records it held.
    async fn store(&self, namespace: &str, records: Vec<VectorRecord>) -> Result<usize> {
        let count = records.len();
        self.index.upsert(namespace, records).await?;
        Ok(count)
    }

    /// Embeds the memories that get vectors.
    pub async fn memories(&self, memories: &[MemoryRecord]) -> Result<usize> {
        let items = memories
            .iter()
            .filter(|m| is_vectorized(m))
            .map(|m| {
                (
                    m.id.clone(),
                    memory_embedding_text(m),
                    memory_vector_fields(m),
                )
            })
            .collect();
        self.upsert(MEMORY_NAMESPACE, items).await
    }

    /// Embeds raw messages, each with its predecessor as context.
    pub async fn raw(&self, messages: &[(Option<RawMessage>, RawMessage)]) -> Result<usize> {
        let items = messages
            .iter()
            .map(|(prev, m)| {
                (
                    m.id.clone(),
                    raw_embedding_text(prev.as_ref(), m),
                    raw_vector_fields(m),
                )
            })
            .collect();
        self.upsert(RAW_NAMESPACE, items).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use async_trait::async_trait;
    use memory_core::ports::{VectorFilter, VectorHit, VectorQuery};
    use memory_testkit::in_memory::InMemoryVectorIndex;

    use super::*;

    type Log = Arc<Mutex<Vec<String>>>;

    /// Embeds slowly, logging when each batch (named by its first text) starts and ends.
    struct SlowEmbedder(Log);

    #[async_trait]
    impl Embedder for SlowEmbedder {
        fn model_id(&self) -> &str {
            "slow"
        }
        fn dimensions(&self) -> usize {
            2
        }
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
            self.0.lock().unwrap().push(format!("embed {}", texts[0]));
            tokio::time::sleep(Duration::from_millis(20)).await;
            self.0
                .lock()
                .unwrap()
                .push(format!("embedded {}", texts[0]));
            Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect())
        }
    }

    /// An in-memory index whose writes are slow and logged (named by their first id).
    struct SlowIndex(Log, InMemoryVectorIndex);

    #[async_trait]
    impl VectorIndex for SlowIndex {
        async fn upsert(&self, namespace: &str, records: Vec<VectorRecord>) -> Result<()> {
            let first = records[0].id.clone();
            self.0.lock().unwrap().push(format!("store {first}"));
            tokio::time::sleep(Duration::from_millis(20)).await;
            self.1.upsert(namespace, records).await?;
            self.0.lock().unwrap().push(format!("stored {first}"));
            Ok(())
        }
        async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64> {
            self.1.delete(namespace, ids).await
        }
        async fn search(&self, namespace: &str, query: &VectorQuery) -> Result<Vec<VectorHit>> {
            self.1.search(namespace, query).await
        }
        async fn count(&self, namespace: &str, filter: &VectorFilter) -> Result<u64> {
            self.1.count(namespace, filter).await
        }
        async fn get(&self, namespace: &str, ids: &[String]) -> Result<Vec<VectorRecord>> {
            self.1.get(namespace, ids).await
        }
        async fn model(&self, namespace: &str) -> Result<Option<String>> {
            self.1.model(namespace).await
        }
        async fn clear(&self, namespace: &str) -> Result<()> {
            self.1.clear(namespace).await
        }
    }

    #[tokio::test]
    async fn the_next_batch_is_embedded_while_the_last_one_is_stored() {
        let log: Log = Log::default();
        let embedder = SlowEmbedder(Arc::clone(&log));
        let index = SlowIndex(Arc::clone(&log), InMemoryVectorIndex::new());
        let meter = Meter::new(None);
        let vectorizer = Vectorizer {
            embedder: &embedder,
            index: &index,
            meter: &meter,
            batch: 2,
        };
        let items = (0..5)
            .map(|i| (format!("id{i}"), format!("t{i}"), VectorFields::default()))
            .collect();
        assert_eq!(vectorizer.upsert("raw", items).await.unwrap(), 5);
        assert_eq!(
            index.count("raw", &VectorFilter::default()).await.unwrap(),
            5
        );
        let log = log.lock().unwrap().clone();
        let at = |event: &str| log.iter().position(|e| e == event).unwrap();
        // Batches: [t0 t1] [t2 t3] [t4]. Each later batch's embedding starts before the
        // batch before it is stored, and every batch is stored after it was embedded.
        assert!(at("embed t2") < at("stored id0"), "{log:?}");
        assert!(at("embed t4") < at("stored id2"), "{log:?}");
        for (text, id) in [("t0", "id0"), ("t2", "id2"), ("t4", "id4")] {
            assert!(
                at(&format!("embedded {text}")) < at(&format!("store {id}")),
                "{log:?}"
            );
        }
    }
}
