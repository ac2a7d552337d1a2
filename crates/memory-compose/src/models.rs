//! The language models and the embedder `memory.toml` names (`[llm]`, `[memory]`).

use std::sync::Arc;

use memory_config::{EmbedderChoice, LlmConfig, MemoryConfig};
use memory_core::ports::{Embedder, LanguageModel};

use crate::error::{ComposeError, Result};

/// An embedder, or `None` and the reason vectors are off.
pub type EmbedderChoiceResult = (Option<Arc<dyn Embedder>>, Option<String>);

/// Chat models of `[llm]`'s endpoint, one per entry of `models` (`None`: `[llm] model`). They
/// share one connection pool and what was learned about the server's structured output.
#[cfg(feature = "openai")]
pub fn chat_models(
    llm: &LlmConfig,
    models: &[Option<&str>],
) -> Result<Vec<Arc<dyn LanguageModel>>> {
    let base = memory_openai::OpenAiChat::new(endpoint(llm, None))?;
    Ok(models
        .iter()
        .map(|model| -> Arc<dyn LanguageModel> {
            Arc::new(base.with_model(model.unwrap_or(&llm.model)))
        })
        .collect())
}

/// Chat models of `[llm]`: this build has no OpenAI-compatible client.
#[cfg(not(feature = "openai"))]
pub fn chat_models(
    _llm: &LlmConfig,
    _models: &[Option<&str>],
) -> Result<Vec<Arc<dyn LanguageModel>>> {
    Err(ComposeError::Invalid(
        "[llm] needs the OpenAI-compatible client, which this build leaves out (rebuild with `--features openai`)".into(),
    ))
}

/// The chat model of `[llm]` (optionally another model on the same endpoint).
pub fn chat_model(llm: &LlmConfig, model: Option<&str>) -> Result<Arc<dyn LanguageModel>> {
    chat_models(llm, &[model])?
        .pop()
        .ok_or_else(|| ComposeError::Invalid("no chat model was asked for".into()))
}

/// The OpenAI-compatible endpoint of `[llm]`, optionally with another model.
#[cfg(feature = "openai")]
fn endpoint(llm: &LlmConfig, model: Option<&str>) -> memory_openai::OpenAiConfig {
    use memory_config::StructuredOutputMode;
    use memory_openai::StructuredOutput;
    use std::time::Duration;
    let mut config = memory_openai::OpenAiConfig::new(&llm.base_url, model.unwrap_or(&llm.model))
        .api_key_from_env(&llm.api_key_env)
        .timeout(Duration::from_secs(llm.timeout_secs))
        .deadline(Duration::from_secs(llm.deadline_secs))
        .retries(llm.max_retries, Duration::from_millis(500))
        .structured_output(match llm.structured_output {
            StructuredOutputMode::Auto => StructuredOutput::Auto,
            StructuredOutputMode::JsonSchema => StructuredOutput::JsonSchema,
            StructuredOutputMode::JsonObject => StructuredOutput::JsonObject,
            StructuredOutputMode::Text => StructuredOutput::Text,
        });
    config.query = llm.query.clone();
    config.api_key_header = llm.api_key_header.clone();
    config
}

/// The embedder `memory.toml` asks for, or `None` (with the reason) when vectors are off.
pub fn embedder(config: &MemoryConfig) -> Result<EmbedderChoiceResult> {
    match &config.memory.embedder {
        EmbedderChoice::None => Ok((
            None,
            Some("vectors are off ([memory] embedder = \"none\")".into()),
        )),
        EmbedderChoice::Auto => auto_embedder(),
        EmbedderChoice::Local => local_embedder(),
        EmbedderChoice::LocalInt8 => match int8_embedder() {
            Ok(embedder) => Ok((Some(embedder), None)),
            Err(Int8Unavailable { reason, .. }) => {
                Ok((None, Some(format!("{reason}; vectors are off"))))
            }
        },
        EmbedderChoice::Openai => openai_embedder(config),
        EmbedderChoice::Model(name) => crate::catalogue::embedder(name),
    }
}

/// Why the int8 embedder cannot run, and whether the hub itself could not be reached (then
/// the float model cannot be fetched either, and is not tried).
struct Int8Unavailable {
    reason: String,
    hub_unreachable: bool,
}

/// `[memory] embedder = "auto"`: the int8 embedder where it runs, else the float one, with
/// one line saying why.
fn auto_embedder() -> Result<EmbedderChoiceResult> {
    // A failure remembered from an earlier process skips the fetch, not files put in place
    // since (by `scripts/setup-onnx.sh`, say).
    let remembered = if int8_files_in_place() {
        None
    } else {
        int8_failure::recent()
    };
    let unavailable = match remembered {
        Some(reason) => Int8Unavailable {
            reason,
            hub_unreachable: false,
        },
        None => match int8_embedder() {
            Ok(embedder) => return Ok((Some(embedder), None)),
            Err(unavailable) => unavailable,
        },
    };
    if unavailable.hub_unreachable && !float_model_installed() {
        let line = format!("{}; vectors are off", unavailable.reason);
        static SAID: std::sync::OnceLock<()> = std::sync::OnceLock::new();
        SAID.get_or_init(|| tracing::warn!("{line}"));
        return Ok((None, Some(line)));
    }
    let (embedder, note) = local_embedder()?;
    if embedder.is_some() {
        int8_failure::remember(&unavailable.reason);
        // Said once a process, as a warning: the deployment runs, several times slower.
        static SAID: std::sync::OnceLock<()> = std::sync::OnceLock::new();
        SAID.get_or_init(|| {
            tracing::warn!(
                "{}; using the float embedder (`local`) instead",
                unavailable.reason
            );
        });
    }
    Ok((
        embedder,
        note.map(|n| format!("{}; {n}", unavailable.reason)),
    ))
}

#[cfg(feature = "onnx-embedder")]
fn int8_files_in_place() -> bool {
    memory_onnx::ModelFiles::in_dir(&memory_onnx::OnnxEmbedder::default_model_dir()).is_ok()
}

#[cfg(not(feature = "onnx-embedder"))]
fn int8_files_in_place() -> bool {
    false
}

#[cfg(feature = "local-embedder")]
fn float_model_installed() -> bool {
    memory_candle::ModelFiles::in_dir(&memory_candle::LocalEmbedder::default_model_dir()).is_ok()
}

#[cfg(not(feature = "local-embedder"))]
fn float_model_installed() -> bool {
    false
}

#[cfg(feature = "local-embedder")]
fn local_embedder() -> Result<EmbedderChoiceResult> {
    use memory_candle::LocalEmbedder;
    if let Some(e) = LocalEmbedder::discover()? {
        return Ok((Some(Arc::new(e)), None));
    }
    let dir = LocalEmbedder::default_model_dir();
    // A directory named by the user is used as it is: nothing is fetched into it.
    if std::env::var_os("MEMORY_MODEL_DIR").is_some() {
        return Ok((
            None,
            Some(format!(
                "the local embedding model is not in {} (MEMORY_MODEL_DIR; scripts/setup-model.sh \
                 fills it, or leave MEMORY_MODEL_DIR unset to fetch it on first use); vectors are off",
                dir.display()
            )),
        ));
    }
    // One attempt a process: a deployment opened again (a tenant each, say) does not wait
    // for an unreachable hub again.
    static FAILED: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if let Some(line) = FAILED.get() {
        return Ok((None, Some(line.clone())));
    }
    if let Err(e) = fetch_local_model() {
        let line = format!(
            "the local embedding model could not be fetched into {}: {e} (`memory models \
             fetch` retries; scripts/setup-model.sh is the offline route); vectors are off",
            dir.display()
        );
        // Unlike a deployment that turned vectors off, this one asked for them: a warning.
        tracing::warn!("{line}");
        return Ok((None, Some(FAILED.get_or_init(|| line).clone())));
    }
    match LocalEmbedder::discover()? {
        Some(e) => Ok((Some(Arc::new(e)), None)),
        None => Ok((
            None,
            Some(format!(
                "the local embedding model is still missing from {} after a fetch; vectors are off",
                dir.display()
            )),
        )),
    }
}

/// The local embedding model's files on the Hugging Face hub, pinned (what
/// `memory-candle` reads).
#[cfg(feature = "local-embedder")]
fn local_model_on_hub() -> memory_hub::HubModel {
    memory_hub::HubModel {
        repo: memory_candle::HUB_REPO.into(),
        revision: memory_candle::HUB_REVISION.into(),
        files: memory_candle::HUB_FILES
            .iter()
            .map(|(path, size, sha256)| memory_hub::HubFile::new(*path, *size, *sha256))
            .collect(),
    }
}

/// Fetches the local embedding model's missing files into its directory
/// (`MEMORY_MODEL_DIR`, else `~/.cache/memory-models/all-minilm-l6-v2`) from the Hugging
/// Face hub, once: `HF_ENDPOINT` names a mirror, `HF_HUB_OFFLINE=1` fetches nothing, every
/// file is checked against its pinned SHA-256 before it is put in place. Returns the
/// directory and the files fetched now (none when all were there).
#[cfg(feature = "local-embedder")]
pub fn fetch_local_model() -> Result<(std::path::PathBuf, Vec<String>)> {
    let dir = memory_candle::LocalEmbedder::default_model_dir();
    let report = memory_hub::fetch_blocking(
        &local_model_on_hub(),
        &dir,
        &memory_hub::HubSettings::from_env(),
    )?;
    Ok((report.dir, report.fetched))
}

/// Without the local embedder in the build there is no model to fetch.
#[cfg(not(feature = "local-embedder"))]
pub fn fetch_local_model() -> Result<(std::path::PathBuf, Vec<String>)> {
    Err(ComposeError::Invalid(
        "this build leaves out the local embedder (`--features local-embedder`): no model to fetch"
            .into(),
    ))
}

#[cfg(not(feature = "local-embedder"))]
fn local_embedder() -> Result<EmbedderChoiceResult> {
    Ok((
        None,
        Some("this build leaves out the local embedder (`--features local-embedder`); vectors are off".into()),
    ))
}

/// The int8 embedder, its files fetched first when they are missing (once a process), or why
/// it cannot run here.
#[cfg(feature = "onnx-embedder")]
fn int8_embedder() -> std::result::Result<Arc<dyn Embedder>, Int8Unavailable> {
    use memory_onnx::OnnxEmbedder;
    static FAILED: std::sync::OnceLock<(String, bool)> = std::sync::OnceLock::new();
    let unavailable = |reason: String, hub_unreachable: bool| {
        let (reason, hub_unreachable) = FAILED.get_or_init(|| (reason, hub_unreachable)).clone();
        Int8Unavailable {
            reason,
            hub_unreachable,
        }
    };
    if let Some((reason, hub_unreachable)) = FAILED.get() {
        return Err(unavailable(reason.clone(), *hub_unreachable));
    }
    let dir = OnnxEmbedder::default_model_dir();
    let load = || match OnnxEmbedder::load(&dir) {
        Ok(e) => Ok(Arc::new(e) as Arc<dyn Embedder>),
        Err(e) => Err(unavailable(
            format!("the int8 embedder cannot run from {}: {e}", dir.display()),
            false,
        )),
    };
    if int8_files_in_place() {
        return load();
    }
    // A directory named by the user is used as it is: nothing is fetched into it.
    if std::env::var_os("MEMORY_ONNX_MODEL_DIR").is_some() {
        return Err(unavailable(
            format!(
                "the int8 embedding model is not in {} (MEMORY_ONNX_MODEL_DIR; \
                 scripts/setup-onnx.sh fills it, or leave it unset to fetch on first use)",
                dir.display()
            ),
            false,
        ));
    }
    match fetch_int8_model() {
        Ok(_) => load(),
        Err(Int8Fetch::Unsupported(reason)) => Err(unavailable(reason, false)),
        Err(failed) => {
            let reason = format!(
                "the int8 embedding model could not be fetched into {}: {failed} (`memory \
                 models fetch` retries; scripts/setup-onnx.sh is the offline route)",
                dir.display()
            );
            Err(unavailable(reason, failed.hub_unreachable()))
        }
    }
}

#[cfg(not(feature = "onnx-embedder"))]
fn int8_embedder() -> std::result::Result<Arc<dyn Embedder>, Int8Unavailable> {
    Err(Int8Unavailable {
        reason: "this build leaves out the int8 embedder (`--features onnx-embedder`)".into(),
        hub_unreachable: false,
    })
}

/// Why the int8 embedder's files were not fetched.
pub enum Int8Fetch {
    /// No ONNX Runtime library is published for this machine.
    Unsupported(String),
    /// A download failed (`from_hub`: the hub's files, else the runtime's wheel).
    Failed {
        /// The failure.
        error: memory_core::MemoryError,
        /// Whether the hub's files failed (else the runtime's wheel from PyPI's file host).
        from_hub: bool,
    },
}

impl Int8Fetch {
    /// Whether the hub itself could not be reached (then the float model, which comes from
    /// the hub too, cannot be fetched either).
    pub fn hub_unreachable(&self) -> bool {
        matches!(self, Self::Failed { error, from_hub: true } if error.is_transient())
    }
}

impl std::fmt::Display for Int8Fetch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unsupported(reason) => f.write_str(reason),
            Self::Failed { error, .. } => write!(f, "{error}"),
        }
    }
}

/// Fetches the int8 embedder's missing files into its directory (`MEMORY_ONNX_MODEL_DIR`,
/// else `~/.cache/memory-models/all-minilm-l6-v2-int8-dynamic`), once: the graph and the
/// tokenizer from the Hugging Face hub (as [`fetch_local_model`]), ONNX Runtime's library
/// from its PyPI wheel (`MEMORY_PACKAGES_ENDPOINT` names a mirror of PyPI's file host), each
/// checked against its pinned size and SHA-256. Returns the directory and the files fetched
/// now.
#[cfg(feature = "onnx-embedder")]
pub fn fetch_int8_model() -> std::result::Result<(std::path::PathBuf, Vec<String>), Int8Fetch> {
    // Where no runtime is published, nothing is fetched.
    memory_onnx::runtime_wheel().map_err(Int8Fetch::Unsupported)?;
    let dir = memory_onnx::OnnxEmbedder::default_model_dir();
    let settings = memory_hub::HubSettings::from_env();
    let model = crate::catalogue::on_hub(
        memory_onnx::HUB_REPO,
        memory_onnx::HUB_REVISION,
        &memory_onnx::HUB_FILES,
    );
    // A directory made by scripts/setup-onnx.sh has its own graph: only what it lacks.
    let made = dir.join("model.onnx").is_file() && dir.join("tokenizer.json").is_file();
    let mut fetched = Vec::new();
    if !made {
        let report = memory_hub::fetch_blocking(&model, &dir, &settings).map_err(|error| {
            Int8Fetch::Failed {
                error,
                from_hub: true,
            }
        })?;
        fetched.extend(report.fetched);
    }
    fetched.extend(crate::catalogue::fetch_runtime(&dir, &settings)?);
    int8_failure::forget();
    Ok((dir, fetched))
}

/// Without the int8 embedder in the build there is nothing to fetch.
#[cfg(not(feature = "onnx-embedder"))]
pub fn fetch_int8_model() -> std::result::Result<(std::path::PathBuf, Vec<String>), Int8Fetch> {
    Err(Int8Fetch::Unsupported(
        "this build leaves out the int8 embedder (`--features onnx-embedder`)".into(),
    ))
}

#[cfg(feature = "openai")]
fn openai_embedder(config: &MemoryConfig) -> Result<EmbedderChoiceResult> {
    let llm = config.llm.as_ref().ok_or_else(|| {
        ComposeError::Invalid("[memory] embedder = \"openai\" needs an [llm] endpoint".into())
    })?;
    let model = config.memory.embedding_model.as_deref().ok_or_else(|| {
        ComposeError::Invalid("[memory] embedder = \"openai\" needs embedding_model".into())
    })?;
    let dims = config.memory.embedding_dimensions.ok_or_else(|| {
        ComposeError::Invalid("[memory] embedder = \"openai\" needs embedding_dimensions".into())
    })?;
    Ok((
        Some(Arc::new(memory_openai::OpenAiEmbedder::new(
            endpoint(llm, Some(model)),
            dims,
        )?)),
        None,
    ))
}

#[cfg(not(feature = "openai"))]
fn openai_embedder(_config: &MemoryConfig) -> Result<EmbedderChoiceResult> {
    Err(ComposeError::Invalid(
        "[memory] embedder = \"openai\" needs the OpenAI-compatible client, which this build leaves out (rebuild with `--features openai`)".into(),
    ))
}

/// The default embedder's memory of the int8 one failing on this machine, so that each
/// process does not ask the hub again (and wait for it when it is out of reach): a file in
/// the int8 model's directory holding the reason, honoured for a day; `memory models fetch`
/// retries at once and removes it.
mod int8_failure {
    use std::path::PathBuf;
    use std::time::{Duration, SystemTime};

    /// How long a failure is trusted before the int8 embedder is tried again.
    const RETRY_AFTER: Duration = Duration::from_secs(24 * 60 * 60);

    /// The file, or `None` where the directory is the user's own (`MEMORY_ONNX_MODEL_DIR`:
    /// nothing is written there) or the build has no int8 embedder.
    fn file() -> Option<PathBuf> {
        #[cfg(feature = "onnx-embedder")]
        if std::env::var_os("MEMORY_ONNX_MODEL_DIR").is_none() {
            return Some(memory_onnx::OnnxEmbedder::default_model_dir().join("unavailable.txt"));
        }
        None
    }

    /// The reason of a failure remembered less than a day ago.
    pub(super) fn recent() -> Option<String> {
        let file = file()?;
        let age = std::fs::metadata(&file)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|at| SystemTime::now().duration_since(at).ok())?;
        if age > RETRY_AFTER {
            return None;
        }
        let reason = std::fs::read_to_string(&file).ok()?;
        Some(format!(
            "the int8 embedder failed here {} min ago ({}; `memory models fetch` retries now, \
             a deployment after a day)",
            age.as_secs() / 60,
            reason.trim()
        ))
    }

    /// Remembers `reason` (best effort: a directory that cannot be written means the next
    /// process tries again).
    pub(super) fn remember(reason: &str) {
        if let Some(file) = file()
            && !reason.starts_with("the int8 embedder failed here")
            && std::fs::create_dir_all(file.parent().unwrap_or(&file)).is_ok()
        {
            let _ = std::fs::write(&file, reason);
        }
    }

    /// Forgets a remembered failure (after a fetch succeeded).
    pub fn forget() {
        if let Some(file) = file() {
            let _ = std::fs::remove_file(file);
        }
    }
}
