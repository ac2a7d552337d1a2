//! # memory-core
//!
//! The domain types and the **ports** (traits) of the agent memory layer.
//!
//! This crate is the hexagon's centre: it knows nothing of SQL, HTTP, files or async runtimes.
//! Adapter crates (`memory-sqlite`, ...) implement the ports; `memory-engine` builds the
//! application services on top of them; binaries compose the two.
//!
//! Start reading at [`ports::MessageStore`] (the conversation tree) and [`message::UiMessage`]
//! (the AI SDK compatible message model).
#![forbid(unsafe_code)]

pub mod append_plan;
pub mod context;
pub mod cursor;
pub mod error;
pub mod history;
pub mod ids;
pub mod language;
pub mod message;
pub mod metadata;
pub mod metadata_filter;
pub mod open_handles;
pub mod ports;
pub mod search;
pub mod session;
pub mod size;
pub mod structured;
pub mod time;
pub mod tokens;
pub mod tools;

pub use context::{BlockKind, BlockScope, ContextBlock};
pub use error::{MemoryError, Result};
pub use history::{
    AppendOutcome, CompactionRecord, MessagePage, NewCompaction, NewMessage, Parent, PathEntry,
    PathTail, RecentHistory, StoredMessage, forks_from_pairs,
};
pub use ids::{COMPACTION_PREFIX, SessionId, validate_message_id, validate_profile_name};
pub use language::TextLanguage;
pub use message::{Part, Role, ToolPart, ToolState, UiMessage};
pub use metadata::{Metadata, MetadataValue};
pub use metadata_filter::MetadataFilter;
pub use search::{
    MAX_SEARCH_TERMS, SearchHit, SearchMode, SearchQuery, phrase_terms, search_messages,
    search_terms,
};
pub use session::{NewSession, SessionInfo, SessionPatch, SessionUsage, binding_change};
pub use time::{CivilDate, DAY_MILLIS, Timestamp};
pub use tokens::{HeuristicTokenCounter, estimate_message_tokens, estimate_messages_tokens};
pub use tools::{ToolCall, ToolDefinition};
