use std::sync::Arc;

use memory_core::ports::{MessageStore, MessageStoreExt};
use memory_core::{
    AppendOutcome, MemoryError, NewMessage, Parent, RecentHistory, Result, Role, SearchHit,
    SearchMode, SearchQuery, SessionId, ToolDefinition, ToolState, UiMessage,
};
use serde_json::Value;

use crate::context::{ContextBlocks, ContextTools};
use tracing::debug;

/// One conversation: a tree of messages with branches, backed by a [`MessageStore`].
///
/// A `Session` is a cheap handle (an `Arc` and an id); clone it freely.
#[derive(Clone)]
pub struct Session {
    store: Arc<dyn MessageStore>,
    id: SessionId,
    context: Arc<ContextBlocks>,
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
    /// A session handle over `store`, with no context blocks. Nothing is written until the
    /// first append.
    pub fn new(store: Arc<dyn MessageStore>, id: SessionId) -> Self {
        Self {
            store,
            id,
            context: Arc::new(ContextBlocks::empty()),
        }
    }

    /// Attaches context blocks (the system prompt and the generated tools come from them).
    pub fn with_context(mut self, context: Arc<ContextBlocks>) -> Self {
        self.context = context;
        self
    }

    /// The session's context blocks.
    pub fn context(&self) -> &Arc<ContextBlocks> {
        &self.context
    }

    /// The frozen system prompt (see [`ContextBlocks::freeze_system_prompt`]).
    pub async fn freeze_system_prompt(&self) -> Result<String> {
        self.context.freeze_system_prompt().await
    }

    /// Re-renders and re-freezes the system prompt.
    pub async fn refresh_system_prompt(&self) -> Result<String> {
        self.context.refresh_system_prompt().await
    }

    /// Tool definitions generated from the blocks present.
    pub async fn tools(&self) -> Result<Vec<ToolDefinition>> {
        ContextTools::definitions(&self.context).await
    }

    /// Runs a tool call and returns the string for the model. Bad arguments, unknown tools
    /// and failed writes come back as `Error: ...` strings; unloading a skill also rewrites
    /// the newest `load_context` output for it in history to a short marker.
    pub async fn execute_tool(&self, name: &str, arguments: &Value) -> Result<String> {
        let Some(execution) = ContextTools::execute(&self.context, name, arguments).await else {
            return Ok(format!("Error: unknown tool \"{name}\""));
        };
        if let Some(unloaded) = &execution.unloaded {
            self.reclaim_skill_output(&unloaded.label, &unloaded.key)
                .await?;
        }
        Ok(execution.output)
    }

    /// Replaces the newest `load_context` output for `label:key` on the current branch with
    /// `[skill unloaded: key]`, scanning from the leaf and reading only assistant messages.
    async fn reclaim_skill_output(&self, label: &str, key: &str) -> Result<bool> {
        let path = self.store.path(&self.id, None).await?;
        for entry in path.iter().rev().filter(|e| e.role == Role::Assistant) {
            let Some(mut message) = self.store.get(&self.id, &entry.id).await? else {
                continue;
            };
            let mut changed = false;
            for part in message.parts.iter_mut().rev() {
                let Some(tool) = part.as_tool_mut() else {
                    continue;
                };
                let matches = tool.tool_name == ContextTools::LOAD
                    && tool.state == ToolState::OutputAvailable
                    && tool.input.as_ref().is_some_and(|i| {
                        i.get("label").and_then(Value::as_str) == Some(label)
                            && i.get("key").and_then(Value::as_str) == Some(key)
                    })
                    && !tool
                        .output
                        .as_ref()
                        .and_then(Value::as_str)
                        .is_some_and(|o| o.starts_with("[skill unloaded:"));
                if matches {
                    tool.output = Some(Value::String(format!("[skill unloaded: {key}]")));
                    changed = true;
                    break;
                }
            }
            if changed {
                self.store.update(&self.id, message).await?;
                debug!(session = %self.id, label, key, "reclaimed unloaded skill output");
                return Ok(true);
            }
        }
        Ok(false)
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

    /// Deletes every message, overlay record and search entry of this session, forgets the
    /// loaded skills and re-renders the frozen prompt.
    pub async fn clear(&self) -> Result<()> {
        self.store.clear(&self.id).await?;
        self.context.clear_loaded_skills().await?;
        self.context.refresh_system_prompt().await?;
        Ok(())
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
