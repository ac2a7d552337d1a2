//! Composition root: reads `memory.toml`, picks the adapters (SQLite, local files, the
//! tokenizer) and hands them to the engine's services.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use memory_candle::LocalEmbedder;
use memory_config::{
    BlockKindConfig, BlockSource as ConfigSource, EmbedderChoice, LlmConfig, MemoryConfig,
    TokenizerConfig,
};
use memory_core::ports::{
    BlockProvider, Embedder, KeyValueStore, LanguageModel, MessageStore, SkillStore, SystemClock,
    TextIndex, TokenCounter,
};
use memory_core::{HeuristicTokenCounter, Result, SessionId};
use memory_engine::compaction::{CompactorOptions, SummarizingCompactor};
use memory_engine::context::{BlockSpec, ContextWiring, StoredSkills, TextBlock};
use memory_engine::long_term::{LongTermBackends, LongTermConfig, MemoryService, StageModels};
use memory_engine::{CompactionSettings, SessionManager};
use memory_fs::{FileBlock, MarkdownSkills};
use memory_openai::{OpenAiChat, OpenAiConfig, OpenAiEmbedder};
use memory_sqlite::{
    SqliteConfig, SqliteDatabase, SqliteJobQueue, SqliteKeyValueStore, SqliteMessageIndex,
    SqliteMessageStore, SqliteProfiles, SqliteSessionRegistry, SqliteSkillStore, SqliteTextIndex,
};
use memory_tiktoken::TiktokenCounter;

use crate::commands::CliError;

/// The default data directory.
pub const DEFAULT_DATA_DIR: &str = "./memory-data";

/// Open services over one data directory.
pub struct App {
    pub manager: SessionManager,
    pub store: Arc<dyn MessageStore>,
    pub db: SqliteDatabase,
    /// True when `[llm]` is configured (compaction available).
    pub has_llm: bool,
}

impl App {
    /// Opens (creating if needed) `<data_dir>/memory.db` with the blocks of
    /// `<data_dir>/memory.toml` (none when the file is absent).
    pub async fn open(data_dir: &Path) -> std::result::Result<Self, CliError> {
        let config =
            MemoryConfig::load_dir(data_dir).map_err(|e| CliError::Input(e.to_string()))?;
        let db = SqliteDatabase::open(SqliteConfig::new(data_dir.join("memory.db"))).await?;
        let store: Arc<dyn MessageStore> = Arc::new(SqliteMessageStore::new(db.clone()));
        let registry = Arc::new(SqliteSessionRegistry::new(db.clone()));
        let wiring = wiring(&config, &db)?;
        let counter = wiring.counter.clone();
        let kv: Arc<dyn KeyValueStore> = Arc::new(SqliteKeyValueStore::new(db.clone()));
        let mut manager = SessionManager::new(store, registry, Arc::new(SystemClock))
            .with_context(wiring)
            .with_search(Arc::new(SqliteMessageIndex::new(db.clone())), kv);
        let store = Arc::clone(manager.store());
        if let Some(llm) = &config.llm {
            let chat = OpenAiChat::new(endpoint(llm, None))?;
            let options = CompactorOptions {
                protect_head: config.compaction.protect_head,
                tail_token_budget: config.compaction.tail_token_budget,
                min_tail_messages: config.compaction.min_tail_messages,
                model: None,
            };
            let compactor = SummarizingCompactor::new(Arc::new(chat), options);
            let mut settings = CompactionSettings::new(Arc::new(compactor)).counter(counter);
            settings.threshold = config.compaction.compact_after;
            manager = manager.with_compaction(settings);
        }
        let has_llm = config.llm.is_some();
        Ok(Self {
            manager,
            store,
            db,
            has_llm,
        })
    }

    /// Closes the database cleanly.
    pub async fn close(self) {
        self.db.close().await;
    }
}

/// The OpenAI-compatible endpoint of `[llm]`, optionally with another model.
fn endpoint(llm: &LlmConfig, model: Option<&str>) -> OpenAiConfig {
    let mut config = OpenAiConfig::new(&llm.base_url, model.unwrap_or(&llm.model))
        .api_key_from_env(&llm.api_key_env)
        .timeout(Duration::from_secs(llm.timeout_secs))
        .retries(llm.max_retries, Duration::from_millis(500));
    config.query = llm.query.clone();
    config.api_key_header = llm.api_key_header.clone();
    config
}

/// An embedder, or `None` and the reason vectors are off.
pub type EmbedderChoiceResult = (Option<Arc<dyn Embedder>>, Option<String>);

/// The embedder `memory.toml` asks for, or `None` (with the reason) when vectors are off.
pub fn embedder(config: &MemoryConfig) -> std::result::Result<EmbedderChoiceResult, CliError> {
    match config.memory.embedder {
        EmbedderChoice::None => Ok((
            None,
            Some("vectors are off ([memory] embedder = \"none\")".into()),
        )),
        EmbedderChoice::Local => match LocalEmbedder::discover()? {
            Some(e) => Ok((Some(Arc::new(e)), None)),
            None => Ok((
                None,
                Some(format!(
                    "the local embedding model is not installed in {} (run scripts/setup-model.sh); vectors are off",
                    LocalEmbedder::default_model_dir().display()
                )),
            )),
        },
        EmbedderChoice::Openai => {
            let llm = config.llm.as_ref().ok_or_else(|| {
                CliError::Input("[memory] embedder = \"openai\" needs an [llm] endpoint".into())
            })?;
            let model = config.memory.embedding_model.as_deref().ok_or_else(|| {
                CliError::Input("[memory] embedder = \"openai\" needs embedding_model".into())
            })?;
            let dims = config.memory.embedding_dimensions.ok_or_else(|| {
                CliError::Input("[memory] embedder = \"openai\" needs embedding_dimensions".into())
            })?;
            Ok((
                Some(Arc::new(OpenAiEmbedder::new(
                    endpoint(llm, Some(model)),
                    dims,
                )?)),
                None,
            ))
        }
    }
}

/// Long-term memory over `<data_dir>/profiles` (one SQLite file per profile), with the
/// embedder and per-stage models of `memory.toml`. The note says what is off, if anything.
pub async fn memory_service(
    data_dir: &Path,
) -> std::result::Result<(MemoryService, Option<String>), CliError> {
    let config = MemoryConfig::load_dir(data_dir).map_err(|e| CliError::Input(e.to_string()))?;
    memory_service_with(&config, &data_dir.join("profiles")).await
}

/// Long-term backends on SQLite: one file per profile (records, their FTS5 indexes and
/// vectors) and the job queue of every worker (and the index outbox, unused while the store
/// writes its own index) in `<root>/jobs.sqlite`.
pub async fn sqlite_long_term(root: &Path) -> Result<LongTermBackends> {
    let jobs =
        SqliteDatabase::open(SqliteConfig::new(root.join("jobs.sqlite")).secure_delete(true))
            .await?;
    Ok(LongTermBackends::new(
        Arc::new(SqliteProfiles::new(root)),
        Arc::new(SqliteJobQueue::new(jobs.clone())),
        Arc::new(SqliteKeyValueStore::new(jobs)),
    ))
}

/// [`memory_service`] with an explicit configuration and profiles directory.
pub async fn memory_service_with(
    config: &MemoryConfig,
    profiles_root: &Path,
) -> std::result::Result<(MemoryService, Option<String>), CliError> {
    let config = config.clone();
    let backends = sqlite_long_term(profiles_root).await?;
    let mut service = MemoryService::new(backends, Arc::new(SystemClock));
    let (embedder, note) = embedder(&config)?;
    if let Some(e) = embedder {
        service = service.with_embedder(e);
    }
    if let Some(llm) = &config.llm {
        let chat = |model: Option<&str>| -> std::result::Result<Arc<dyn LanguageModel>, CliError> {
            Ok(Arc::new(OpenAiChat::new(endpoint(llm, model))?))
        };
        let (small, large) = (
            &config.memory.extraction_model,
            &config.memory.synthesis_model,
        );
        let models = if small == large {
            StageModels::all(chat(small.as_deref())?)
        } else {
            StageModels::split(chat(small.as_deref())?, chat(large.as_deref())?)
        };
        service = service.with_models(models);
    }
    let mut long_term = LongTermConfig::default();
    if let Some(header) = &config.memory.affinity_header {
        long_term.affinity_header = (!header.is_empty()).then(|| header.clone());
    }
    Ok((service.with_config(long_term), note))
}

/// Maps validated declarations onto providers.
pub fn wiring(config: &MemoryConfig, db: &SqliteDatabase) -> Result<ContextWiring> {
    let counter: Arc<dyn TokenCounter> = match &config.tokenizer {
        TokenizerConfig::Heuristic => Arc::new(HeuristicTokenCounter),
        TokenizerConfig::Tiktoken { model } => Arc::new(TiktokenCounter::for_model(model)?),
    };
    let mut specs = Vec::with_capacity(config.blocks.len());
    for block in &config.blocks {
        let mut spec = match (block.kind, &block.source) {
            (BlockKindConfig::Readonly, ConfigSource::Text(text)) => BlockSpec::provider(
                &block.label,
                BlockProvider::ReadOnly(Arc::new(TextBlock::new(text))),
            ),
            (BlockKindConfig::Readonly, ConfigSource::File(path)) => BlockSpec::provider(
                &block.label,
                BlockProvider::ReadOnly(Arc::new(FileBlock::new(path))),
            ),
            (BlockKindConfig::Skill, ConfigSource::Directory(dir)) => {
                let skills: Arc<dyn SkillStore> = Arc::new(MarkdownSkills::new(dir));
                BlockSpec::provider(
                    &block.label,
                    BlockProvider::Skill(Arc::new(StoredSkills::new(skills))),
                )
            }
            (BlockKindConfig::Skill, _) => {
                let skills: Arc<dyn SkillStore> =
                    Arc::new(SqliteSkillStore::new(db.clone(), block.label.clone()));
                BlockSpec::provider(
                    &block.label,
                    BlockProvider::Skill(Arc::new(StoredSkills::new(skills))),
                )
            }
            (BlockKindConfig::Searchable, _) => BlockSpec::searchable(&block.label),
            (BlockKindConfig::Writable, _) | (BlockKindConfig::Readonly, _) => {
                BlockSpec::writable(&block.label)
            }
        };
        spec.description = block.description.clone();
        spec.max_tokens = block.max_tokens;
        spec.default_content = block.default_content.clone();
        spec.scope = block.scope;
        specs.push(spec);
    }
    Ok(ContextWiring {
        kv: Some(Arc::new(SqliteKeyValueStore::new(db.clone())) as Arc<dyn KeyValueStore>),
        index: Some(Arc::new(SqliteTextIndex::new(db.clone())) as Arc<dyn TextIndex>),
        counter,
        specs,
    })
}

/// The data dir from the flag, or the default.
pub fn data_dir(flag: Option<PathBuf>) -> PathBuf {
    flag.unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR))
}

/// Parses a session id argument.
pub fn session_id(raw: &str) -> Result<SessionId> {
    SessionId::new(raw)
}
