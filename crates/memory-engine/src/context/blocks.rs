use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};

use memory_core::ports::{BlockProvider, KeyValueStore, TokenCounter};
use memory_core::size::check_item_size;
use memory_core::{
    BlockKind, BlockScope, ContextBlock, HeuristicTokenCounter, MemoryError, Result,
};

use super::error::BlockError;
use super::keys::entry_key;
use super::render::render_prompt;

/// Attempts of an append that loses the race to another writer before it is a
/// [`MemoryError::Conflict`].
pub const APPEND_ATTEMPTS: usize = 16;

/// One declared block: its metadata and its provider.
#[derive(Debug, Clone)]
pub struct BlockConfig {
    /// Label (unique within a session).
    pub label: String,
    /// One-line description shown in the header and the tool description.
    pub description: Option<String>,
    /// Token budget enforced on every write.
    pub max_tokens: Option<usize>,
    /// Content a writable block starts with (and returns to after a reset).
    pub default_content: Option<String>,
    /// Where the value lives.
    pub scope: BlockScope,
    /// What reads and writes it.
    pub provider: BlockProvider,
}

impl BlockConfig {
    /// A block with this label and provider and nothing else.
    pub fn new(label: impl Into<String>, provider: BlockProvider) -> Self {
        Self {
            label: label.into(),
            description: None,
            max_tokens: None,
            default_content: None,
            scope: BlockScope::Session,
            provider,
        }
    }

    /// The kind implied by the provider.
    pub fn kind(&self) -> BlockKind {
        match self.provider {
            BlockProvider::ReadOnly(_) => BlockKind::ReadOnly,
            BlockProvider::Writable(_) => BlockKind::Writable,
            BlockProvider::Searchable(_) => BlockKind::Searchable,
            BlockProvider::Skill(_) => BlockKind::Skill,
        }
    }
}

/// The result of unloading a skill: which `label:key` left the loaded set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unloaded {
    /// The skill block.
    pub label: String,
    /// The skill key.
    pub key: String,
}

/// What an instance keeps in memory: only what no store holds for it. With a prompt store
/// (and a loaded-skill store) wired, nothing mutable is kept here, so several processes
/// sharing the stores see one frozen prompt and one loaded set.
#[derive(Default)]
struct State {
    /// The frozen prompt, when no prompt store is wired.
    snapshot: Option<String>,
    /// `label:key` of loaded skills, when no loaded-skill store is wired.
    loaded: BTreeSet<String>,
}

/// A session's context blocks.
///
/// Writes go to the providers at once and never change the frozen prompt; the prompt is
/// re-rendered only by [`refresh_system_prompt`](Self::refresh_system_prompt).
///
/// Coherent across processes: block contents are read from their providers on every read
/// (never from a copy another process could have made stale); the frozen prompt and the
/// loaded-skill set live in the key-value store when one is wired, the first freeze and
/// every change of the loaded set by compare-and-set. A refresh or a skill load in one
/// process is what every other process sees next.
pub struct ContextBlocks {
    configs: Vec<BlockConfig>,
    counter: Arc<dyn TokenCounter>,
    prompt_store: Option<(Arc<dyn KeyValueStore>, String)>,
    loaded_store: Option<(Arc<dyn KeyValueStore>, String)>,
    state: Mutex<State>,
}

impl std::fmt::Debug for ContextBlocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextBlocks")
            .field(
                "labels",
                &self.configs.iter().map(|c| &c.label).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl ContextBlocks {
    /// Blocks in declaration order. Duplicate labels are an error.
    pub fn new(configs: Vec<BlockConfig>) -> Result<Self> {
        let mut seen = BTreeSet::new();
        for config in &configs {
            if config.label.is_empty() {
                return Err(MemoryError::invalid("a block label must not be empty"));
            }
            if !seen.insert(config.label.clone()) {
                return Err(MemoryError::invalid(format!(
                    "Block \"{}\" already exists",
                    config.label
                )));
            }
        }
        Ok(Self {
            configs,
            counter: Arc::new(HeuristicTokenCounter),
            prompt_store: None,
            loaded_store: None,
            state: Mutex::new(State::default()),
        })
    }

    /// No blocks: an empty prompt and no tools.
    pub fn empty() -> Self {
        Self {
            configs: Vec::new(),
            counter: Arc::new(HeuristicTokenCounter),
            prompt_store: None,
            loaded_store: None,
            state: Mutex::new(State::default()),
        }
    }

    /// Counts tokens with `counter` instead of the heuristic.
    pub fn with_token_counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.counter = counter;
        self
    }

    /// Persists the frozen prompt under `key`, so a restarted process returns the identical
    /// string without reading the providers.
    pub fn with_prompt_store(mut self, kv: Arc<dyn KeyValueStore>, key: impl Into<String>) -> Self {
        self.prompt_store = Some((kv, key.into()));
        self
    }

    /// Persists the loaded-skill set under `key`, so it survives restarts without a history
    /// scan.
    pub fn with_loaded_skills_store(
        mut self,
        kv: Arc<dyn KeyValueStore>,
        key: impl Into<String>,
    ) -> Self {
        self.loaded_store = Some((kv, key.into()));
        self
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The declared blocks.
    pub fn configs(&self) -> &[BlockConfig] {
        &self.configs
    }

    fn config(&self, label: &str) -> Result<&BlockConfig> {
        self.configs
            .iter()
            .find(|c| c.label == label)
            .ok_or_else(|| {
                let declared: Vec<&str> = self.configs.iter().map(|c| c.label.as_str()).collect();
                MemoryError::not_found(
                    "block",
                    format!("{label:?} (the declared blocks: {})", declared.join(", ")),
                )
            })
    }

    /// `Ok` when a block labelled `label` is declared; otherwise `NotFound` naming the
    /// declared blocks (the model's tools keep the reference wording, "is readonly", for a
    /// write to an unknown block; an API checks this first).
    pub fn require_declared(&self, label: &str) -> Result<()> {
        self.config(label).map(|_| ())
    }

    /// The token counter in use.
    pub fn token_counter(&self) -> &Arc<dyn TokenCounter> {
        &self.counter
    }

    fn block_from(&self, config: &BlockConfig, content: String) -> ContextBlock {
        ContextBlock {
            label: config.label.clone(),
            description: config.description.clone(),
            tokens: self.counter.count(&content),
            content,
            max_tokens: config.max_tokens,
            kind: config.kind(),
            scope: config.scope,
        }
    }

    async fn read(&self, config: &BlockConfig) -> Result<ContextBlock> {
        let mut content = config.provider.get().await?;
        if content.is_none()
            && let (BlockProvider::Writable(p), Some(default)) =
                (&config.provider, &config.default_content)
        {
            // Only where nothing was written: another process's first write wins.
            content = match p.compare_and_set(None, default).await {
                Ok(true) => Some(default.clone()),
                Ok(false) => config.provider.get().await?,
                Err(MemoryError::NotSupported { .. }) => {
                    p.set(default).await?;
                    Some(default.clone())
                }
                Err(e) => return Err(e),
            };
        }
        Ok(self.block_from(config, content.unwrap_or_default()))
    }

    /// Reads every provider (initialising declared defaults).
    pub async fn load(&self) -> Result<Vec<ContextBlock>> {
        let mut blocks = Vec::with_capacity(self.configs.len());
        for config in &self.configs {
            blocks.push(self.read(config).await?);
        }
        Ok(blocks)
    }

    /// Every block, as its provider holds it now.
    pub async fn blocks(&self) -> Result<Vec<ContextBlock>> {
        self.load().await
    }

    /// One block, as its provider holds it now.
    pub async fn get(&self, label: &str) -> Result<ContextBlock> {
        self.read(self.config(label)?).await
    }

    fn writable(
        &self,
        label: &str,
    ) -> Result<(
        &BlockConfig,
        &Arc<dyn memory_core::ports::WritableContextProvider>,
    )> {
        let config = self
            .config(label)
            .map_err(|_| BlockError::read_only(label))?;
        match &config.provider {
            BlockProvider::Writable(p) => Ok((config, p)),
            BlockProvider::ReadOnly(_) => Err(BlockError::read_only(label)),
            BlockProvider::Searchable(_) | BlockProvider::Skill(_) => Err(MemoryError::invalid(
                format!("Block \"{label}\" is a keyed provider. Use set_entry() instead."),
            )),
        }
    }

    fn check_budget(&self, config: &BlockConfig, tokens: usize) -> Result<()> {
        match config.max_tokens {
            Some(max) if tokens > max => Err(MemoryError::refused(BlockError::OverBudget {
                label: config.label.clone(),
                tokens,
                max_tokens: max,
            })),
            _ => Ok(()),
        }
    }

    /// Replaces a writable block's content. Read-only and over-budget writes are typed errors
    /// and change nothing.
    pub async fn replace(&self, label: &str, content: &str) -> Result<ContextBlock> {
        let (config, provider) = self.writable(label)?;
        check_item_size(&format!("block {label:?}"), content.len())?;
        let block = self.block_from(config, content.to_owned());
        self.check_budget(config, block.tokens)?;
        provider.set(content).await?;
        Ok(block)
    }

    /// Appends to a writable block: a newline goes between only when the existing content is
    /// non-empty and the new content does not start with one.
    ///
    /// The append reads the stored content (never this object's cache: another process may
    /// have written since) and writes with compare-and-set, retrying when another writer got
    /// there first, so concurrent appends to a shared block all land. After
    /// [`APPEND_ATTEMPTS`] lost races it is a [`MemoryError::Conflict`] and nothing changed.
    /// A provider without compare-and-set keeps the last writer's content.
    pub async fn append(&self, label: &str, content: &str) -> Result<ContextBlock> {
        let (config, provider) = self.writable(label)?;
        check_item_size(&format!("block {label:?}"), content.len())?;
        for _ in 0..APPEND_ATTEMPTS {
            let stored = provider.get().await?;
            let mut combined = stored
                .clone()
                .or_else(|| config.default_content.clone())
                .unwrap_or_default();
            if !combined.is_empty() && !content.starts_with('\n') {
                combined.push('\n');
            }
            combined.push_str(content);
            check_item_size(&format!("block {label:?}"), combined.len())?;
            let block = self.block_from(config, combined);
            self.check_budget(config, block.tokens)?;
            match provider
                .compare_and_set(stored.as_deref(), &block.content)
                .await
            {
                Ok(true) => return Ok(block),
                Ok(false) => continue,
                Err(MemoryError::NotSupported { .. }) => {
                    provider.set(&block.content).await?;
                    return Ok(block);
                }
                Err(e) => return Err(e),
            }
        }
        Err(MemoryError::Conflict {
            message: format!(
                "block {label:?} changed under {APPEND_ATTEMPTS} attempts to append to it; try again"
            ),
        })
    }

    /// Resets a writable block to its default content (empty without one).
    pub async fn reset(&self, label: &str) -> Result<ContextBlock> {
        let (config, provider) = self.writable(label)?;
        let content = config.default_content.clone().unwrap_or_default();
        provider.set(&content).await?;
        Ok(self.block_from(config, content))
    }

    /// Resets every writable block to its default.
    pub async fn reset_all(&self) -> Result<()> {
        let labels: Vec<String> = self
            .configs
            .iter()
            .filter(|c| c.kind() == BlockKind::Writable)
            .map(|c| c.label.clone())
            .collect();
        for label in labels {
            self.reset(&label).await?;
        }
        Ok(())
    }

    /// Writes a keyed entry (searchable or skill block) and returns its key. The key comes
    /// from the title (same title, same entry) or from the content.
    pub async fn set_entry(
        &self,
        label: &str,
        content: &str,
        title: Option<&str>,
        description: Option<&str>,
    ) -> Result<String> {
        let config = self.config(label)?;
        check_item_size(&format!("entry of block {label:?}"), content.len())?;
        let key = entry_key(title, content);
        match &config.provider {
            BlockProvider::Searchable(p) => p.set_entry(&key, content).await?,
            BlockProvider::Skill(p) => {
                let description = description
                    .or(title)
                    .map(str::to_owned)
                    .filter(|d| !d.trim().is_empty());
                p.set_skill(&key, content, description).await?
            }
            BlockProvider::ReadOnly(_) => {
                return Err(BlockError::read_only(label));
            }
            BlockProvider::Writable(_) => {
                return Err(MemoryError::invalid(format!(
                    "Block \"{label}\" is not keyed. Use replace() or append() instead."
                )));
            }
        }
        Ok(key)
    }

    /// Searches a searchable block; `None` when nothing matches.
    pub async fn search(&self, label: &str, query: &str) -> Result<Option<String>> {
        match &self.config(label)?.provider {
            BlockProvider::Searchable(p) => p.search(query).await,
            _ => Err(MemoryError::invalid(format!(
                "\"{label}\" is not searchable"
            ))),
        }
    }

    /// The loaded set and, with a store, the stored value it was read from.
    async fn loaded_set(&self) -> Result<(BTreeSet<String>, Option<String>)> {
        match &self.loaded_store {
            Some((kv, key)) => {
                let stored = kv.get(key).await?;
                let set = match &stored {
                    Some(json) => serde_json::from_str(json)?,
                    None => BTreeSet::new(),
                };
                Ok((set, stored))
            }
            None => Ok((self.state().loaded.clone(), None)),
        }
    }

    /// Applies `change` to the loaded set (compare-and-set on the store, retried when another
    /// process changed it first); `change` says whether it changed anything.
    async fn change_loaded(&self, change: impl Fn(&mut BTreeSet<String>) -> bool) -> Result<bool> {
        let Some((kv, key)) = &self.loaded_store else {
            return Ok(change(&mut self.state().loaded));
        };
        for _ in 0..APPEND_ATTEMPTS {
            let (mut set, stored) = self.loaded_set().await?;
            if !change(&mut set) {
                return Ok(false);
            }
            if kv
                .compare_and_set(key, stored, &serde_json::to_string(&set)?)
                .await?
            {
                return Ok(true);
            }
        }
        Err(MemoryError::Conflict {
            message: format!(
                "the loaded skills changed under {APPEND_ATTEMPTS} attempts to change them; try again"
            ),
        })
    }

    /// Loads a skill's document and records it as loaded; `None` for an unknown key.
    pub async fn load_skill(&self, label: &str, key: &str) -> Result<Option<String>> {
        let BlockProvider::Skill(provider) = &self.config(label)?.provider else {
            return Err(MemoryError::invalid(format!(
                "\"{label}\" is not a skill block"
            )));
        };
        let Some(content) = provider.load(key).await? else {
            return Ok(None);
        };
        let entry = format!("{label}:{key}");
        self.change_loaded(|set| set.insert(entry.clone())).await?;
        Ok(Some(content))
    }

    /// Removes a skill from the loaded set; `None` when it was not loaded.
    pub async fn unload_skill(&self, label: &str, key: &str) -> Result<Option<Unloaded>> {
        if !matches!(self.config(label)?.provider, BlockProvider::Skill(_)) {
            return Err(MemoryError::invalid(format!(
                "\"{label}\" is not a skill block"
            )));
        }
        let entry = format!("{label}:{key}");
        if !self.change_loaded(|set| set.remove(&entry)).await? {
            return Ok(None);
        }
        Ok(Some(Unloaded {
            label: label.to_owned(),
            key: key.to_owned(),
        }))
    }

    /// `label:key` of every loaded skill, sorted.
    pub async fn loaded_skills(&self) -> Result<Vec<String>> {
        Ok(self.loaded_set().await?.0.into_iter().collect())
    }

    /// Forgets every loaded skill (after the history is cleared).
    pub async fn clear_loaded_skills(&self) -> Result<()> {
        match &self.loaded_store {
            Some((kv, key)) => {
                kv.set(key, &serde_json::to_string(&BTreeSet::<String>::new())?)
                    .await
            }
            None => {
                self.state().loaded.clear();
                Ok(())
            }
        }
    }

    /// The frozen system prompt: rendered once and returned unchanged afterwards, even after
    /// writes (so the provider's prefix cache stays warm). With a prompt store the store holds
    /// it: every process returns the stored string (an empty prompt included) without reading
    /// providers, and when two freeze at once the first stored wins for both.
    pub async fn freeze_system_prompt(&self) -> Result<String> {
        let Some((kv, key)) = &self.prompt_store else {
            if let Some(snapshot) = self.state().snapshot.clone() {
                return Ok(snapshot);
            }
            let prompt = render_prompt(&self.blocks().await?);
            // Concurrent freezes agree: the first snapshot wins.
            return Ok(self.state().snapshot.get_or_insert(prompt).clone());
        };
        if let Some(stored) = kv.get(key).await? {
            return Ok(stored);
        }
        let prompt = render_prompt(&self.blocks().await?);
        if kv.compare_and_set(key, None, &prompt).await? {
            return Ok(prompt);
        }
        // Another process froze it first (or refreshed it meanwhile): its prompt is the one.
        Ok(kv.get(key).await?.unwrap_or(prompt))
    }

    /// Re-reads every provider, re-renders, stores and returns the new frozen prompt.
    pub async fn refresh_system_prompt(&self) -> Result<String> {
        let prompt = render_prompt(&self.load().await?);
        match &self.prompt_store {
            Some((kv, key)) => kv.set(key, &prompt).await?,
            None => self.state().snapshot = Some(prompt.clone()),
        }
        Ok(prompt)
    }

    /// The prompt a refresh would freeze now (every provider read again), never storing it:
    /// compared with the frozen prompt it tells whether that one is stale.
    pub async fn render_current(&self) -> Result<String> {
        Ok(render_prompt(&self.load().await?))
    }

    /// The prompt for token estimates, never storing anything: the frozen prompt if there is
    /// one, else a fresh render.
    pub async fn system_prompt_for_estimate(&self) -> Result<String> {
        let frozen = match &self.prompt_store {
            Some((kv, key)) => kv.get(key).await?,
            None => self.state().snapshot.clone(),
        };
        match frozen {
            Some(prompt) => Ok(prompt),
            None => Ok(render_prompt(&self.blocks().await?)),
        }
    }
}
