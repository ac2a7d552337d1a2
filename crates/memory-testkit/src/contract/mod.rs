//! The port contract suite. Each function exercises one promise of a port's `# Contract`
//! and panics (like `assert!`) when the adapter breaks it. Adapters call the `run_all`
//! function of each port from one test, or the functions one by one.
//!
//! Every function works in freshly named sessions and keys, so it is safe on a shared store.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod blob_store;
pub mod embedder;
pub mod job_queue;
pub mod key_value_store;
pub mod long_term_memory;
pub mod message_store;
pub mod reranker;
pub mod session_registry;
pub mod skill_store;
pub mod text_index;
pub mod vector_index;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use memory_core::SessionId;

/// A name no other call of this process (or, very likely, any other process) has used.
pub fn unique(tag: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{tag}-{}-{nanos:x}-{n}", std::process::id())
}

/// A fresh session id.
pub fn fresh_session(tag: &str) -> SessionId {
    SessionId::new(unique(tag)).unwrap()
}
