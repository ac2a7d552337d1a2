//! Session registry records: metadata and usage of each conversation.

use serde::{Deserialize, Serialize};

use crate::{SessionId, Timestamp};

/// What the registry knows about a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// The session id.
    pub id: SessionId,
    /// Display name; `None` until named.
    pub name: Option<String>,
    /// The session this one was forked or split from.
    pub parent_session_id: Option<SessionId>,
    /// The model the session talks to.
    pub model: Option<String>,
    /// Where the session came from (an app, a channel, an import).
    pub source: Option<String>,
    /// Accumulated usage.
    pub usage: SessionUsage,
    /// Why the session ended (`compaction`, ...); `None` while open.
    pub end_reason: Option<String>,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change to the session or its messages.
    pub updated_at: Timestamp,
}

/// Token and cost accounting of a session.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionUsage {
    /// Input (prompt) tokens.
    pub input_tokens: u64,
    /// Output (completion) tokens.
    pub output_tokens: u64,
    /// Estimated cost in the caller's currency unit.
    pub cost: f64,
}

/// A session to create.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NewSession {
    /// The id; `None` lets the caller's service generate one.
    pub id: Option<SessionId>,
    /// Display name.
    pub name: Option<String>,
    /// Parent session.
    pub parent_session_id: Option<SessionId>,
    /// Model.
    pub model: Option<String>,
    /// Source.
    pub source: Option<String>,
}

/// A change to a session's metadata; `None` fields stay as they are.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionPatch {
    /// New name.
    pub name: Option<String>,
    /// New model.
    pub model: Option<String>,
    /// New end reason.
    pub end_reason: Option<String>,
}
