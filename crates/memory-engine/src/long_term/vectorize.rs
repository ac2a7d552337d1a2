//! Embedding memories and raw messages into the profile's vector index.
//!
//! A memory is embedded as its search questions prepended to its content, which bridges
//! declarative writes ("prefers dark mode") and interrogative reads ("what theme?"). Tasks are
//! never embedded (full text only); superseded and forgotten memories lose their vectors. Every
//! vector records its model, and a namespace never mixes two models: after a model change,
//! [`super::MemoryService::reembed`] rebuilds the index.

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

/// True if a memory gets a vector: not a task, current and not forgotten.
pub fn is_vectorized(memory: &MemoryRecord) -> bool {
    memory.kind != MemoryKind::Task && memory.superseded_by.is_none() && memory.forgotten.is_none()
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
    pub async fn upsert(
        &self,
        namespace: &str,
        items: Vec<(String, String, VectorFields)>,
    ) -> Result<usize> {
        if items.is_empty() {
            return Ok(0);
        }
        self.check_model(namespace).await?;
        let mut stored = 0;
        for chunk in items.chunks(self.batch.max(1)) {
            let texts: Vec<String> = chunk.iter().map(|(_, t, _)| t.clone()).collect();
            let vectors = self.meter.embed("embedding", self.embedder, &texts).await?;
            if vectors.len() != chunk.len() {
                return Err(MemoryError::backend(
                    "embedder",
                    format!("{} vectors for {} texts", vectors.len(), chunk.len()),
                ));
            }
            let records = chunk
                .iter()
                .zip(vectors)
                .map(|((id, _, fields), vector)| {
                    VectorRecord::new(id.clone(), vector, self.embedder.model_id())
                        .with_fields(fields.clone())
                })
                .collect();
            self.index.upsert(namespace, records).await?;
            stored += chunk.len();
        }
        Ok(stored)
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
