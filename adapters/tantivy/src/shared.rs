//! Writing an index directory that several processes share ([`crate::TantivyOptions::shared`]):
//! `memory serve` twice, `memory worker` and the CLI, on one host.
//!
//! Tantivy lets one writer at a time hold a directory. A shared index therefore holds no
//! writer while it is idle: for each batch of changes the writer thread waits for the
//! directory's lock file ([`WRITER_LOCK_FILE`]), opens the index afresh (so it knows every
//! file the other processes made), applies and commits the batch, rewrites the segments that
//! hold deleted documents and merges what the log merge policy ([`merge_policy`]) picks,
//! deletes the files no segment uses, and lets the lock go. Readers in every process reload when the index's
//! `meta.json` changes (Tantivy's own meta lock keeps the files they open from being
//! collected meanwhile).

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use memory_core::{MemoryError, Result, TextLanguage};
use tantivy::index::{SegmentId, SegmentMeta};
use tantivy::indexer::{MergePolicy, NoMergePolicy};
use tantivy::{Index, IndexReader, IndexWriter};
use tracing::{debug, warn};

use crate::committer::{Message, Request, answer, apply_change, gather_writes};
use crate::error::{BACKEND, tantivy_error};
use crate::language::analyzer;
use crate::merge_policy::merge_policy;
use crate::schema::Fields;

/// The file whose lock a process holds while it writes a shared index (beside Tantivy's own
/// lock, which it also takes).
pub(crate) const WRITER_LOCK_FILE: &str = "memory-writer.lock";

/// Holds the writer lock of `dir` (released when dropped), waiting at most `wait` for the
/// process that holds it. A wait that runs out is `Transient`: the other process is busy.
///
/// The wait is the kernel's (a blocked waiter is woken as soon as the holder lets go, where
/// polling could lose every race to a busy holder), on a thread of its own so that it can
/// end: a lock that thread takes after the wait ran out is let go at once.
pub(crate) fn lock_directory(dir: &Path, wait: Duration) -> Result<File> {
    let path = dir.join(WRITER_LOCK_FILE);
    let locking_failed = |e: std::io::Error| {
        MemoryError::backend(BACKEND, format!("locking {}: {e}", path.display()))
    };
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| MemoryError::backend(BACKEND, format!("opening {}: {e}", path.display())))?;
    match file.try_lock() {
        Ok(()) => return Ok(file),
        Err(TryLockError::WouldBlock) => {}
        Err(TryLockError::Error(e)) => return Err(locking_failed(e)),
    }
    let (sender, receiver) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("tantivy-lock-wait".into())
        .spawn(move || {
            // When nobody waits any more the send fails and the file, closed, unlocks.
            let _ = sender.send(file.lock().map(|()| file));
        })
        .map_err(locking_failed)?;
    match receiver.recv_timeout(wait) {
        Ok(Ok(file)) => Ok(file),
        Ok(Err(e)) => Err(locking_failed(e)),
        Err(_) => Err(MemoryError::transient(
            BACKEND,
            format!(
                "{} stayed locked by another process's write for {} ms",
                dir.display(),
                wait.as_millis()
            ),
        )),
    }
}

/// The writer thread of a shared index: what it needs to open the index for each batch.
pub(crate) struct SharedWriter {
    pub(crate) path: PathBuf,
    pub(crate) analyzer: String,
    pub(crate) language: TextLanguage,
    pub(crate) fields: Fields,
    pub(crate) threads: usize,
    pub(crate) merge_threads: usize,
    pub(crate) interval: Duration,
    pub(crate) lock_wait: Duration,
}

impl SharedWriter {
    /// Commits batches of the requests until the handle is dropped.
    pub(crate) fn run(self, messages: Receiver<Message>, reader: IndexReader, commits: &AtomicU64) {
        loop {
            let first = match messages.recv() {
                Ok(Message::Write(request)) => request,
                Ok(Message::MergeEnded(_)) => continue,
                Ok(Message::Stop) | Err(_) => return,
            };
            let mut batch = vec![first];
            // A shared index runs no merge of its own between batches: no merge ends arrive.
            let stopping = gather_writes(&messages, &mut batch, self.interval, |_| {});
            let outcome = self.commit(&batch);
            if outcome.is_ok() {
                commits.fetch_add(1, Ordering::Relaxed);
                if let Err(e) = reader.reload() {
                    warn!(error = %e, "reloading after a commit failed");
                }
            }
            answer(batch, &outcome);
            if stopping {
                return;
            }
        }
    }

    /// Opens the index afresh under the directory's lock and takes Tantivy's writer.
    fn open_writer(&self) -> Result<(File, Index, IndexWriter)> {
        let lock = lock_directory(&self.path, self.lock_wait)?;
        let directory = tantivy::directory::MmapDirectory::open(&self.path).map_err(|e| {
            MemoryError::backend(BACKEND, format!("opening {}: {e}", self.path.display()))
        })?;
        let index = Index::open(directory).map_err(tantivy_error)?;
        index
            .tokenizers()
            .register(&self.analyzer, analyzer(self.language));
        let writer = index
            .writer_with_options(crate::text_index::writer_options(
                self.threads,
                self.merge_threads,
            ))
            .map_err(|e| match e {
                tantivy::TantivyError::LockFailure(..) => MemoryError::Conflict {
                    message: format!(
                        "{} is held for writing by a process that does not share it; open \
                         it shared in every process",
                        self.path.display()
                    ),
                },
                other => tantivy_error(other),
            })?;
        writer.set_merge_policy(Box::new(NoMergePolicy));
        Ok((lock, index, writer))
    }

    /// Applies and commits the batch, then erases, merges and collects before the lock goes.
    /// `Ok(Some(error))`: committed, but the deleted text could not be erased yet (the next
    /// commit of any process tries again).
    fn commit(&self, batch: &[Request]) -> Result<Option<MemoryError>> {
        let (_lock, index, mut writer) = self.open_writer()?;
        let applied = batch
            .iter()
            .try_for_each(|request| apply_change(&writer, &self.fields, &request.change))
            .and_then(|()| writer.commit().map(|_| ()).map_err(tantivy_error));
        if let Err(e) = applied {
            if let Err(rollback) = writer.rollback() {
                warn!(error = %rollback, "index rollback failed");
            }
            return Err(e);
        }
        debug!(changes = batch.len(), "shared index commit");
        let tidied = tidy(&index, &mut writer);
        if let Err(e) = &tidied {
            warn!(error = %e, "erasing or merging after a commit failed");
        }
        // Dropping the writer waits for nothing (every merge was waited for) and releases
        // Tantivy's lock; `_lock` goes after it.
        if let Err(e) = writer.wait_merging_threads() {
            warn!(error = %e, "closing the shared writer failed");
        }
        Ok(tidied.err())
    }
}

/// Rewrites the segments holding deleted documents, merges what the log policy picks among
/// the others, and deletes the files no segment uses.
fn tidy(index: &Index, writer: &mut IndexWriter) -> Result<()> {
    // Segment ids only: a live `SegmentMeta` keeps its files from the garbage collection.
    let (deleted, candidates) = {
        let metas = index.searchable_segment_metas().map_err(tantivy_error)?;
        let (deleted, clean): (Vec<SegmentMeta>, Vec<SegmentMeta>) =
            metas.into_iter().partition(SegmentMeta::has_deletes);
        let ids: Vec<SegmentId> = deleted.iter().map(SegmentMeta::id).collect();
        (ids, merge_policy().compute_merge_candidates(&clean))
    };
    if !deleted.is_empty() {
        writer.merge(&deleted).wait().map_err(tantivy_error)?;
    }
    for candidate in candidates {
        writer.merge(&candidate.0).wait().map_err(tantivy_error)?;
    }
    writer
        .garbage_collect_files()
        .wait()
        .map_err(tantivy_error)?;
    Ok(())
}
