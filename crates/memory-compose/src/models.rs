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
    match config.memory.embedder {
        EmbedderChoice::None => Ok((
            None,
            Some("vectors are off ([memory] embedder = \"none\")".into()),
        )),
        EmbedderChoice::Local => local_embedder(),
        EmbedderChoice::LocalInt8 => onnx_embedder(),
        EmbedderChoice::Openai => openai_embedder(config),
    }
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

#[cfg(feature = "onnx-embedder")]
fn onnx_embedder() -> Result<EmbedderChoiceResult> {
    use memory_onnx::OnnxEmbedder;
    match OnnxEmbedder::discover()? {
        Some(e) => Ok((Some(Arc::new(e)), None)),
        None => Ok((
            None,
            Some(format!(
                "the int8 embedding model is not installed in {} (run scripts/setup-onnx.sh); vectors are off",
                OnnxEmbedder::default_model_dir().display()
            )),
        )),
    }
}

#[cfg(not(feature = "onnx-embedder"))]
fn onnx_embedder() -> Result<EmbedderChoiceResult> {
    Ok((
        None,
        Some(
            "this build leaves out the int8 embedder (`--features onnx-embedder`); vectors are off"
                .into(),
        ),
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
