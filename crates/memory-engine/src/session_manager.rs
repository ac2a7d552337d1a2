use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memory_core::open_handles::OpenHandles;
use memory_core::ports::{Clock, KeyValueStore, MessageStore, SessionRegistry, TextIndex};
use memory_core::{
    AppendOutcome, MemoryError, NewMessage, NewSession, Parent, Result, Role, SearchHit,
    SearchQuery, SessionId, SessionInfo, SessionPatch, SessionUsage, ToolDefinition, UiMessage,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tracing::info;

use crate::context::{BlockSource, BlockSpec, ContextWiring, ProfileBlocks};
use crate::long_term::MemoryService;
use crate::profile_link::{
    DEFAULT_PROFILE_BLOCK, JobRunner, LinkOptions, ProfileLink, ShipReport, ShipSelection,
};
use crate::{AppendReport, CompactionSettings, MessageSearch, ReindexReport, Session};

/// Longest automatic session title, in characters.
pub const TITLE_CHARS: usize = 60;

/// The title an unnamed session takes from `messages`: the first user message with text, its
/// whitespace folded to single spaces, cut to [`TITLE_CHARS`] characters.
fn title_of<'a>(messages: impl IntoIterator<Item = &'a UiMessage>) -> Option<String> {
    let text = messages
        .into_iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.text())
        .find(|t| !t.trim().is_empty())?;
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(flat.chars().take(TITLE_CHARS).collect())
}

/// The registry of conversations together with their histories and context.
///
/// Every write through the manager touches the session's `updated_at`, so `list` shows the
/// most recently active conversations first. A session without a name takes its title from
/// its first user message.
#[derive(Clone)]
pub struct SessionManager {
    store: Arc<dyn MessageStore>,
    registry: Arc<dyn SessionRegistry>,
    clock: Arc<dyn Clock>,
    context: Arc<ContextWiring>,
    compaction: Option<Arc<CompactionSettings>>,
    search: Option<MessageSearch>,
    sessions: Arc<Mutex<OpenHandles<Session>>>,
    pub(crate) archive: Option<crate::archive::Archive>,
    link: Option<ProfileLink>,
}

/// Session handles a manager keeps (the least recently used one not in use goes first; a
/// handle dropped is made again from the stores when the session is next used).
pub(crate) const KEPT_SESSIONS: usize = 4_096;

/// An empty set of kept session handles.
fn session_handles() -> Arc<Mutex<OpenHandles<Session>>> {
    Arc::new(Mutex::new(OpenHandles::new(KEPT_SESSIONS, Duration::MAX)))
}

impl SessionManager {
    /// A manager over a message store, a registry and a clock, with no context blocks.
    pub fn new(
        store: Arc<dyn MessageStore>,
        registry: Arc<dyn SessionRegistry>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            registry,
            clock,
            context: Arc::new(ContextWiring::default()),
            compaction: None,
            search: None,
            sessions: session_handles(),
            archive: None,
            link: None,
        }
    }

    /// Wires long-term memory into the sessions (see [`crate::profile_link`]): a session
    /// bound to a profile (at creation, or by `options.default_profile`) ships compacted
    /// ranges and, when it ends, the rest of its history there; its tools gain `recall` and
    /// `remember`; `profile` blocks show the profile in the prompt. `kv` records what was
    /// shipped. Unbound sessions behave as before.
    pub fn with_long_term(
        self,
        memory: MemoryService,
        kv: Arc<dyn KeyValueStore>,
        options: LinkOptions,
    ) -> Result<Self> {
        let link = ProfileLink::new(
            memory,
            Arc::clone(&self.store),
            Arc::clone(&self.registry),
            kv,
            Arc::clone(&self.context.counter),
            options,
        )?;
        Ok(self.linked(link))
    }

    /// Runs the ingest jobs that shipping queues with `runner` (a server's background
    /// tasks); without one they wait in the queue for a worker. No-op without long-term
    /// memory wired.
    pub fn with_job_runner(self, runner: Arc<dyn JobRunner>) -> Self {
        match self.link.clone() {
            Some(link) => self.linked(link.with_runner(runner)),
            None => self,
        }
    }

    fn linked(mut self, link: ProfileLink) -> Self {
        let mut wiring = (*self.context).clone();
        wiring.profiles = Some(Arc::new(link.clone()) as Arc<dyn ProfileBlocks>);
        let declared = wiring
            .specs
            .iter()
            .any(|spec| matches!(spec.source, BlockSource::Profile));
        if let (Some(budget), false) = (link.options().profile_block, declared) {
            let label = if wiring
                .specs
                .iter()
                .any(|spec| spec.label == DEFAULT_PROFILE_BLOCK)
            {
                // The deployment uses the label for a block of its own.
                "memory_profile"
            } else {
                DEFAULT_PROFILE_BLOCK
            };
            wiring.specs.push(
                BlockSpec::profile(label)
                    .description(
                        "What you remember about the user: instructions, facts and open tasks",
                    )
                    .max_tokens(budget),
            );
        }
        self.context = Arc::new(wiring);
        self.link = Some(link);
        self.sessions = session_handles();
        self
    }

    /// True when sessions can compact (a compactor is configured).
    pub fn has_compaction(&self) -> bool {
        self.compaction.is_some()
    }

    /// The link to long-term memory, when one is wired.
    pub fn long_term(&self) -> Option<&ProfileLink> {
        self.link.as_ref()
    }

    fn require_link(&self) -> Result<&ProfileLink> {
        self.link
            .as_ref()
            .ok_or_else(|| MemoryError::invalid("no long-term memory is wired to these sessions"))
    }

    /// Binds a session to `profile`, or unbinds it (`None`). Explicit: nothing else changes
    /// a binding.
    pub async fn bind(&self, id: &SessionId, profile: Option<&str>) -> Result<SessionInfo> {
        if let Some(profile) = profile {
            memory_core::validate_profile_name(profile)?;
        }
        let patch = SessionPatch {
            profile: Some(profile.map(str::to_owned)),
            ..SessionPatch::default()
        };
        self.registry.update(id, &patch, self.clock.now()).await
    }

    /// Ends a session: sets its end reason (`ended` by default) and, when it is bound, ships
    /// the part of its current branch that was not shipped yet into its profile.
    pub async fn end(
        &self,
        id: &SessionId,
        reason: Option<&str>,
    ) -> Result<(SessionInfo, Option<ShipReport>)> {
        let info = self.require(id).await?;
        self.rehydrate(id).await?;
        let shipped = match &info.profile {
            Some(profile) => Some(
                self.require_link()?
                    .ship_selection(profile, id, &ShipSelection::default())
                    .await?,
            ),
            None => None,
        };
        let patch = SessionPatch {
            end_reason: Some(reason.unwrap_or("ended").to_owned()),
            ..SessionPatch::default()
        };
        let info = self.registry.update(id, &patch, self.clock.now()).await?;
        info!(session = %id, shipped = shipped.as_ref().map_or(0, |s| s.shipped), "session ended");
        Ok((info, shipped))
    }

    /// Ships stored messages of a session into `profile` (bound or not), without sending
    /// them again: the path to a leaf, or a range of it. Messages shipped before are
    /// skipped.
    pub async fn ship(
        &self,
        profile: &str,
        id: &SessionId,
        selection: &ShipSelection,
    ) -> Result<ShipReport> {
        let link = self.require_link()?;
        self.require(id).await?;
        self.rehydrate(id).await?;
        link.ship_selection(profile, id, selection).await
    }

    /// Enables archiving cold sessions into `blobs` ([`SessionManager::archive`]), with
    /// their markers in `kv`. Every handle on a session then checks (one key-value read)
    /// whether it must come back first.
    pub fn with_archive(
        mut self,
        blobs: Arc<dyn memory_core::ports::BlobStore>,
        kv: Arc<dyn KeyValueStore>,
    ) -> Self {
        self.archive = Some(crate::archive::Archive { blobs, kv });
        self
    }

    /// The manager's clock's now.
    pub(crate) fn now(&self) -> memory_core::Timestamp {
        self.clock.now()
    }

    /// Drops the cached handle of a session.
    pub(crate) fn forget_handle(&self, id: &SessionId) {
        self.cached().remove(id.as_str());
    }

    /// Enables full-text search over every session through `index` (its `messages`
    /// namespace). An index its store writes is used as it is; any other is kept in step by
    /// the engine ([`crate::IndexedMessageStore`]), with `outbox` recording each write until
    /// the index has it.
    pub fn with_search(
        mut self,
        index: Arc<dyn TextIndex>,
        outbox: Arc<dyn KeyValueStore>,
    ) -> Self {
        let (store, search) = MessageSearch::pair(
            Arc::clone(&self.store),
            index,
            outbox,
            Arc::clone(&self.registry),
        );
        self.store = store;
        self.search = Some(search);
        self.sessions = session_handles();
        self
    }

    /// The store every write goes through (the index decorator when the engine writes the
    /// index).
    pub fn store(&self) -> &Arc<dyn MessageStore> {
        &self.store
    }

    /// Replays index updates a crash or an index outage left behind, after the index's check
    /// (a lost index is rebuilt first, or marked for a rebuild when it cannot be checked: see
    /// [`crate::IndexedMessageStore::catch_up`]); returns how many.
    pub async fn catch_up_search(&self) -> Result<u64> {
        match &self.search {
            Some(search) => search.catch_up().await,
            None => Ok(0),
        }
    }

    /// Rebuilds the message index from the store, over every session of the registry.
    pub async fn reindex(&self) -> Result<ReindexReport> {
        let search = self
            .search
            .as_ref()
            .ok_or_else(|| crate::message_search::no_index(self.store.as_ref()))?;
        search.reindex().await
    }

    /// Gives every session these compaction settings (compactor, threshold, observer).
    pub fn with_compaction(mut self, settings: CompactionSettings) -> Self {
        self.compaction = Some(Arc::new(settings));
        self.sessions = session_handles();
        self
    }

    /// Declares the context blocks every session gets, and the ports they are stored in
    /// (profile blocks keep the long-term link when one is wired).
    pub fn with_context(mut self, mut wiring: ContextWiring) -> Self {
        if wiring.profiles.is_none() {
            wiring.profiles = self.context.profiles.clone();
        }
        self.context = Arc::new(wiring);
        self.sessions = session_handles();
        self
    }

    /// The context wiring.
    pub fn context_wiring(&self) -> &ContextWiring {
        &self.context
    }

    /// How many session handles the manager keeps now.
    #[cfg(test)]
    pub(crate) fn kept_handles(&self) -> usize {
        self.cached().len()
    }

    fn cached(&self) -> std::sync::MutexGuard<'_, OpenHandles<Session>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Creates a session (a random UUID v7 id unless `spec.id` is given).
    /// Without a profile in `spec`, the session is bound to the link's default profile, if
    /// any; [`SessionManager::bind`] with `None` unbinds it.
    pub async fn create(&self, mut spec: NewSession) -> Result<SessionInfo> {
        if spec.profile.is_none() {
            spec.profile = self
                .link
                .as_ref()
                .and_then(|l| l.options().default_profile.clone());
        }
        self.create_exactly(spec).await
    }

    /// [`SessionManager::create`] with the binding exactly as `spec` gives it (a fork or a
    /// split keeps its source's, unbound included).
    async fn create_exactly(&self, spec: NewSession) -> Result<SessionInfo> {
        if let Some(profile) = &spec.profile {
            memory_core::validate_profile_name(profile)?;
        }
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

    /// Inserts a session record exactly as exported (times, usage, source, end reason kept);
    /// false, and nothing changed, when the session exists. A parent session this
    /// deployment does not have is dropped from the record.
    pub async fn restore(&self, info: &SessionInfo) -> Result<bool> {
        let mut info = info.clone();
        if let Some(parent) = &info.parent_session_id
            && self.registry.get(parent).await?.is_none()
        {
            info.parent_session_id = None;
        }
        self.registry.restore(&info).await
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

    /// Deletes a session and everything stored for it: messages, overlay records, search
    /// entries, per-session blocks, the cached prompt, the loaded skills, and its record.
    /// Shared blocks stay. Not-found if the session is not registered.
    pub async fn delete(&self, id: &SessionId) -> Result<()> {
        self.require(id).await?;
        // An archived session's archive goes with it (brought back, then cleared below).
        self.rehydrate(id).await?;
        self.store.clear(id).await?;
        self.context.delete_session(id).await?;
        if let Some(link) = &self.link {
            link.forget_session(id).await?;
        }
        self.registry.delete(id).await?;
        self.cached().remove(id.as_str());
        info!(session = %id, "session deleted");
        Ok(())
    }

    /// A handle on a registered session, with its context blocks. Not-found if it is not
    /// registered. Handles are cached, so the frozen prompt of a session is one value.
    pub async fn session(&self, id: &SessionId) -> Result<Session> {
        if self.rehydrate(id).await? {
            self.forget_handle(id);
        }
        if let Some(session) = self.cached().get(id.as_str(), Instant::now()) {
            return Ok(session);
        }
        self.require(id).await?;
        let blocks = Arc::new(self.context.blocks_for(id)?);
        let mut session = Session::new(self.store.clone(), id.clone()).with_context(blocks);
        if let Some(search) = &self.search {
            session = session.with_search(search.clone());
        }
        if let Some(settings) = &self.compaction {
            session = session.with_compaction(settings.clone());
        }
        if let Some(link) = &self.link {
            session = session.with_link(link.clone());
        }
        let mut cached = self.cached();
        if let Some(first) = cached.get(id.as_str(), Instant::now()) {
            return Ok(first);
        }
        // With every kept handle in use, this one is not kept: its frozen prompt is the
        // prompt store's, as another process's handle's would be.
        if cached.make_room(Session::in_use).is_ok() {
            cached.insert(id.as_str(), session.clone(), Instant::now());
        }
        Ok(session)
    }

    /// Runs `write` and touches the session beside it, not after it, naming it `name` (see
    /// [`title_of`]) if it has no name, in the same write: a registry
    /// that shares the store's writer commits both in one transaction (SQLite's group
    /// commit), so a write costs one commit to wait for and no read. A write that fails may
    /// still have moved `updated_at` and named the session (an attempt is activity too).
    async fn touching<T>(
        &self,
        id: &SessionId,
        name: Option<String>,
        write: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        let (written, touched) = futures::join!(
            write,
            self.registry.touch_and_name(id, self.clock.now(), name)
        );
        let written = written?;
        touched?;
        Ok(written)
    }

    /// Appends to a registered session and touches it.
    pub async fn append(
        &self,
        id: &SessionId,
        message: UiMessage,
        parent: Parent,
    ) -> Result<AppendReport> {
        let session = self.session(id).await?;
        self.touching(id, title_of([&message]), session.append_to(message, parent))
            .await
    }

    /// Appends a chain of messages (continuing from `parent`, the latest leaf by default).
    pub async fn append_all(
        &self,
        id: &SessionId,
        messages: Vec<UiMessage>,
        parent: Parent,
    ) -> Result<Vec<AppendOutcome>> {
        let session = self.session(id).await?;
        self.touching(
            id,
            title_of(&messages),
            session.append_all(messages, parent),
        )
        .await
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
        let session = self.session(id).await?;
        self.touching(id, title_of([&message]), session.upsert(message, parent))
            .await
    }

    /// Deletes messages of a registered session and touches it.
    pub async fn delete_messages(&self, id: &SessionId, ids: &[String]) -> Result<u64> {
        let deleted = self.session(id).await?.delete(ids).await?;
        self.registry.touch(id, self.clock.now()).await?;
        Ok(deleted)
    }

    /// Forks a session at a message: a new session (linked by `parent_session_id`, same
    /// model and source) holding a copy of the root-to-`at` path with the same message ids.
    pub async fn fork(
        &self,
        id: &SessionId,
        at: &str,
        name: Option<String>,
    ) -> Result<SessionInfo> {
        let source = self.require(id).await?;
        self.rehydrate(id).await?;
        let path = self.store.history(id, Some(at.to_owned())).await?;
        let info = self
            .create_exactly(NewSession {
                id: None,
                name: name.or_else(|| source.name.clone()),
                parent_session_id: Some(id.clone()),
                model: source.model.clone(),
                source: source.source.clone(),
                profile: source.profile.clone(),
            })
            .await?;
        // What the source shipped of the copied path counts as shipped by the fork too, so
        // ending or compacting the fork does not ingest the shared prefix again.
        if let Some(link) = &self.link {
            let ids: Vec<String> = path.iter().map(|m| m.id.clone()).collect();
            link.inherit_shipped(id, &info.id, &ids).await?;
        }
        let mut batch = Vec::with_capacity(path.len());
        let mut previous: Option<String> = None;
        for message in path {
            let parent = previous.take().map_or(Parent::Root, Parent::Message);
            previous = Some(message.id.clone());
            batch.push(NewMessage::with_parent(message, parent));
        }
        self.store.append(&info.id, batch).await?;
        self.registry.touch(&info.id, self.clock.now()).await?;
        info!(from = %id, to = %info.id, at, "session forked");
        self.require(&info.id).await
    }

    /// Ends a session (`end_reason = compaction`) and opens a linked one (same model and
    /// source) seeded with an assistant message `[Context from previous session]` and the
    /// summary. Returns the new session.
    pub async fn compact_and_split(
        &self,
        id: &SessionId,
        summary: &str,
        name: Option<String>,
    ) -> Result<SessionInfo> {
        let old = self.require(id).await?;
        // The old session ends here: what it had not shipped to its profile goes now (a
        // failure is logged and the history ships with a later `end` of it).
        if let (Some(profile), Some(link)) = (&old.profile, &self.link)
            && let Err(e) = link
                .ship_selection(profile, id, &ShipSelection::default())
                .await
        {
            tracing::warn!(session = %id, error = %e, "the split session's history was not shipped");
        }
        let patch = SessionPatch {
            end_reason: Some("compaction".into()),
            ..SessionPatch::default()
        };
        self.registry.update(id, &patch, self.clock.now()).await?;
        let info = self
            .create_exactly(NewSession {
                id: None,
                name: name.or(old.name).or_else(|| Some("Compacted".into())),
                parent_session_id: Some(id.clone()),
                model: old.model,
                source: old.source,
                profile: old.profile,
            })
            .await?;
        let seed = UiMessage::text_message(
            format!("context-from-{id}"),
            Role::Assistant,
            format!("[Context from previous session]\n\n{summary}"),
        );
        self.append(&info.id, seed, Parent::Root).await?;
        self.require(&info.id).await
    }

    /// Adds token usage and cost to a session.
    pub async fn add_usage(&self, id: &SessionId, usage: SessionUsage) -> Result<SessionInfo> {
        self.registry.add_usage(id, usage, self.clock.now()).await
    }

    /// Full-text search; across every session unless the query names one. Hits carry their
    /// session id.
    pub async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        match &self.search {
            Some(search) => search.search(query).await,
            None => Err(crate::message_search::no_index(self.store.as_ref())),
        }
    }

    /// The manager's own tool: `session_search` over every session.
    pub fn tools(&self) -> Vec<ToolDefinition> {
        vec![ToolDefinition {
            name: SESSION_SEARCH.into(),
            description:
                "Search past conversations for relevant context. Searches across all sessions."
                    .into(),
            parameters: json!({
                "type": "object",
                "properties": {"query": {"type": "string", "description": "Search query"}},
                "required": ["query"]
            }),
        }]
    }

    /// Runs `session_search`: hits formatted `[role] content`, joined by `\n---\n`, at most
    /// 10; `None` when `name` is not the manager's tool. Failures come back as `Error: ...`.
    pub async fn execute_tool(&self, name: &str, arguments: &Value) -> Option<String> {
        if name != SESSION_SEARCH {
            return None;
        }
        #[derive(Deserialize)]
        struct Args {
            query: String,
        }
        let result = match Args::deserialize(arguments) {
            Err(e) => Err(MemoryError::invalid(format!(
                "invalid arguments for {SESSION_SEARCH}: {e}"
            ))),
            Ok(args) => self.search(&SearchQuery::new(args.query).limit(10)).await,
        };
        Some(match result {
            Ok(hits) if hits.is_empty() => "No results found.".to_owned(),
            Ok(hits) => crate::context::bounded_tool_result(
                hits.iter()
                    .map(|h| format!("[{}] {}", h.role, h.content))
                    .collect::<Vec<_>>()
                    .join("\n---\n"),
            ),
            Err(e) => format!("Error: {e}"),
        })
    }

    async fn require(&self, id: &SessionId) -> Result<SessionInfo> {
        self.registry
            .get(id)
            .await?
            .ok_or_else(|| MemoryError::not_found("session", id.as_str()))
    }
}

/// The name of the manager's cross-session search tool.
pub const SESSION_SEARCH: &str = "session_search";
