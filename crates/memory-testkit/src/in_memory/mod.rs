//! In-memory adapters for every port. Correct, simple and single-process: the reference
//! behaviour the contract suite holds real adapters to.

mod blob_store;
mod clock;
mod context;
mod job_queue;
mod key_value_store;
mod language_model;
mod long_term_memory;
mod message_store;
mod reranker;
mod session_registry;
mod skill_store;
mod text_index;
mod text_search;
mod token_counter;
mod vector_index;

pub use blob_store::InMemoryBlobStore;
pub use clock::ManualClock;
pub use context::{InMemoryBlock, StaticBlock};
pub use job_queue::InMemoryJobQueue;
pub use key_value_store::InMemoryKeyValueStore;
pub use language_model::{RoutedLanguageModel, ScriptedLanguageModel};
pub use long_term_memory::{InMemoryLongTermMemory, InMemoryProfileIndex, InMemoryProfiles};
/// The model-free embedder lives in its own adapter crate; re-exported for tests.
pub use memory_hashing::HashingEmbedder;
pub use memory_hashing::tokenize;
pub use message_store::InMemoryMessageStore;
pub use reranker::WordOverlapReranker;
pub use session_registry::InMemorySessionRegistry;
pub use skill_store::InMemorySkillStore;
pub use text_index::{InMemoryTextIndex, InMemoryTextIndexes};
pub use text_search::Bm25Corpus;
pub use token_counter::CharRatioTokenCounter;
pub use vector_index::InMemoryVectorIndex;

use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, recovering the data if a panicking thread poisoned it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
