//! Composition root: the SQLite adapter behind the engine's services.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use memory_core::ports::{MessageStore, SystemClock};
use memory_core::{Result, SessionId};
use memory_engine::SessionManager;
use memory_sqlite::{SqliteConfig, SqliteDatabase, SqliteMessageStore, SqliteSessionRegistry};

/// The default data directory.
pub const DEFAULT_DATA_DIR: &str = "./memory-data";

/// Open services over one data directory.
pub struct App {
    pub manager: SessionManager,
    pub store: Arc<dyn MessageStore>,
    pub db: SqliteDatabase,
}

impl App {
    /// Opens (creating if needed) `<data_dir>/memory.db`.
    pub async fn open(data_dir: &Path) -> Result<Self> {
        let db = SqliteDatabase::open(SqliteConfig::new(data_dir.join("memory.db"))).await?;
        let store: Arc<dyn MessageStore> = Arc::new(SqliteMessageStore::new(db.clone()));
        let registry = Arc::new(SqliteSessionRegistry::new(db.clone()));
        let manager = SessionManager::new(store.clone(), registry, Arc::new(SystemClock));
        Ok(Self { manager, store, db })
    }

    /// Closes the database cleanly.
    pub async fn close(self) {
        self.db.close().await;
    }
}

/// The data dir from the flag, or the default.
pub fn data_dir(flag: Option<PathBuf>) -> PathBuf {
    flag.unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR))
}

/// Parses a session id argument.
pub fn session_id(raw: &str) -> Result<SessionId> {
    SessionId::new(raw)
}
