//! # memory-fs
//!
//! Local files behind the ports of `memory-core`:
//! - [`MarkdownSkills`]: a directory of Markdown documents as a
//!   [`SkillStore`](memory_core::ports::SkillStore), each document's description taken from
//!   its YAML front matter;
//! - [`FileBlock`]: a read-only context block read from a file (a SOUL file, a style guide).

mod error;
mod file_block;
mod markdown_skills;

pub use file_block::FileBlock;
pub use markdown_skills::MarkdownSkills;
