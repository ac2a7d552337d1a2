use async_trait::async_trait;

use crate::{
    AppendOutcome, CompactionRecord, MemoryError, MessagePage, NewCompaction, NewMessage, Parent,
    PathEntry, PathTail, RecentHistory, Result, SessionId, UiMessage,
};
use std::collections::BTreeMap;

/// What a message store can and cannot hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreCapabilities {
    /// The largest stored message (JSON bytes) the backend accepts; `None` for no limit.
    pub max_message_bytes: Option<u64>,
}

/// The conversation tree of every session and its compaction overlay records.
///
/// Full-text search is the [`crate::ports::TextIndex`] port's (`messages` namespace, document
/// ids from [`crate::ports::message_document_id`], fields `session` and `role`, text
/// [`UiMessage::text`]). An adapter holding rows and index in one database may write the index
/// in the same transaction (SQLite does, and its index says `written_by_store`); any other
/// pairing is kept in step by the engine's `IndexedMessageStore`.
///
/// # Contract
/// (asserted by `memory_testkit::contract::message_store`)
/// - Messages are keyed by `(session, message id)`: the same id may exist in two sessions, and
///   every operation sees only its own session.
/// - [`append`](Self::append) is insert-if-absent and atomic for the whole batch: an existing id
///   gives [`AppendOutcome::AlreadyExists`] and changes nothing; any error (an explicit parent
///   not in this session, a reserved id) stores none of the batch. Within a batch, later items
///   see earlier ones (as latest leaf or explicit parent).
/// - Ids starting with [`crate::COMPACTION_PREFIX`] are rejected on every write.
/// - The latest leaf is the most recently appended message without children, by insertion
///   order, never by wall-clock time. Insertion order is per session: the store assigns it
///   atomically (a global rowid or a per-session counter both serve).
/// - Deleting a message removes it; its children re-link to its parent. `clear` removes one
///   session's messages and overlay records only.
/// - Reads of a path never recurse on the call stack and load no more than the result.
#[async_trait]
pub trait MessageStore: Send + Sync {
    /// The adapter's name, for errors and logs.
    fn backend_name(&self) -> &'static str;

    /// Declared limits.
    fn capabilities(&self) -> StoreCapabilities;

    /// Appends messages in order, in one transaction; one outcome per message.
    async fn append(
        &self,
        session: &SessionId,
        messages: Vec<NewMessage>,
    ) -> Result<Vec<AppendOutcome>>;

    /// Replaces the parts (and the rest of the content) of an existing message and re-indexes
    /// it. Its parent and role do not change. [`MemoryError::NotFound`] if absent.
    async fn update(&self, session: &SessionId, message: UiMessage) -> Result<()>;

    /// Deletes messages by id; unknown ids are ignored. Returns how many were deleted.
    async fn delete(&self, session: &SessionId, ids: &[String]) -> Result<u64>;

    /// Deletes every message and overlay record of the session.
    async fn clear(&self, session: &SessionId) -> Result<()>;

    /// One message.
    async fn get(&self, session: &SessionId, id: &str) -> Result<Option<UiMessage>>;

    /// Several messages, in the order of `ids`; ids not in the session are skipped.
    async fn get_many(&self, session: &SessionId, ids: &[String]) -> Result<Vec<UiMessage>>;

    /// The id of the most recently appended message without children.
    async fn latest_leaf(&self, session: &SessionId) -> Result<Option<String>>;

    /// The most recently appended message without children in the subtree under `id` (`id`
    /// itself when it has no children): where a view switching to that branch lands.
    /// [`MemoryError::NotFound`] if the message is not in the session. Never walks the
    /// subtree through the caller: one call whatever its depth.
    async fn latest_leaf_under(&self, session: &SessionId, id: &str) -> Result<String>;

    /// The children of a message, in insertion order. [`MemoryError::NotFound`] if the
    /// message is not in the session.
    async fn children(&self, session: &SessionId, id: &str) -> Result<Vec<UiMessage>>;

    /// The root-to-leaf path as row stats (no content). `leaf: None` means the latest leaf; an
    /// empty session gives an empty path; an unknown leaf is [`MemoryError::NotFound`].
    async fn path(&self, session: &SessionId, leaf: Option<String>) -> Result<Vec<PathEntry>>;

    /// The last `limit` entries of the root-to-leaf path (root-ward first) and the path's
    /// length, read from the leaf upward: the cost follows `limit` and the path's branch
    /// points, not its length. Same leaf rules as [`path`](Self::path); `limit: 0` gives
    /// just the length.
    async fn path_tail(
        &self,
        session: &SessionId,
        leaf: Option<String>,
        limit: usize,
    ) -> Result<PathTail>;

    /// Where the conversation forks among `ids`: for each of them with more than one child,
    /// its children's ids in insertion order. Ids not in the session, and messages with one
    /// child or none, are left out.
    async fn forks(
        &self,
        session: &SessionId,
        ids: &[String],
    ) -> Result<BTreeMap<String, Vec<String>>>;

    /// The root-to-leaf path with content, raw (no overlays applied). Same leaf rules as
    /// [`path`](Self::path).
    async fn history(&self, session: &SessionId, leaf: Option<String>) -> Result<Vec<UiMessage>>;

    /// Every message of the session in insertion order, with parents: a page of at most
    /// `limit` messages after `cursor` (an opaque cursor from the previous page; `None` starts
    /// at the beginning). An invalid cursor is [`MemoryError::InvalidInput`].
    async fn messages(
        &self,
        session: &SessionId,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<MessagePage>;

    /// Records a compaction overlay. Both ends must be messages of the session.
    async fn add_compaction(
        &self,
        session: &SessionId,
        compaction: NewCompaction,
    ) -> Result<CompactionRecord>;

    /// The session's overlay records, in recording order.
    async fn compactions(&self, session: &SessionId) -> Result<Vec<CompactionRecord>>;
}

/// Conveniences over [`MessageStore`], implemented for every store.
#[async_trait]
pub trait MessageStoreExt: MessageStore {
    /// Appends one message.
    async fn append_one(
        &self,
        session: &SessionId,
        message: UiMessage,
        parent: Parent,
    ) -> Result<AppendOutcome> {
        let mut outcomes = self
            .append(session, vec![NewMessage::with_parent(message, parent)])
            .await?;
        outcomes.pop().ok_or_else(|| MemoryError::Conflict {
            message: "append returned no outcome".into(),
        })
    }

    /// Updates the message if it exists, else appends it under `parent`.
    async fn upsert(
        &self,
        session: &SessionId,
        message: UiMessage,
        parent: Parent,
    ) -> Result<AppendOutcome> {
        if self.get(session, &message.id).await?.is_some() {
            self.update(session, message).await?;
            Ok(AppendOutcome::AlreadyExists)
        } else {
            self.append_one(session, message, parent).await
        }
    }

    /// Number of messages on the path to `leaf` (latest leaf by default).
    async fn path_length(&self, session: &SessionId, leaf: Option<&str>) -> Result<usize> {
        Ok(self
            .path_tail(session, leaf.map(str::to_owned), 0)
            .await?
            .total)
    }

    /// The contiguous suffix of the path that fits `max_bytes`, always including the leaf and
    /// at least `min_recent` messages (when the path has them).
    async fn recent_history(
        &self,
        session: &SessionId,
        leaf: Option<&str>,
        max_bytes: u64,
        min_recent: usize,
    ) -> Result<RecentHistory> {
        let path = self.path(session, leaf.map(str::to_owned)).await?;
        let total_bytes = path.iter().map(|e| e.bytes).sum();
        let min_recent = min_recent.max(1);
        let mut start = path.len();
        let mut used = 0u64;
        while start > 0 {
            let candidate = &path[start - 1];
            let taken = path.len() - start;
            if taken >= min_recent && used + candidate.bytes > max_bytes {
                break;
            }
            used += candidate.bytes;
            start -= 1;
        }
        let ids: Vec<String> = path[start..].iter().map(|e| e.id.clone()).collect();
        let messages = self.get_many(session, &ids).await?;
        Ok(RecentHistory {
            messages,
            truncated: start > 0,
            total_bytes,
        })
    }
}

impl<T: MessageStore + ?Sized> MessageStoreExt for T {}
