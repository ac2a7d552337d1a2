//! The in-memory adapters pass the same contract suite as every real adapter.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use memory_core::ports::SessionRegistry;
use memory_core::{
    NewSession, Result, SessionId, SessionInfo, SessionPatch, SessionUsage, Timestamp,
};
use memory_testkit::contract;
use memory_testkit::in_memory::{
    InMemoryKeyValueStore, InMemoryMessageStore, InMemoryProfiles, InMemorySessionRegistry,
    InMemorySkillStore, InMemoryTextIndex,
};

#[tokio::test]
async fn in_memory_message_store_passes_the_contract() {
    contract::message_store::run_all(&InMemoryMessageStore::new(), None, 20_000).await;
}

#[tokio::test]
async fn in_memory_session_registry_passes_the_contract() {
    contract::session_registry::run_all(&InMemorySessionRegistry::new()).await;
}

/// The in-memory registry with the port's default `touch_and_name` (touch, read, update)
/// instead of its own: every adapter overrides it, so the default is checked here.
struct DefaultNaming(InMemorySessionRegistry);

#[async_trait::async_trait]
impl SessionRegistry for DefaultNaming {
    async fn create(
        &self,
        id: &SessionId,
        spec: &NewSession,
        now: Timestamp,
    ) -> Result<SessionInfo> {
        self.0.create(id, spec, now).await
    }
    async fn get(&self, id: &SessionId) -> Result<Option<SessionInfo>> {
        self.0.get(id).await
    }
    async fn list(&self, limit: usize, offset: usize) -> Result<Vec<SessionInfo>> {
        self.0.list(limit, offset).await
    }
    async fn update(
        &self,
        id: &SessionId,
        patch: &SessionPatch,
        now: Timestamp,
    ) -> Result<SessionInfo> {
        self.0.update(id, patch, now).await
    }
    async fn add_usage(
        &self,
        id: &SessionId,
        usage: SessionUsage,
        now: Timestamp,
    ) -> Result<SessionInfo> {
        self.0.add_usage(id, usage, now).await
    }
    async fn touch(&self, id: &SessionId, now: Timestamp) -> Result<()> {
        self.0.touch(id, now).await
    }
    async fn delete(&self, id: &SessionId) -> Result<bool> {
        self.0.delete(id).await
    }
    async fn restore(&self, info: &SessionInfo) -> Result<bool> {
        self.0.restore(info).await
    }
}

#[tokio::test]
async fn the_registry_ports_default_naming_passes_the_contract() {
    contract::session_registry::run_all(&DefaultNaming(InMemorySessionRegistry::new())).await;
}

#[tokio::test]
async fn in_memory_key_value_store_passes_the_contract() {
    contract::key_value_store::run_all(&InMemoryKeyValueStore::new()).await;
}

#[test]
fn in_memory_message_store_agrees_with_the_model() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    memory_testkit::model::check_against_model(&runtime, &InMemoryMessageStore::new(), None, 200);
}

#[tokio::test]
async fn in_memory_text_index_passes_the_contract() {
    contract::text_index::run_all(&InMemoryTextIndex::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_job_queue_passes_the_contract() {
    contract::job_queue::run_all(std::sync::Arc::new(
        memory_testkit::in_memory::InMemoryJobQueue::new(),
    ))
    .await;
}

#[tokio::test]
async fn in_memory_skill_store_passes_the_contract() {
    contract::skill_store::run_all(&InMemorySkillStore::new()).await;
}

#[tokio::test]
async fn in_memory_long_term_memory_passes_the_contract() {
    let profiles = InMemoryProfiles::new();
    contract::long_term_memory::run_all(&profiles, Some(&profiles)).await;
}

#[tokio::test]
async fn in_memory_vector_index_passes_the_contract() {
    contract::vector_index::run_all(&memory_testkit::in_memory::InMemoryVectorIndex::new()).await;
    contract::vector_index::profile_vectors_are_isolated(&InMemoryProfiles::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_vector_model_check_is_atomic() {
    let index: std::sync::Arc<dyn memory_core::ports::VectorIndex> =
        std::sync::Arc::new(memory_testkit::in_memory::InMemoryVectorIndex::new());
    contract::vector_index::the_model_check_is_atomic(index.clone(), index).await;
}
