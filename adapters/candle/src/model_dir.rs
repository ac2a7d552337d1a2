//! Where the model files live, and a clear error when they are missing.

use std::path::{Path, PathBuf};

use memory_core::MemoryError;

/// The three files the embedder reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFiles {
    /// BERT configuration.
    pub config: PathBuf,
    /// WordPiece tokenizer.
    pub tokenizer: PathBuf,
    /// Weights.
    pub weights: PathBuf,
}

impl ModelFiles {
    /// The files inside `dir`, or [`MemoryError::NotFound`] naming the missing one and the
    /// setup command that fetches them.
    pub fn in_dir(dir: &Path) -> Result<Self, MemoryError> {
        let files = Self {
            config: dir.join("config.json"),
            tokenizer: dir.join("tokenizer.json"),
            weights: dir.join("model.safetensors"),
        };
        for path in [&files.config, &files.tokenizer, &files.weights] {
            if !path.is_file() {
                return Err(MemoryError::not_found(
                    "embedding model file",
                    format!(
                        "{} (`memory models fetch` fetches the local model; \
                         scripts/setup-model.sh is the offline route)",
                        path.display()
                    ),
                ));
            }
        }
        Ok(files)
    }
}

/// `MEMORY_MODEL_DIR`, else `~/.cache/memory-models/all-minilm-l6-v2`.
pub(crate) fn default_model_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("MEMORY_MODEL_DIR") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join(".cache/memory-models/all-minilm-l6-v2")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_directory_names_the_file_and_the_setup_step() {
        let err = ModelFiles::in_dir(Path::new("/nonexistent/model")).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("config.json"), "{text}");
        assert!(text.contains("setup-model.sh"), "{text}");
        assert!(err.is_not_found());
    }
}
