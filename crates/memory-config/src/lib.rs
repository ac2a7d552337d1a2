//! # memory-config
//!
//! Reads and validates `memory.toml`, the configuration the `memory` CLI (and later the
//! server) composes adapters from. It knows no adapter: it returns validated declarations,
//! and the binary picks the providers.
//!
//! ```
//! use memory_config::{BlockSource, MemoryConfig};
//! let config = MemoryConfig::parse(r#"
//! [[blocks]]
//! label = "memory"
//! kind = "writable"
//! max_tokens = 1100
//! "#, std::path::Path::new(".")).unwrap();
//! assert_eq!(config.blocks[0].label, "memory");
//! assert!(matches!(config.blocks[0].source, BlockSource::Store));
//! ```

mod error;
mod keys;
mod model;
mod storage;
mod tenant;

pub use error::ConfigError;
pub use keys::{ApiKeyEntry, load_api_keys, parse_api_keys};
pub use model::{
    BlockDeclaration, BlockKindConfig, BlockSource, CONFIG_FILE, CategoryConfig, CompactionConfig,
    EmbedderChoice, Lifetimes, LlmConfig, LongTermMemoryConfig, MemoryConfig, MemoryToolConfig,
    SessionsConfig, StructuredOutputMode, TokenizerConfig,
};
pub use storage::{
    Backend, DEFAULT_LANCEDB_EXACT_FILTER_LIMIT, DEFAULT_LANCEDB_FIELD_INDEX_THRESHOLD,
    DEFAULT_LANCEDB_INDEX_THRESHOLD, DEFAULT_LANCEDB_NPROBES, DEFAULT_LANCEDB_REFINE_FACTOR,
    DEFAULT_PROFILES_FROM_DOCUMENTS, DirectorySettings, LancedbLocation, LancedbSettings,
    MAX_COMMIT_INTERVAL_MS, PostgresSettings, RedisSettings, Role, S3Settings, SqliteSettings,
    StorageConfig, TantivySettings, all_on_postgres,
};
pub use tenant::{MAX_TENANT_NAME, TenantName};
