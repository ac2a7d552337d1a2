use std::sync::Arc;

use memory_core::ports::{Clock, MessageStore, SessionRegistry};
use memory_core::{
    AppendOutcome, MemoryError, NewSession, Parent, Result, SearchHit, SearchQuery, SessionId,
    SessionInfo, SessionPatch, SessionUsage, UiMessage,
};
use tracing::info;

use crate::Session;

/// The registry of conversations together with their histories.
///
/// Every write through the manager touches the session's `updated_at`, so `list` shows the
/// most recently active conversations first.
#[derive(Clone)]
pub struct SessionManager {
    store: Arc<dyn MessageStore>,
    registry: Arc<dyn SessionRegistry>,
    clock: Arc<dyn Clock>,
}

impl SessionManager {
    /// A manager over a message store, a registry and a clock.
    pub fn new(
        store: Arc<dyn MessageStore>,
        registry: Arc<dyn SessionRegistry>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            registry,
            clock,
        }
    }

    /// Creates a session (a random UUID v7 id unless `spec.id` is given).
    pub async fn create(&self, spec: NewSession) -> Result<SessionInfo> {
        let id = match &spec.id {
            Some(id) => id.clone(),
            None => SessionId::new(uuid::Uuid::now_v7().to_string())?,
        };
        if let Some(parent) = &spec.parent_session_id {
            self.require(parent).await?;
        }
        let info = self.registry.create(&id, &spec, self.clock.now()).await?;
        info!(session = %id, "session created");
        Ok(info)
    }

    /// One session's record.
    pub async fn get(&self, id: &SessionId) -> Result<Option<SessionInfo>> {
        self.registry.get(id).await
    }

    /// Sessions, most recently updated first.
    pub async fn list(&self, limit: usize, offset: usize) -> Result<Vec<SessionInfo>> {
        self.registry.list(limit, offset).await
    }

    /// Renames a session.
    pub async fn rename(&self, id: &SessionId, name: &str) -> Result<SessionInfo> {
        let patch = SessionPatch {
            name: Some(name.to_owned()),
            ..SessionPatch::default()
        };
        self.registry.update(id, &patch, self.clock.now()).await
    }

    /// Deletes a session: its messages, overlay records and search entries, then its record.
    /// Not-found if the session is not registered.
    pub async fn delete(&self, id: &SessionId) -> Result<()> {
        self.require(id).await?;
        self.store.clear(id).await?;
        self.registry.delete(id).await?;
        info!(session = %id, "session deleted");
        Ok(())
    }

    /// A handle on a registered session. Not-found if it is not registered.
    pub async fn session(&self, id: &SessionId) -> Result<Session> {
        self.require(id).await?;
        Ok(Session::new(self.store.clone(), id.clone()))
    }

    /// Appends to a registered session and touches it.
    pub async fn append(
        &self,
        id: &SessionId,
        message: UiMessage,
        parent: Parent,
    ) -> Result<AppendOutcome> {
        let session = self.session(id).await?;
        let outcome = session.append_to(message, parent).await?;
        self.registry.touch(id, self.clock.now()).await?;
        Ok(outcome)
    }

    /// Appends a chain of messages to a registered session (continuing from `parent`, the
    /// latest leaf by default) and touches it.
    pub async fn append_all(
        &self,
        id: &SessionId,
        messages: Vec<UiMessage>,
        parent: Parent,
    ) -> Result<Vec<AppendOutcome>> {
        let session = self.session(id).await?;
        let outcomes = session.append_all(messages, parent).await?;
        self.registry.touch(id, self.clock.now()).await?;
        Ok(outcomes)
    }

    /// Updates a message of a registered session and touches it.
    pub async fn update(&self, id: &SessionId, message: UiMessage) -> Result<()> {
        self.session(id).await?.update(message).await?;
        self.registry.touch(id, self.clock.now()).await
    }

    /// Updates the message if it exists, else appends it; touches the session.
    pub async fn upsert(
        &self,
        id: &SessionId,
        message: UiMessage,
        parent: Parent,
    ) -> Result<AppendOutcome> {
        let outcome = self.session(id).await?.upsert(message, parent).await?;
        self.registry.touch(id, self.clock.now()).await?;
        Ok(outcome)
    }

    /// Deletes messages of a registered session and touches it.
    pub async fn delete_messages(&self, id: &SessionId, ids: &[String]) -> Result<u64> {
        let deleted = self.session(id).await?.delete(ids).await?;
        self.registry.touch(id, self.clock.now()).await?;
        Ok(deleted)
    }

    /// Adds token usage and cost to a session.
    pub async fn add_usage(&self, id: &SessionId, usage: SessionUsage) -> Result<SessionInfo> {
        self.registry.add_usage(id, usage, self.clock.now()).await
    }

    /// Full-text search; across every session unless the query names one. Hits carry their
    /// session id.
    pub async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        self.store.search(query).await
    }

    async fn require(&self, id: &SessionId) -> Result<SessionInfo> {
        self.registry
            .get(id)
            .await?
            .ok_or_else(|| MemoryError::not_found("session", id.as_str()))
    }
}
