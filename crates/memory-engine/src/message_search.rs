//! Full-text search over conversation history through the `messages` text index.

use std::sync::Arc;

use memory_core::ports::{KeyValueStore, MessageStore, SessionRegistry, TextIndex};
use memory_core::{MemoryError, Result, SearchHit, SearchQuery, search_messages};

use crate::indexed_message_store::IndexedMessageStore;

/// Search over conversation history: the `messages` namespace of a [`TextIndex`], plus, when
/// the engine writes that index, the [`IndexedMessageStore`] whose outbox is replayed before a
/// search that might otherwise miss a document.
#[derive(Clone)]
pub struct MessageSearch {
    index: Arc<dyn TextIndex>,
    synced: Option<Arc<IndexedMessageStore>>,
}

/// What a reindex did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ReindexReport {
    /// Documents written.
    pub documents: u64,
    /// False when the store writes the index itself (in its own transactions): there is
    /// nothing the engine could rebuild, and nothing was done.
    pub rebuilt: bool,
}

impl MessageSearch {
    /// Pairs a store with its `messages` index. When the index is written by the store (its
    /// capabilities say so), the store is returned unchanged; otherwise it is wrapped in an
    /// [`IndexedMessageStore`] that keeps the index in step through `outbox` (and rebuilds
    /// it over the sessions `registry` lists when it is lost). Use the returned store for
    /// every write.
    pub fn pair(
        store: Arc<dyn MessageStore>,
        index: Arc<dyn TextIndex>,
        outbox: Arc<dyn KeyValueStore>,
        registry: Arc<dyn SessionRegistry>,
    ) -> (Arc<dyn MessageStore>, Self) {
        if index.capabilities().written_by_store {
            return (
                store,
                Self {
                    index,
                    synced: None,
                },
            );
        }
        let synced = Arc::new(IndexedMessageStore::new(
            store,
            Arc::clone(&index),
            outbox,
            registry,
        ));
        let store: Arc<dyn MessageStore> = synced.clone();
        (
            store,
            Self {
                index,
                synced: Some(synced),
            },
        )
    }

    /// The index searched.
    pub fn index(&self) -> &Arc<dyn TextIndex> {
        &self.index
    }

    /// Ranked hits (see [`SearchQuery`]). An index the engine writes is first rebuilt if it
    /// is missing or its rebuild was cut short (once per process: see
    /// [`IndexedMessageStore::ensure_built`]), then caught up.
    pub async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        if let Some(synced) = &self.synced {
            synced.ensure_built().await?;
            synced.catch_up().await?;
        }
        search_messages(self.index.as_ref(), query).await
    }

    /// Replays index updates a crash or an index outage left behind; returns how many.
    pub async fn catch_up(&self) -> Result<u64> {
        match &self.synced {
            Some(synced) => synced.catch_up().await,
            None => Ok(0),
        }
    }

    /// Rebuilds the index from the store over every session of the registry, listed after
    /// the index is cleared so a session made meanwhile is not missed.
    pub async fn reindex(&self) -> Result<ReindexReport> {
        match &self.synced {
            Some(synced) => Ok(ReindexReport {
                documents: synced.reindex().await?,
                rebuilt: true,
            }),
            None => Ok(ReindexReport {
                documents: 0,
                rebuilt: false,
            }),
        }
    }
}

/// The error of a search where no index was configured.
pub(crate) fn no_index(store: &dyn MessageStore) -> MemoryError {
    MemoryError::NotSupported {
        operation: "message search without a text index (configure one with with_search)",
        backend: store.backend_name(),
    }
}
