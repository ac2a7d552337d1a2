//! # memory-lancedb
//!
//! The vector-index port on LanceDB: [`LanceVectorIndex`] keeps each namespace in a Lance
//! table on local disk or in an S3-compatible bucket, with the embedding model and
//! dimensions recorded in the table (two models never mix), exact search below a size
//! threshold and an IVF-PQ index with exact re-ranking above it. [`LanceVectorIndexes`]
//! gives each long-term profile a database of its own.
//!
//! Building this crate takes long (LanceDB, DataFusion, Arrow) and needs `protoc`; the
//! default build of the workspace's binaries leaves it out (memory-compose's `lancedb`
//! feature brings it in).
//!
//! ```no_run
//! # async fn demo() -> memory_core::Result<()> {
//! use memory_core::ports::{VectorFields, VectorFilter, VectorIndex, VectorQuery, VectorRecord};
//! use memory_lancedb::{LanceOptions, LanceVectorIndex};
//! let index = LanceVectorIndex::connect("data/lancedb", LanceOptions::default()).await?;
//! let fields = VectorFields { kind: Some("fact".into()), ..VectorFields::default() };
//! let record = VectorRecord::new("m1", vec![0.1, 0.9], "mini").with_fields(fields);
//! index.upsert("memories", vec![record]).await?;
//! let facts = VectorFilter { kind: Some("fact".into()), ..VectorFilter::default() };
//! let hits = index.search("memories", &VectorQuery::new(&[0.2, 0.8], 5).filter(facts)).await?;
//! # Ok(()) }
//! ```

mod error;
mod layout;
mod maintenance;
mod model_registry;
mod options;
mod records;
mod table_name;
mod vector_index;
mod vector_indexes;

pub use layout::{IndexLayout, TableLayout};
pub use options::LanceOptions;
pub use vector_index::LanceVectorIndex;
pub use vector_indexes::LanceVectorIndexes;
