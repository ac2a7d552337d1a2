//! Profiles as one SQLite database each, of which at most a configured number are open at once.

use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use memory_core::open_handles::OpenHandles;
use memory_core::ports::{
    LongTermMemoryStore, MemoryProfiles, TextIndex, TextIndexes, VectorIndex, VectorIndexes,
};
use memory_core::{MemoryError, Result, validate_profile_name};
use tracing::debug;

use crate::database::{Schema, SqliteDatabase};
use crate::error::{BACKEND, db};
use crate::long_term_memory::SqliteLongTermMemory;
use crate::profile_index::SqliteProfileIndex;
use crate::{SqliteConfig, SqliteVectorIndex};

/// What a store or index handed out holds so that its profile stays open while it lives.
pub(crate) type Lease = Arc<dyn std::any::Any + Send + Sync>;

/// Profiles open at once unless configured otherwise (see [`SqliteProfiles::open_profiles`]).
pub const DEFAULT_OPEN_PROFILES: usize = memory_core::open_handles::DEFAULT_OPEN_PROFILES;

/// How long an unused profile stays open unless configured otherwise.
pub const DEFAULT_PROFILE_IDLE: Duration = memory_core::open_handles::DEFAULT_PROFILE_IDLE;

/// Read connections of one profile database unless configured otherwise.
pub const DEFAULT_PROFILE_READERS: u32 = 4;

/// The page size of a new profile database unless configured otherwise: SQLite's smallest,
/// an eighth of its default, so that a small profile's nearly empty tables and indexes (a
/// page each) take the least room. A profile of 100,000 memories ingests and recalls within
/// the noise of 1 KiB pages, and about a tenth slower than in 4 KiB ones
/// (docs/benchmarks-journal.md).
pub const DEFAULT_PROFILE_PAGE_SIZE: u32 = 512;

/// Profiles as one SQLite database each, `<root>/<name>.db`: deleting or exporting a
/// profile is a file operation, and isolation is physical. One object serves three ports
/// over those files: the records ([`MemoryProfiles`]), their text indexes ([`TextIndexes`],
/// written by the store) and their vectors ([`VectorIndexes`]).
///
/// **Bounded.** An open profile holds a writer connection, up to `readers` read connections
/// (a thread and a file each) and its vectors in memory. At most
/// [`open_profiles`](Self::open_profiles) are open at once, whatever the number of profiles:
/// opening another closes the least recently used one not in use (a store, index or vector
/// index handed out and still alive is in use, and so is a vector graph being built), and a
/// profile unused for the idle time is closed in the background. When every open profile is
/// in use, an open waits up to the busy timeout for one to be let go, then fails as
/// [`MemoryError::Transient`] (a 503 with `Retry-After` over HTTP). Reopening reads the file
/// (and the vector graph's snapshot) again: nothing is lost.
///
/// ```no_run
/// # fn demo() {
/// use std::time::Duration;
/// use memory_sqlite::SqliteProfiles;
/// let profiles = SqliteProfiles::new("memory-data/profiles")
///     .open_profiles(32, Duration::from_secs(60));
/// # }
/// ```
pub struct SqliteProfiles {
    root: PathBuf,
    busy_timeout: Duration,
    approximate: Option<crate::ApproximateSearch>,
    own_text: OwnText,
    readers: u32,
    page_size: u32,
    idle: Duration,
    open: Arc<tokio::sync::Mutex<OpenHandles<Arc<OpenProfile>>>>,
    /// Set once the task that closes idle profiles runs.
    sweeping: std::sync::OnceLock<()>,
}

/// Whether the profile databases index their own text with FTS5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OwnText {
    /// Every profile does (turned back on, and rebuilt, where it was off).
    Always,
    /// None does (turned off, and emptied, where it was on).
    Never,
    /// Each as its file says: a new one does, until its text moves to another index
    /// ([`TextIndexes::delete_text_index`]).
    UntilMoved,
}

/// An open profile database and its one vector index (whose matrix cache must be unique).
struct OpenProfile {
    db: SqliteDatabase,
    vectors: Arc<SqliteVectorIndex>,
    /// Whether the database keeps its own FTS5 indexes (as this process last saw or set).
    own_text: std::sync::atomic::AtomicBool,
}

impl OpenProfile {
    /// The names of the profile's vector namespaces.
    async fn vector_namespaces(&self) -> Result<Vec<String>> {
        sqlx::query_scalar("SELECT namespace FROM vector_namespaces")
            .fetch_all(&mut *self.db.reader.acquire().await?)
            .await
            .map_err(db)
    }
}

/// Whether an open profile is in use: something handed out still holds it or its vectors,
/// or a vector graph is being built from it.
fn in_use(profile: &Arc<OpenProfile>) -> bool {
    Arc::strong_count(profile) > 1
        || Arc::strong_count(&profile.vectors) > 1
        || profile.vectors.is_building()
}

/// Closes profiles taken out of the open set (none of them is in use).
async fn close_all(profiles: Vec<Arc<OpenProfile>>) {
    for profile in profiles {
        debug!(path = %profile.db.path.display(), "closing an unused profile database");
        profile.db.close().await;
    }
}

impl SqliteProfiles {
    /// Profiles under `root` (created on first use).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            busy_timeout: crate::config::DEFAULT_BUSY_TIMEOUT,
            approximate: Some(crate::ApproximateSearch::default()),
            own_text: OwnText::Always,
            readers: DEFAULT_PROFILE_READERS,
            page_size: DEFAULT_PROFILE_PAGE_SIZE,
            idle: DEFAULT_PROFILE_IDLE,
            open: Arc::new(tokio::sync::Mutex::new(OpenHandles::new(
                DEFAULT_OPEN_PROFILES,
                DEFAULT_PROFILE_IDLE,
            ))),
            sweeping: std::sync::OnceLock::new(),
        }
    }

    /// Sets how many profile databases may be open at once (default 16) and after how long
    /// unused an open one is closed (default 30 s).
    pub fn open_profiles(mut self, most: usize, idle: Duration) -> Self {
        self.idle = idle;
        self.open = Arc::new(tokio::sync::Mutex::new(OpenHandles::new(most, idle)));
        self
    }

    /// Sets how many read connections each open profile may have (default 4, at least 1).
    pub fn readers(mut self, readers: u32) -> Self {
        self.readers = readers.max(1);
        self
    }

    /// Sets the page size of profile databases created from now on (default 512 bytes).
    /// SQLite takes a power of two from 512 to 65,536: another value is rounded up to a power
    /// of two and kept in that range. An existing file keeps the size it was made with.
    pub fn page_size(mut self, bytes: u32) -> Self {
        self.page_size = bytes.clamp(512, 65_536).next_power_of_two();
        self
    }

    /// Sets how long a profile write waits for another process's lock (see
    /// [`SqliteConfig::busy_timeout`]), and an open for a profile to be let go when every open
    /// one is in use.
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// Sets when each profile's vectors are searched through an approximate graph (see
    /// [`crate::ApproximateSearch`]); `None` scans exactly.
    pub fn approximate(mut self, approximate: Option<crate::ApproximateSearch>) -> Self {
        self.approximate = approximate;
        self
    }

    /// Sets whether each profile database indexes its own text with FTS5 (the default), for
    /// [`TextIndexes`]. Off when the profiles' text is indexed elsewhere (a search engine kept
    /// in step by the engine): writes then skip the FTS5 triggers, a profile's FTS5 tables are
    /// emptied when it is opened, and [`TextIndexes::text_index`] is refused. Turned back on,
    /// a profile's FTS5 tables are rebuilt from its records when it is opened.
    pub fn own_text_index(mut self, own: bool) -> Self {
        self.own_text = if own { OwnText::Always } else { OwnText::Never };
        self
    }

    /// Sets each profile database to index its own text with FTS5 until its text moves to
    /// another index: a new profile does; [`TextIndexes::delete_text_index`] stops a
    /// profile's FTS5 index for good (triggers dropped, tables emptied), after which its
    /// [`TextIndexes::text_index`] is `NotSupported`; an open changes nothing. This is how a
    /// small profile keeps its text beside its records and a large one in a search engine
    /// (the engine's `TieredTextIndexes` decides when it moves).
    pub fn own_text_index_until_moved(mut self) -> Self {
        self.own_text = OwnText::UntilMoved;
        self
    }

    /// How many profile databases are open now (at most
    /// [`open_profiles`](Self::open_profiles)).
    pub async fn open_count(&self) -> usize {
        self.open.lock().await.len()
    }

    /// Loads every vector namespace of `profile` and waits for their graphs (see
    /// [`SqliteVectorIndex::prepare`]).
    pub async fn prepare_vectors(&self, profile: &str) -> Result<()> {
        let open = self.profile(profile).await?;
        for namespace in open.vector_namespaces().await? {
            open.vectors.prepare(&namespace).await?;
        }
        Ok(())
    }

    /// The profile's vector index as its concrete type, for what the port does not offer
    /// ([`SqliteVectorIndex::search_exhaustive`], [`SqliteVectorIndex::prepare`]). The
    /// profile stays open while it lives.
    pub async fn sqlite_vector_index(&self, profile: &str) -> Result<Arc<SqliteVectorIndex>> {
        Ok(Arc::clone(&self.profile(profile).await?.vectors))
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.join(format!("{name}.db"))
    }

    /// The open profile, opened now if it is not (closing the least recently used unused
    /// one when the open set is full; waiting up to the busy timeout when all are in use).
    async fn profile(&self, name: &str) -> Result<Arc<OpenProfile>> {
        validate_profile_name(name)?;
        self.sweep_in_background();
        let deadline = Instant::now() + self.busy_timeout;
        loop {
            let mut open = self.open.lock().await;
            if let Some(profile) = open.get(name, Instant::now()) {
                return Ok(profile);
            }
            match open.make_room(in_use) {
                Ok(taken) => {
                    let opened = self.open_database(name).await.map(Arc::new);
                    if let Ok(profile) = &opened {
                        open.insert(name, Arc::clone(profile), Instant::now());
                    }
                    drop(open);
                    close_all(taken).await;
                    return opened;
                }
                Err(full) => {
                    drop(open);
                    if Instant::now() >= deadline {
                        return Err(MemoryError::transient(
                            BACKEND,
                            format!(
                                "all {} open profile databases are in use; raise [storage] \
                                 open_profiles or retry shortly",
                                full.open
                            ),
                        ));
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        }
    }

    async fn open_database(&self, name: &str) -> Result<OpenProfile> {
        let db = SqliteDatabase::open_with(
            SqliteConfig::new(self.path(name))
                .secure_delete(true)
                .busy_timeout(self.busy_timeout)
                .readers(self.readers),
            Schema::Profile {
                page_size: self.page_size,
            },
        )
        .await?;
        let own_text = match self.own_text {
            OwnText::Always | OwnText::Never => {
                let own = self.own_text == OwnText::Always;
                crate::profile_fts::set(&db, own).await?;
                own
            }
            OwnText::UntilMoved => crate::profile_fts::is_on(&db).await?,
        };
        Ok(OpenProfile {
            vectors: Arc::new(
                SqliteVectorIndex::new(db.clone()).with_approximate(self.approximate),
            ),
            db,
            own_text: std::sync::atomic::AtomicBool::new(own_text),
        })
    }

    /// Starts, once, the task that closes profiles unused for the idle time (it ends when
    /// these profiles are dropped). Without a Tokio runtime, idle profiles are closed only to
    /// make room.
    fn sweep_in_background(&self) {
        self.sweeping.get_or_init(|| {
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                return;
            };
            let open: Weak<tokio::sync::Mutex<OpenHandles<Arc<OpenProfile>>>> =
                Arc::downgrade(&self.open);
            let every = memory_core::open_handles::sweep_interval(self.idle);
            runtime.spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    let Some(handles) = open.upgrade() else {
                        return;
                    };
                    let taken = handles.lock().await.take_idle(Instant::now(), in_use);
                    drop(handles);
                    close_all(taken.into_iter().map(|(_, p)| p).collect()).await;
                }
            });
        });
    }
}

#[async_trait]
impl MemoryProfiles for SqliteProfiles {
    async fn open(&self, name: &str) -> Result<Arc<dyn LongTermMemoryStore>> {
        let profile = self.profile(name).await?;
        Ok(Arc::new(SqliteLongTermMemory::leased(
            profile.db.clone(),
            profile,
        )))
    }

    async fn list(&self) -> Result<Vec<String>> {
        let mut names = Vec::new();
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(names),
            Err(e) => return Err(crate::error::io(&self.root, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| crate::error::io(&self.root, e))?;
            let file = entry.file_name().to_string_lossy().into_owned();
            if let Some(name) = file.strip_suffix(".db")
                && validate_profile_name(name).is_ok()
            {
                names.push(name.to_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    async fn exists(&self, name: &str) -> Result<bool> {
        validate_profile_name(name)?;
        Ok(self.open.lock().await.contains(name) || self.path(name).exists())
    }

    async fn delete(&self, name: &str) -> Result<bool> {
        validate_profile_name(name)?;
        let removed = self.open.lock().await.remove(name);
        if let Some(profile) = removed {
            profile.db.close().await;
        }
        let path = self.path(name);
        let existed = path.exists();
        for suffix in ["", "-wal", "-shm"] {
            let file = PathBuf::from(format!("{}{suffix}", path.display()));
            match std::fs::remove_file(&file) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(crate::error::io(&file, e)),
            }
        }
        crate::graph_snapshot::remove_all(&path)?;
        Ok(existed)
    }
}

#[async_trait]
impl TextIndexes for SqliteProfiles {
    async fn text_index(&self, profile: &str) -> Result<Arc<dyn TextIndex>> {
        if self.own_text == OwnText::Never {
            return Err(MemoryError::NotSupported {
                operation: "a profile's FTS5 text index (these profiles were opened with own_text_index(false))",
                backend: BACKEND,
            });
        }
        let profile = self.profile(profile).await?;
        if !profile.own_text.load(std::sync::atomic::Ordering::Acquire) {
            return Err(MemoryError::NotSupported {
                operation: "a profile's FTS5 text index (its text moved to another index)",
                backend: BACKEND,
            });
        }
        Ok(Arc::new(SqliteProfileIndex::leased(
            profile.db.clone(),
            profile,
        )))
    }

    /// The index lives in the profile's file: [`MemoryProfiles::delete`] removes it. With
    /// [`own_text_index_until_moved`](SqliteProfiles::own_text_index_until_moved), an
    /// existing profile's FTS5 index is stopped and emptied here (its text moved elsewhere).
    async fn delete_text_index(&self, profile: &str) -> Result<()> {
        validate_profile_name(profile)?;
        if self.own_text != OwnText::UntilMoved || !self.path(profile).exists() {
            return Ok(());
        }
        let open = self.profile(profile).await?;
        crate::profile_fts::set(&open.db, false).await?;
        open.own_text
            .store(false, std::sync::atomic::Ordering::Release);
        Ok(())
    }
}

#[async_trait]
impl VectorIndexes for SqliteProfiles {
    async fn vector_index(&self, profile: &str) -> Result<Arc<dyn VectorIndex>> {
        Ok(Arc::clone(&self.profile(profile).await?.vectors) as Arc<dyn VectorIndex>)
    }

    /// Clears every namespace of the profile's vectors (when its file exists); the records
    /// beside them stay.
    async fn delete_vector_index(&self, profile: &str) -> Result<()> {
        validate_profile_name(profile)?;
        if !self.path(profile).exists() {
            return Ok(());
        }
        let open = self.profile(profile).await?;
        for namespace in open.vector_namespaces().await? {
            open.vectors.clear(&namespace).await?;
        }
        Ok(())
    }
}
