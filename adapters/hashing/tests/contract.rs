//! The hashing embedder passes the embedder contract.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[tokio::test]
async fn hashing_embedder_passes_the_contract() {
    memory_testkit::contract::embedder::run_all(&memory_hashing::HashingEmbedder::new(64)).await;
}
