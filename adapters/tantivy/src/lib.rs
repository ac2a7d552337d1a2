//! # memory-tantivy
//!
//! The text-index port on Tantivy: [`TantivyTextIndex`] keeps every namespace of a
//! deployment in one index on disk, ranks by BM25 with Tantivy's top-k pruning (block-max
//! WAND: a search for common words skips most postings), analyzes text in the index's
//! language (any of Tantivy's stemmers, or CJK two-character pieces; see
//! [`memory_core::TextLanguage`]), and matches phrases by positions. User words are analyzed
//! into terms and never reach a query parser. One writer thread commits writes in groups and
//! answers each after its commit; deletes rewrite the segments that held the text
//! ([`Erasure`]). [`TantivyTextIndexes`] gives each long-term profile an index of its own.
//!
//! ```no_run
//! # async fn demo() -> memory_core::Result<()> {
//! use memory_core::ports::{TextDocument, TextIndex, TextQuery};
//! let index = memory_tantivy::TantivyTextIndex::open("data/tantivy")?;
//! index.upsert("notes", vec![TextDocument::new("n1", "deploys run on Fridays")]).await?;
//! let hits = index.search("notes", &TextQuery::new("deploy friday", 5)).await?;
//! # Ok(()) }
//! ```

mod cjk;
mod committer;
mod error;
mod id_column;
mod language;
mod merge_policy;
mod options;
mod schema;
mod shared;
mod text_index;
mod text_indexes;

pub use options::{Erasure, TantivyOptions};
pub use text_index::TantivyTextIndex;
pub use text_indexes::TantivyTextIndexes;
