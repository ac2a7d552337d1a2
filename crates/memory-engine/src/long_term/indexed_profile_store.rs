//! Keeps a profile's `raw` and `memories` text namespaces in step with records that do not
//! write them (the long-term twin of [`crate::IndexedMessageStore`]).

use std::sync::Arc;

use async_trait::async_trait;

use memory_core::ports::{
    ForgetRequest, KeyValueStore, LongTermMemoryStore, MemoryFilter, MemoryKind, MemoryPage,
    MemoryRecord, MemoryRecordStore, RawMessage, RawMessageInsert, RawMessageStore, TextDocument,
    TextFields, TextIndex, namespaces,
};
use memory_core::{Result, Timestamp};
use serde::{Deserialize, Serialize};
use tracing::info;

use crate::index_sync::{DocumentLocks, Documents, converge, converge_from};
use crate::outbox::Outbox;
use crate::rebuild_marker::RebuildMarker;

/// Records read per page by `reindex`.
const PAGE: usize = 1_000;

/// What an outbox entry names: raw messages and memories whose documents must be made to
/// match the records. Ids only: an entry never holds text that a purge must erase.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Pending {
    raw: Vec<String>,
    memories: Vec<String>,
}

/// The `raw` document of a raw message.
pub(crate) fn raw_document(m: &RawMessage) -> TextDocument {
    TextDocument::new(&m.id, &m.content).with_fields(TextFields {
        session: Some(m.session_id.clone()),
        role: Some(m.role.clone()),
        time: Some(m.created_at),
        ..TextFields::default()
    })
}

/// The `memories` document of a memory: content and search questions; `None` unless the
/// memory is searchable (the namespace holds current memories, and those consolidation merged
/// into another, whose wording leads recall to the survivor: [`MemoryRecord::is_searchable`]).
pub(crate) fn memory_document(m: &MemoryRecord) -> Option<TextDocument> {
    if !m.is_searchable() {
        return None;
    }
    Some(
        TextDocument::new(&m.id, format!("{}\n{}", m.content, m.questions.join("\n"))).with_fields(
            TextFields {
                session: m.session_id.clone(),
                kind: Some(m.kind.as_str().to_owned()),
                key: m.key.clone(),
                time: Some(m.recorded_at),
                ..TextFields::default()
            },
        ),
    )
}

/// How far a rebuild got, kept in its marker after every page: a rebuild cut short (a
/// crash, a request dropped at its deadline) resumes where it stopped instead of starting
/// over, and two processes rebuilding at once only write the same documents twice.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct RebuildProgress {
    /// Outbox entries recorded before this key are covered by the rebuild.
    cut_off: String,
    /// Where the raw messages resume (`None`: from the first).
    raw: Option<String>,
    /// Whether every raw message was written.
    raw_done: bool,
    /// Where the memories resume (`None`: from the first).
    memories: Option<String>,
}

/// A profile's records wrapped so that every write reaches its text index through a durable
/// outbox (see [`crate::IndexedMessageStore`] for the protocol).
///
/// The index is derived: the first time a process opens the profile it is rebuilt from the
/// records when it cannot be trusted ([`ensure_built`](Self::ensure_built)), so a deployment
/// that moves its text to an engine-written index, restores records without their index, or
/// loses the index's directory needs no `memory reindex`.
pub struct IndexedProfileStore {
    inner: Arc<dyn LongTermMemoryStore>,
    index: Arc<dyn TextIndex>,
    sync: Arc<ProfileSync>,
}

/// What a process keeps of one profile's index syncing between requests: the outbox, the
/// locks that order syncs of one document, and whether the index was checked. It holds no
/// open store or index, so the profile's files can be closed while it is kept; dropped, the
/// next [`IndexedProfileStore`] of the profile checks the index once again.
pub(crate) struct ProfileSync {
    outbox: Outbox<Pending>,
    syncing: DocumentLocks,
    /// Where a rebuild keeps its [`RebuildProgress`] until its last page is written: a
    /// rebuild cut short is resumed by the next caller, though the index is not empty.
    rebuild: RebuildMarker<RebuildProgress>,
    /// Uses of the profile's store by this process, for how often its size is checked
    /// against its text tier (see [`crate::long_term::TieredTextIndexes`]).
    pub(crate) uses: std::sync::atomic::AtomicU64,
    /// Held while this process moves the profile's text to the large tier.
    pub(crate) moving: futures::lock::Mutex<()>,
}

impl ProfileSync {
    /// The syncing state of a profile; `outbox_prefix` and `rebuild_marker` (a key, outside
    /// the outbox's prefix) must be the profile's own.
    pub(crate) fn new(
        kv: Arc<dyn KeyValueStore>,
        outbox_prefix: String,
        rebuild_marker: String,
    ) -> Self {
        Self {
            outbox: Outbox::new(Arc::clone(&kv), outbox_prefix),
            syncing: DocumentLocks::new(),
            rebuild: RebuildMarker::new(kv, rebuild_marker),
            uses: std::sync::atomic::AtomicU64::new(0),
            moving: futures::lock::Mutex::new(()),
        }
    }
}

impl IndexedProfileStore {
    /// Wraps a profile's records and index with the profile's syncing state.
    pub(crate) fn new(
        inner: Arc<dyn LongTermMemoryStore>,
        index: Arc<dyn TextIndex>,
        sync: Arc<ProfileSync>,
    ) -> Self {
        Self { inner, index, sync }
    }

    /// The progress of a rebuild that starts now, from the first record.
    fn fresh_rebuild(&self) -> RebuildProgress {
        RebuildProgress {
            cut_off: self.sync.outbox.cut_off(),
            raw: None,
            raw_done: false,
            memories: None,
        }
    }

    /// Once per process: rebuilds the index from the records when a rebuild was left
    /// unfinished (resuming it), or when the index is empty while the records are not (an
    /// index made after the records, restored without them, or deleted). Concurrent callers
    /// wait for the one check; a failed or dropped check is taken up by the next caller.
    pub(crate) async fn ensure_built(&self) -> Result<()> {
        self.sync.rebuild.check_once(|| self.check()).await
    }

    /// [`ensure_built`](Self::ensure_built) before a write: a write must not fail because
    /// the index cannot be checked (its update waits in the outbox), so a failed check marks
    /// a rebuild instead (see [`RebuildMarker::check_once_for_write`]); the next caller
    /// runs it.
    pub(crate) async fn ensure_built_for_write(&self) -> Result<()> {
        self.sync
            .rebuild
            .check_once_for_write(|| self.check(), || self.fresh_rebuild())
            .await
    }

    /// The check [`ensure_built`](Self::ensure_built) runs once: a rebuild, if one is due.
    async fn check(&self) -> Result<()> {
        if let Some(progress) = self.unfinished_rebuild().await? {
            info!(
                marker = self.sync.rebuild.key(),
                "rebuilding a profile's text index from its records"
            );
            let documents = self.resume_rebuild(progress).await?;
            info!(
                marker = self.sync.rebuild.key(),
                documents, "profile's text index rebuilt"
            );
        }
        Ok(())
    }

    /// The rebuild the index needs before it is trusted, saved in its marker (see
    /// [`ensure_built`](Self::ensure_built)); `None` when it needs none.
    async fn unfinished_rebuild(&self) -> Result<Option<RebuildProgress>> {
        if let Some(saved) = self.sync.rebuild.saved(|| self.fresh_rebuild()).await? {
            return Ok(Some(saved));
        }
        if self.index.count(namespaces::RAW).await? > 0
            || self.index.count(namespaces::MEMORIES).await? > 0
        {
            return Ok(None);
        }
        let (raw, _) = self.inner.raw_page(None, 1).await?;
        let memories = self.inner.list(&MemoryFilter::default(), None, 1).await?;
        if raw.is_empty() && memories.memories.is_empty() {
            return Ok(None);
        }
        let progress = self.fresh_rebuild();
        self.sync.rebuild.save(&progress).await?;
        Ok(Some(progress))
    }

    async fn write<T>(
        &self,
        pending: Pending,
        write: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        let key = self.sync.outbox.record(&pending).await?;
        let result = write.await;
        let synced = self.sync(&pending).await;
        self.sync.outbox.settle(&key, &pending, synced).await;
        result
    }

    /// Empties the index and marks it for a rebuild from the records at the next check, in
    /// this process or another (a restore brought the records back without their index,
    /// perhaps beside an older one).
    pub(crate) async fn discard(&self) -> Result<()> {
        self.restart_rebuild().await?;
        self.sync.rebuild.forget_check();
        Ok(())
    }

    /// Marks a rebuild from the first record, then empties both namespaces (in that order,
    /// so a crash in between leaves the rebuild marked); returns its progress.
    async fn restart_rebuild(&self) -> Result<RebuildProgress> {
        let progress = self.fresh_rebuild();
        self.sync.rebuild.save(&progress).await?;
        self.index.clear(namespaces::RAW).await?;
        self.index.clear(namespaces::MEMORIES).await?;
        Ok(progress)
    }

    /// Makes the named documents match the records, one sync of this process at a time per
    /// document (an older read never overwrites a newer write's documents; syncs of different
    /// documents run together and share the index's commits), reading them again until the
    /// documents written match (another process may be syncing them too: see
    /// [`crate::index_sync`]).
    async fn sync(&self, pending: &Pending) -> Result<()> {
        let raw = pending.raw.iter().map(|id| (namespaces::RAW, id));
        let memories = pending.memories.iter().map(|id| (namespaces::MEMORIES, id));
        let _these_documents = self.sync.syncing.lock(raw.chain(memories)).await;
        if !pending.raw.is_empty() {
            converge(self.index.as_ref(), namespaces::RAW, || {
                self.raw_documents(&pending.raw)
            })
            .await?;
        }
        if !pending.memories.is_empty() {
            converge(self.index.as_ref(), namespaces::MEMORIES, || {
                self.memory_documents(&pending.memories)
            })
            .await?;
        }
        Ok(())
    }

    /// The documents the index must hold for these raw messages, read now.
    async fn raw_documents(&self, ids: &[String]) -> Result<Documents> {
        let present = self.inner.raw_by_ids(ids).await?;
        let docs = present.iter().map(raw_document).collect();
        Ok(Documents::of(ids, docs, str::to_owned))
    }

    /// The documents the index must hold for these memories, read now (forgotten ones and
    /// older versions of a key have none).
    async fn memory_documents(&self, ids: &[String]) -> Result<Documents> {
        let present = self.inner.get_memories(ids).await?;
        let docs = present.iter().filter_map(memory_document).collect();
        Ok(Documents::of(ids, docs, str::to_owned))
    }

    /// Replays whatever the outbox holds (one key listing when it is empty), before a
    /// search: a write another process could not index is found too.
    pub(crate) async fn catch_up(&self) -> Result<()> {
        self.sync
            .outbox
            .replay(|pending| async move { self.sync(&pending).await })
            .await?;
        Ok(())
    }

    /// Rebuilds both namespaces from the records, cleared first; returns the documents
    /// written. Each page is checked against the records after it is written (see
    /// [`crate::index_sync`]), so writers may run meanwhile; the progress is kept in the
    /// marker, so a rebuild cut short is resumed (not restarted) by the next caller.
    pub(crate) async fn reindex(&self) -> Result<u64> {
        let progress = self.restart_rebuild().await?;
        self.resume_rebuild(progress).await
    }

    /// Writes every record's documents from where `progress` stopped (nothing is cleared:
    /// writing a document again changes nothing), saving the progress after each page, then
    /// drops the marker; returns the documents written.
    async fn resume_rebuild(&self, mut progress: RebuildProgress) -> Result<u64> {
        let mut written = 0;
        while !progress.raw_done {
            let (page, next) = self.inner.raw_page(progress.raw.clone(), PAGE).await?;
            let ids = page.iter().map(|m| m.id.clone()).collect();
            let docs = page.iter().map(raw_document).collect();
            written += self.reindex_page(namespaces::RAW, ids, docs).await?;
            progress.raw_done = next.is_none();
            progress.raw = next.or(progress.raw);
            self.sync.rebuild.save(&progress).await?;
        }
        // Superseded memories too: those merged into another keep their documents.
        let every_version = MemoryFilter {
            include_superseded: true,
            ..MemoryFilter::default()
        };
        loop {
            let page = self
                .inner
                .list(&every_version, progress.memories.clone(), PAGE)
                .await?;
            let ids = page.memories.iter().map(|m| m.id.clone()).collect();
            let docs = page.memories.iter().filter_map(memory_document).collect();
            written += self.reindex_page(namespaces::MEMORIES, ids, docs).await?;
            match page.next_cursor {
                Some(next) => {
                    progress.memories = Some(next);
                    self.sync.rebuild.save(&progress).await?;
                }
                None => break,
            }
        }
        // Entries written before the rebuild are covered by it; later ones are replayed.
        self.sync.outbox.clear_before(&progress.cut_off).await?;
        self.catch_up().await?;
        self.sync.rebuild.finish().await?;
        Ok(written)
    }

    /// Writes one page of `reindex` (`docs`, read with `ids`), checked against the records
    /// again; returns how many documents it holds.
    async fn reindex_page(
        &self,
        namespace: &'static str,
        ids: Vec<String>,
        docs: Vec<TextDocument>,
    ) -> Result<u64> {
        let read = Documents::of(&ids, docs, str::to_owned);
        let written = read.present.len() as u64;
        if !ids.is_empty() {
            converge_from(self.index.as_ref(), namespace, read, || async {
                match namespace {
                    namespaces::RAW => self.raw_documents(&ids).await,
                    _ => self.memory_documents(&ids).await,
                }
            })
            .await?;
        }
        Ok(written)
    }
}

#[async_trait]
impl RawMessageStore for IndexedProfileStore {
    async fn insert_raw(&self, messages: Vec<RawMessage>) -> Result<RawMessageInsert> {
        let raw = messages.iter().map(|m| m.id.clone()).collect();
        let pending = Pending {
            raw,
            ..Pending::default()
        };
        self.write(pending, self.inner.insert_raw(messages)).await
    }

    async fn raw_page(
        &self,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<(Vec<RawMessage>, Option<String>)> {
        self.inner.raw_page(cursor, limit).await
    }

    async fn raw_by_ids(&self, ids: &[String]) -> Result<Vec<RawMessage>> {
        self.inner.raw_by_ids(ids).await
    }

    async fn raw_neighbors(&self, ids: &[String], radius: usize) -> Result<Vec<RawMessage>> {
        self.inner.raw_neighbors(ids, radius).await
    }

    async fn raw_neighbors_each(
        &self,
        ids: &[String],
        radius: usize,
    ) -> Result<Vec<Vec<RawMessage>>> {
        self.inner.raw_neighbors_each(ids, radius).await
    }

    async fn raw_matching(
        &self,
        filter: &memory_core::MetadataFilter,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<(Vec<String>, Option<String>)> {
        self.inner.raw_matching(filter, cursor, limit).await
    }

    async fn purge_raw(&self, ids: &[String]) -> Result<u64> {
        let pending = Pending {
            raw: ids.to_vec(),
            ..Pending::default()
        };
        self.write(pending, self.inner.purge_raw(ids)).await
    }
}

#[async_trait]
impl MemoryRecordStore for IndexedProfileStore {
    async fn insert_memory(&self, memory: MemoryRecord) -> Result<()> {
        let pending = Pending {
            memories: vec![memory.id.clone()],
            ..Pending::default()
        };
        self.write(pending, self.inner.insert_memory(memory)).await
    }

    async fn get_memory(&self, id: &str) -> Result<Option<MemoryRecord>> {
        self.inner.get_memory(id).await
    }

    async fn get_memories(&self, ids: &[String]) -> Result<Vec<MemoryRecord>> {
        self.inner.get_memories(ids).await
    }

    async fn current_by_key(&self, kind: MemoryKind, key: &str) -> Result<Option<MemoryRecord>> {
        self.inner.current_by_key(kind, key).await
    }

    async fn current_by_keys(&self, kinds: &[MemoryKind], key: &str) -> Result<Vec<MemoryRecord>> {
        self.inner.current_by_keys(kinds, key).await
    }

    async fn supersede(&self, old_id: &str, new_id: &str) -> Result<()> {
        let pending = Pending {
            memories: vec![old_id.to_owned(), new_id.to_owned()],
            ..Pending::default()
        };
        self.write(pending, self.inner.supersede(old_id, new_id))
            .await
    }

    async fn versions(&self, kind: MemoryKind, key: &str) -> Result<Vec<MemoryRecord>> {
        self.inner.versions(kind, key).await
    }

    async fn list(
        &self,
        filter: &MemoryFilter,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<MemoryPage> {
        self.inner.list(filter, cursor, limit).await
    }

    async fn forget(&self, id: &str, request: ForgetRequest) -> Result<()> {
        let pending = Pending {
            memories: vec![id.to_owned()],
            ..Pending::default()
        };
        self.write(pending, self.inner.forget(id, request)).await
    }

    async fn purge(&self, id: &str) -> Result<bool> {
        let pending = Pending {
            memories: vec![id.to_owned()],
            ..Pending::default()
        };
        self.write(pending, self.inner.purge(id)).await
    }

    async fn expired(&self, at: Timestamp, limit: usize) -> Result<Vec<String>> {
        self.inner.expired(at, limit).await
    }

    async fn merge(&self, merge: &memory_core::ports::MemoryMerge) -> Result<()> {
        let pending = Pending {
            memories: std::iter::once(&merge.survivor)
                .chain(&merge.absorbed)
                .cloned()
                .collect(),
            ..Pending::default()
        };
        self.write(pending, self.inner.merge(merge)).await
    }

    async fn merged_into(&self, id: &str) -> Result<Vec<MemoryRecord>> {
        self.inner.merged_into(id).await
    }

    async fn mark_recalled(&self, ids: &[String], at: Timestamp) -> Result<()> {
        // No indexed field changes.
        self.inner.mark_recalled(ids, at).await
    }
}
