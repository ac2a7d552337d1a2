//! Fault injection: adapters that wrap a real one and fail on command, for tests of what the
//! engine does when a backend is down between two writes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use memory_core::ports::{
    TextDocument, TextHit, TextIndex, TextIndexCapabilities, TextIndexes, TextQuery,
};
use memory_core::{MemoryError, Result};

/// A switch shared by fault-injecting adapters: while it is down, their writes fail.
#[derive(Debug, Clone, Default)]
pub struct Outage(Arc<AtomicBool>);

impl Outage {
    /// A switch that starts up.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the backend down (`true`) or brings it back.
    pub fn set_down(&self, down: bool) {
        self.0.store(down, Ordering::SeqCst);
    }

    fn check(&self) -> Result<()> {
        if self.0.load(Ordering::SeqCst) {
            Err(MemoryError::backend("outage", "the backend is unreachable"))
        } else {
            Ok(())
        }
    }
}

/// A [`TextIndex`] whose writes fail while its [`Outage`] is down (searches still work, as
/// a read replica would).
pub struct FlakyTextIndex {
    inner: Arc<dyn TextIndex>,
    outage: Outage,
}

impl FlakyTextIndex {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn TextIndex>, outage: Outage) -> Self {
        Self { inner, outage }
    }
}

#[async_trait]
impl TextIndex for FlakyTextIndex {
    fn backend_name(&self) -> &'static str {
        "flaky"
    }

    fn capabilities(&self) -> TextIndexCapabilities {
        self.inner.capabilities()
    }

    async fn upsert(&self, namespace: &str, documents: Vec<TextDocument>) -> Result<()> {
        self.outage.check()?;
        self.inner.upsert(namespace, documents).await
    }

    async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64> {
        self.outage.check()?;
        self.inner.delete(namespace, ids).await
    }

    async fn search(&self, namespace: &str, query: &TextQuery) -> Result<Vec<TextHit>> {
        self.inner.search(namespace, query).await
    }

    async fn count(&self, namespace: &str) -> Result<u64> {
        self.inner.count(namespace).await
    }

    async fn clear(&self, namespace: &str) -> Result<()> {
        self.outage.check()?;
        self.inner.clear(namespace).await
    }
}

/// [`TextIndexes`] whose indexes are [`FlakyTextIndex`]es over `inner`'s, all on one switch.
pub struct FlakyTextIndexes {
    inner: Arc<dyn TextIndexes>,
    outage: Outage,
}

impl FlakyTextIndexes {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn TextIndexes>, outage: Outage) -> Self {
        Self { inner, outage }
    }
}

#[async_trait]
impl TextIndexes for FlakyTextIndexes {
    async fn text_index(&self, profile: &str) -> Result<Arc<dyn TextIndex>> {
        Ok(Arc::new(FlakyTextIndex::new(
            self.inner.text_index(profile).await?,
            self.outage.clone(),
        )))
    }

    async fn delete_text_index(&self, profile: &str) -> Result<()> {
        self.outage.check()?;
        self.inner.delete_text_index(profile).await
    }
}
