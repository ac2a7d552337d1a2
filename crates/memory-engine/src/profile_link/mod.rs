//! One memory for the agent: sessions bound to a long-term profile.
//!
//! A session may name a profile ([`memory_core::SessionInfo::profile`]). For a bound session
//! the [`ProfileLink`] ships history into the profile as durable ingest jobs (at compaction,
//! at the end of the session, and on demand), adds `recall` and `remember` (and, when
//! enabled, `forget`) to the session's tools, and renders the profile's current
//! instructions, then its facts and open tasks by score, into a read-only context block of
//! the frozen prompt. An unbound session behaves as if this module did not exist.
//!
//! The session services call this module; it calls the long-term service beneath it and
//! never the other way round.

mod block;
mod block_score;
mod ship;
mod tools;

use std::sync::Arc;

use memory_core::ports::{KeyValueStore, MessageStore, SessionRegistry, TokenCounter};
use memory_core::{MemoryError, Result, SessionId};

use crate::long_term::MemoryService;

pub use block::{BlockCandidate, BlockChoice, ProfileBlock, choose_profile_block, render_profile};
pub use block_score::{
    BlockScore, SAID_HALF_LIFE_DAYS, SAID_WEIGHT, USED_HALF_LIFE_DAYS, USED_WEIGHT, block_score,
    kind_weight,
};
pub use ship::{ShipReport, ShipSelection};
pub use tools::MemoryTool;

/// Runs a queued ingest job in the background (the server's task tracker, a worker pool).
/// Without one, shipped jobs wait in the queue for `memory worker` or `profile jobs resume`.
pub trait JobRunner: Send + Sync {
    /// Starts running `job_id` of `profile`; must not block.
    fn run(&self, memory: &MemoryService, profile: &str, job_id: &str);
}

/// How sessions meet long-term memory.
#[derive(Clone)]
pub struct LinkOptions {
    /// The profile a new session is bound to when its creator names none.
    pub default_profile: Option<String>,
    /// The memory tools a bound session's model gets.
    pub tools: Vec<MemoryTool>,
    /// How many records the `recall` tool returns when the model asks for no number.
    pub recall_limit: usize,
    /// Runs shipped jobs in the background, when set.
    pub runner: Option<Arc<dyn JobRunner>>,
    /// The token budget of the profile block every session's prompt gets when no declared
    /// block shows the profile (labelled [`DEFAULT_PROFILE_BLOCK`], after the declared ones;
    /// it renders nothing for an unbound session). `None`: no block is added, and only a
    /// declared one shows the profile.
    pub profile_block: Option<usize>,
}

/// The label of the profile block added when none is declared (see
/// [`LinkOptions::profile_block`]).
pub const DEFAULT_PROFILE_BLOCK: &str = "profile";

/// The token budget of the profile block added when none is declared: room for some forty
/// instructions, facts and tasks of a line each, a small part of a model's context.
pub const DEFAULT_PROFILE_BLOCK_TOKENS: usize = 1_000;

impl Default for LinkOptions {
    /// No default profile; `recall` and `remember`; five records a recall; no runner; a
    /// profile block of [`DEFAULT_PROFILE_BLOCK_TOKENS`] when none is declared.
    fn default() -> Self {
        Self {
            default_profile: None,
            tools: vec![MemoryTool::Recall, MemoryTool::Remember],
            recall_limit: 5,
            runner: None,
            profile_block: Some(DEFAULT_PROFILE_BLOCK_TOKENS),
        }
    }
}

impl std::fmt::Debug for LinkOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkOptions")
            .field("default_profile", &self.default_profile)
            .field("tools", &self.tools)
            .field("recall_limit", &self.recall_limit)
            .field("runner", &self.runner.is_some())
            .field("profile_block", &self.profile_block)
            .finish()
    }
}

/// The wiring between the session tier and long-term memory (see the module docs). Built by
/// `SessionManager::with_long_term`; reached through `SessionManager::long_term`.
#[derive(Clone)]
pub struct ProfileLink {
    memory: MemoryService,
    store: Arc<dyn MessageStore>,
    registry: Arc<dyn SessionRegistry>,
    kv: Arc<dyn KeyValueStore>,
    counter: Arc<dyn TokenCounter>,
    options: LinkOptions,
}

impl ProfileLink {
    /// A link over the session tier's ports and the long-term service. `kv` keeps, per
    /// session and profile, which messages were shipped (and their content addresses).
    pub(crate) fn new(
        memory: MemoryService,
        store: Arc<dyn MessageStore>,
        registry: Arc<dyn SessionRegistry>,
        kv: Arc<dyn KeyValueStore>,
        counter: Arc<dyn TokenCounter>,
        options: LinkOptions,
    ) -> Result<Self> {
        if let Some(profile) = &options.default_profile {
            memory_core::validate_profile_name(profile)?;
        }
        Ok(Self {
            memory,
            store,
            registry,
            kv,
            counter,
            options,
        })
    }

    /// The long-term service history ships into.
    pub fn memory(&self) -> &MemoryService {
        &self.memory
    }

    /// The options.
    pub fn options(&self) -> &LinkOptions {
        &self.options
    }

    /// What a bound session's profile block shows of `profile` and why (see
    /// [`choose_profile_block`]), with the link's token counter, within `max_tokens`
    /// (default: the added block's budget, [`LinkOptions::profile_block`]).
    pub async fn block_choice(
        &self,
        profile: &str,
        max_tokens: Option<usize>,
    ) -> Result<BlockChoice> {
        let budget = max_tokens.or(self.options.profile_block);
        choose_profile_block(&self.memory, profile, budget, self.counter.as_ref()).await
    }

    /// The same link running shipped jobs with `runner`.
    pub fn with_runner(mut self, runner: Arc<dyn JobRunner>) -> Self {
        self.options.runner = Some(runner);
        self
    }

    /// The profile `session` is bound to (`None`: unbound). Not-found for an unknown session.
    pub async fn profile_of(&self, session: &SessionId) -> Result<Option<String>> {
        self.registry
            .get(session)
            .await?
            .map(|info| info.profile)
            .ok_or_else(|| MemoryError::not_found("session", session.as_str()))
    }

    /// Starts `job_id` with the runner, when there is one.
    fn start(&self, profile: &str, job_id: &str) {
        if let Some(runner) = &self.options.runner {
            runner.run(&self.memory, profile, job_id);
        }
    }
}

#[cfg(test)]
mod tests;
