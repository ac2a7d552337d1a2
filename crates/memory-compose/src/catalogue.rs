//! The local catalogue's embedders and rerankers by name (`[memory] embedder = "bge-small-en-v1.5"`,
//! `[memory] reranker = "ms-marco-MiniLM-L-6-v2"`): found in `memory-onnx`'s catalogue,
//! their files fetched on first use from the Hugging Face hub into a directory of their own
//! (`MEMORY_MODELS_DIR/<name>`, else `~/.cache/memory-models/<name>`), each checked against
//! its pin, and loaded on the ONNX Runtime library the int8 embedder uses (fetched beside it
//! when missing).

#[cfg(feature = "onnx-embedder")]
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
#[cfg(feature = "onnx-embedder")]
use std::sync::Mutex;

use memory_config::MemoryConfig;
use memory_core::ports::Reranker;

use crate::error::{ComposeError, Result};
use crate::models::EmbedderChoiceResult;
#[cfg(feature = "onnx-embedder")]
use crate::models::Int8Fetch;

/// A reranker, or `None` and the reason reranking is off.
pub type RerankerChoiceResult = (Option<Arc<dyn Reranker>>, Option<String>);

/// `memory-hub`'s form of a model's pinned files.
#[cfg(feature = "onnx-embedder")]
pub(crate) fn on_hub(
    repo: &str,
    revision: &str,
    files: &[memory_onnx::catalogue::PinnedFile],
) -> memory_hub::HubModel {
    memory_hub::HubModel {
        repo: repo.into(),
        revision: revision.into(),
        files: files
            .iter()
            .map(|file| match file.size {
                Some(size) => memory_hub::HubFile::new(file.path, size, file.sha256),
                None => memory_hub::HubFile::of_unknown_size(file.path, file.sha256),
            })
            .collect(),
    }
}

/// Puts ONNX Runtime's library into `dir` from its PyPI wheel unless it is there; returns
/// what was fetched.
#[cfg(feature = "onnx-embedder")]
pub(crate) fn fetch_runtime(
    dir: &Path,
    settings: &memory_hub::HubSettings,
) -> std::result::Result<Vec<String>, Int8Fetch> {
    let wheel = memory_onnx::runtime_wheel().map_err(Int8Fetch::Unsupported)?;
    let runtime = memory_hub::ArchivedFile {
        archive_path: wheel.path.into(),
        archive: memory_hub::HubFile::new(wheel.file_name(), wheel.size, wheel.sha256),
        member: wheel.member.into(),
        file: memory_hub::HubFile::new(
            memory_onnx::RUNTIME_LIBRARY,
            wheel.library_size,
            wheel.library_sha256,
        ),
    };
    let report = memory_hub::fetch_archived_blocking(&runtime, dir, settings).map_err(|error| {
        Int8Fetch::Failed {
            error,
            from_hub: false,
        }
    })?;
    Ok(report.fetched)
}

/// The directory of catalogue model `name`: `MEMORY_MODELS_DIR/<name>`, else
/// `~/.cache/memory-models/<name>`; the MiniLM entry's is the int8 embedder's own.
#[cfg(feature = "onnx-embedder")]
pub fn model_dir(name: &str) -> PathBuf {
    if name == memory_onnx::catalogue::MINILM {
        return memory_onnx::OnnxEmbedder::default_model_dir();
    }
    let root = std::env::var_os("MEMORY_MODELS_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(
            || {
                std::env::var_os("HOME")
                    .map_or_else(|| PathBuf::from("."), PathBuf::from)
                    .join(".cache/memory-models")
            },
            PathBuf::from,
        );
    root.join(name)
}

/// The runtime library every catalogue model loads: the int8 embedder's, fetched into its
/// directory when missing (not into a directory the user named with `MEMORY_ONNX_MODEL_DIR`).
#[cfg(feature = "onnx-embedder")]
fn runtime_library(settings: &memory_hub::HubSettings) -> Result<(PathBuf, Vec<String>)> {
    let dir = memory_onnx::OnnxEmbedder::default_model_dir();
    let library = dir.join(memory_onnx::RUNTIME_LIBRARY);
    if library.is_file() {
        return Ok((library, Vec::new()));
    }
    if std::env::var_os("MEMORY_ONNX_MODEL_DIR").is_some() {
        return Err(ComposeError::Invalid(format!(
            "ONNX Runtime's library is not in {} (MEMORY_ONNX_MODEL_DIR; scripts/setup-onnx.sh \
             fills it, or leave it unset to fetch it on first use)",
            dir.display()
        )));
    }
    let fetched = fetch_runtime(&dir, settings).map_err(|why| match why {
        Int8Fetch::Failed { error, .. } => ComposeError::from(error),
        unsupported => ComposeError::Invalid(unsupported.to_string()),
    })?;
    Ok((library, fetched))
}

/// Which catalogue entry a name asks for.
#[cfg(feature = "onnx-embedder")]
enum Entry {
    Embedder(&'static memory_onnx::catalogue::EmbedderModel),
    Reranker(&'static memory_onnx::catalogue::RerankerModel),
}

#[cfg(feature = "onnx-embedder")]
impl Entry {
    fn name(&self) -> &'static str {
        match self {
            Self::Embedder(m) => m.name,
            Self::Reranker(m) => m.name,
        }
    }

    fn on_hub(&self) -> memory_hub::HubModel {
        match self {
            Self::Embedder(m) => on_hub(m.repo, m.revision, m.files),
            Self::Reranker(m) => on_hub(m.repo, m.revision, m.files),
        }
    }
}

/// `name` is not in the catalogue (of `kind`: "embedder", "reranker" or "model"): the
/// error names what is.
#[cfg(feature = "onnx-embedder")]
fn unknown(kind: &str, name: &str) -> ComposeError {
    use memory_onnx::catalogue::{EMBEDDERS, RERANKERS};
    let embedders = EMBEDDERS.iter().map(|m| m.name);
    let rerankers = RERANKERS.iter().map(|m| m.name);
    let names: Vec<&str> = match kind {
        "reranker" => rerankers.collect(),
        "embedder" => embedders.collect(),
        _ => embedders.chain(rerankers).collect(),
    };
    ComposeError::Invalid(format!(
        "no {kind} called {name:?} in the catalogue (`memory models list`): {}",
        names.join(", ")
    ))
}

/// Fetches the files of catalogue model `name` (an embedder or a reranker) that are missing
/// from its directory, and ONNX Runtime's library when missing, each checked against its
/// pin. Returns the directory and the files fetched now (none when all were there).
#[cfg(feature = "onnx-embedder")]
pub fn fetch_model(name: &str) -> Result<(PathBuf, Vec<String>)> {
    let entry = match (
        memory_onnx::catalogue::embedder(name),
        memory_onnx::catalogue::reranker(name),
    ) {
        (Some(m), _) => Entry::Embedder(m),
        (None, Some(m)) => Entry::Reranker(m),
        (None, None) => return Err(unknown("model", name)),
    };
    fetch_entry(&entry)
}

#[cfg(feature = "onnx-embedder")]
fn fetch_entry(entry: &Entry) -> Result<(PathBuf, Vec<String>)> {
    let settings = memory_hub::HubSettings::from_env();
    if entry.name() == memory_onnx::catalogue::MINILM {
        return crate::models::fetch_int8_model().map_err(|why| match why {
            Int8Fetch::Failed { error, .. } => ComposeError::from(error),
            unsupported => ComposeError::Invalid(unsupported.to_string()),
        });
    }
    let dir = model_dir(entry.name());
    let (_, mut fetched) = runtime_library(&settings)?;
    let report = memory_hub::fetch_blocking(&entry.on_hub(), &dir, &settings)?;
    fetched.extend(report.fetched);
    Ok((dir, fetched))
}

/// Without ONNX Runtime in the build there is no catalogue.
#[cfg(not(feature = "onnx-embedder"))]
pub fn fetch_model(_name: &str) -> Result<(PathBuf, Vec<String>)> {
    Err(not_built())
}

#[cfg(not(feature = "onnx-embedder"))]
fn not_built() -> ComposeError {
    ComposeError::Invalid(
        "the model catalogue runs on ONNX Runtime, which this build leaves out (`--features onnx-embedder`)".into(),
    )
}

/// A failure to fetch or load a model, remembered for the process (one line per catalogue
/// name, so at most as many as the catalogue has), so a deployment opened again does not
/// wait for an unreachable hub again.
#[cfg(feature = "onnx-embedder")]
static FAILED: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

#[cfg(feature = "onnx-embedder")]
fn remembered(name: &str) -> Option<String> {
    let failed = FAILED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    failed
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, why)| why.clone())
}

#[cfg(feature = "onnx-embedder")]
fn remember(name: &str, why: &str) {
    let mut failed = FAILED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !failed.iter().any(|(n, _)| n == name) {
        tracing::warn!("{why}");
        failed.push((name.to_owned(), why.to_owned()));
    }
}

/// Loads `entry` from its directory, fetching what is missing first (a failed fetch is not
/// retried in this process, files put in place since are used): the loaded model, or the
/// reason it is off.
#[cfg(feature = "onnx-embedder")]
fn load<T>(
    entry: &Entry,
    off: &str,
    build: impl Fn(&Path, &Path) -> memory_core::Result<T>,
) -> std::result::Result<T, String> {
    let name = entry.name();
    let dir = model_dir(name);
    let ready = match name == memory_onnx::catalogue::MINILM {
        // Its directory may hold scripts/setup-onnx.sh's graph instead of the hub's.
        true => memory_onnx::ModelFiles::in_dir(&dir).is_ok(),
        false => entry.on_hub().is_in(&dir),
    };
    if !ready && let Some(why) = remembered(name) {
        return Err(why);
    }
    let attempt = || -> Result<T> {
        if !ready {
            fetch_entry(entry)?;
        }
        let (runtime, _) = runtime_library(&memory_hub::HubSettings::from_env())?;
        Ok(build(&dir, &runtime)?)
    };
    attempt().map_err(|e| {
        let kind = match entry {
            Entry::Embedder(_) => "--embedder",
            Entry::Reranker(_) => "--reranker",
        };
        let why = format!(
            "{name} could not be made ready in {}: {e} (`memory models fetch {kind} {name}` \
             retries); {off}",
            dir.display()
        );
        remember(name, &why);
        why
    })
}

/// A model loaded once a process by catalogue name, however many deployments (a tenant each)
/// ask for it: at most as many as the catalogue has.
#[cfg(feature = "onnx-embedder")]
type Loaded<T> = Mutex<Vec<(&'static str, Arc<T>)>>;

#[cfg(feature = "onnx-embedder")]
static EMBEDDERS_LOADED: Loaded<dyn memory_core::ports::Embedder> = Mutex::new(Vec::new());

#[cfg(feature = "onnx-embedder")]
static RERANKERS_LOADED: Loaded<dyn Reranker> = Mutex::new(Vec::new());

/// The model `name` from `loaded`, else made by `make` and kept (the lock is held while it is
/// made, so two deployments opening at once load it once).
#[cfg(feature = "onnx-embedder")]
fn once<T: ?Sized>(
    loaded: &Loaded<T>,
    name: &'static str,
    make: impl FnOnce() -> std::result::Result<Arc<T>, String>,
) -> std::result::Result<Arc<T>, String> {
    let mut loaded = loaded
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, model)) = loaded.iter().find(|(n, _)| *n == name) {
        return Ok(Arc::clone(model));
    }
    let model = make()?;
    loaded.push((name, Arc::clone(&model)));
    Ok(model)
}

/// The catalogue embedder `name`: fetched on first use and loaded (once a process), or `None`
/// with the reason vectors are off (a name the catalogue lacks is an error).
#[cfg(feature = "onnx-embedder")]
pub(crate) fn embedder(name: &str) -> Result<EmbedderChoiceResult> {
    let model = memory_onnx::catalogue::embedder(name).ok_or_else(|| unknown("embedder", name))?;
    let loaded = once(&EMBEDDERS_LOADED, model.name, || {
        let embedder = load(
            &Entry::Embedder(model),
            "vectors are off",
            |dir, runtime| memory_onnx::OnnxEmbedder::from_catalogue(model, dir, runtime),
        )?;
        Ok(Arc::new(embedder) as Arc<dyn memory_core::ports::Embedder>)
    });
    match loaded {
        Ok(e) => Ok((Some(e), None)),
        Err(why) => Ok((None, Some(why))),
    }
}

#[cfg(not(feature = "onnx-embedder"))]
pub(crate) fn embedder(_name: &str) -> Result<EmbedderChoiceResult> {
    Err(not_built())
}

/// The reranker `[memory] reranker` names: fetched on first use and loaded (once a process),
/// or `None` with the reason reranking is off; none when none is named. A name the catalogue lacks is an
/// error.
#[cfg(feature = "onnx-embedder")]
pub fn reranker(config: &MemoryConfig) -> Result<RerankerChoiceResult> {
    let Some(name) = config.memory.reranker.as_deref() else {
        return Ok((None, None));
    };
    let model = memory_onnx::catalogue::reranker(name).ok_or_else(|| unknown("reranker", name))?;
    let loaded = once(&RERANKERS_LOADED, model.name, || {
        let reranker = load(
            &Entry::Reranker(model),
            "reranking is off",
            |dir, runtime| memory_onnx::OnnxReranker::from_catalogue(model, dir, runtime),
        )?;
        Ok(Arc::new(reranker) as Arc<dyn Reranker>)
    });
    match loaded {
        Ok(r) => Ok((Some(r), None)),
        Err(why) => Ok((None, Some(why))),
    }
}

/// Without ONNX Runtime in the build, a named reranker is an error.
#[cfg(not(feature = "onnx-embedder"))]
pub fn reranker(config: &MemoryConfig) -> Result<RerankerChoiceResult> {
    match config.memory.reranker {
        Some(_) => Err(not_built()),
        None => Ok((None, None)),
    }
}
