//! A durable outbox in a [`KeyValueStore`]: the engine records what a store write is about
//! to change before the write, and drops the record once a second backend (a text index)
//! has caught up. Whatever a crash or an outage leaves behind is replayed later.

use std::marker::PhantomData;
use std::sync::Arc;

use memory_core::Result;
use memory_core::ports::KeyValueStore;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::warn;

/// Entries of one kind under one key prefix.
///
/// Every search replays whatever entries exist (one key listing when there are none), since
/// another process's failed write leaves an entry this process cannot know about.
pub(crate) struct Outbox<P> {
    kv: Arc<dyn KeyValueStore>,
    prefix: String,
    entry: PhantomData<fn() -> P>,
}

impl<P: Serialize + DeserializeOwned> Outbox<P> {
    /// The outbox under `prefix` (which should end with `/`).
    pub(crate) fn new(kv: Arc<dyn KeyValueStore>, prefix: impl Into<String>) -> Self {
        Self {
            kv,
            prefix: prefix.into(),
            entry: PhantomData,
        }
    }

    /// Records an entry (before the store write); returns its key.
    pub(crate) async fn record(&self, entry: &P) -> Result<String> {
        let key = format!("{}{}", self.prefix, uuid::Uuid::now_v7());
        self.kv.set(&key, &serde_json::to_string(entry)?).await?;
        Ok(key)
    }

    /// After the store write: the apply's outcome. Success drops the entry. A failure is
    /// logged and the entry is written again (a concurrent replay may have taken it before the
    /// store write), so [`replay`](Self::replay) finds it; the store write stands.
    pub(crate) async fn settle(&self, key: &str, entry: &P, applied: Result<()>) {
        let result = match applied {
            Ok(()) => self.kv.delete(key).await.map(|_| ()),
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            warn!(error = %e, outbox = key, "index update failed; it will be replayed");
            match serde_json::to_string(entry) {
                Ok(value) => {
                    if let Err(e) = self.kv.set(key, &value).await {
                        warn!(error = %e, outbox = key, "could not keep the outbox entry");
                    }
                }
                Err(e) => warn!(error = %e, outbox = key, "could not encode the outbox entry"),
            }
        }
    }

    /// A key that sorts after every entry recorded so far (keys are UUIDv7, time-ordered).
    pub(crate) fn cut_off(&self) -> String {
        format!("{}{}", self.prefix, uuid::Uuid::now_v7())
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
        let mut replayed = 0;
        for (key, entry) in self.entries().await? {
            apply(entry).await?;
            self.kv.delete(&key).await?;
            replayed += 1;
        }
        Ok(replayed)
    }

    /// Drops the entries recorded before `cut_off` (a rebuild that started then covers them);
    /// later ones stay for the next replay.
    pub(crate) async fn clear_before(&self, cut_off: &str) -> Result<()> {
        for key in self.kv.keys(&self.prefix).await? {
            if key.as_str() < cut_off {
                self.kv.delete(&key).await?;
            }
        }
        Ok(())
    }
}
