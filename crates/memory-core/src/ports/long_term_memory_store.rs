use std::sync::Arc;

use async_trait::async_trait;

use crate::Result;
use crate::ports::{MemoryRecordStore, RawMessageStore};

/// One profile's long-term records: raw messages and typed memories. Implemented for every
/// type that implements both halves; full-text search, vectors and jobs are ports of their
/// own ([`crate::ports::TextIndex`], [`crate::ports::VectorIndex`], [`crate::ports::JobQueue`]).
pub trait LongTermMemoryStore: RawMessageStore + MemoryRecordStore {}

impl<T: RawMessageStore + MemoryRecordStore + ?Sized> LongTermMemoryStore for T {}

/// Named, isolated memory profiles (their records; the engine reaches a profile's text and
/// vector indexes through [`crate::ports::TextIndexes`] and [`crate::ports::VectorIndexes`]).
///
/// # Contract
/// - Profiles share nothing; `delete` removes every record of one.
/// - Names follow [`crate::validate_profile_name`].
#[async_trait]
pub trait MemoryProfiles: Send + Sync {
    /// Opens (creating if needed) a profile.
    async fn open(&self, name: &str) -> Result<Arc<dyn LongTermMemoryStore>>;
    /// Profile names, sorted.
    async fn list(&self) -> Result<Vec<String>>;
    /// One page of profile names, sorted: at most `limit` names after `after` (exclusive;
    /// `None` from the first). The default reads [`MemoryProfiles::list`]; adapters with an
    /// ordered index of names answer it without reading them all.
    async fn list_page(&self, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        let names = self.list().await?;
        let start = after.map_or(0, |after| names.partition_point(|n| n.as_str() <= after));
        Ok(names.into_iter().skip(start).take(limit).collect())
    }
    /// Deletes a profile; true if it existed.
    async fn delete(&self, name: &str) -> Result<bool>;
    /// True when the profile exists; never creates it (reads of a missing profile are
    /// `NotFound`, not a new empty profile). The default reads [`MemoryProfiles::list`];
    /// adapters answer it more cheaply.
    async fn exists(&self, name: &str) -> Result<bool> {
        Ok(self.list().await?.iter().any(|n| n == name))
    }
}
