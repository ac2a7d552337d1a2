//! Context blocks: labelled text an agent sees in its system prompt on every turn.

use serde::{Deserialize, Serialize};

/// What a block can do, decided by its provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlockKind {
    /// Shown, never written by the model.
    ReadOnly,
    /// Shown and replaced or appended to by the model.
    Writable,
    /// A summary is shown; the model searches keyed entries.
    Searchable,
    /// A listing is shown; the model loads documents by key.
    Skill,
}

impl BlockKind {
    /// The tag rendered after the block header.
    pub fn tag(self) -> &'static str {
        match self {
            BlockKind::ReadOnly => "[readonly]",
            BlockKind::Writable => "[writable]",
            BlockKind::Searchable => "[searchable]",
            BlockKind::Skill => "[loadable]",
        }
    }

    /// True for kinds the model can write (keyed kinds write entries).
    pub fn is_writable(self) -> bool {
        !matches!(self, BlockKind::ReadOnly)
    }

    /// True for searchable and skill blocks, which are written by key.
    pub fn is_keyed(self) -> bool {
        matches!(self, BlockKind::Searchable | BlockKind::Skill)
    }
}

/// Whose a block's stored value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlockScope {
    /// One value per session.
    #[default]
    Session,
    /// One value shared by every session that declares the block.
    Shared,
}

/// A block as loaded: what the prompt shows and the budget it is held to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextBlock {
    /// The label (tool enums use it).
    pub label: String,
    /// One-line description.
    pub description: Option<String>,
    /// Content (a summary for searchable blocks, a listing for skills).
    pub content: String,
    /// Tokens of `content`.
    pub tokens: usize,
    /// Budget, if any.
    pub max_tokens: Option<usize>,
    /// Capability.
    pub kind: BlockKind,
    /// Storage scope.
    pub scope: BlockScope,
}
