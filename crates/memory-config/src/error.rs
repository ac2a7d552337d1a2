use std::path::PathBuf;

/// A configuration problem, naming the file, the line and the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// TOML syntax or shape errors (unknown keys, wrong types).
    #[error("{path}: {message}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message, which names the line and the key.
        message: String,
    },
    /// A value is well-formed but wrong.
    #[error("{path}:{line}: `{key}`: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The key (`blocks[2].file`).
        key: String,
        /// What is wrong.
        message: String,
    },
}
