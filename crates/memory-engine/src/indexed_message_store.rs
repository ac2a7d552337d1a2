//! Keeps a `messages` text index in step with a message store that does not write it.

use std::sync::Arc;

use async_trait::async_trait;
use memory_core::ports::{
    KeyValueStore, MessageStore, SessionRegistry, StoreCapabilities, TextDocument, TextFields,
    TextIndex, message_document_id, namespaces,
};
use memory_core::{
    AppendOutcome, CompactionRecord, MessagePage, NewCompaction, NewMessage, PathEntry, PathTail,
    Result, SessionId, UiMessage,
};
use serde::{Deserialize, Serialize};
use tracing::info;

use crate::index_sync::{DocumentLocks, Documents, converge, converge_from};
use crate::outbox::Outbox;
use crate::rebuild_marker::RebuildMarker;

/// Outbox keys: one per write whose index update may not have happened yet.
const OUTBOX_PREFIX: &str = "index-outbox/messages/";
/// Messages read per page by `clear` and `reindex`; sessions listed per page by a rebuild.
const PAGE: usize = 1_000;
/// A rebuild keeps its progress under this key until it is done (outside the outbox's
/// prefix, so a replay never reads it as an entry).
const REBUILD_MARKER: &str = "index-rebuild/messages";
/// A rebuild saves its progress at least this often (in sessions), text or not.
const SESSIONS_PER_SAVE: usize = 100;

/// How far a rebuild got: the sessions are rebuilt in id order, and the last one finished is
/// saved after every thousand documents or hundred sessions, so a rebuild cut short resumes
/// after it.
#[derive(Debug, Serialize, Deserialize)]
struct RebuildProgress {
    /// Outbox entries recorded before this key are covered by the rebuild.
    cut_off: String,
    /// The last session whose messages were all written.
    after: Option<String>,
}

/// What an outbox entry names: the messages whose index documents must be made to match
/// the store.
#[derive(Debug, Serialize, Deserialize)]
struct Pending {
    session: String,
    ids: Vec<String>,
}

/// A [`MessageStore`] decorator that keeps the `messages` namespace of a [`TextIndex`] in
/// step with the store it wraps, for pairings where the store does not write the index
/// itself (Tantivy beside Postgres or Redis, the in-memory adapters).
///
/// Every write first records the messages it touches in a durable outbox (a
/// [`KeyValueStore`]), then writes the store, then makes the index documents of those
/// messages match what the store now holds, then drops the outbox entry. A crash or an index
/// failure between the two writes leaves the entry behind; [`catch_up`](Self::catch_up)
/// replays it (the first search of a new instance does), so the index never silently loses
/// a document. [`reindex`](Self::reindex) rebuilds the namespace from the store over every
/// session of the registry, and [`ensure_built`](Self::ensure_built) does when the index is
/// missing or a rebuild was cut short; every write and catch-up runs that check first, once
/// per process.
pub struct IndexedMessageStore {
    inner: Arc<dyn MessageStore>,
    index: Arc<dyn TextIndex>,
    /// Lists the sessions a rebuild covers.
    registry: Arc<dyn SessionRegistry>,
    outbox: Outbox<Pending>,
    syncing: DocumentLocks,
    /// Where a rebuild keeps its [`RebuildProgress`] until its last session is written.
    rebuild: RebuildMarker<RebuildProgress>,
}

/// The index document of a stored message; `None` when it has no text to index.
pub(crate) fn message_document(session: &SessionId, message: &UiMessage) -> Option<TextDocument> {
    let text = message.text();
    (!text.is_empty()).then(|| {
        TextDocument::new(message_document_id(session.as_str(), &message.id), text).with_fields(
            TextFields {
                session: Some(session.as_str().to_owned()),
                role: Some(message.role.as_str().to_owned()),
                ..TextFields::default()
            },
        )
    })
}

/// The documents of messages `ids` of `session`, given those that have one.
fn documents(session: &SessionId, ids: &[String], present: Vec<TextDocument>) -> Documents {
    Documents::of(ids, present, |id| message_document_id(session.as_str(), id))
}

impl IndexedMessageStore {
    /// Wraps `inner`; `index` must be one the engine writes (not `written_by_store`);
    /// `registry` lists the sessions whose messages a rebuild indexes.
    pub fn new(
        inner: Arc<dyn MessageStore>,
        index: Arc<dyn TextIndex>,
        outbox: Arc<dyn KeyValueStore>,
        registry: Arc<dyn SessionRegistry>,
    ) -> Self {
        Self {
            inner,
            index,
            registry,
            outbox: Outbox::new(Arc::clone(&outbox), OUTBOX_PREFIX),
            syncing: DocumentLocks::new(),
            rebuild: RebuildMarker::new(outbox, REBUILD_MARKER),
        }
    }

    /// Once per process: rebuilds the index from the store when a rebuild was cut short
    /// (resuming it), or when the index is empty while the registry lists a session (an
    /// index made after the messages, or deleted). Concurrent callers wait for the one check;
    /// a failed or dropped check is taken up by the next caller.
    pub async fn ensure_built(&self) -> Result<()> {
        self.rebuild.check_once(|| self.check()).await
    }

    /// [`ensure_built`](Self::ensure_built) before a write: a write must not fail because
    /// the index cannot be checked (its update waits in the outbox), so a failed check marks
    /// a rebuild instead, which the next search runs.
    async fn ensure_built_for_write(&self) -> Result<()> {
        self.rebuild
            .check_once_for_write(|| self.check(), || self.fresh_rebuild())
            .await
    }

    /// The check [`ensure_built`](Self::ensure_built) runs once: a rebuild, if one is due.
    async fn check(&self) -> Result<()> {
        let due = match self.rebuild.saved(|| self.fresh_rebuild()).await? {
            Some(progress) => Some((progress, self.all_sessions().await?)),
            None if self.index.count(namespaces::MESSAGES).await? > 0 => None,
            None => {
                // The cut-off before the listing: an outbox entry of a session made
                // meanwhile is replayed, not dropped.
                let progress = self.fresh_rebuild();
                let listed = self.all_sessions().await?;
                match listed.is_empty() {
                    true => None,
                    false => {
                        self.rebuild.save(&progress).await?;
                        Some((progress, listed))
                    }
                }
            }
        };
        if let Some((progress, listed)) = due {
            info!(
                sessions = listed.len(),
                "rebuilding the messages' index from the store"
            );
            let documents = self.resume_rebuild(progress, listed).await?;
            info!(documents, "messages' index rebuilt");
        }
        Ok(())
    }

    /// Every session of the registry.
    async fn all_sessions(&self) -> Result<Vec<SessionId>> {
        let mut sessions: Vec<SessionId> = Vec::new();
        loop {
            let page = self.registry.list(PAGE, sessions.len()).await?;
            let done = page.len() < PAGE;
            sessions.extend(page.into_iter().map(|s| s.id));
            if done {
                return Ok(sessions);
            }
        }
    }

    /// The progress of a rebuild that starts now, from the first session.
    fn fresh_rebuild(&self) -> RebuildProgress {
        RebuildProgress {
            cut_off: self.outbox.cut_off(),
            after: None,
        }
    }

    /// The index this store keeps in step.
    pub fn index(&self) -> &Arc<dyn TextIndex> {
        &self.index
    }

    /// Records the intent to change these messages' documents; the store write follows.
    /// The index is checked first (once per process): a document written into a lost index
    /// would make it look whole.
    async fn intend(&self, session: &SessionId, ids: Vec<String>) -> Result<(String, Pending)> {
        self.ensure_built_for_write().await?;
        let pending = Pending {
            session: session.as_str().to_owned(),
            ids,
        };
        let key = self.outbox.record(&pending).await?;
        Ok((key, pending))
    }

    /// After the store write: make the documents match; a failure is left for
    /// [`catch_up`](Self::catch_up), and the store write stands.
    async fn settle(&self, key: &str, pending: &Pending) {
        self.outbox
            .settle(key, pending, self.sync(pending).await)
            .await;
    }

    /// Upserts the documents of the named messages that exist with text, deletes the others,
    /// and reads them again until the documents written match the store (another process
    /// may be syncing them too: see [`crate::index_sync`]). Syncs of this process that touch
    /// a same message run one at a time, so an older read can never overwrite a newer write's
    /// documents; syncs of different messages run together and share the index's commits.
    async fn sync(&self, pending: &Pending) -> Result<()> {
        let _these_messages = self
            .syncing
            .lock(pending.ids.iter().map(|id| (&pending.session, id)))
            .await;
        let session = SessionId::new(pending.session.clone())?;
        let session = &session;
        converge(self.index.as_ref(), namespaces::MESSAGES, || {
            self.stored_documents(session, &pending.ids)
        })
        .await
    }

    /// The documents the index must hold for these messages, read from the store now.
    async fn stored_documents(&self, session: &SessionId, ids: &[String]) -> Result<Documents> {
        let stored = self.inner.get_many(session, ids).await?;
        let present = stored
            .iter()
            .filter_map(|m| message_document(session, m))
            .collect();
        Ok(documents(session, ids, present))
    }

    /// Replays every outbox entry (a write whose index update did not finish: a crash, an
    /// index outage, in this process or another); one key listing when there is none. Runs
    /// before every search. The index is checked first, as before a write (documents
    /// replayed into a lost index would make it look whole). Returns how many entries were
    /// replayed.
    pub async fn catch_up(&self) -> Result<u64> {
        self.ensure_built_for_write().await?;
        self.replay().await
    }

    /// [`catch_up`](Self::catch_up) without the check (the rebuild itself runs it).
    async fn replay(&self) -> Result<u64> {
        self.outbox
            .replay(|pending| async move { self.sync(&pending).await })
            .await
    }

    /// Rebuilds the `messages` namespace from the store: clears it, then indexes every
    /// message of every session of the registry. The list is taken after the clear, so a
    /// session made meanwhile is not missed, and each page is checked against the store
    /// after it is written (see [`crate::index_sync`]), so writers may run meanwhile. The
    /// progress is kept, so a rebuild cut short is resumed by the next
    /// [`ensure_built`](Self::ensure_built). Returns how many documents were written.
    pub async fn reindex(&self) -> Result<u64> {
        let progress = self.fresh_rebuild();
        self.rebuild.save(&progress).await?;
        self.index.clear(namespaces::MESSAGES).await?;
        let listed = self.all_sessions().await?;
        self.resume_rebuild(progress, listed).await
    }

    /// Writes the documents of every listed session after `progress.after`, in id order
    /// (nothing is cleared: writing a document again changes nothing), saving the progress
    /// now and then, then drops the marker; returns the documents written.
    async fn resume_rebuild(
        &self,
        mut progress: RebuildProgress,
        mut sessions: Vec<SessionId>,
    ) -> Result<u64> {
        sessions.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        let mut written = 0;
        let (mut saved_at, mut unsaved_sessions) = (0, 0);
        for session in &sessions {
            if progress
                .after
                .as_deref()
                .is_some_and(|after| session.as_str() <= after)
            {
                continue;
            }
            written += self.reindex_session(session).await?;
            progress.after = Some(session.as_str().to_owned());
            unsaved_sessions += 1;
            if written - saved_at >= PAGE as u64 || unsaved_sessions >= SESSIONS_PER_SAVE {
                self.rebuild.save(&progress).await?;
                (saved_at, unsaved_sessions) = (written, 0);
            }
        }
        // Entries written before the rebuild are covered by it; later ones are replayed.
        self.outbox.clear_before(&progress.cut_off).await?;
        self.replay().await?;
        self.rebuild.finish().await?;
        Ok(written)
    }

    /// Writes the documents of every message of `session`, page by page; returns how many.
    async fn reindex_session(&self, session: &SessionId) -> Result<u64> {
        let mut written = 0;
        let mut cursor = None;
        loop {
            let page = self.inner.messages(session, cursor, PAGE).await?;
            let ids: Vec<String> = page.messages.iter().map(|m| m.message.id.clone()).collect();
            let read = page
                .messages
                .iter()
                .filter_map(|m| message_document(session, &m.message))
                .collect();
            let documents = documents(session, &ids, read);
            written += documents.present.len() as u64;
            if !ids.is_empty() {
                converge_from(self.index.as_ref(), namespaces::MESSAGES, documents, || {
                    self.stored_documents(session, &ids)
                })
                .await?;
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(written),
            }
        }
    }

    /// Every message id of a session.
    async fn all_ids(&self, session: &SessionId) -> Result<Vec<String>> {
        let mut ids = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.inner.messages(session, cursor, PAGE).await?;
            ids.extend(page.messages.iter().map(|m| m.message.id.clone()));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(ids),
            }
        }
    }
}

#[async_trait]
impl MessageStore for IndexedMessageStore {
    fn backend_name(&self) -> &'static str {
        self.inner.backend_name()
    }

    fn capabilities(&self) -> StoreCapabilities {
        self.inner.capabilities()
    }

    async fn append(
        &self,
        session: &SessionId,
        messages: Vec<NewMessage>,
    ) -> Result<Vec<AppendOutcome>> {
        let ids = messages.iter().map(|m| m.message.id.clone()).collect();
        let (key, pending) = self.intend(session, ids).await?;
        let result = self.inner.append(session, messages).await;
        self.settle(&key, &pending).await;
        result
    }

    async fn update(&self, session: &SessionId, message: UiMessage) -> Result<()> {
        let (key, pending) = self.intend(session, vec![message.id.clone()]).await?;
        let result = self.inner.update(session, message).await;
        self.settle(&key, &pending).await;
        result
    }

    async fn delete(&self, session: &SessionId, ids: &[String]) -> Result<u64> {
        let (key, pending) = self.intend(session, ids.to_vec()).await?;
        let result = self.inner.delete(session, ids).await;
        self.settle(&key, &pending).await;
        result
    }

    async fn clear(&self, session: &SessionId) -> Result<()> {
        let ids = self.all_ids(session).await?;
        let (key, pending) = self.intend(session, ids).await?;
        let result = self.inner.clear(session).await;
        self.settle(&key, &pending).await;
        result
    }

    async fn get(&self, session: &SessionId, id: &str) -> Result<Option<UiMessage>> {
        self.inner.get(session, id).await
    }

    async fn get_many(&self, session: &SessionId, ids: &[String]) -> Result<Vec<UiMessage>> {
        self.inner.get_many(session, ids).await
    }

    async fn latest_leaf(&self, session: &SessionId) -> Result<Option<String>> {
        self.inner.latest_leaf(session).await
    }

    async fn children(&self, session: &SessionId, id: &str) -> Result<Vec<UiMessage>> {
        self.inner.children(session, id).await
    }

    async fn path(&self, session: &SessionId, leaf: Option<String>) -> Result<Vec<PathEntry>> {
        self.inner.path(session, leaf).await
    }

    async fn latest_leaf_under(&self, session: &SessionId, id: &str) -> Result<String> {
        self.inner.latest_leaf_under(session, id).await
    }

    async fn path_tail(
        &self,
        session: &SessionId,
        leaf: Option<String>,
        limit: usize,
    ) -> Result<PathTail> {
        self.inner.path_tail(session, leaf, limit).await
    }

    async fn forks(
        &self,
        session: &SessionId,
        ids: &[String],
    ) -> Result<std::collections::BTreeMap<String, Vec<String>>> {
        self.inner.forks(session, ids).await
    }

    async fn history(&self, session: &SessionId, leaf: Option<String>) -> Result<Vec<UiMessage>> {
        self.inner.history(session, leaf).await
    }

    async fn messages(
        &self,
        session: &SessionId,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<MessagePage> {
        self.inner.messages(session, cursor, limit).await
    }

    async fn add_compaction(
        &self,
        session: &SessionId,
        compaction: NewCompaction,
    ) -> Result<CompactionRecord> {
        self.inner.add_compaction(session, compaction).await
    }

    async fn compactions(&self, session: &SessionId) -> Result<Vec<CompactionRecord>> {
        self.inner.compactions(session).await
    }
}
