//! The index's one writer, on a thread of its own. Changes from every caller are applied in
//! the order they arrive and committed together (group commit): the first change of a batch
//! waits at most the commit interval for others, changes that arrive while a commit runs
//! join the next one. A caller is answered after its commit and the reader's reload, so what
//! it wrote is durable and visible to the next search when its call returns.
//!
//! The thread also runs every merge (Tantivy's own merge policy is off): it asks the log
//! merge policy ([`merge_policy`]) which segments to merge, rewrites segments that hold
//! deleted documents (erasure), and knows at all times which segments are being merged, so
//! no merge it did not start can keep deleted text alive behind its back.
//!
//! That thread holds the writer while the index is open. An index several processes share
//! runs [`crate::shared::SharedWriter`] on the same handle instead, which takes the writer
//! for each batch; what both do to a batch ([`apply_change`], [`answer`]) is here.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use memory_core::ports::TextDocument;
use memory_core::{MemoryError, Result};
use tantivy::index::{SegmentId, SegmentMeta};
use tantivy::indexer::{MergePolicy, NoMergePolicy};
use tantivy::query::AllQuery;
use tantivy::{Index, IndexReader, IndexWriter, TantivyDocument, Term};
use tokio::sync::oneshot;
use tracing::{debug, warn};

use crate::error::{BACKEND, tantivy_error};
use crate::merge_policy::merge_policy;
use crate::options::{Erasure, TantivyOptions};
use crate::schema::{Fields, unique_key};
use crate::shared::SharedWriter;

/// Most changes committed together.
const MAX_BATCH: usize = 1_024;
/// How long a delete waits for the merges in flight before it erases (and the thread, when
/// it stops, for its merges to end).
const MERGE_WAIT: Duration = Duration::from_secs(60);

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
    pub(crate) fn deletes(&self) -> bool {
        !matches!(self, Self::Upsert { .. })
    }
}

/// A change and where its caller waits for the answer.
pub(crate) struct Request {
    /// What to apply.
    pub(crate) change: Change,
    /// Answered after the commit.
    pub(crate) reply: oneshot::Sender<Result<()>>,
}

/// What the writer thread is told.
pub(crate) enum Message {
    /// A change to apply and commit.
    Write(Request),
    /// A merge the thread started has ended (these segments are free again).
    MergeEnded(Vec<SegmentId>),
    /// The index is being closed.
    Stop,
}

/// The handle of the writer thread; dropping it lets the thread finish its batch, release
/// the writer (and its lock) and end.
pub(crate) struct Committer {
    sender: Option<Sender<Message>>,
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
        writer.set_merge_policy(Box::new(NoMergePolicy));
        let worker = Worker {
            index,
            writer,
            reader,
            fields,
            interval: options.commit_interval,
            erasure: options.erasure,
            commits: Arc::clone(&commits),
            merging: HashSet::new(),
            ended: sender.clone(),
            held: std::collections::VecDeque::new(),
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

    /// Starts the thread that writes a directory several processes share: it takes the
    /// writer for each batch and lets it go after the commit (see [`SharedWriter`]).
    pub(crate) fn start_shared(shared: SharedWriter, reader: IndexReader) -> Result<Self> {
        let (sender, requests) = std::sync::mpsc::channel();
        let commits = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&commits);
        let thread = std::thread::Builder::new()
            .name("tantivy-commit".into())
            .spawn(move || shared.run(requests, reader, &counted))
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
            .send(Message::Write(Request { change, reply }))
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
        if let Some(sender) = self.sender.take() {
            let _ = sender.send(Message::Stop);
        }
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
    /// Segments in a merge the thread started.
    merging: HashSet<SegmentId>,
    /// Where a merge's end is reported (the thread's own queue).
    ended: Sender<Message>,
    /// Writes that arrived while the thread waited for merges, in order.
    held: std::collections::VecDeque<Request>,
}

impl Worker {
    fn run(mut self, messages: Receiver<Message>) {
        // Deletes a crash left unerased are erased first.
        self.schedule_merges();
        let mut stopping = false;
        while !stopping {
            let message = match self.held.pop_front() {
                Some(request) => Message::Write(request),
                None => match messages.recv() {
                    Ok(message) => message,
                    Err(_) => break,
                },
            };
            let first = match message {
                Message::Write(request) => request,
                Message::MergeEnded(segments) => {
                    self.merge_ended(&segments);
                    continue;
                }
                Message::Stop => break,
            };
            let mut batch = vec![first];
            stopping = self.gather(&messages, &mut batch);
            let outcome = self.commit(&batch, &messages);
            answer(batch, &outcome);
        }
        // Let the merges in flight end (they may be erasing), then collect old files.
        if !self.wait_for_merges(&messages) {
            warn!("closing the index with merges still running");
        }
        if let Err(e) = self.writer.garbage_collect_files().wait() {
            warn!(error = %e, "collecting index files at close failed");
        }
    }

    /// Marks `segments` free (their merge ended).
    fn forget_merge(&mut self, segments: &[SegmentId]) {
        for segment in segments {
            self.merging.remove(segment);
        }
    }

    /// A merge ended: its segments are free; what is left to merge is scheduled.
    fn merge_ended(&mut self, segments: &[SegmentId]) {
        self.forget_merge(segments);
        if let Err(e) = self.reader.reload() {
            warn!(error = %e, "reloading after a merge failed");
        }
        self.schedule_merges();
    }

    /// Blocks until every merge in flight has ended (at most [`MERGE_WAIT`]); writes that
    /// arrive meanwhile are held for the next batch. False when merges are still running.
    fn wait_for_merges(&mut self, messages: &Receiver<Message>) -> bool {
        let deadline = Instant::now() + MERGE_WAIT;
        while !self.merging.is_empty() {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                warn!(
                    merges = self.merging.len(),
                    "merges still running after the wait"
                );
                break;
            };
            match messages.recv_timeout(left) {
                Ok(Message::MergeEnded(segments)) => self.forget_merge(&segments),
                Ok(Message::Write(request)) => self.held.push_back(request),
                Ok(Message::Stop) => {}
                Err(_) => break,
            }
        }
        self.merging.is_empty()
    }

    /// The committed segments no merge holds.
    fn free_segments(&self) -> Result<Vec<SegmentMeta>> {
        Ok(self
            .index
            .searchable_segment_metas()
            .map_err(tantivy_error)?
            .into_iter()
            .filter(|meta| !self.merging.contains(&meta.id()))
            .collect())
    }

    /// Starts a merge of `segments` whose end comes back as a message.
    fn start_merge(&mut self, segments: Vec<SegmentId>) {
        self.merging.extend(segments.iter().copied());
        let merge = self.writer.merge(&segments);
        let ended = self.ended.clone();
        let spawned = std::thread::Builder::new()
            .name("tantivy-merge-wait".into())
            .spawn(move || {
                if let Err(e) = merge.wait() {
                    warn!(error = %e, "an index merge failed; its segments are merged again later");
                }
                let _ = ended.send(Message::MergeEnded(segments));
            });
        if let Err(e) = spawned {
            warn!(error = %e, "could not watch a merge");
        }
    }

    /// Starts the merges the index needs now: every free segment with deleted documents
    /// (erasure), then what the log merge policy ([`merge_policy`]) picks among the rest.
    fn schedule_merges(&mut self) {
        let free = match self.free_segments() {
            Ok(free) => free,
            Err(e) => {
                warn!(error = %e, "reading the segments failed");
                return;
            }
        };
        let (deleted, clean): (Vec<SegmentMeta>, Vec<SegmentMeta>) =
            free.into_iter().partition(SegmentMeta::has_deletes);
        if !deleted.is_empty() {
            self.start_merge(deleted.iter().map(SegmentMeta::id).collect());
        }
        for candidate in merge_policy().compute_merge_candidates(&clean) {
            self.start_merge(candidate.0);
        }
    }

    /// Adds to `batch` the held writes, then what arrives within the commit interval (and
    /// whatever is queued); true when the index is being closed.
    fn gather(&mut self, messages: &Receiver<Message>, batch: &mut Vec<Request>) -> bool {
        while batch.len() < MAX_BATCH {
            match self.held.pop_front() {
                Some(request) => batch.push(request),
                None => break,
            }
        }
        gather_writes(messages, batch, self.interval, |segments| {
            self.forget_merge(&segments);
        })
    }

    /// Applies the batch, commits it, reloads the reader, and starts (or, before returning,
    /// finishes) the erasure of what it deleted. `Ok(Some(error))`: committed, but the
    /// erasure failed (it is retried by later merges).
    fn commit(
        &mut self,
        batch: &[Request],
        messages: &Receiver<Message>,
    ) -> Result<Option<MemoryError>> {
        let applied = batch
            .iter()
            .try_for_each(|request| apply_change(&self.writer, &self.fields, &request.change))
            .and_then(|()| self.writer.commit().map_err(tantivy_error));
        if let Err(e) = applied {
            if let Err(rollback) = self.writer.rollback() {
                warn!(error = %rollback, "index rollback failed");
            }
            return Err(e);
        }
        self.commits.fetch_add(1, Ordering::Relaxed);
        debug!(changes = batch.len(), "index commit");
        self.reader.reload().map_err(tantivy_error)?;
        let deletes = batch.iter().any(|r| r.change.deletes());
        let mut erase_failed = None;
        if deletes
            && self.erasure == Erasure::BeforeReturn
            && let Err(e) = self.erase_now(messages)
        {
            warn!(error = %e, "erasing deleted text failed");
            erase_failed = Some(e);
        }
        self.schedule_merges();
        Ok(erase_failed)
    }

    /// Rewrites every segment with deleted documents and waits for it: first the merges in
    /// flight end (none may be left holding an old copy), then one merge of those segments,
    /// then the files no segment uses are deleted.
    fn erase_now(&mut self, messages: &Receiver<Message>) -> Result<()> {
        if !self.wait_for_merges(messages) {
            return Err(MemoryError::transient(
                BACKEND,
                "index merges did not end in time; the deleted text is erased by a later merge",
            ));
        }
        let deleted: Vec<SegmentId> = self
            .index
            .searchable_segment_metas()
            .map_err(tantivy_error)?
            .into_iter()
            .filter(SegmentMeta::has_deletes)
            .map(|meta| meta.id())
            .collect();
        if !deleted.is_empty() {
            self.writer.merge(&deleted).wait().map_err(tantivy_error)?;
        }
        self.writer
            .garbage_collect_files()
            .wait()
            .map_err(tantivy_error)?;
        self.reader.reload().map_err(tantivy_error)
    }
}

/// Adds to `batch` what arrives within `interval` (and whatever is queued), up to
/// [`MAX_BATCH`], handing the end of a merge to `merge_ended`; true when the index is being
/// closed.
pub(crate) fn gather_writes(
    messages: &Receiver<Message>,
    batch: &mut Vec<Request>,
    interval: Duration,
    mut merge_ended: impl FnMut(Vec<SegmentId>),
) -> bool {
    let deadline = Instant::now() + interval;
    while batch.len() < MAX_BATCH {
        let message = match next_before(messages, deadline) {
            Next::Message(message) => message,
            Next::Timeout => return false,
            Next::Closed => return true,
        };
        match message {
            Message::Write(request) => batch.push(request),
            Message::MergeEnded(segments) => merge_ended(segments),
            Message::Stop => return true,
        }
    }
    false
}

/// What [`next_before`] found.
enum Next {
    /// A message, queued or arrived in time.
    Message(Message),
    /// Nothing queued and nothing arrived before the deadline.
    Timeout,
    /// Every sender is gone.
    Closed,
}

/// The next queued message, else the first to arrive before `deadline`.
fn next_before(messages: &Receiver<Message>, deadline: Instant) -> Next {
    match messages.try_recv() {
        Ok(message) => Next::Message(message),
        Err(TryRecvError::Disconnected) => Next::Closed,
        Err(TryRecvError::Empty) => {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Next::Timeout;
            }
            match messages.recv_timeout(left) {
                Ok(message) => Next::Message(message),
                Err(RecvTimeoutError::Timeout) => Next::Timeout,
                Err(RecvTimeoutError::Disconnected) => Next::Closed,
            }
        }
    }
}

/// Answers every caller of a batch from the commit's outcome: `Ok(Some(error))` is a commit
/// whose deleted text could not be erased yet, which only the deletes of the batch see.
pub(crate) fn answer(batch: Vec<Request>, outcome: &Result<Option<MemoryError>>) {
    for request in batch {
        let answer = match outcome {
            Ok(Some(e)) if request.change.deletes() => {
                Err(MemoryError::transient(BACKEND, e.to_string()))
            }
            Ok(_) => Ok(()),
            Err(MemoryError::Conflict { message }) => Err(MemoryError::Conflict {
                message: message.clone(),
            }),
            Err(e) if e.is_transient() => Err(MemoryError::transient(BACKEND, e.to_string())),
            Err(e) => Err(MemoryError::backend(BACKEND, e.to_string())),
        };
        // The caller may have gone away; its change is committed all the same.
        let _ = request.reply.send(answer);
    }
}

/// Applies one change to `writer` (not yet committed).
pub(crate) fn apply_change(writer: &IndexWriter, fields: &Fields, change: &Change) -> Result<()> {
    let f = fields;
    match change {
        Change::Upsert {
            namespace,
            documents,
        } => {
            for document in documents {
                let key = unique_key(namespace, &document.id);
                writer.delete_term(Term::from_field_text(f.key, &key));
                writer
                    .add_document(tantivy_document(f, namespace, &key, document))
                    .map_err(tantivy_error)?;
            }
        }
        Change::Delete { keys } => {
            for key in keys {
                writer.delete_term(Term::from_field_text(f.key, key));
            }
        }
        Change::ClearNamespace(namespace) => {
            writer.delete_term(Term::from_field_text(f.namespace, namespace));
        }
        Change::ClearAll => {
            writer
                .delete_query(Box::new(AllQuery))
                .map_err(tantivy_error)?;
        }
    }
    Ok(())
}

/// The Tantivy document of a text document of `namespace`.
fn tantivy_document(
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
