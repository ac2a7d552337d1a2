//! Types of the conversation tree: where a message attaches, what an append did, path rows,
//! recent-history windows and compaction overlay records.

use serde::{Deserialize, Serialize};

use crate::{Role, Timestamp, UiMessage};

/// Where a new message attaches in the tree.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "id")]
pub enum Parent {
    /// Continue the conversation: attach to the latest leaf (a new root if the session is empty).
    #[default]
    LatestLeaf,
    /// Start a new root.
    Root,
    /// Attach to this message, which must exist in the same session.
    Message(String),
}

impl Parent {
    /// `Parent::Message(id)`.
    pub fn message(id: impl Into<String>) -> Self {
        Parent::Message(id.into())
    }
}

/// A message to append and where to attach it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMessage {
    /// The message.
    pub message: UiMessage,
    /// Where it attaches.
    pub parent: Parent,
}

impl NewMessage {
    /// A message that continues from the latest leaf.
    pub fn new(message: UiMessage) -> Self {
        Self {
            message,
            parent: Parent::LatestLeaf,
        }
    }

    /// A message attached to `parent`.
    pub fn with_parent(message: UiMessage, parent: Parent) -> Self {
        Self { message, parent }
    }
}

/// What an append did. Appends are insert-if-absent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum AppendOutcome {
    /// The message was stored under `parent_id` (`None`: a root).
    Inserted {
        /// The parent it was attached to.
        parent_id: Option<String>,
    },
    /// A message with this id already existed in the session; nothing changed.
    AlreadyExists,
}

impl AppendOutcome {
    /// True if the message was stored by this call.
    pub fn inserted(&self) -> bool {
        matches!(self, AppendOutcome::Inserted { .. })
    }
}

/// One row of a root-to-leaf path, measured without loading the content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathEntry {
    /// Message id.
    pub id: String,
    /// Role.
    pub role: Role,
    /// Size of the stored message JSON in bytes.
    pub bytes: u64,
}

/// The end of a root-to-leaf path: its last entries and how long the whole path is.
///
/// What [`crate::ports::MessageStore::path_tail`] reads, so a view of a long session costs
/// what it shows rather than what the session holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathTail {
    /// The last entries of the path, root-ward first, the leaf last.
    pub entries: Vec<PathEntry>,
    /// How many messages the whole path holds (`entries.len()` when the tail is the path).
    pub total: usize,
}

impl PathTail {
    /// True when the tail is the whole path (it starts at the root).
    pub fn is_whole_path(&self) -> bool {
        self.entries.len() >= self.total
    }
}

/// Where a conversation forks, from `(parent id, child id)` pairs with each parent's
/// children in insertion order: every parent with more than one child, mapped to them (what
/// [`crate::ports::MessageStore::forks`] answers).
pub fn forks_from_pairs(
    pairs: impl IntoIterator<Item = (String, String)>,
) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut children: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (parent, child) in pairs {
        children.entry(parent).or_default().push(child);
    }
    children.retain(|_, kids| kids.len() > 1);
    children
}

/// A message as stored, with its parent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredMessage {
    /// The message.
    pub message: UiMessage,
    /// The parent id (`None` for a root).
    pub parent_id: Option<String>,
}

/// A page of a session's messages in insertion order, with the cursor of the next page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessagePage {
    /// The messages.
    pub messages: Vec<StoredMessage>,
    /// Pass back unchanged for the next page; `None` at the end. Opaque: its form is the
    /// adapter's.
    pub next_cursor: Option<String>,
}

/// The recent part of a path that fits a byte budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecentHistory {
    /// The contiguous suffix of the path, root-most first; always includes the leaf.
    pub messages: Vec<UiMessage>,
    /// True when older messages of the path were left out.
    pub truncated: bool,
    /// Total stored bytes of the whole path.
    pub total_bytes: u64,
}

/// A request to record a compaction overlay over the range `from..=to` of a branch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewCompaction {
    /// The summary that replaces the range at read time.
    pub summary: String,
    /// First message id of the range.
    pub from_message_id: String,
    /// Last message id of the range.
    pub to_message_id: String,
}

/// A stored compaction overlay. Originals are never deleted; overlays apply at read time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionRecord {
    /// Overlay id; the synthetic message id is `compaction_<id>`.
    pub id: String,
    /// The summary.
    pub summary: String,
    /// First message id of the range.
    pub from_message_id: String,
    /// Last message id of the range.
    pub to_message_id: String,
    /// When it was recorded.
    pub created_at: Timestamp,
    /// Recording order within the session: assigned atomically by the store, strictly
    /// increasing within one session (not comparable across sessions); breaks timestamp ties.
    pub seq: i64,
}
