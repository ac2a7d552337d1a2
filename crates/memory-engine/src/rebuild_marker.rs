//! The rebuild of an engine-written index: its progress, kept under one key of a
//! [`KeyValueStore`] from before its first page until after its last (so a rebuild cut short
//! is resumed by whoever comes next, in any process), and each process's one check of
//! whether the index can be trusted.

use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use memory_core::Result;
use memory_core::ports::KeyValueStore;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::warn;

/// One index's rebuild marker, holding progress of type `P`.
pub(crate) struct RebuildMarker<P> {
    kv: Arc<dyn KeyValueStore>,
    key: String,
    /// Set once this process has found the index trustworthy or rebuilt it.
    built: AtomicBool,
    /// Held while this process checks (and rebuilds) the index: one check at a time. Nothing
    /// run under it may wait for the check again (a write through the checked store, a
    /// checked catch-up).
    checking: futures::lock::Mutex<()>,
    /// Set when this process marked a rebuild after a failed check: its writes (and the
    /// catch-ups that run as writes do) no longer wait for a check (the marker guarantees
    /// the rebuild); its searches still do.
    marked: AtomicBool,
    progress: PhantomData<fn() -> P>,
}

impl<P: Serialize + DeserializeOwned> RebuildMarker<P> {
    /// The marker under `key` (outside any outbox prefix, so a replay never reads it).
    pub(crate) fn new(kv: Arc<dyn KeyValueStore>, key: impl Into<String>) -> Self {
        Self {
            kv,
            key: key.into(),
            built: AtomicBool::new(false),
            checking: futures::lock::Mutex::new(()),
            marked: AtomicBool::new(false),
            progress: PhantomData,
        }
    }

    /// The key the progress is kept under (it names the index in logs).
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// Runs `check` (which finds out whether the index needs a rebuild, and runs it) once per
    /// process: later calls return at once; concurrent ones wait for it; a failed or dropped
    /// check is run again by the next caller.
    pub(crate) async fn check_once<F, Fut>(&self, check: F) -> Result<()>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<()>>,
    {
        if self.built.load(Ordering::Acquire) {
            return Ok(());
        }
        let _one_check = self.checking.lock().await;
        if self.built.load(Ordering::Acquire) {
            return Ok(());
        }
        check().await?;
        self.built.store(true, Ordering::Release);
        self.marked.store(false, Ordering::Release);
        Ok(())
    }

    /// [`check_once`](Self::check_once) before a write, which must not fail because the
    /// index cannot be checked (its update waits in the outbox): a failed check marks a
    /// rebuild from `fresh` instead, unless one is marked already (a document written now
    /// would make an index that lacks older records look whole), and this process's later
    /// writes go straight through; the next search (or the next process) runs the rebuild.
    pub(crate) async fn check_once_for_write<F, Fut>(
        &self,
        check: F,
        fresh: impl FnOnce() -> P,
    ) -> Result<()>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<()>>,
    {
        if self.marked.load(Ordering::Acquire) {
            return Ok(());
        }
        let Err(error) = self.check_once(check).await else {
            return Ok(());
        };
        warn!(error = %error, marker = %self.key, "could not check an index; it will be rebuilt");
        if self.kv.get(&self.key).await?.is_none() {
            self.save(&fresh()).await?;
        }
        self.marked.store(true, Ordering::Release);
        Ok(())
    }

    /// The saved progress, if a rebuild is marked (`fresh` when what is saved cannot be read:
    /// the rebuild then starts over).
    pub(crate) async fn saved(&self, fresh: impl FnOnce() -> P) -> Result<Option<P>> {
        let Some(saved) = self.kv.get(&self.key).await? else {
            return Ok(None);
        };
        Ok(Some(serde_json::from_str(&saved).unwrap_or_else(|e| {
            warn!(error = %e, marker = %self.key, "unreadable rebuild progress; starting over");
            fresh()
        })))
    }

    /// Keeps a rebuild's progress.
    pub(crate) async fn save(&self, progress: &P) -> Result<()> {
        self.kv
            .set(&self.key, &serde_json::to_string(progress)?)
            .await
    }

    /// The rebuild is done: drops the marker.
    pub(crate) async fn finish(&self) -> Result<()> {
        self.kv.delete(&self.key).await.map(|_| ())
    }

    /// This process checks the index again at its next use (it was just emptied).
    pub(crate) fn forget_check(&self) {
        self.built.store(false, Ordering::Release);
    }
}
