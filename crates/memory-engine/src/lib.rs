//! # memory-engine
//!
//! The application services of the agent memory layer, written only against the ports of
//! `memory-core`: [`Session`] (one conversation tree) and [`SessionManager`] (the registry of
//! conversations plus their history). Compose them with any adapters:
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use memory_core::{NewSession, Role, UiMessage};
//! use memory_core::ports::SystemClock;
//! use memory_engine::SessionManager;
//! use memory_testkit::in_memory::{InMemoryMessageStore, InMemorySessionRegistry};
//!
//! let manager = SessionManager::new(
//!     Arc::new(InMemoryMessageStore::new()),
//!     Arc::new(InMemorySessionRegistry::new()),
//!     Arc::new(SystemClock),
//! );
//! let info = manager.create(NewSession { name: Some("demo".into()), ..Default::default() }).await.unwrap();
//! let session = manager.session(&info.id).await.unwrap();
//! session.append(UiMessage::text_message("u1", Role::User, "hello")).await.unwrap();
//! assert_eq!(session.history(None).await.unwrap().len(), 1);
//! # });
//! ```

mod archive;
pub mod compaction;
pub mod context;
mod index_sync;
mod indexed_message_store;
pub mod long_term;
mod message_search;
mod outbox;
pub mod profile_link;
mod rebuild_marker;
mod session;
mod session_manager;
pub mod session_transfer;

pub use archive::ArchiveReport;
pub use indexed_message_store::IndexedMessageStore;
pub use message_search::{MessageSearch, ReindexReport};
pub use session::{AppendReport, CompactionSettings, CompactionStatus, HistoryTail, Session};
pub use session_manager::SessionManager;

#[cfg(test)]
mod tests;
