use std::sync::Arc;

use memory_core::ports::{CompactionEvent, CompactionObserver, TokenCounter};
use memory_core::ports::{MessageStore, MessageStoreExt};
use memory_core::{
    AppendOutcome, CompactionRecord, HeuristicTokenCounter, MemoryError, NewCompaction, NewMessage,
    Parent, RecentHistory, Result, Role, SearchHit, SearchMode, SearchQuery, SessionId,
    ToolDefinition, ToolState, UiMessage, estimate_messages_tokens,
};
use serde_json::Value;

use crate::compaction::{
    CompactResult, Compactor, Shown, apply_overlays, enforce_row_size, overlay_message,
    overlay_plan, superseded_by, visible_overlays,
};
use crate::context::{ContextBlocks, ContextTools};
use crate::message_search::MessageSearch;
use crate::profile_link::ProfileLink;
use tracing::{debug, warn};

/// The end of a history, as [`Session::history_tail`] reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryTail {
    /// The last entries, root-ward first (overlays applied unless read raw).
    pub messages: Vec<UiMessage>,
    /// How many stored messages the whole path holds.
    pub total: usize,
    /// True when the history has entries before the first of `messages`.
    pub truncated: bool,
}

/// One conversation: a tree of messages with branches, backed by a [`MessageStore`].
///
/// A `Session` is a cheap handle (an `Arc` and an id); clone it freely.
#[derive(Clone)]
pub struct Session {
    store: Arc<dyn MessageStore>,
    id: SessionId,
    context: Arc<ContextBlocks>,
    compaction: Option<Arc<CompactionSettings>>,
    search: Option<MessageSearch>,
    link: Option<ProfileLink>,
}

impl Session {
    /// Whether another handle of this session is alive (a clone shares its blocks).
    pub(crate) fn in_use(&self) -> bool {
        Arc::strong_count(&self.context) > 1
    }
}

/// A callback for auto-compaction failures.
pub type ErrorHandler = Arc<dyn Fn(&MemoryError) + Send + Sync>;

/// How a session compacts: the compactor, the auto-compaction threshold, and who hears
/// about compacted ranges.
#[derive(Clone)]
pub struct CompactionSettings {
    /// Decides what to compact.
    pub compactor: Arc<dyn Compactor>,
    /// Compact after an inserting append when the estimate exceeds this many tokens.
    pub threshold: Option<usize>,
    /// Receives every compacted range.
    pub observer: Option<Arc<dyn CompactionObserver>>,
    /// Counts tokens for estimates and the compactor's tail budget.
    pub counter: Arc<dyn TokenCounter>,
    /// Called with every auto-compaction failure (the append still succeeds).
    pub on_error: Option<ErrorHandler>,
}

impl CompactionSettings {
    /// Settings with a compactor, no threshold, no observer and the heuristic counter.
    pub fn new(compactor: Arc<dyn Compactor>) -> Self {
        Self {
            compactor,
            threshold: None,
            observer: None,
            counter: Arc::new(HeuristicTokenCounter),
            on_error: None,
        }
    }

    /// Calls `handler` with every auto-compaction failure.
    pub fn on_error(mut self, handler: impl Fn(&MemoryError) + Send + Sync + 'static) -> Self {
        self.on_error = Some(Arc::new(handler));
        self
    }

    /// Compacts after an inserting append once the estimate exceeds `tokens`.
    pub fn compact_after(mut self, tokens: usize) -> Self {
        self.threshold = Some(tokens);
        self
    }

    /// Notifies `observer` of every compacted range.
    pub fn observer(mut self, observer: Arc<dyn CompactionObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Counts tokens with `counter`.
    pub fn counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.counter = counter;
        self
    }
}

/// What an append did, including any automatic compaction it triggered.
#[derive(Debug, Clone, PartialEq)]
pub struct AppendReport {
    /// The insert-if-absent outcome.
    pub outcome: AppendOutcome,
    /// What auto-compaction did (a failure never fails the append).
    pub compaction: CompactionStatus,
}

impl AppendReport {
    /// True if the message was stored by this call.
    pub fn inserted(&self) -> bool {
        self.outcome.inserted()
    }
}

/// The auto-compaction check after an append.
#[derive(Debug, Clone, PartialEq)]
pub enum CompactionStatus {
    /// No threshold configured, or nothing was inserted.
    NotChecked,
    /// The estimate is within the threshold.
    WithinThreshold {
        /// Estimated prompt tokens.
        estimate: usize,
    },
    /// Over the threshold, but the compactor found nothing to compact.
    NothingToCompact {
        /// Estimated prompt tokens.
        estimate: usize,
    },
    /// A range was compacted.
    Compacted {
        /// Estimated prompt tokens before.
        tokens_before: usize,
        /// Estimated prompt tokens after.
        tokens_after: usize,
        /// The stored overlay.
        from_message_id: String,
        /// The stored overlay.
        to_message_id: String,
    },
    /// Compaction failed; the message is stored.
    Failed {
        /// Why.
        reason: String,
    },
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
            compaction: None,
            search: None,
            link: None,
        }
    }

    /// Links the session to long-term memory: when it is bound to a profile, compacted
    /// ranges ship there and its tools include the memory tools.
    pub fn with_link(mut self, link: ProfileLink) -> Self {
        self.link = Some(link);
        self
    }

    /// Enables search (the `store` of [`Session::new`] must be the one [`MessageSearch::pair`]
    /// returned, so the index follows every write).
    pub fn with_search(mut self, search: MessageSearch) -> Self {
        self.search = Some(search);
        self
    }

    /// Enables compaction (and auto-compaction when the settings have a threshold).
    pub fn with_compaction(mut self, settings: Arc<CompactionSettings>) -> Self {
        self.compaction = Some(settings);
        self
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

    /// Tool definitions generated from the blocks present, then the memory tools when the
    /// session is bound to a profile (`recall`, `remember`, ...).
    pub async fn tools(&self) -> Result<Vec<ToolDefinition>> {
        let mut tools = ContextTools::definitions(&self.context).await?;
        if let Some(link) = &self.link {
            tools.extend(link.tool_definitions(&self.id).await?);
        }
        Ok(tools)
    }

    /// Runs a tool call and returns the string for the model. Bad arguments, unknown tools
    /// and failed writes come back as `Error: ...` strings; unloading a skill also rewrites
    /// the newest `load_context` output for it in history to a short marker.
    pub async fn execute_tool(&self, name: &str, arguments: &Value) -> Result<String> {
        if let Some(link) = &self.link
            && let Some(output) = link.execute_tool(&self.id, name, arguments).await
        {
            return Ok(output);
        }
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
    pub async fn append(&self, message: UiMessage) -> Result<AppendReport> {
        self.append_to(message, Parent::LatestLeaf).await
    }

    /// Appends under an explicit parent (or as a new root). A message over the store's row
    /// limit is stored with its tool outputs, then text, truncated (recorded in metadata).
    /// After an inserting append, auto-compaction runs when configured; its failure is
    /// reported in the result and never fails the append.
    pub async fn append_to(&self, message: UiMessage, parent: Parent) -> Result<AppendReport> {
        let message = match self.store.capabilities().max_message_bytes {
            Some(max) => enforce_row_size(&message, usize::try_from(max).unwrap_or(usize::MAX)),
            None => message,
        };
        let outcome = self.store.append_one(&self.id, message, parent).await?;
        debug!(session = %self.id, ?outcome, "append");
        let compaction = if outcome.inserted() {
            self.auto_compact().await
        } else {
            CompactionStatus::NotChecked
        };
        Ok(AppendReport {
            outcome,
            compaction,
        })
    }

    async fn auto_compact(&self) -> CompactionStatus {
        let Some(threshold) = self.compaction.as_ref().and_then(|c| c.threshold) else {
            return CompactionStatus::NotChecked;
        };
        let estimate = match self.estimate_tokens().await {
            Ok(estimate) => estimate,
            Err(e) => {
                return CompactionStatus::Failed {
                    reason: e.to_string(),
                };
            }
        };
        if estimate <= threshold {
            return CompactionStatus::WithinThreshold { estimate };
        }
        match self.compact(None).await {
            Ok(Some(result)) => CompactionStatus::Compacted {
                tokens_before: estimate,
                tokens_after: self.estimate_tokens().await.unwrap_or(0),
                from_message_id: result.from_message_id,
                to_message_id: result.to_message_id,
            },
            Ok(None) => CompactionStatus::NothingToCompact { estimate },
            Err(e) => {
                warn!(session = %self.id, error = %e, "auto-compaction failed; the message is stored");
                if let Some(handler) = self.compaction.as_ref().and_then(|c| c.on_error.clone()) {
                    handler(&e);
                }
                CompactionStatus::Failed {
                    reason: e.to_string(),
                }
            }
        }
    }

    fn counter(&self) -> Arc<dyn TokenCounter> {
        self.compaction
            .as_ref()
            .map(|c| c.counter.clone())
            .unwrap_or_else(|| self.context.token_counter().clone())
    }

    /// Estimated tokens of the next model call: the frozen system prompt (with its blocks),
    /// every visible message part that reaches the model, and the tool schemas.
    pub async fn estimate_tokens(&self) -> Result<usize> {
        let counter = self.counter();
        let prompt = self.context.system_prompt_for_estimate().await?;
        let history = self.history(None).await?;
        let tools = serde_json::to_string(&self.tools().await?)?;
        Ok(counter.count(&prompt)
            + estimate_messages_tokens(counter.as_ref(), &history)
            + counter.count(&tools))
    }

    /// Compacts the branch ending at `leaf` (the latest by default): asks the compactor for a
    /// range of the visible history, widens it to the earliest overlay already visible
    /// (iterative compaction), stores the overlay, tells the observer, and re-freezes the
    /// prompt. `None` when there is nothing to compact.
    pub async fn compact(&self, leaf: Option<&str>) -> Result<Option<CompactResult>> {
        let settings = self
            .compaction
            .clone()
            .ok_or_else(|| MemoryError::invalid("no compactor configured for this session"))?;
        let compactions = self.store.compactions(&self.id).await?;
        let raw = self
            .store
            .history(&self.id, leaf.map(str::to_owned))
            .await?;
        let history = apply_overlays(raw.clone(), &compactions);
        let Some(mut result) = settings
            .compactor
            .compact(self.id.as_str(), &history, settings.counter.as_ref())
            .await?
        else {
            return Ok(None);
        };
        if !history.iter().any(|m| m.id == result.to_message_id) {
            return Ok(None);
        }
        if let Some(earliest) = visible_overlays(&history, &compactions).first() {
            let earliest_pos = raw.iter().position(|m| m.id == earliest.from_message_id);
            let from_pos = raw.iter().position(|m| m.id == result.from_message_id);
            if earliest_pos.is_some() && (from_pos.is_none() || earliest_pos < from_pos) {
                result.from_message_id = earliest.from_message_id.clone();
            }
        }
        let record = self
            .store
            .add_compaction(
                &self.id,
                NewCompaction {
                    summary: result.summary.clone(),
                    from_message_id: result.from_message_id.clone(),
                    to_message_id: result.to_message_id.clone(),
                },
            )
            .await?;
        self.context.refresh_system_prompt().await?;
        let from = raw
            .iter()
            .position(|m| m.id == record.from_message_id)
            .unwrap_or(0);
        let to = raw
            .iter()
            .position(|m| m.id == record.to_message_id)
            .unwrap_or(from)
            .max(from);
        let range = raw.get(from..=to).unwrap_or_default();
        // History flows into the bound profile. Compaction never waits for extraction (the
        // job runs elsewhere) and never fails because of it: a range that could not be
        // shipped now ships with the next compaction or the end of the session.
        if let Some(link) = &self.link
            && let Err(e) = link.ship_compacted(&self.id, range).await
        {
            warn!(session = %self.id, error = %e, "compacted range not shipped to the profile yet");
        }
        if let Some(observer) = &settings.observer {
            let event = CompactionEvent {
                session_id: self.id.clone(),
                compaction_id: record.id.clone(),
                message_ids: range.iter().map(|m| m.id.clone()).collect(),
                summary: record.summary.clone(),
            };
            observer.on_compacted(&event).await?;
        }
        Ok(Some(result))
    }

    /// The session's overlay records with the id of the record that supersedes each one.
    pub async fn compactions(&self) -> Result<Vec<(CompactionRecord, Option<String>)>> {
        let records = self.store.compactions(&self.id).await?;
        let superseded = superseded_by(&records);
        Ok(records.into_iter().zip(superseded).collect())
    }

    /// Records an overlay directly (`from..=to` on one branch).
    pub async fn add_compaction(
        &self,
        summary: &str,
        from: &str,
        to: &str,
    ) -> Result<CompactionRecord> {
        self.store
            .add_compaction(
                &self.id,
                NewCompaction {
                    summary: summary.to_owned(),
                    from_message_id: from.to_owned(),
                    to_message_id: to.to_owned(),
                },
            )
            .await
    }

    /// The root-to-leaf path without overlays: every original message.
    pub async fn raw_history(&self, leaf: Option<&str>) -> Result<Vec<UiMessage>> {
        self.store.history(&self.id, leaf.map(str::to_owned)).await
    }

    /// Appends messages in order, in one transaction, each continuing from the previous one.
    /// The first attaches to `parent` (the latest leaf by default): unlike the reference,
    /// appending a batch continues the conversation instead of starting a new root.
    pub async fn append_all(
        &self,
        messages: Vec<UiMessage>,
        parent: Parent,
    ) -> Result<Vec<AppendOutcome>> {
        let max = self.store.capabilities().max_message_bytes;
        let mut batch = Vec::with_capacity(messages.len());
        let mut previous: Option<String> = None;
        for message in messages {
            let parent = match previous.take() {
                Some(id) => Parent::Message(id),
                None => parent.clone(),
            };
            previous = Some(message.id.clone());
            let message = match max {
                Some(max) => enforce_row_size(&message, usize::try_from(max).unwrap_or(usize::MAX)),
                None => message,
            };
            batch.push(NewMessage::with_parent(message, parent));
        }
        let outcomes = self.store.append(&self.id, batch).await?;
        if outcomes.iter().any(AppendOutcome::inserted) {
            // One check for the whole batch; a failure is logged by auto_compact.
            let _status = self.auto_compact().await;
        }
        Ok(outcomes)
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

    /// The root-to-leaf path (latest leaf by default) with compaction overlays applied.
    pub async fn history(&self, leaf: Option<&str>) -> Result<Vec<UiMessage>> {
        let raw = self
            .store
            .history(&self.id, leaf.map(str::to_owned))
            .await?;
        let compactions = self.store.compactions(&self.id).await?;
        Ok(apply_overlays(raw, &compactions))
    }

    /// The last `limit` entries of the history of `leaf` (the latest leaf by default), with
    /// compaction overlays applied unless `raw`, and how many stored messages the whole path
    /// holds (overlays not counted as one). The path is read from the leaf upward
    /// ([`MessageStore::path_tail`]), widening the window until no overlay crosses its top
    /// edge and it shows `limit` entries, and only the shown messages are read: a long
    /// session's tail costs what the tail shows.
    pub async fn history_tail(
        &self,
        leaf: Option<&str>,
        limit: usize,
        raw: bool,
    ) -> Result<HistoryTail> {
        let mut compactions = if raw {
            Vec::new()
        } else {
            self.store.compactions(&self.id).await?
        };
        // An overlay whose first message is gone (deleted since) never applies: dropped
        // here, it cannot make every view widen to the whole path.
        if !compactions.is_empty() {
            let starts: Vec<String> = compactions
                .iter()
                .map(|record| record.from_message_id.clone())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            let present: std::collections::HashSet<String> = self
                .store
                .get_many(&self.id, &starts)
                .await?
                .into_iter()
                .map(|m| m.id)
                .collect();
            compactions.retain(|record| present.contains(&record.from_message_id));
        }
        let mut window = limit.saturating_add(limit / 2).max(16);
        let (tail, plan_ids) = loop {
            let tail = self
                .store
                .path_tail(&self.id, leaf.map(str::to_owned), window)
                .await?;
            let ids: Vec<String> = tail.entries.iter().map(|e| e.id.clone()).collect();
            if tail.is_whole_path() {
                break (tail, ids);
            }
            let shown: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
            // An overlay ending inside the window but starting above it decides what the
            // window's top shows: widen until none does.
            let crossed = compactions.iter().any(|record| {
                shown.contains(record.to_message_id.as_str())
                    && !shown.contains(record.from_message_id.as_str())
            });
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            if !crossed && overlay_plan(&refs, &compactions).len() >= limit {
                break (tail, ids);
            }
            let wider = window.saturating_mul(2).min(tail.total.max(window));
            // A store answering fewer entries than its own count (a write in between) must
            // not keep this loop asking for the same window.
            if wider <= window {
                break (tail, ids);
            }
            window = wider;
        };
        let ids: Vec<&str> = plan_ids.iter().map(String::as_str).collect();
        let plan = overlay_plan(&ids, &compactions);
        let truncated = !tail.is_whole_path() || plan.len() > limit;
        let shown = &plan[plan.len().saturating_sub(limit)..];
        let wanted: Vec<String> = shown
            .iter()
            .filter_map(|item| match item {
                Shown::Message(i) => ids.get(*i).map(|id| (*id).to_owned()),
                Shown::Overlay(_) => None,
            })
            .collect();
        let mut stored: std::collections::HashMap<String, UiMessage> = self
            .store
            .get_many(&self.id, &wanted)
            .await?
            .into_iter()
            .map(|m| (m.id.clone(), m))
            .collect();
        let messages = shown
            .iter()
            .filter_map(|item| match item {
                Shown::Message(i) => ids.get(*i).and_then(|id| stored.remove(*id)),
                Shown::Overlay(record) => Some(overlay_message(record)),
            })
            .collect();
        Ok(HistoryTail {
            messages,
            total: tail.total,
            truncated,
        })
    }

    /// Where the conversation forks among `ids`: each with more than one child, mapped to
    /// its children's ids in insertion order ([`MessageStore::forks`]).
    pub async fn forks(
        &self,
        ids: &[String],
    ) -> Result<std::collections::BTreeMap<String, Vec<String>>> {
        self.store.forks(&self.id, ids).await
    }

    /// The most recently appended message without children.
    pub async fn latest_leaf(&self) -> Result<Option<String>> {
        self.store.latest_leaf(&self.id).await
    }

    /// The most recently appended message without children under `message_id` (itself when
    /// it has none): where switching to that branch lands.
    pub async fn latest_leaf_under(&self, message_id: &str) -> Result<String> {
        self.store.latest_leaf_under(&self.id, message_id).await
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
        match &self.search {
            Some(search) => search.search(&query).await,
            None => Err(crate::message_search::no_index(self.store.as_ref())),
        }
    }

    /// Returns an error if the message is not in this session.
    pub async fn require(&self, id: &str) -> Result<UiMessage> {
        self.get(id)
            .await?
            .ok_or_else(|| MemoryError::not_found("message", id))
    }
}
