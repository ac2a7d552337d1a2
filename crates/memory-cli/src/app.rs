//! The CLI's view of a deployment: `memory-compose` reads `memory.toml` and opens the
//! backends each storage role names; this file only adapts its errors and keeps the handles
//! the commands use.

use std::path::{Path, PathBuf};

use memory_compose::{ComposeError, Deployment};
use memory_config::MemoryConfig;
use memory_core::{Result, SessionId};
use memory_engine::SessionManager;
use memory_engine::long_term::{LongTermBackends, MemoryService};
use memory_engine::profile_link::JobRunner;

use crate::commands::CliError;

/// The default data directory.
pub const DEFAULT_DATA_DIR: &str = "./memory-data";

impl From<ComposeError> for CliError {
    fn from(error: ComposeError) -> Self {
        match error {
            ComposeError::Memory(e) => CliError::Memory(e),
            other => CliError::Input(other.to_string()),
        }
    }
}

/// Runs the ingest jobs that sessions ship to their profiles (at compaction, at their end)
/// in a detached `memory profile jobs P --run` worker, as `profile ingest` does.
struct BackgroundWorker {
    data_dir: PathBuf,
}

impl JobRunner for BackgroundWorker {
    fn run(&self, _memory: &MemoryService, profile: &str, job_id: &str) {
        if let Err(e) = crate::commands::profile::spawn_worker(&self.data_dir, profile) {
            tracing::warn!(profile, job = job_id, error = %e, "the background worker did not start; the job waits in the queue");
        }
    }
}

/// Open services over one data directory.
pub struct App {
    pub manager: SessionManager,
    pub deployment: Deployment,
    /// True when `[llm]` is configured (compaction available).
    pub has_llm: bool,
}

impl App {
    /// Opens the deployment of `<data_dir>/memory.toml` (everything embedded in `data_dir`
    /// when the file is absent or has no `[storage]`).
    pub async fn open(data_dir: &Path) -> std::result::Result<Self, CliError> {
        let deployment = Deployment::open(data_dir)?;
        let manager = deployment
            .session_manager()
            .await?
            .with_job_runner(std::sync::Arc::new(BackgroundWorker {
                data_dir: data_dir.to_owned(),
            }));
        let has_llm = deployment.has_llm();
        Ok(Self {
            manager,
            deployment,
            has_llm,
        })
    }

    /// Closes the backends cleanly.
    pub async fn close(self) {
        self.deployment.close().await;
    }
}

/// Long-term memory of the deployment in `data_dir`. The note says what is off, if anything.
pub async fn memory_service(
    data_dir: &Path,
) -> std::result::Result<(MemoryService, Option<String>), CliError> {
    Ok(Deployment::open(data_dir)?.memory_service().await?)
}

/// [`memory_service`] with an explicit configuration and profiles directory (scratch runs).
pub async fn memory_service_with(
    config: &MemoryConfig,
    profiles_root: &Path,
) -> std::result::Result<(MemoryService, Option<String>), CliError> {
    let deployment = Deployment::with_profiles_dir(config.clone(), profiles_root, profiles_root);
    Ok(deployment.memory_service().await?)
}

/// Long-term backends with everything embedded under `root` (the benchmarks' scratch
/// profiles): the profiles' full-text indexes on Tantivy under `root/tantivy` when
/// `tantivy_text` (the embedded default), on FTS5 otherwise; profile databases in pages of
/// `page_size` bytes (`None`: the default).
pub async fn scratch_long_term(
    root: &Path,
    tantivy_text: bool,
    page_size: Option<u32>,
) -> std::result::Result<LongTermBackends, CliError> {
    let mut storage = memory_config::StorageConfig::embedded(root);
    storage.sqlite.profiles = root.to_owned();
    if let Some(bytes) = page_size {
        storage.sqlite.profile_page_size = bytes;
    }
    // Chosen, not defaulted: a build without Tantivy refuses `tantivy_text` by name.
    storage.profile_text_defaulted = false;
    if !tantivy_text {
        storage.profile_text = memory_config::Backend::Sqlite;
        storage.tantivy = None;
    }
    // Vector searches scan exactly here: a benchmark opens its own graphs when it wants them
    // (no graph is built in the background while it measures something else).
    storage.sqlite.exact_vectors = true;
    let config = MemoryConfig {
        storage: Some(storage),
        ..MemoryConfig::default()
    };
    let deployment = Deployment::with_config(config, root);
    Ok(deployment.long_term_backends().await?)
}

/// Long-term backends of the deployment `dir/memory.toml` describes.
pub async fn configured_long_term(dir: &Path) -> std::result::Result<LongTermBackends, CliError> {
    Ok(Deployment::open(dir)?.long_term_backends().await?)
}

/// The data dir from the flag, or the default.
pub fn data_dir(flag: Option<PathBuf>) -> PathBuf {
    flag.unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR))
}

/// Parses a session id argument.
pub fn session_id(raw: &str) -> Result<SessionId> {
    SessionId::new(raw)
}
