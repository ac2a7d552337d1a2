//! The shared text-index contract on a Tantivy index on disk, and the single-writer rule.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use memory_core::MemoryError;
use memory_core::ports::{TextDocument, TextIndex, TextQuery};
use memory_tantivy::TantivyTextIndex;
use memory_testkit::contract;

#[tokio::test]
async fn tantivy_text_index_passes_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let index = TantivyTextIndex::open(dir.path()).unwrap();
    contract::text_index::run_all(&index).await;
}

/// A second writer on the same directory is refused with a clear `Conflict`, and the first
/// keeps working; once the first is gone the index opens again with its documents.
#[tokio::test]
async fn one_writer_per_index_and_a_reopen_keeps_the_documents() {
    let dir = tempfile::tempdir().unwrap();
    let first = TantivyTextIndex::open(dir.path()).unwrap();
    first
        .upsert("n", vec![TextDocument::new("d1", "the lighthouse keeper")])
        .await
        .unwrap();
    let error = TantivyTextIndex::open(dir.path()).unwrap_err();
    assert!(matches!(error, MemoryError::Conflict { .. }), "{error}");
    assert!(error.to_string().contains("one writer"), "{error}");
    assert_eq!(first.count("n").await.unwrap(), 1);
    drop(first);
    let again = TantivyTextIndex::open(dir.path()).unwrap();
    let hits = again
        .search("n", &TextQuery::new("keepers", 5))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1, "stemmed, and durable across a reopen");
}

/// Profiles' indexes share nothing, and deleting one leaves the others whole.
#[tokio::test]
async fn profile_indexes_are_isolated() {
    use memory_core::ports::TextIndexes;
    let dir = tempfile::tempdir().unwrap();
    let indexes = memory_tantivy::TantivyTextIndexes::new(dir.path());
    contract::text_index::profile_indexes_are_isolated(&indexes).await;
    indexes.delete_text_index("never-made").await.unwrap();
}
