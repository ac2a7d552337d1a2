//! A durable outbox in a [`KeyValueStore`]: the engine records what a store write is about
//! to change before the write, and drops the record once a second backend (a text index)
//! has caught up. Whatever a crash or an outage leaves behind is replayed later.

use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use memory_core::Result;
use memory_core::ports::KeyValueStore;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::warn;

/// Entries of one kind under one key prefix.
pub(crate) struct Outbox<P> {
    kv: Arc<dyn KeyValueStore>,
    prefix: String,
    /// An entry may be waiting: true at start (another process may have crashed) and after
    /// every failed apply; false after a complete replay.
    pending: AtomicBool,
    entry: PhantomData<fn() -> P>,
}

impl<P: Serialize + DeserializeOwned> Outbox<P> {
    /// The outbox under `prefix` (which should end with `/`).
    pub(crate) fn new(kv: Arc<dyn KeyValueStore>, prefix: impl Into<String>) -> Self {
        Self {
            kv,
            prefix: prefix.into(),
            pending: AtomicBool::new(true),
            entry: PhantomData,
        }
    }

    /// Records an entry (before the store write); returns its key.
    pub(crate) async fn record(&self, entry: &P) -> Result<String> {
        let key = format!("{}{}", self.prefix, uuid::Uuid::now_v7());
        self.kv.set(&key, &serde_json::to_string(entry)?).await?;
        Ok(key)
    }

    /// After the store write: the apply's outcome. Success drops the entry; a failure is
    /// logged and left for [`replay`](Self::replay), and the store write stands.
    pub(crate) async fn settle(&self, key: &str, applied: Result<()>) {
        let result = match applied {
            Ok(()) => self.kv.delete(key).await.map(|_| ()),
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            self.pending.store(true, Ordering::Release);
            warn!(error = %e, outbox = key, "index update failed; it will be replayed");
        }
    }

    /// True when an entry may be waiting.
    pub(crate) fn is_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// Every waiting entry, oldest first.
    pub(crate) async fn entries(&self) -> Result<Vec<(String, P)>> {
        let mut out = Vec::new();
        for key in self.kv.keys(&self.prefix).await? {
            if let Some(value) = self.kv.get(&key).await? {
                out.push((key, serde_json::from_str(&value)?));
            }
        }
        Ok(out)
    }

    /// Applies `apply` to every waiting entry and drops each one that succeeded; stops at the
    /// first failure (left for next time). Returns how many were replayed.
    pub(crate) async fn replay<F, Fut>(&self, apply: F) -> Result<u64>
    where
        F: Fn(P) -> Fut,
        Fut: std::future::Future<Output = Result<()>>,
    {
        self.pending.store(false, Ordering::Release);
        let result = async {
            let mut replayed = 0;
            for (key, entry) in self.entries().await? {
                apply(entry).await?;
                self.kv.delete(&key).await?;
                replayed += 1;
            }
            Ok(replayed)
        }
        .await;
        if result.is_err() {
            self.pending.store(true, Ordering::Release);
        }
        result
    }

    /// Drops every entry (after a rebuild that covers them).
    pub(crate) async fn clear(&self) -> Result<()> {
        self.kv.delete_prefix(&self.prefix).await?;
        self.pending.store(false, Ordering::Release);
        Ok(())
    }
}
