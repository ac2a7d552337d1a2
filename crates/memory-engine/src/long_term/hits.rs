//! What a recall returns: each item (a typed memory or a raw message) with its fused score
//! and per-channel ranks.

use memory_core::Timestamp;
use memory_core::ports::MemoryRecord;
use serde::Serialize;

use super::fusion::ChannelRank;

/// What a recall returns for one item.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(
    clippy::large_enum_variant,
    reason = "a recall holds a few dozen items, most of them memories: boxing each would add an allocation per item to save space on the raw ones"
)]
pub enum RecallItem {
    /// A typed memory.
    Memory(MemoryRecord),
    /// A raw message (the verbatim safety net).
    Raw {
        /// Content address.
        id: String,
        /// Session.
        session_id: String,
        /// Speaker.
        role: String,
        /// Text.
        content: String,
        /// When it was said.
        created_at: Timestamp,
    },
}

impl RecallItem {
    /// The item's id.
    pub fn id(&self) -> &str {
        match self {
            Self::Memory(m) => &m.id,
            Self::Raw { id, .. } => id,
        }
    }

    /// When the item was true or said.
    pub fn time(&self) -> Timestamp {
        match self {
            Self::Memory(m) => m.valid_at.unwrap_or(m.recorded_at),
            Self::Raw { created_at, .. } => *created_at,
        }
    }

    /// The conversation it came from, when known.
    pub fn session_id(&self) -> Option<&str> {
        match self {
            Self::Memory(m) => m.session_id.as_deref(),
            Self::Raw { session_id, .. } => Some(session_id),
        }
    }

    /// The text.
    pub fn content(&self) -> &str {
        match self {
            Self::Memory(m) => &m.content,
            Self::Raw { content, .. } => content,
        }
    }
}

/// One recalled item with its fused score and per-channel ranks and scores (`explain`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecallHit {
    /// The item.
    pub item: RecallItem,
    /// Fused score.
    pub score: f64,
    /// Rank and score in each channel that found it.
    pub ranks: Vec<ChannelRank>,
}
