//! # memory-compose
//!
//! The composition root: every binary (the `memory` CLI, the examples, later the server)
//! builds its services here, from `memory.toml`. `[storage]` names the backend of each role;
//! this crate opens it (each adapter behind a Cargo feature, so a deployment compiles only
//! what it uses) and hands the ports to the engine's services. Agent code sees only
//! [`SessionManager`] and [`MemoryService`]: swapping a backend is a configuration change.
//!
//! ```no_run
//! # async fn demo() -> Result<(), memory_compose::ComposeError> {
//! let deployment = memory_compose::Deployment::open(std::path::Path::new("./memory-data"))?;
//! let sessions = deployment.session_manager().await?;
//! let (long_term, _note) = deployment.memory_service().await?;
//! # Ok(()) }
//! ```
//!
//! A role whose backend this build leaves out is [`ComposeError::NotBuilt`]; a backend no
//! adapter serves yet is [`ComposeError::NotAvailable`]: never a silent fallback.

#[cfg(feature = "sqlite")]
pub mod backup;
mod blocks;

/// The README's Rust quickstart, run as a doc test so that the front page stays true.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeQuickstart;
mod catalogue;
mod error;
mod models;
mod storage;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use memory_config::{MemoryConfig, MemoryToolConfig, StorageConfig};
use memory_core::ports::{Clock, SystemClock};
use memory_engine::SessionManager;
use memory_engine::compaction::{CompactorOptions, SummarizingCompactor};
use memory_engine::long_term::{
    Category, KindLifetimes, LongTermBackends, LongTermConfig, MemoryService, ProfileSettings,
    StageModels,
};
use memory_engine::profile_link::{LinkOptions, MemoryTool};

pub use blocks::token_counter;
#[cfg(feature = "onnx-embedder")]
pub use catalogue::model_dir;
pub use catalogue::{RerankerChoiceResult, fetch_model, reranker};
pub use error::{ComposeError, Result};
/// The local catalogue of embedders and rerankers by name (`memory models list`).
#[cfg(feature = "onnx-embedder")]
pub use memory_onnx::catalogue as model_catalogue;
pub use models::{
    EmbedderChoiceResult, Int8Fetch, chat_model, chat_models, embedder, fetch_int8_model,
    fetch_local_model,
};

use storage::Stores;

/// One deployment: its configuration and the backends it opened.
pub struct Deployment {
    config: MemoryConfig,
    data_dir: PathBuf,
    stores: Stores,
    clock: Arc<dyn Clock>,
}

impl Deployment {
    /// The deployment of `<data_dir>/memory.toml` (the embedded default when it is absent).
    pub fn open(data_dir: &Path) -> Result<Self> {
        Ok(Self::with_config(
            MemoryConfig::load_dir(data_dir)?,
            data_dir,
        ))
    }

    /// A deployment of an explicit configuration; `data_dir` holds whatever is embedded.
    pub fn with_config(config: MemoryConfig, data_dir: &Path) -> Self {
        let storage = config.storage(data_dir);
        Self {
            config,
            data_dir: data_dir.to_owned(),
            stores: Stores::new(storage),
            clock: Arc::new(SystemClock),
        }
    }

    /// Everything embedded under `data_dir`, long-term profiles under `profiles`, and the
    /// Tantivy indexes (when text is on Tantivy) under `profiles/tantivy` (the eval and the
    /// benchmarks use scratch directories this way).
    pub fn with_profiles_dir(config: MemoryConfig, data_dir: &Path, profiles: &Path) -> Self {
        let mut deployment = Self::with_config(config, data_dir);
        let mut storage = deployment.stores.storage().clone();
        storage.sqlite.profiles = profiles.to_owned();
        if let Some(tantivy) = &mut storage.tantivy {
            tantivy.path = profiles.join("tantivy");
        }
        deployment.stores = Stores::new(storage);
        deployment
    }

    /// The same deployment narrowed to one tenant ([`StorageConfig::for_tenant`]): the
    /// tenant's own files, schema and key prefixes, opened separately, so no service of one
    /// tenant can reach another's data.
    pub fn for_tenant(&self, tenant: &memory_config::TenantName) -> Self {
        Self {
            config: self.config.clone(),
            data_dir: self.data_dir.clone(),
            stores: Stores::new(self.stores.storage().for_tenant(tenant)),
            clock: Arc::clone(&self.clock),
        }
    }

    /// The same deployment binding new sessions to `profile` (a tenant's default, from its
    /// API keys), in place of `[sessions] profile`.
    pub fn with_session_profile(mut self, profile: Option<String>) -> Self {
        if profile.is_some() {
            self.config.sessions.profile = profile;
        }
        self
    }

    /// The configuration.
    pub fn config(&self) -> &MemoryConfig {
        &self.config
    }

    /// Where each role lives.
    pub fn storage(&self) -> &StorageConfig {
        self.stores.storage()
    }

    /// Sentences about the opened backends whose acknowledged writes a crash can lose (Redis
    /// without `appendfsync always`, read from the server when it connected); empty when
    /// every opened backend keeps every acknowledged write.
    pub fn durability_warnings(&self) -> Vec<String> {
        self.stores.durability_warnings()
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// True when `[llm]` is configured (compaction and extraction available).
    pub fn has_llm(&self) -> bool {
        self.config.llm.is_some()
    }

    /// The two tiers as one memory: the session tier linked to long-term memory (sessions
    /// bound to a profile ship their history there, get `recall` and `remember` among their
    /// tools, and show the profile in a `profile` block, declared or added by default;
    /// `[sessions]` sets the default binding, the tools and the default block), and the
    /// long-term service itself. The note says what is off.
    pub async fn services(&self) -> Result<(SessionManager, MemoryService, Option<String>)> {
        let (memory, note) = self.memory_service().await?;
        let sessions = &self.config.sessions;
        let options = LinkOptions {
            default_profile: sessions.profile.clone(),
            tools: sessions
                .memory_tools
                .iter()
                .map(|tool| match tool {
                    MemoryToolConfig::Recall => MemoryTool::Recall,
                    MemoryToolConfig::Remember => MemoryTool::Remember,
                    MemoryToolConfig::Forget => MemoryTool::Forget,
                })
                .collect(),
            profile_block: sessions
                .profile_block
                .then_some(sessions.profile_block_tokens),
            ..LinkOptions::default()
        };
        let manager = self.session_tier().await?.with_long_term(
            memory.clone(),
            self.stores.key_value().await?,
            options,
        )?;
        Ok((manager, memory, note))
    }

    /// The session tier ([`Deployment::services`]' sessions): history, search, context
    /// blocks, compaction when `[llm]` is configured, and the link to long-term memory.
    pub async fn session_manager(&self) -> Result<SessionManager> {
        Ok(self.services().await?.0)
    }

    /// The session tier on its own, before long-term memory is linked.
    async fn session_tier(&self) -> Result<SessionManager> {
        let store = self.stores.message_store().await?;
        let registry = self.stores.session_registry().await?;
        let kv = self.stores.key_value().await?;
        let skills = self.stores.skill_store().await?;
        let wiring = blocks::wiring(
            &self.config,
            Arc::clone(&kv),
            self.stores.general_index().await?,
            &|label| Ok(skills(label)),
        )?;
        let counter = Arc::clone(&wiring.counter);
        let mut manager = SessionManager::new(store, registry, Arc::clone(&self.clock))
            .with_context(wiring)
            .with_search(self.stores.message_index().await?, Arc::clone(&kv))
            .with_archive(self.stores.blob_store().await?, kv);
        if let Some(llm) = &self.config.llm {
            let compaction = &self.config.compaction;
            let options = CompactorOptions {
                protect_head: compaction.protect_head,
                tail_token_budget: compaction.tail_token_budget,
                min_tail_messages: compaction.min_tail_messages,
                model: None,
                affinity_header: match &self.config.memory.affinity_header {
                    Some(header) => (!header.is_empty()).then(|| header.clone()),
                    None => CompactorOptions::default().affinity_header,
                },
            };
            let compactor = SummarizingCompactor::new(chat_model(llm, None)?, options);
            let mut settings =
                memory_engine::CompactionSettings::new(Arc::new(compactor)).counter(counter);
            settings.threshold = compaction.compact_after;
            manager = manager.with_compaction(settings);
        }
        // Index updates a crash left in the outbox are replayed at start (and again before
        // any search, so a failure here only delays them).
        match manager.catch_up_search().await {
            Ok(0) => {}
            Ok(replayed) => tracing::info!(replayed, "message index caught up at start"),
            Err(e) => {
                tracing::warn!(error = %e, "message index catch-up failed; retried at the next search")
            }
        }
        Ok(manager)
    }

    /// The text index holding the `messages` namespace, as session search uses it (the
    /// store's own when it writes one, as SQLite beside SQLite does; then its writes are
    /// `NotSupported`).
    pub async fn message_text_index(&self) -> Result<Arc<dyn memory_core::ports::TextIndex>> {
        self.stores.message_index().await
    }

    /// The blob store of `[storage] blobs` (a directory by default, or an S3 bucket).
    pub async fn blob_store(&self) -> Result<Arc<dyn memory_core::ports::BlobStore>> {
        self.stores.blob_store().await
    }

    /// The blob store and key of a location `s3://bucket/key` (reached like `[storage.s3]`),
    /// for moving exports between deployments through a bucket; `None` when `location` is not
    /// an `s3://` URL.
    pub async fn remote_blob(
        &self,
        location: &str,
    ) -> Result<Option<(Arc<dyn memory_core::ports::BlobStore>, String)>> {
        let Some(rest) = location.strip_prefix("s3://") else {
            return Ok(None);
        };
        let Some((bucket, key)) = rest.split_once('/') else {
            return Err(ComposeError::Invalid(format!(
                "{location}: write s3://BUCKET/KEY"
            )));
        };
        memory_core::ports::validate_blob_key(key)?;
        #[cfg(feature = "s3")]
        {
            Ok(Some((
                self.stores.bucket_blobs(bucket).await?,
                key.to_owned(),
            )))
        }
        #[cfg(not(feature = "s3"))]
        {
            let _ = bucket;
            Err(ComposeError::NotBuilt {
                role: memory_config::Role::Blobs,
                backend: memory_config::Backend::S3,
            })
        }
    }

    /// Backs up the deployment into its blob store (see [`backup`]): file copies of the
    /// SQLite databases when every role is on SQLite (the profiles' text may be on Tantivy:
    /// it is rebuilt from the records after a restore), else every session and profile as
    /// export lines. Keeps the newest `keep` backups when given.
    #[cfg(feature = "sqlite")]
    pub async fn backup(&self, keep: Option<usize>) -> Result<backup::BackupManifest> {
        Ok(backup::backup(self, keep).await?)
    }

    /// Every complete backup in the blob store, oldest first.
    #[cfg(feature = "sqlite")]
    pub async fn backups(&self) -> Result<Vec<backup::BackupManifest>> {
        let blobs = self.blob_store().await?;
        Ok(backup::list(blobs.as_ref()).await?)
    }

    /// Restores backup `id` (the newest when `None`) from the blob store into the empty data
    /// directory `into`.
    #[cfg(feature = "sqlite")]
    pub async fn restore(&self, id: Option<&str>, into: &Path) -> Result<backup::BackupManifest> {
        let blobs = self.blob_store().await?;
        Ok(backup::restore(blobs.as_ref(), id, into).await?)
    }

    /// The long-term tier's backends.
    pub async fn long_term_backends(&self) -> Result<LongTermBackends> {
        let backends = LongTermBackends::from_parts(
            self.stores.profile_records().await?,
            self.stores.profile_text().await?,
            self.stores.profile_vectors().await?,
            self.stores.jobs().await?,
            self.stores.long_term_key_value().await?,
        );
        #[cfg(feature = "sqlite")]
        let backends = match self.stores.small_profile_text() {
            Some(small) => backends.with_small_profile_text(small),
            None => backends,
        };
        Ok(backends)
    }

    /// Loads a profile's vectors and, on SQLite, waits until their approximate graphs are
    /// built, so the next recall does not scan exactly: a warm-up before serving load.
    pub async fn prepare_vectors(&self, profile: &str) -> Result<()> {
        self.stores.prepare_vectors(profile).await
    }

    /// Long-term memory with the embedder and per-stage models `memory.toml` names. The
    /// note says what is off, if anything.
    pub async fn memory_service(&self) -> Result<(MemoryService, Option<String>)> {
        let mut service =
            MemoryService::new(self.long_term_backends().await?, Arc::clone(&self.clock));
        let (embedder, note) = embedder(&self.config)?;
        if let Some(e) = embedder {
            service = service.with_embedder(e);
        }
        let (reranker, rerank_note) = reranker(&self.config)?;
        if let Some(r) = reranker {
            service = service.with_reranker(r);
        }
        let note = match (note, rerank_note) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        if let Some(llm) = &self.config.llm {
            let (small, large) = (
                &self.config.memory.extraction_model,
                &self.config.memory.synthesis_model,
            );
            let models = if small == large {
                StageModels::all(chat_model(llm, small.as_deref())?)
            } else {
                let mut pair = chat_models(llm, &[small.as_deref(), large.as_deref()])?;
                match (pair.pop(), pair.pop()) {
                    (Some(large), Some(small)) => StageModels::split(small, large),
                    _ => return Err(ComposeError::Invalid("two chat models expected".into())),
                }
            };
            service = service.with_models(models);
        }
        let mut long_term = LongTermConfig::default();
        let lifetime = |d: Option<std::time::Duration>| {
            d.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        };
        let lifetimes = &self.config.memory.lifetimes;
        long_term.lifetimes = KindLifetimes {
            fact: lifetime(lifetimes.fact),
            event: lifetime(lifetimes.event),
            instruction: lifetime(lifetimes.instruction),
            task: lifetime(lifetimes.task),
        };
        if let Some(header) = &self.config.memory.affinity_header {
            long_term.affinity_header = (!header.is_empty()).then(|| header.clone());
        }
        let memory = &self.config.memory;
        if let Some(depth) = memory.rerank_depth {
            long_term.rerank_depth = depth;
        }
        if let Some(after) = memory.consolidate_after {
            long_term.consolidate_after = after;
        }
        long_term.settings = ProfileSettings {
            instructions: memory.instructions.clone(),
            categories: memory
                .categories
                .iter()
                .map(|c| Category {
                    name: c.name.clone(),
                    description: c.description.clone(),
                })
                .collect(),
            language: memory.language.clone(),
        }
        .validated()
        .map_err(|e| ComposeError::Invalid(format!("[memory] in memory.toml: {e}")))?;
        Ok((service.with_config(long_term), note))
    }

    /// Closes every backend that was opened.
    pub async fn close(&self) {
        self.stores.close().await;
    }
}
