//! # memory-fs
//!
//! Local files behind the ports of `memory-core`:
//! - [`MarkdownSkills`]: a directory of Markdown documents as a
//!   [`SkillStore`](memory_core::ports::SkillStore), each document's description taken from
//!   its YAML front matter;
//! - [`FileBlock`]: a read-only context block read from a file (a SOUL file, a style guide);
//! - [`FsBlobStore`]: a directory as a [`BlobStore`](memory_core::ports::BlobStore), every
//!   write whole-or-nothing (a synced temporary file renamed or hard-linked into place).

mod blob_store;
mod error;
mod file_block;
mod markdown_skills;

pub use blob_store::FsBlobStore;
pub use file_block::FileBlock;
pub use markdown_skills::MarkdownSkills;
