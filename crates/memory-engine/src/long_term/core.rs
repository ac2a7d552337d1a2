//! What every part of long-term memory runs on: the backends, the clock, the embedder and reranker, the
//! stage models, the tunables and this worker's name. The [`super::MemoryService`] facade
//! holds one; ingest, memories, jobs, recall and transfer are written against it, never
//! against the facade, so the flow is one-way: facade → operations → core.

use std::sync::Arc;

use memory_core::Result;
use memory_core::ports::{Clock, Embedder, MemoryProfiles, Reranker};

use super::accounting::Meter;
use super::backends::LongTermBackends;
use super::config::{LongTermConfig, StageModels};

/// The shared state of long-term memory (cheap to clone: `Arc`s and small values).
#[derive(Clone)]
pub(super) struct Core {
    pub(super) profiles: Arc<dyn MemoryProfiles>,
    pub(super) backends: LongTermBackends,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) embedder: Option<Arc<dyn Embedder>>,
    pub(super) reranker: Option<Arc<dyn Reranker>>,
    pub(super) models: StageModels,
    pub(super) config: LongTermConfig,
    /// This service's name as a job worker (unique per instance).
    pub(super) worker: String,
    /// Set by [`MemoryService::stop_jobs`]: claim no job, and give back the one in hand at
    /// its next stage boundary.
    pub(super) stopping: Arc<std::sync::atomic::AtomicBool>,
}

impl Core {
    /// A core over `backends` with no LLM and no embedder.
    pub(super) fn new(backends: LongTermBackends, clock: Arc<dyn Clock>) -> Self {
        Self {
            profiles: Arc::clone(&backends.records),
            backends,
            clock,
            embedder: None,
            reranker: None,
            models: StageModels::default(),
            config: LongTermConfig::default(),
            worker: format!("worker-{}-{}", std::process::id(), uuid::Uuid::new_v4()),
            stopping: Arc::default(),
        }
    }

    /// A meter whose LLM calls carry the profile's affinity header.
    pub(super) fn meter(&self, profile: &str) -> Meter {
        Meter::new(
            self.config
                .affinity_header
                .as_ref()
                .map(|h| (h.clone(), profile.to_owned())),
        )
    }

    pub(super) async fn vectorizer_parts(
        &self,
        profile: &str,
    ) -> Result<Option<(Arc<dyn Embedder>, Arc<dyn memory_core::ports::VectorIndex>)>> {
        match &self.embedder {
            Some(e) => Ok(Some((
                Arc::clone(e),
                self.backends.vector_index(profile).await?,
            ))),
            None => Ok(None),
        }
    }
}
