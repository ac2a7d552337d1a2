//! Where the model files live, and a clear error when they are missing.

use std::path::{Path, PathBuf};

use memory_core::MemoryError;

use crate::hub::{HUB_MODEL_FILE, RUNTIME_LIBRARY};

/// The three files the embedder reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFiles {
    /// The ONNX graph (int8 weights and products): `model.onnx` as `scripts/setup-onnx.sh`
    /// makes it, else the hub's [`HUB_MODEL_FILE`] as `memory models fetch` puts it.
    pub model: PathBuf,
    /// WordPiece tokenizer.
    pub tokenizer: PathBuf,
    /// ONNX Runtime's shared library.
    pub runtime: PathBuf,
}

impl ModelFiles {
    /// The files inside `dir`, or [`MemoryError::NotFound`] naming the missing one and the
    /// commands that fetch them.
    pub fn in_dir(dir: &Path) -> Result<Self, MemoryError> {
        let made = dir.join("model.onnx");
        let files = Self {
            model: if made.is_file() {
                made
            } else {
                dir.join(HUB_MODEL_FILE)
            },
            tokenizer: dir.join("tokenizer.json"),
            runtime: dir.join(RUNTIME_LIBRARY),
        };
        for path in [&files.model, &files.tokenizer, &files.runtime] {
            if !path.is_file() {
                return Err(MemoryError::not_found(
                    "embedding model file",
                    format!(
                        "{} (`memory models fetch` fetches the int8 model and ONNX Runtime; \
                         scripts/setup-onnx.sh makes them offline)",
                        path.display()
                    ),
                ));
            }
        }
        Ok(files)
    }
}

impl ModelFiles {
    /// The files of a catalogue model in `dir` (`graph` and `tokenizer.json`) and the runtime
    /// library `runtime`, or [`MemoryError::NotFound`] naming the missing one.
    pub fn of_catalogue(dir: &Path, graph: &str, runtime: &Path) -> Result<Self, MemoryError> {
        let files = Self {
            model: dir.join(graph),
            tokenizer: dir.join("tokenizer.json"),
            runtime: runtime.to_owned(),
        };
        for path in [&files.model, &files.tokenizer, &files.runtime] {
            if !path.is_file() {
                return Err(MemoryError::not_found(
                    "model file",
                    format!(
                        "{} (`memory models fetch --embedder <name>` or `--reranker <name>` \
                         fetches a catalogue model)",
                        path.display()
                    ),
                ));
            }
        }
        Ok(files)
    }
}

/// `MEMORY_ONNX_MODEL_DIR`, else `~/.cache/memory-models/all-minilm-l6-v2-int8-dynamic`.
pub(crate) fn default_model_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("MEMORY_ONNX_MODEL_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join(".cache/memory-models/all-minilm-l6-v2-int8-dynamic")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_directory_names_the_file_and_the_setup_step() {
        let err = ModelFiles::in_dir(Path::new("/nonexistent/model")).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("model_qint8_arm64.onnx"), "{text}");
        assert!(text.contains("setup-onnx.sh"), "{text}");
        assert!(err.is_not_found());
    }
}
