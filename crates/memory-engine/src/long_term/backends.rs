//! Where long-term memory lives: each role served by whatever backend the deployment chose.

use std::sync::Arc;

use memory_core::ports::{
    JobFilter, JobQueue, MemoryProfiles, TextIndex, TextIndexes, VectorIndex, VectorIndexes,
};
use memory_core::{MemoryError, Result};

/// The ports long-term memory runs on. Records, text indexes, vectors and jobs may come from
/// different adapters (records on Postgres, vectors on LanceDB, ...); the engine reaches each
/// profile's indexes through the factories, never through another adapter.
#[derive(Clone)]
pub struct LongTermBackends {
    /// Each profile's raw messages and memories.
    pub records: Arc<dyn MemoryProfiles>,
    /// Each profile's full-text index.
    pub text: Arc<dyn TextIndexes>,
    /// Each profile's vectors.
    pub vectors: Arc<dyn VectorIndexes>,
    /// Ingest jobs of every profile, shared by every worker.
    pub jobs: Arc<dyn JobQueue>,
}

impl LongTermBackends {
    /// Records, text and vectors from one backend (SQLite's `SqliteProfiles`, the in-memory
    /// profiles), jobs from a queue.
    pub fn new<P>(profiles: Arc<P>, jobs: Arc<dyn JobQueue>) -> Self
    where
        P: MemoryProfiles + TextIndexes + VectorIndexes + 'static,
    {
        Self {
            records: profiles.clone(),
            text: profiles.clone(),
            vectors: profiles,
            jobs,
        }
    }

    /// The profile's text index. Long-term memory needs an index its store writes (as SQLite
    /// and the in-memory profiles provide): an index the engine would have to keep in step
    /// is refused until that sync exists, rather than silently missing documents.
    pub(super) async fn text_index(&self, profile: &str) -> Result<Arc<dyn TextIndex>> {
        let index = self.text.text_index(profile).await?;
        if !index.capabilities().written_by_store {
            return Err(MemoryError::NotSupported {
                operation: "long-term memory over a text index its store does not write",
                backend: index.backend_name(),
            });
        }
        Ok(index)
    }

    /// The profile's vector index.
    pub(super) async fn vector_index(&self, profile: &str) -> Result<Arc<dyn VectorIndex>> {
        self.vectors.vector_index(profile).await
    }

    /// Deletes every trace of a profile: its jobs, vectors, text index and records. True if
    /// the profile existed.
    pub async fn delete_profile(&self, profile: &str) -> Result<bool> {
        memory_core::validate_profile_name(profile)?;
        self.jobs.delete_profile_jobs(profile).await?;
        self.vectors.delete_vector_index(profile).await?;
        self.text.delete_text_index(profile).await?;
        self.records.delete(profile).await
    }

    /// A filter for one profile's ingest jobs.
    pub(super) fn ingest_jobs(profile: &str) -> JobFilter {
        JobFilter {
            profile: Some(profile.to_owned()),
            kind: Some(super::jobs::INGEST_KIND.to_owned()),
            state: None,
        }
    }
}
