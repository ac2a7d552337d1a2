use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{Result, SessionId};

/// What a compaction folded away: the range's message ids (root-most first) and its summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionEvent {
    /// The session.
    pub session_id: SessionId,
    /// The overlay record's id.
    pub compaction_id: String,
    /// Ids of the original messages the overlay now hides.
    pub message_ids: Vec<String>,
    /// The summary shown instead.
    pub summary: String,
}

/// Receives every compacted range, so long-term memory can ingest what compaction folds
/// away: compaction preserves instead of destroying.
///
/// # Contract
/// - Called after the overlay is stored; an observer error is reported to the caller of the
///   compaction but never undoes it.
#[async_trait]
pub trait CompactionObserver: Send + Sync {
    /// One compacted range.
    async fn on_compacted(&self, event: &CompactionEvent) -> Result<()>;
}
