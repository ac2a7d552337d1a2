//! Context memory: labelled blocks rendered into a frozen, cache-friendly system prompt, and
//! the LLM tools generated from them.
//!
//! - [`ContextBlocks`] holds a session's blocks: lazy loading with defaults, replace /
//!   append / reset with read-only and token-budget checks, keyed entries, skills.
//! - [`render_prompt`] is the reference's prompt format, byte for byte.
//! - [`ContextTools`] turns blocks into tool definitions and executes tool calls.
//! - [`BlockSpec`] declares blocks for the `SessionManager`, which wires them per session.

mod blocks;
mod error;
mod keys;
mod providers;
mod render;
mod spec;
mod tools;

pub use blocks::{BlockConfig, ContextBlocks, Unloaded};
pub use error::BlockError;
pub use keys::{entry_key, fnv1a_base36, slugify};
pub use providers::{FnBlock, IndexedEntries, KvBlock, StoredSkills, TextBlock};
pub use render::{SEPARATOR, header, render_prompt};
pub use spec::{BlockSource, BlockSpec, ContextWiring, ProfileBlocks, keys as storage_keys};
pub use tools::{
    ContextTools, MAX_TOOL_RESULT_CHARS, TOOL_ERROR_PREFIX, ToolExecution, ToolFormat,
    bounded_tool_result, is_tool_error,
};

#[cfg(test)]
mod tests;
