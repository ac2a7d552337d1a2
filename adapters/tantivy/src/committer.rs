//! The index's one writer, on a thread of its own. Changes from every caller are applied in
//! the order they arrive and committed together (group commit): the first change of a batch
//! waits at most the commit interval for others, changes that arrive while a commit runs
//! join the next one. A caller is answered after its commit and the reader's reload, so what
//! it wrote is durable and visible to the next search when its call returns.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use memory_core::ports::TextDocument;
use memory_core::{MemoryError, Result};
use tantivy::index::SegmentId;
use tantivy::query::AllQuery;
use tantivy::{Index, IndexReader, IndexWriter, TantivyDocument, Term};
use tokio::sync::oneshot;
use tracing::{debug, warn};

use crate::error::{BACKEND, tantivy_error};
use crate::options::{Erasure, TantivyOptions};
use crate::schema::{Fields, unique_key};

/// Most changes committed together.
const MAX_BATCH: usize = 1_024;
/// How long a delete waits for segments another merge holds before it gives up erasing.
const ERASE_TIMEOUT: Duration = Duration::from_secs(30);
/// Pause between attempts to rewrite segments another merge holds.
const ERASE_RETRY: Duration = Duration::from_millis(20);

/// One change to the index.
pub(crate) enum Change {
    /// Insert or replace documents of a namespace.
    Upsert {
        namespace: String,
        documents: Vec<TextDocument>,
    },
    /// Remove documents by unique key.
    Delete { keys: Vec<String> },
    /// Remove a namespace.
    ClearNamespace(String),
    /// Remove everything.
    ClearAll,
}

impl Change {
    /// True when the change deletes documents (their text must then leave the files).
    fn deletes(&self) -> bool {
        !matches!(self, Self::Upsert { .. })
    }
}

struct Request {
    change: Change,
    reply: oneshot::Sender<Result<()>>,
}

/// The handle of the writer thread; dropping it lets the thread finish its batch, release
/// the writer (and its lock) and end.
pub(crate) struct Committer {
    sender: Option<Sender<Request>>,
    thread: Option<JoinHandle<()>>,
    commits: Arc<AtomicU64>,
}

impl Committer {
    /// Starts the thread that owns `writer`.
    pub(crate) fn start(
        index: Index,
        writer: IndexWriter,
        reader: IndexReader,
        fields: Fields,
        options: &TantivyOptions,
    ) -> Result<Self> {
        let (sender, requests) = std::sync::mpsc::channel();
        let commits = Arc::new(AtomicU64::new(0));
        let worker = Worker {
            index,
            writer,
            reader,
            fields,
            interval: options.commit_interval,
            erasure: options.erasure,
            commits: Arc::clone(&commits),
        };
        let thread = std::thread::Builder::new()
            .name("tantivy-commit".into())
            .spawn(move || worker.run(requests))
            .map_err(|e| MemoryError::backend(BACKEND, format!("starting the writer: {e}")))?;
        Ok(Self {
            sender: Some(sender),
            thread: Some(thread),
            commits,
        })
    }

    /// Applies `change` and returns once it is committed and searchable.
    pub(crate) async fn submit(&self, change: Change) -> Result<()> {
        let closed = || MemoryError::backend(BACKEND, "the index writer has stopped");
        let (reply, answer) = oneshot::channel();
        self.sender
            .as_ref()
            .ok_or_else(closed)?
            .send(Request { change, reply })
            .map_err(|_| closed())?;
        answer.await.map_err(|_| closed())?
    }

    /// Commits made so far.
    pub(crate) fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }
}

impl Drop for Committer {
    fn drop(&mut self) {
        self.sender.take();
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            warn!("the tantivy writer thread panicked");
        }
    }
}

struct Worker {
    index: Index,
    writer: IndexWriter,
    reader: IndexReader,
    fields: Fields,
    interval: Duration,
    erasure: Erasure,
    commits: Arc<AtomicU64>,
}

impl Worker {
    fn run(mut self, requests: Receiver<Request>) {
        while let Ok(first) = requests.recv() {
            let mut batch = vec![first];
            self.gather(&requests, &mut batch);
            let outcome = self.commit(&batch);
            if let Err(e) = &outcome {
                warn!(error = %e, changes = batch.len(), "index commit failed");
            }
            for request in batch {
                let answer = match &outcome {
                    Ok(()) => Ok(()),
                    Err(e) => Err(MemoryError::backend(BACKEND, e.to_string())),
                };
                // The caller may have gone away; its change is committed all the same.
                let _ = request.reply.send(answer);
            }
        }
    }

    /// Adds to `batch` what arrives within the commit interval (and whatever is queued).
    fn gather(&self, requests: &Receiver<Request>, batch: &mut Vec<Request>) {
        let deadline = Instant::now() + self.interval;
        while batch.len() < MAX_BATCH {
            match requests.try_recv() {
                Ok(request) => {
                    batch.push(request);
                    continue;
                }
                Err(TryRecvError::Disconnected) => return,
                Err(TryRecvError::Empty) => {}
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return;
            };
            if left.is_zero() {
                return;
            }
            match requests.recv_timeout(left) {
                Ok(request) => batch.push(request),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// Applies the batch, commits it, erases deleted text if it deleted any, reloads.
    fn commit(&mut self, batch: &[Request]) -> Result<()> {
        let applied = batch
            .iter()
            .try_for_each(|request| self.apply(&request.change))
            .and_then(|()| self.writer.commit().map_err(tantivy_error));
        if let Err(e) = applied {
            if let Err(rollback) = self.writer.rollback() {
                warn!(error = %rollback, "index rollback failed");
            }
            return Err(e);
        }
        self.commits.fetch_add(1, Ordering::Relaxed);
        debug!(changes = batch.len(), "index commit");
        if batch.iter().any(|r| r.change.deletes()) {
            self.erase()?;
        }
        self.reader.reload().map_err(tantivy_error)
    }

    fn apply(&self, change: &Change) -> Result<()> {
        let f = &self.fields;
        match change {
            Change::Upsert {
                namespace,
                documents,
            } => {
                for document in documents {
                    let key = unique_key(namespace, &document.id);
                    self.writer.delete_term(Term::from_field_text(f.key, &key));
                    self.writer
                        .add_document(self.document(f, namespace, &key, document))
                        .map_err(tantivy_error)?;
                }
            }
            Change::Delete { keys } => {
                for key in keys {
                    self.writer.delete_term(Term::from_field_text(f.key, key));
                }
            }
            Change::ClearNamespace(namespace) => {
                self.writer
                    .delete_term(Term::from_field_text(f.namespace, namespace));
            }
            Change::ClearAll => {
                self.writer
                    .delete_query(Box::new(AllQuery))
                    .map_err(tantivy_error)?;
            }
        }
        Ok(())
    }

    fn document(
        &self,
        f: &Fields,
        namespace: &str,
        key: &str,
        document: &TextDocument,
    ) -> TantivyDocument {
        let mut doc = TantivyDocument::default();
        doc.add_text(f.namespace, namespace);
        doc.add_text(f.key, key);
        doc.add_text(f.id, &document.id);
        doc.add_text(f.text, &document.text);
        let fields = &document.fields;
        for (field, value) in [
            (f.session, &fields.session),
            (f.role, &fields.role),
            (f.kind, &fields.kind),
            (f.topic, &fields.key),
        ] {
            if let Some(value) = value {
                doc.add_text(field, value);
            }
        }
        if let Some(time) = fields.time {
            doc.add_i64(f.time, time.millis());
        }
        doc
    }

    /// Rewrites every segment that holds deleted documents, so their text leaves the files
    /// (a merge keeps only live documents; the old files are then collected).
    fn erase(&mut self) -> Result<()> {
        let deadline = Instant::now() + ERASE_TIMEOUT;
        loop {
            let segments: Vec<SegmentId> = self
                .index
                .searchable_segment_metas()
                .map_err(tantivy_error)?
                .into_iter()
                .filter(|meta| meta.has_deletes())
                .map(|meta| meta.id())
                .collect();
            if segments.is_empty() {
                return Ok(());
            }
            let merge = self.writer.merge(&segments);
            if self.erasure == Erasure::InBackground {
                return Ok(());
            }
            match merge.wait() {
                Ok(_) if Instant::now() < deadline => {}
                Err(e) if Instant::now() < deadline => {
                    // Another merge holds some of the segments; it ends soon.
                    debug!(error = %e, "segments busy; erasing again");
                    std::thread::sleep(ERASE_RETRY);
                }
                Ok(_) => {
                    return Err(MemoryError::backend(
                        BACKEND,
                        "deleted text still in the index files after the erase timeout",
                    ));
                }
                Err(e) => return Err(tantivy_error(e)),
            }
        }
    }
}
