//! Declaring blocks once and wiring them for each session.

use std::sync::Arc;

use memory_core::ports::{BlockProvider, KeyValueStore, TextIndex, TokenCounter};
use memory_core::{BlockScope, HeuristicTokenCounter, MemoryError, Result, SessionId};

use super::blocks::{BlockConfig, ContextBlocks};
use super::providers::{IndexedEntries, KvBlock};

/// Storage keys and namespaces used for auto-wired blocks and per-session state.
pub mod keys {
    use memory_core::{BlockScope, SessionId};

    /// Prefix of everything stored for one session. Also the start of the keys of a session
    /// whose id extends this one's after a `:`: delete by exact key
    /// ([`ContextWiring::session_keys`](super::ContextWiring::session_keys)), never by prefix.
    pub fn session_prefix(session: &SessionId) -> String {
        format!("session:{session}:")
    }

    /// Key (or search namespace) of an auto-wired block.
    pub fn block(scope: BlockScope, session: &SessionId, label: &str) -> String {
        match scope {
            BlockScope::Session => format!("session:{session}:block:{label}"),
            BlockScope::Shared => format!("shared:block:{label}"),
        }
    }

    /// Key of a session's frozen prompt.
    pub fn prompt(session: &SessionId) -> String {
        format!("session:{session}:prompt")
    }

    /// Key of a session's loaded-skill set.
    pub fn loaded_skills(session: &SessionId) -> String {
        format!("session:{session}:loaded_skills")
    }
}

/// Where a declared block's content comes from.
#[derive(Debug, Clone)]
pub enum BlockSource {
    /// A writable block stored in the key-value store (auto-wired).
    KeyValue,
    /// Searchable keyed entries in the search index (auto-wired).
    Index,
    /// An explicit provider (read-only text, a file, a skill directory, ...), the same for
    /// every session.
    Provider(BlockProvider),
    /// The long-term profile the session is bound to, read-only: the wiring's
    /// [`ProfileBlocks`] makes each session's provider.
    Profile,
}

/// Makes the read-only block that shows a session's bound profile (the engine's
/// `ProfileLink` is one), so the context module needs no knowledge of long-term memory.
pub trait ProfileBlocks: Send + Sync {
    /// The provider of `session`'s profile block, within `max_tokens` when given.
    fn provider(&self, session: &SessionId, max_tokens: Option<usize>) -> BlockProvider;
}

/// A block declaration, shared by every session of a `SessionManager`.
///
/// ```
/// use memory_engine::context::BlockSpec;
/// let memory = BlockSpec::writable("memory").description("Learned facts").max_tokens(1100);
/// let shared = BlockSpec::writable("user").shared();
/// # let _ = (memory, shared);
/// ```
#[derive(Debug, Clone)]
pub struct BlockSpec {
    /// Label.
    pub label: String,
    /// Description.
    pub description: Option<String>,
    /// Token budget.
    pub max_tokens: Option<usize>,
    /// Default content of a writable block.
    pub default_content: Option<String>,
    /// Per session or shared.
    pub scope: BlockScope,
    /// Where the content comes from.
    pub source: BlockSource,
}

impl BlockSpec {
    fn new(label: impl Into<String>, source: BlockSource) -> Self {
        Self {
            label: label.into(),
            description: None,
            max_tokens: None,
            default_content: None,
            scope: BlockScope::Session,
            source,
        }
    }

    /// A writable block in the key-value store.
    pub fn writable(label: impl Into<String>) -> Self {
        Self::new(label, BlockSource::KeyValue)
    }

    /// A searchable block in the search index.
    pub fn searchable(label: impl Into<String>) -> Self {
        Self::new(label, BlockSource::Index)
    }

    /// A read-only block showing the session's bound profile (its current instructions,
    /// keyed facts and open tasks, within the token budget).
    pub fn profile(label: impl Into<String>) -> Self {
        Self::new(label, BlockSource::Profile)
    }

    /// A block with an explicit provider.
    pub fn provider(label: impl Into<String>, provider: BlockProvider) -> Self {
        Self::new(label, BlockSource::Provider(provider))
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the token budget.
    pub fn max_tokens(mut self, max_tokens: usize) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets the default content.
    pub fn default_content(mut self, content: impl Into<String>) -> Self {
        self.default_content = Some(content.into());
        self
    }

    /// Makes the block one value shared by every session that declares it.
    pub fn shared(mut self) -> Self {
        self.scope = BlockScope::Shared;
        self
    }
}

/// The ports auto-wired blocks and per-session state use.
#[derive(Clone)]
pub struct ContextWiring {
    /// Writable blocks, frozen prompts and loaded-skill sets.
    pub kv: Option<Arc<dyn KeyValueStore>>,
    /// Searchable blocks.
    pub index: Option<Arc<dyn TextIndex>>,
    /// Token counting for budgets and estimates.
    pub counter: Arc<dyn TokenCounter>,
    /// Block declarations, in prompt order.
    pub specs: Vec<BlockSpec>,
    /// Profile blocks (set by `SessionManager::with_long_term`).
    pub profiles: Option<Arc<dyn ProfileBlocks>>,
}

impl Default for ContextWiring {
    fn default() -> Self {
        Self {
            kv: None,
            index: None,
            counter: Arc::new(HeuristicTokenCounter),
            specs: Vec::new(),
            profiles: None,
        }
    }
}

impl ContextWiring {
    /// Builds one session's blocks: auto-wired providers get session- or shared-scoped keys;
    /// the frozen prompt and loaded skills persist when a key-value store is wired.
    pub fn blocks_for(&self, session: &SessionId) -> Result<ContextBlocks> {
        let mut configs = Vec::with_capacity(self.specs.len());
        for spec in &self.specs {
            let provider = match &spec.source {
                BlockSource::KeyValue => {
                    let kv = self.kv.clone().ok_or_else(|| {
                        MemoryError::invalid(format!(
                            "block {:?} is stored in the key-value store, but none is configured",
                            spec.label
                        ))
                    })?;
                    let key = keys::block(spec.scope, session, &spec.label);
                    BlockProvider::Writable(Arc::new(KvBlock::new(kv, key)))
                }
                BlockSource::Index => {
                    let index = self.index.clone().ok_or_else(|| {
                        MemoryError::invalid(format!(
                            "block {:?} is searchable, but no search index is configured",
                            spec.label
                        ))
                    })?;
                    let namespace = keys::block(spec.scope, session, &spec.label);
                    BlockProvider::Searchable(Arc::new(IndexedEntries::new(index, namespace)))
                }
                BlockSource::Provider(provider) => provider.clone(),
                BlockSource::Profile => {
                    let profiles = self.profiles.as_ref().ok_or_else(|| {
                        MemoryError::invalid(format!(
                            "block {:?} shows the session's long-term profile, but no long-term memory is wired",
                            spec.label
                        ))
                    })?;
                    profiles.provider(session, spec.max_tokens)
                }
            };
            configs.push(BlockConfig {
                label: spec.label.clone(),
                description: spec.description.clone(),
                max_tokens: spec.max_tokens,
                default_content: spec.default_content.clone(),
                scope: spec.scope,
                provider,
            });
        }
        let mut blocks = ContextBlocks::new(configs)?.with_token_counter(self.counter.clone());
        if let Some(kv) = &self.kv {
            blocks = blocks
                .with_prompt_store(kv.clone(), keys::prompt(session))
                .with_loaded_skills_store(kv.clone(), keys::loaded_skills(session));
        }
        Ok(blocks)
    }

    /// The key-value entries one session owns: its frozen prompt, its loaded skills and its
    /// declared session-scoped writable blocks. Exact keys, never a prefix: a session id may
    /// hold `:`, so `session:a:` is also the start of session `a:b`'s keys.
    pub fn session_keys(&self, session: &SessionId) -> Vec<String> {
        let mut owned = vec![keys::prompt(session), keys::loaded_skills(session)];
        for spec in &self.specs {
            if matches!(spec.source, BlockSource::KeyValue) && spec.scope == BlockScope::Session {
                owned.push(keys::block(spec.scope, session, &spec.label));
            }
        }
        owned
    }

    /// The key-value entries of the declared shared-scope writable blocks.
    pub fn shared_keys(&self) -> Vec<String> {
        let any = SessionId::new("shared").map_err(|_| ()).ok();
        self.specs
            .iter()
            .filter(|spec| {
                matches!(spec.source, BlockSource::KeyValue) && spec.scope == BlockScope::Shared
            })
            .filter_map(|spec| {
                any.as_ref()
                    .map(|s| keys::block(spec.scope, s, &spec.label))
            })
            .collect()
    }

    /// Removes everything stored for one session: its key-value entries (blocks, prompt,
    /// loaded skills: [`session_keys`](Self::session_keys)) and its searchable blocks'
    /// namespaces. Shared values stay, and so does every other session's.
    pub async fn delete_session(&self, session: &SessionId) -> Result<()> {
        if let Some(kv) = &self.kv {
            for key in self.session_keys(session) {
                kv.delete(&key).await?;
            }
        }
        if let Some(index) = &self.index {
            for spec in &self.specs {
                if matches!(spec.source, BlockSource::Index) && spec.scope == BlockScope::Session {
                    index
                        .clear(&keys::block(spec.scope, session, &spec.label))
                        .await?;
                }
            }
        }
        Ok(())
    }
}
