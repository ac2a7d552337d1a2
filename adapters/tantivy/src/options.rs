//! How a [`crate::TantivyTextIndex`] is opened: its language, how long a write may wait to
//! share a commit, and when deleted text leaves the files.

use std::time::Duration;

use memory_core::TextLanguage;

/// When deleted documents' text leaves the index files. A Tantivy delete is a tombstone:
/// the document is unsearchable at once, but its text stays in its segment until the
/// segment is rewritten by a merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Erasure {
    /// Every segment holding a deleted document is rewritten before the delete returns (a
    /// purge is then gone from the disk when it is acknowledged). Costs a rewrite of those
    /// segments per delete: right for small indexes, such as a profile's.
    #[default]
    BeforeReturn,
    /// The rewrite starts when the delete is committed and runs in the background (deletes
    /// return at once; the text leaves the files when the merge ends). Segments already in a
    /// merge are rewritten as soon as it ends: the writer thread runs every merge and looks
    /// for deleted documents again each time one ends. Right for a large shared index.
    InBackground,
}

/// Options of a [`crate::TantivyTextIndex`].
///
/// ```
/// use std::time::Duration;
/// use memory_core::TextLanguage;
/// use memory_tantivy::{Erasure, TantivyOptions};
/// let options = TantivyOptions::default()
///     .language(TextLanguage::French)
///     .commit_interval(Duration::from_millis(5))
///     .erasure(Erasure::InBackground);
/// assert_eq!(options.language, TextLanguage::French);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TantivyOptions {
    /// The language text is analyzed as (recorded in the index; a reopen as another language
    /// is refused). Default: English.
    pub language: TextLanguage,
    /// How long the committer waits, after the first write of a batch, for more writes to
    /// share its commit. Zero (the default) commits at once; writes that arrive while a
    /// commit runs share the next one. A write returns once its commit is done and the
    /// reader reloaded, so it is visible to the next search whatever the interval.
    pub commit_interval: Duration,
    /// When deleted text leaves the files.
    pub erasure: Erasure,
    /// Indexing threads of the writer; 0 (the default) lets Tantivy pick one per core, at
    /// most 8. Each thread may buffer up to 32 MiB before it writes a segment.
    pub writer_threads: usize,
    /// Threads the writer merges segments on (Tantivy's default is 4; at least 1). A thread
    /// each, held while the index is open: an index of one small profile needs one.
    pub merge_threads: usize,
    /// Several processes on this host open the index at once (`memory serve` twice,
    /// `memory worker`, the CLI). Off (the default): the index holds Tantivy's writer lock
    /// while it is open, and a second process is refused. On: it holds no lock while idle;
    /// each commit waits for the directory's lock, opens the writer, commits, rewrites the
    /// segments holding deleted documents and merges before it returns (whatever
    /// [`Self::erasure`] says: a delete in a large index then holds the lock while its
    /// segments are rewritten) and lets the lock go. Every search first reloads when another
    /// process committed, and every process reloads within about half a second of a commit
    /// anyway, so none keeps a rewritten segment's files (deleted text) open for longer.
    /// Every process must open it shared. A shared directory must be on a local file system
    /// (file locks).
    pub shared: bool,
    /// How long a shared index's commit waits for another process's commit before it fails
    /// as `Transient`. Default: 30 s.
    pub lock_wait: Duration,
    /// A shared index's reader also reloads on Tantivy's file watcher (default on): a thread
    /// per index, and the half-second bound of [`Self::shared`] for an idle process. Off: it
    /// reloads only before a search and after its own commits, and keeps a rewritten
    /// segment's files open until then or until it is closed; no thread is started, so
    /// opening never fails for want of one. [`crate::TantivyTextIndexes`] turns it off: its
    /// indexes are closed when idle.
    pub watch: bool,
}

impl Default for TantivyOptions {
    fn default() -> Self {
        Self {
            language: TextLanguage::English,
            commit_interval: Duration::ZERO,
            erasure: Erasure::BeforeReturn,
            writer_threads: 0,
            merge_threads: 4,
            shared: false,
            lock_wait: Duration::from_secs(30),
            watch: true,
        }
    }
}

impl TantivyOptions {
    /// Sets the language.
    pub fn language(mut self, language: TextLanguage) -> Self {
        self.language = language;
        self
    }

    /// Sets the commit interval.
    pub fn commit_interval(mut self, interval: Duration) -> Self {
        self.commit_interval = interval;
        self
    }

    /// Sets when deleted text leaves the files.
    pub fn erasure(mut self, erasure: Erasure) -> Self {
        self.erasure = erasure;
        self
    }

    /// Opens the index shared by several processes (see [`Self::shared`]).
    pub fn shared(mut self, shared: bool) -> Self {
        self.shared = shared;
        self
    }

    /// Turns the file watcher of a shared index on or off (see [`Self::watch`]).
    pub fn watch(mut self, watch: bool) -> Self {
        self.watch = watch;
        self
    }

    /// Sets how long a shared index's commit waits for another process's.
    pub fn lock_wait(mut self, wait: Duration) -> Self {
        self.lock_wait = wait;
        self
    }

    /// Sets the writer's indexing threads (0: Tantivy's choice).
    pub fn writer_threads(mut self, threads: usize) -> Self {
        self.writer_threads = threads;
        self
    }

    /// Sets the writer's merge threads (at least 1).
    pub fn merge_threads(mut self, threads: usize) -> Self {
        self.merge_threads = threads.max(1);
        self
    }
}
