use std::sync::Arc;

use memory_core::ports::{MessageStore, MessageStoreExt};
use memory_core::{
    AppendOutcome, MemoryError, NewMessage, Parent, RecentHistory, Result, SearchHit, SearchMode,
    SearchQuery, SessionId, UiMessage,
};
use tracing::debug;

/// One conversation: a tree of messages with branches, backed by a [`MessageStore`].
///
/// A `Session` is a cheap handle (an `Arc` and an id); clone it freely.
#[derive(Clone)]
pub struct Session {
    store: Arc<dyn MessageStore>,
    id: SessionId,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("backend", &self.store.backend_name())
            .finish()
    }
}

impl Session {
    /// A session handle over `store`. Nothing is written until the first append.
    pub fn new(store: Arc<dyn MessageStore>, id: SessionId) -> Self {
        Self { store, id }
    }

    /// The session id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// Continues the conversation: appends under the latest leaf. Insert-if-absent.
    pub async fn append(&self, message: UiMessage) -> Result<AppendOutcome> {
        self.append_to(message, Parent::LatestLeaf).await
    }

    /// Appends under an explicit parent (or as a new root).
    pub async fn append_to(&self, message: UiMessage, parent: Parent) -> Result<AppendOutcome> {
        let outcome = self.store.append_one(&self.id, message, parent).await?;
        debug!(session = %self.id, ?outcome, "append");
        Ok(outcome)
    }

    /// Appends messages in order, in one transaction, each continuing from the previous one.
    /// The first attaches to `parent` (the latest leaf by default): unlike the reference,
    /// appending a batch continues the conversation instead of starting a new root.
    pub async fn append_all(
        &self,
        messages: Vec<UiMessage>,
        parent: Parent,
    ) -> Result<Vec<AppendOutcome>> {
        let mut batch = Vec::with_capacity(messages.len());
        let mut previous: Option<String> = None;
        for message in messages {
            let parent = match previous.take() {
                Some(id) => Parent::Message(id),
                None => parent.clone(),
            };
            previous = Some(message.id.clone());
            batch.push(NewMessage::with_parent(message, parent));
        }
        self.store.append(&self.id, batch).await
    }

    /// Replaces an existing message's content and re-indexes it.
    pub async fn update(&self, message: UiMessage) -> Result<()> {
        self.store.update(&self.id, message).await
    }

    /// Updates the message if it exists, else appends it under `parent`.
    pub async fn upsert(&self, message: UiMessage, parent: Parent) -> Result<AppendOutcome> {
        self.store.upsert(&self.id, message, parent).await
    }

    /// Deletes messages (their children re-link to their parents); returns how many existed.
    pub async fn delete(&self, ids: &[String]) -> Result<u64> {
        self.store.delete(&self.id, ids).await
    }

    /// Deletes every message, overlay record and search entry of this session.
    pub async fn clear(&self) -> Result<()> {
        self.store.clear(&self.id).await
    }

    /// One message.
    pub async fn get(&self, id: &str) -> Result<Option<UiMessage>> {
        self.store.get(&self.id, id).await
    }

    /// The root-to-leaf path (latest leaf by default).
    pub async fn history(&self, leaf: Option<&str>) -> Result<Vec<UiMessage>> {
        self.store.history(&self.id, leaf.map(str::to_owned)).await
    }

    /// The most recently appended message without children.
    pub async fn latest_leaf(&self) -> Result<Option<String>> {
        self.store.latest_leaf(&self.id).await
    }

    /// The children of a message, in insertion order.
    pub async fn branches(&self, message_id: &str) -> Result<Vec<UiMessage>> {
        self.store.children(&self.id, message_id).await
    }

    /// Messages on the path to `leaf`.
    pub async fn path_length(&self, leaf: Option<&str>) -> Result<usize> {
        self.store.path_length(&self.id, leaf).await
    }

    /// The recent suffix of the path within `max_bytes` (always including the leaf).
    pub async fn recent_history(&self, max_bytes: u64, min_recent: usize) -> Result<RecentHistory> {
        self.store
            .recent_history(&self.id, None, max_bytes, min_recent)
            .await
    }

    /// Full-text search within this session.
    pub async fn search(
        &self,
        text: &str,
        mode: SearchMode,
        limit: Option<usize>,
    ) -> Result<Vec<SearchHit>> {
        let mut query = SearchQuery::new(text)
            .in_session(self.id.clone())
            .mode(mode);
        query.limit = limit;
        self.store.search(&query).await
    }

    /// Returns an error if the message is not in this session.
    pub async fn require(&self, id: &str) -> Result<UiMessage> {
        self.get(id)
            .await?
            .ok_or_else(|| MemoryError::not_found("message", id))
    }
}
