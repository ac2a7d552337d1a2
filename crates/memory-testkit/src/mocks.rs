//! mockall mocks of every port, for interaction tests of engine logic.
//!
//! ```
//! use memory_core::ports::MessageStore;
//! use memory_testkit::mocks::MockMessageStore;
//! let mut store = MockMessageStore::new();
//! store.expect_backend_name().return_const("mock");
//! assert_eq!(store.backend_name(), "mock");
//! ```

use std::sync::Arc;

use async_trait::async_trait;
use memory_core::ports::{
    ChatRequest, ChatResponse, Clock, ContextProvider, Embedder, ForgetRequest, JobFilter,
    JobLease, JobPage, JobQueue, JobRecord, KeyValueStore, LanguageModel, LongTermMemoryStore,
    MemoryFilter, MemoryKind, MemoryPage, MemoryProfiles, MemoryRecord, MemoryRecordStore,
    MessageStore, NewJob, RawMessage, RawMessageInsert, RawMessageStore, Reranker,
    SearchableContextProvider, SessionRegistry, SkillProvider, SkillStore, SkillSummary,
    StoreCapabilities, TextDocument, TextHit, TextIndex, TextIndexCapabilities, TextIndexes,
    TextQuery, TokenCounter, VectorFilter, VectorHit, VectorIndex, VectorIndexes, VectorQuery,
    VectorRecord, WritableContextProvider,
};
use memory_core::{
    AppendOutcome, CompactionRecord, MessagePage, NewCompaction, NewMessage, NewSession, PathEntry,
    PathTail, Result, SessionId, SessionInfo, SessionPatch, SessionUsage, Timestamp, UiMessage,
};
use mockall::mock;

mock! {
    /// Mock of [`MessageStore`].
    pub MessageStore {}
    #[async_trait]
    impl MessageStore for MessageStore {
        fn backend_name(&self) -> &'static str;
        fn capabilities(&self) -> StoreCapabilities;
        async fn append(&self, session: &SessionId, messages: Vec<NewMessage>) -> Result<Vec<AppendOutcome>>;
        async fn update(&self, session: &SessionId, message: UiMessage) -> Result<()>;
        async fn delete(&self, session: &SessionId, ids: &[String]) -> Result<u64>;
        async fn clear(&self, session: &SessionId) -> Result<()>;
        async fn get(&self, session: &SessionId, id: &str) -> Result<Option<UiMessage>>;
        async fn get_many(&self, session: &SessionId, ids: &[String]) -> Result<Vec<UiMessage>>;
        async fn latest_leaf(&self, session: &SessionId) -> Result<Option<String>>;
        async fn children(&self, session: &SessionId, id: &str) -> Result<Vec<UiMessage>>;
        async fn path(&self, session: &SessionId, leaf: Option<String>) -> Result<Vec<PathEntry>>;
        async fn latest_leaf_under(&self, session: &SessionId, id: &str) -> Result<String>;
        async fn path_tail(&self, session: &SessionId, leaf: Option<String>, limit: usize) -> Result<PathTail>;
        async fn forks(&self, session: &SessionId, ids: &[String]) -> Result<std::collections::BTreeMap<String, Vec<String>>>;
        async fn history(&self, session: &SessionId, leaf: Option<String>) -> Result<Vec<UiMessage>>;
        async fn messages(&self, session: &SessionId, cursor: Option<String>, limit: usize) -> Result<MessagePage>;
        async fn add_compaction(&self, session: &SessionId, compaction: NewCompaction) -> Result<CompactionRecord>;
        async fn compactions(&self, session: &SessionId) -> Result<Vec<CompactionRecord>>;
    }
}

mock! {
    /// Mock of [`SessionRegistry`].
    pub SessionRegistry {}
    #[async_trait]
    impl SessionRegistry for SessionRegistry {
        async fn create(&self, id: &SessionId, spec: &NewSession, now: Timestamp) -> Result<SessionInfo>;
        async fn get(&self, id: &SessionId) -> Result<Option<SessionInfo>>;
        async fn list(&self, limit: usize, offset: usize) -> Result<Vec<SessionInfo>>;
        async fn update(&self, id: &SessionId, patch: &SessionPatch, now: Timestamp) -> Result<SessionInfo>;
        async fn add_usage(&self, id: &SessionId, usage: SessionUsage, now: Timestamp) -> Result<SessionInfo>;
        async fn touch(&self, id: &SessionId, now: Timestamp) -> Result<()>;
        async fn touch_and_name(&self, id: &SessionId, now: Timestamp, name: Option<String>) -> Result<()>;
        async fn delete(&self, id: &SessionId) -> Result<bool>;
        async fn restore(&self, info: &SessionInfo) -> Result<bool>;
    }
}

mock! {
    /// Mock of [`KeyValueStore`].
    pub KeyValueStore {}
    #[async_trait]
    impl KeyValueStore for KeyValueStore {
        async fn get(&self, key: &str) -> Result<Option<String>>;
        async fn set(&self, key: &str, value: &str) -> Result<()>;
        async fn delete(&self, key: &str) -> Result<bool>;
        async fn keys(&self, prefix: &str) -> Result<Vec<String>>;
        async fn delete_prefix(&self, prefix: &str) -> Result<u64>;
        async fn compare_and_set(
            &self,
            key: &str,
            expected: Option<String>,
            value: &str,
        ) -> Result<bool>;
    }
}

mock! {
    /// Mock of a read-only [`ContextProvider`].
    pub ContextProvider {}
    #[async_trait]
    impl ContextProvider for ContextProvider {
        async fn get(&self) -> Result<Option<String>>;
    }
}

mock! {
    /// Mock of a [`WritableContextProvider`].
    pub WritableContextProvider {}
    #[async_trait]
    impl ContextProvider for WritableContextProvider {
        async fn get(&self) -> Result<Option<String>>;
    }
    #[async_trait]
    impl WritableContextProvider for WritableContextProvider {
        async fn set(&self, content: &str) -> Result<()>;
    }
}

mock! {
    /// Mock of a [`SearchableContextProvider`].
    pub SearchableContextProvider {}
    #[async_trait]
    impl ContextProvider for SearchableContextProvider {
        async fn get(&self) -> Result<Option<String>>;
    }
    #[async_trait]
    impl SearchableContextProvider for SearchableContextProvider {
        async fn search(&self, query: &str) -> Result<Option<String>>;
        async fn set_entry(&self, key: &str, content: &str) -> Result<()>;
    }
}

mock! {
    /// Mock of a [`SkillProvider`].
    pub SkillProvider {}
    #[async_trait]
    impl ContextProvider for SkillProvider {
        async fn get(&self) -> Result<Option<String>>;
    }
    #[async_trait]
    impl SkillProvider for SkillProvider {
        async fn load(&self, key: &str) -> Result<Option<String>>;
        async fn set_skill(&self, key: &str, content: &str, description: Option<String>) -> Result<()>;
    }
}

mock! {
    /// Mock of [`TextIndex`].
    pub TextIndex {}
    #[async_trait]
    impl TextIndex for TextIndex {
        fn backend_name(&self) -> &'static str;
        fn capabilities(&self) -> TextIndexCapabilities;
        async fn upsert(&self, namespace: &str, documents: Vec<TextDocument>) -> Result<()>;
        async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64>;
        async fn search(&self, namespace: &str, query: &TextQuery) -> Result<Vec<TextHit>>;
        async fn count(&self, namespace: &str) -> Result<u64>;
        async fn clear(&self, namespace: &str) -> Result<()>;
    }
}

mock! {
    /// Mock of [`VectorIndex`].
    pub VectorIndex {}
    #[async_trait]
    impl VectorIndex for VectorIndex {
        async fn upsert(&self, namespace: &str, records: Vec<VectorRecord>) -> Result<()>;
        async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64>;
        async fn search(&self, namespace: &str, query: &VectorQuery) -> Result<Vec<VectorHit>>;
        async fn count(&self, namespace: &str, filter: &VectorFilter) -> Result<u64>;
        async fn get(&self, namespace: &str, ids: &[String]) -> Result<Vec<VectorRecord>>;
        async fn model(&self, namespace: &str) -> Result<Option<String>>;
        async fn clear(&self, namespace: &str) -> Result<()>;
    }
}

mock! {
    /// Mock of [`SkillStore`].
    pub SkillStore {}
    #[async_trait]
    impl SkillStore for SkillStore {
        async fn list(&self) -> Result<Vec<SkillSummary>>;
        async fn get(&self, key: &str) -> Result<Option<String>>;
        async fn put(&self, key: &str, content: &str, description: Option<String>) -> Result<()>;
        async fn delete(&self, key: &str) -> Result<bool>;
    }
}

mock! {
    /// Mock of one profile's records ([`RawMessageStore`] + [`MemoryRecordStore`], so a
    /// [`LongTermMemoryStore`]).
    pub LongTermMemoryStore {}
    #[async_trait]
    impl RawMessageStore for LongTermMemoryStore {
        async fn insert_raw(&self, messages: Vec<RawMessage>) -> Result<RawMessageInsert>;
        async fn raw_page(&self, cursor: Option<String>, limit: usize) -> Result<(Vec<RawMessage>, Option<String>)>;
        async fn raw_by_ids(&self, ids: &[String]) -> Result<Vec<RawMessage>>;
        async fn raw_neighbors(&self, ids: &[String], radius: usize) -> Result<Vec<RawMessage>>;
        async fn raw_neighbors_each(&self, ids: &[String], radius: usize) -> Result<Vec<Vec<RawMessage>>>;
        async fn purge_raw(&self, ids: &[String]) -> Result<u64>;
        async fn raw_matching(&self, filter: &memory_core::MetadataFilter, cursor: Option<String>, limit: usize) -> Result<(Vec<String>, Option<String>)>;
    }
    #[async_trait]
    impl MemoryRecordStore for LongTermMemoryStore {
        async fn insert_memory(&self, memory: MemoryRecord) -> Result<()>;
        async fn get_memory(&self, id: &str) -> Result<Option<MemoryRecord>>;
        async fn current_by_key(&self, kind: MemoryKind, key: &str) -> Result<Option<MemoryRecord>>;
        async fn supersede(&self, old_id: &str, new_id: &str) -> Result<()>;
        async fn versions(&self, kind: MemoryKind, key: &str) -> Result<Vec<MemoryRecord>>;
        async fn list(&self, filter: &MemoryFilter, cursor: Option<String>, limit: usize) -> Result<MemoryPage>;
        async fn forget(&self, id: &str, request: ForgetRequest) -> Result<()>;
        async fn purge(&self, id: &str) -> Result<bool>;
        async fn expired(&self, at: Timestamp, limit: usize) -> Result<Vec<String>>;
        async fn merge(&self, merge: &memory_core::ports::MemoryMerge) -> Result<()>;
        async fn merged_into(&self, id: &str) -> Result<Vec<MemoryRecord>>;
        async fn mark_recalled(&self, ids: &[String], at: Timestamp) -> Result<()>;
    }
}

mock! {
    /// Mock of [`MemoryProfiles`].
    pub MemoryProfiles {}
    #[async_trait]
    impl MemoryProfiles for MemoryProfiles {
        async fn open(&self, name: &str) -> Result<Arc<dyn LongTermMemoryStore>>;
        async fn list(&self) -> Result<Vec<String>>;
        async fn delete(&self, name: &str) -> Result<bool>;
        async fn exists(&self, name: &str) -> Result<bool>;
    }
}

mock! {
    /// Mock of [`TextIndexes`].
    pub TextIndexes {}
    #[async_trait]
    impl TextIndexes for TextIndexes {
        async fn text_index(&self, profile: &str) -> Result<Arc<dyn TextIndex>>;
        async fn delete_text_index(&self, profile: &str) -> Result<()>;
    }
}

mock! {
    /// Mock of [`VectorIndexes`].
    pub VectorIndexes {}
    #[async_trait]
    impl VectorIndexes for VectorIndexes {
        async fn vector_index(&self, profile: &str) -> Result<Arc<dyn VectorIndex>>;
        async fn delete_vector_index(&self, profile: &str) -> Result<()>;
    }
}

mock! {
    /// Mock of [`JobQueue`].
    pub JobQueue {}
    #[async_trait]
    impl JobQueue for JobQueue {
        fn backend_name(&self) -> &'static str;
        async fn enqueue(&self, job: NewJob, now: Timestamp) -> Result<JobRecord>;
        async fn claim(&self, filter: &JobFilter, worker: &str, lease_millis: u64, now: Timestamp) -> Result<Option<(JobRecord, JobLease)>>;
        async fn claim_id(&self, id: &str, worker: &str, lease_millis: u64, now: Timestamp) -> Result<Option<(JobRecord, JobLease)>>;
        async fn heartbeat(&self, lease: &JobLease, lease_millis: u64, now: Timestamp) -> Result<JobLease>;
        async fn checkpoint(&self, lease: &JobLease, stage: &str, body: serde_json::Value, now: Timestamp) -> Result<()>;
        async fn complete(&self, lease: &JobLease, stage: &str, body: serde_json::Value, now: Timestamp) -> Result<()>;
        async fn fail(&self, lease: &JobLease, stage: &str, body: serde_json::Value, retry: bool, now: Timestamp) -> Result<()>;
        async fn release(&self, lease: &JobLease, now: Timestamp) -> Result<()>;
        async fn retry(&self, id: &str, now: Timestamp) -> Result<bool>;
        async fn cancel(&self, id: &str, body: serde_json::Value, now: Timestamp) -> Result<bool>;
        async fn get(&self, id: &str) -> Result<Option<JobRecord>>;
        async fn list(&self, filter: &JobFilter, cursor: Option<String>, limit: usize) -> Result<JobPage>;
        async fn delete_profile_jobs(&self, profile: &str) -> Result<u64>;
    }
}

mock! {
    /// Mock of [`LanguageModel`].
    pub LanguageModel {}
    #[async_trait]
    impl LanguageModel for LanguageModel {
        async fn complete(&self, request: ChatRequest) -> Result<ChatResponse>;
    }
}

mock! {
    /// Mock of [`Embedder`].
    pub Embedder {}
    #[async_trait]
    impl Embedder for Embedder {
        fn model_id(&self) -> &str;
        fn dimensions(&self) -> usize;
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>>;
        async fn embed_queries(&self, queries: &[String]) -> Result<Vec<Vec<f32>>>;
    }
}

mock! {
    /// Mock of [`Reranker`].
    pub Reranker {}
    #[async_trait]
    impl Reranker for Reranker {
        fn model_id(&self) -> &str;
        async fn score(&self, query: &str, documents: &[String]) -> Result<Vec<f32>>;
    }
}

mock! {
    /// Mock of [`TokenCounter`].
    pub TokenCounter {}
    impl TokenCounter for TokenCounter {
        fn count(&self, text: &str) -> usize;
    }
}

mock! {
    /// Mock of [`Clock`].
    pub Clock {}
    impl Clock for Clock {
        fn now(&self) -> Timestamp;
    }
}
