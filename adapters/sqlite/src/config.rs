use std::path::PathBuf;
use std::time::Duration;

/// How long a write waits for another connection's lock unless configured otherwise.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How hard SQLite syncs to disk on commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// `synchronous=NORMAL` in WAL mode: durable across application crashes; the last
    /// commits may roll back on power loss. The default.
    #[default]
    Normal,
    /// `synchronous=FULL`: every commit is fsynced.
    Full,
}

/// Where and how to open the database.
///
/// ```
/// use memory_sqlite::{SqliteConfig, Synchronous};
/// let config = SqliteConfig::new("memory.db").synchronous(Synchronous::Full).readers(8);
/// assert_eq!(config.readers, 8);
/// ```
#[derive(Debug, Clone)]
pub struct SqliteConfig {
    /// The database file (created if missing, with its parent directory).
    pub path: PathBuf,
    /// Commit durability.
    pub synchronous: Synchronous,
    /// Size of the read-only connection pool.
    pub readers: u32,
    /// How long a connection waits on a lock held by another process.
    pub busy_timeout: Duration,
    /// `secure_delete=ON`: deleted content is overwritten with zeros, so an erased record
    /// leaves no trace in the file (used for long-term memory profiles; costs some write I/O).
    pub secure_delete: bool,
    /// Single appends and session touches of concurrent callers share one transaction
    /// (default on); off, each is a transaction of its own.
    pub group_commit: bool,
}

impl SqliteConfig {
    /// Defaults for a file: NORMAL sync, 4 readers, 5 s busy timeout.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            synchronous: Synchronous::Normal,
            readers: 4,
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            secure_delete: false,
            group_commit: true,
        }
    }

    /// Turns group commit on or off (see [`SqliteConfig::group_commit`]).
    pub fn group_commit(mut self, on: bool) -> Self {
        self.group_commit = on;
        self
    }

    /// Sets the durability mode.
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// Overwrites deleted content (see [`SqliteConfig::secure_delete`]).
    pub fn secure_delete(mut self, on: bool) -> Self {
        self.secure_delete = on;
        self
    }

    /// Sets how long a write waits for another connection's lock before it fails with a
    /// transient "database is locked" (`MemoryError::Transient`: the caller may retry).
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// Sets the reader pool size (at least 1).
    pub fn readers(mut self, readers: u32) -> Self {
        self.readers = readers.max(1);
        self
    }
}
