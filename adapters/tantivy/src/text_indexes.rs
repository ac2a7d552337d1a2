//! Each long-term profile's text index: its own Tantivy index in its own directory, in the
//! deployment's language or the profile's own; at most a configured number open at once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use memory_core::open_handles::OpenHandles;

use async_trait::async_trait;
use memory_core::ports::{TextIndex, TextIndexes};
use memory_core::{MemoryError, Result, TextLanguage, validate_profile_name};

use crate::error::BACKEND;
use crate::{TantivyOptions, TantivyTextIndex};

/// Profile indexes open at once unless configured otherwise (see
/// [`TantivyTextIndexes::open_profiles`]).
pub const DEFAULT_OPEN_PROFILES: usize = memory_core::open_handles::DEFAULT_OPEN_PROFILES;

/// How long an unused profile index stays open unless configured otherwise.
pub const DEFAULT_PROFILE_IDLE: Duration = memory_core::open_handles::DEFAULT_PROFILE_IDLE;

/// [`TextIndexes`] on Tantivy: `<root>/<profile>/`, each holding its writer lock and its
/// writer's threads while it is open.
///
/// **Bounded.** At most [`open_profiles`](Self::open_profiles) indexes are open at once,
/// whatever the number of profiles: opening another closes the least recently used one not
/// in use (an index handed out and still alive is in use), and an index unused for the idle
/// time is closed in the background. Closing commits nothing new (every write returned after
/// its commit) and lets the writer lock go; reopening reads the directory again. When every
/// open index is in use, an open waits up to five seconds for one to be let go, then fails as
/// [`MemoryError::Transient`] (a 503 with `Retry-After` over HTTP). Shared or not, no index
/// watches its files ([`TantivyOptions::watch`] is off): it reloads before a search when
/// another process committed.
///
/// ```no_run
/// # fn demo() {
/// use memory_core::TextLanguage;
/// use memory_tantivy::{TantivyOptions, TantivyTextIndexes};
/// let indexes = TantivyTextIndexes::new("data/tantivy/profiles")
///     .with_options(TantivyOptions::default())
///     .with_profile_language("kenji", TextLanguage::Cjk);
/// # }
/// ```
#[derive(Debug)]
pub struct TantivyTextIndexes {
    root: PathBuf,
    options: TantivyOptions,
    languages: HashMap<String, TextLanguage>,
    idle: Duration,
    open: Arc<tokio::sync::Mutex<OpenHandles<Arc<TantivyTextIndex>>>>,
    /// Set once the task that closes idle indexes runs.
    sweeping: std::sync::OnceLock<()>,
}

/// How long an open waits for an index to be let go when every open one is in use.
const ROOM_WAIT: Duration = Duration::from_secs(5);

/// Whether an open index is in use: something handed out still holds it.
fn in_use(index: &Arc<TantivyTextIndex>) -> bool {
    Arc::strong_count(index) > 1
}

/// Closes indexes taken out of the open set (none of them in use): their writer threads
/// finish and are joined, off the async workers.
async fn close_all(indexes: Vec<Arc<TantivyTextIndex>>) {
    if indexes.is_empty() {
        return;
    }
    let closed = tokio::task::spawn_blocking(move || drop(indexes)).await;
    if let Err(e) = closed {
        tracing::warn!(error = %e, "closing unused profile indexes failed");
    }
}

impl TantivyTextIndexes {
    /// Profile indexes under `root`, in English, erased before a delete returns, each
    /// written by one indexing thread and merged on one (a profile's index is small).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            options: TantivyOptions::default().writer_threads(1).merge_threads(1),
            languages: HashMap::new(),
            idle: DEFAULT_PROFILE_IDLE,
            open: Arc::new(tokio::sync::Mutex::new(OpenHandles::new(
                DEFAULT_OPEN_PROFILES,
                DEFAULT_PROFILE_IDLE,
            ))),
            sweeping: std::sync::OnceLock::new(),
        }
    }

    /// Sets how many profile indexes may be open at once (default 16) and after how long
    /// unused an open one is closed (default 30 s).
    pub fn open_profiles(mut self, most: usize, idle: Duration) -> Self {
        self.idle = idle;
        self.open = Arc::new(tokio::sync::Mutex::new(OpenHandles::new(most, idle)));
        self
    }

    /// How many profile indexes are open now.
    pub async fn open_count(&self) -> usize {
        self.open.lock().await.len()
    }

    /// Options every profile's index opens with (its language unless the profile has its
    /// own).
    pub fn with_options(mut self, options: TantivyOptions) -> Self {
        self.options = options;
        self
    }

    /// Analyzes `profile`'s text as `language`.
    pub fn with_profile_language(
        mut self,
        profile: impl Into<String>,
        language: TextLanguage,
    ) -> Self {
        self.languages.insert(profile.into(), language);
        self
    }

    /// The language `profile`'s index is made in.
    pub fn language(&self, profile: &str) -> TextLanguage {
        self.languages
            .get(profile)
            .copied()
            .unwrap_or(self.options.language)
    }

    /// The open index of `profile`, opened now if it is not (closing the least recently
    /// used unused one first when the open set is full, before the lock is let go, so that a
    /// reopen never meets its own writer lock).
    async fn index(&self, profile: &str) -> Result<Arc<TantivyTextIndex>> {
        validate_profile_name(profile)?;
        self.sweep_in_background();
        let deadline = Instant::now() + ROOM_WAIT;
        loop {
            let mut open = self.open.lock().await;
            if let Some(index) = open.get(profile, Instant::now()) {
                return Ok(index);
            }
            match open.make_room(in_use) {
                Ok(taken) => {
                    close_all(taken).await;
                    let path = self.root.join(profile);
                    // No file watcher: a thread less per open index, and an open that
                    // cannot fail for want of one (closing an idle index bounds how long it
                    // keeps another process's rewritten segments open instead).
                    let options = self
                        .options
                        .clone()
                        .language(self.language(profile))
                        .watch(false);
                    let index = tokio::task::spawn_blocking(move || {
                        TantivyTextIndex::open_with(path, options)
                    })
                    .await
                    .map_err(|e| MemoryError::backend(BACKEND, e.to_string()))??;
                    let index = Arc::new(index);
                    open.insert(profile, Arc::clone(&index), Instant::now());
                    return Ok(index);
                }
                Err(full) => {
                    drop(open);
                    if Instant::now() >= deadline {
                        return Err(MemoryError::transient(
                            BACKEND,
                            format!(
                                "all {} open profile text indexes are in use; raise [storage] \
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

    /// Starts, once, the task that closes indexes unused for the idle time (it ends when
    /// these indexes are dropped). Without a Tokio runtime, idle indexes are closed only to
    /// make room.
    fn sweep_in_background(&self) {
        self.sweeping.get_or_init(|| {
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                return;
            };
            let open: Weak<tokio::sync::Mutex<OpenHandles<Arc<TantivyTextIndex>>>> =
                Arc::downgrade(&self.open);
            let every = memory_core::open_handles::sweep_interval(self.idle);
            runtime.spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    let Some(handles) = open.upgrade() else {
                        return;
                    };
                    // Closed under the lock: a reopen must not meet the writer lock.
                    let mut guard = handles.lock().await;
                    let taken = guard.take_idle(Instant::now(), in_use);
                    close_all(taken.into_iter().map(|(_, index)| index).collect()).await;
                    drop(guard);
                }
            });
        });
    }
}

#[async_trait]
impl TextIndexes for TantivyTextIndexes {
    async fn text_index(&self, profile: &str) -> Result<Arc<dyn TextIndex>> {
        Ok(self.index(profile).await? as Arc<dyn TextIndex>)
    }

    async fn delete_text_index(&self, profile: &str) -> Result<()> {
        validate_profile_name(profile)?;
        if !self.root.join(profile).exists() {
            return Ok(());
        }
        self.index(profile).await?.clear_all().await
    }
}
