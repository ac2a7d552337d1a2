//! A profile's text index in two tiers: the index its store writes while the profile is
//! small (no other file, no commit of its own), a search engine's once it grows.
//!
//! Many end users on one machine means many small profiles: a search engine's index per
//! profile costs each of them a directory of files and a commit per write, which their
//! records' own index (SQLite's FTS5, written in the record's transaction) does not. A large
//! profile searches faster in the search engine. [`TieredTextIndexes`] keeps each profile on
//! the small index until it holds [`TieredTextIndexes::documents`] documents, then moves it:
//!
//! 1. the tier is set to *moving* (in the key-value store, shared by every process): from
//!    then on every sync writes the large index too, while searches stay on the small one;
//! 2. the large index is rebuilt from the records (`IndexedProfileStore::reindex`);
//! 3. the tier is set to *large*: searches go to the large index;
//! 4. the small index is stopped ([`TextIndexes::delete_text_index`] of the small factory).
//!
//! Every write is synced after its records are written and reads the tier then, and the
//! rebuild reads the records after the tier is *moving*: a record written before that read
//! is in the rebuild, one written after it finds the tier *moving* or *large* at its sync.
//! A profile whose small index is gone without a tier (a data directory written when every
//! profile's text was in the large index) is on the large tier.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use memory_core::ports::{
    KeyValueStore, ScoredId, TextDocument, TextHit, TextIndex, TextIndexCapabilities, TextIndexes,
    TextQuery, namespaces,
};
use memory_core::{MemoryError, Result};

/// A profile's tier is kept under this prefix and the profile name (absent: small).
pub(crate) const TIER_PREFIX: &str = "index-tier/profiles/";

/// Where a profile's text is indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tier {
    /// In the index its store writes.
    Small,
    /// Moving: writes reach both, searches the small one.
    Moving,
    /// In the large index.
    Large,
}

impl Tier {
    fn name(self) -> &'static str {
        match self {
            Self::Small => "small",
            Self::Moving => "moving",
            Self::Large => "large",
        }
    }
}

/// Where small profiles keep their text (see
/// [`LongTermBackends::with_small_profile_text`](crate::long_term::LongTermBackends::with_small_profile_text)).
#[derive(Clone)]
pub struct SmallProfileText {
    /// The index each profile's store writes (its capabilities say `written_by_store`), kept
    /// by a profile until [`TextIndexes::delete_text_index`] stops it.
    pub index: Arc<dyn TextIndexes>,
    /// The size, in documents (raw messages and memories), at which a profile moves to the
    /// large index.
    pub documents: u64,
    /// Profiles on the large index from their start (say, those whose language the small
    /// index does not analyze); one already on the small index moves at its next check.
    pub always_large: BTreeSet<String>,
}

/// [`TextIndexes`] whose profiles start on a small index (one the profile's store writes)
/// and move to `large` (one the engine writes) once they hold enough documents. See the
/// module's documentation for the protocol.
pub struct TieredTextIndexes {
    small: SmallProfileText,
    large: Arc<dyn TextIndexes>,
    kv: Arc<dyn KeyValueStore>,
}

impl TieredTextIndexes {
    /// Profiles on `small` while they are small and on `large` from then on; each
    /// profile's tier is kept in `kv`.
    pub fn new(
        small: SmallProfileText,
        large: Arc<dyn TextIndexes>,
        kv: Arc<dyn KeyValueStore>,
    ) -> Self {
        Self { small, large, kv }
    }

    fn key(profile: &str) -> String {
        format!("{TIER_PREFIX}{profile}")
    }

    /// The profile's tier as kept (absent: small).
    pub(crate) async fn tier(&self, profile: &str) -> Result<Tier> {
        read_tier(self.kv.as_ref(), &Self::key(profile)).await
    }

    pub(crate) async fn set_tier(&self, profile: &str, tier: Tier) -> Result<()> {
        self.kv.set(&Self::key(profile), tier.name()).await
    }

    /// Whether the profile should move now: not on the large tier, and at least
    /// [`SmallProfileText::documents`] documents in its small index (or one of
    /// [`SmallProfileText::always_large`]).
    pub(crate) async fn due(&self, profile: &str) -> Result<bool> {
        if self.tier(profile).await? == Tier::Large {
            return Ok(false);
        }
        if self.small.always_large.contains(profile) {
            return Ok(true);
        }
        let small = match self.small.index.text_index(profile).await {
            Ok(small) => small,
            Err(MemoryError::NotSupported { .. }) => return Ok(false),
            Err(e) => return Err(e),
        };
        let held = small.count(namespaces::RAW).await? + small.count(namespaces::MEMORIES).await?;
        Ok(held >= self.small.documents)
    }

    /// The last steps of a move, after the large index was rebuilt: searches go to it, and
    /// the small index is stopped.
    pub(crate) async fn finish_move(&self, profile: &str) -> Result<()> {
        self.set_tier(profile, Tier::Large).await?;
        self.small.index.delete_text_index(profile).await
    }
}

async fn read_tier(kv: &dyn KeyValueStore, key: &str) -> Result<Tier> {
    match kv.get(key).await?.as_deref() {
        None | Some("small") => Ok(Tier::Small),
        Some("moving") => Ok(Tier::Moving),
        Some("large") => Ok(Tier::Large),
        Some(other) => Err(MemoryError::backend(
            "engine",
            format!("the text tier `{other}` under `{key}` is not one this version knows"),
        )),
    }
}

#[async_trait]
impl TextIndexes for TieredTextIndexes {
    async fn text_index(&self, profile: &str) -> Result<Arc<dyn TextIndex>> {
        let key = Self::key(profile);
        let tier = read_tier(self.kv.as_ref(), &key).await?;
        let small = match tier {
            Tier::Large => None,
            Tier::Small | Tier::Moving => match self.small.index.text_index(profile).await {
                Ok(small) => Some(small),
                // Its text is already elsewhere (a data directory from before the tiers):
                // the large tier from now on.
                Err(MemoryError::NotSupported { .. }) => {
                    self.set_tier(profile, Tier::Large).await?;
                    None
                }
                Err(e) => return Err(e),
            },
        };
        let (large, serving) = match &small {
            Some(small) => (None, small.capabilities()),
            None => {
                let large = self.large.text_index(profile).await?;
                let serving = large.capabilities();
                (Some(large), serving)
            }
        };
        let capabilities = TextIndexCapabilities {
            written_by_store: false,
            ..serving
        };
        Ok(Arc::new(TieredTextIndex {
            profile: profile.to_owned(),
            key,
            kv: Arc::clone(&self.kv),
            small,
            large_indexes: Arc::clone(&self.large),
            large: Mutex::new(large),
            capabilities,
        }))
    }

    /// Deletes the profile's large index and its tier; the small index lives with the
    /// records (deleting the profile's records deletes it).
    async fn delete_text_index(&self, profile: &str) -> Result<()> {
        self.large.delete_text_index(profile).await?;
        self.kv.delete(&Self::key(profile)).await?;
        Ok(())
    }
}

/// One profile's tiered index: every operation reads the tier first (another request or
/// process may have moved the profile since this was opened).
struct TieredTextIndex {
    profile: String,
    key: String,
    kv: Arc<dyn KeyValueStore>,
    /// Open unless the profile was on the large tier when this was opened.
    small: Option<Arc<dyn TextIndex>>,
    large_indexes: Arc<dyn TextIndexes>,
    /// Opened on first need.
    large: Mutex<Option<Arc<dyn TextIndex>>>,
    capabilities: TextIndexCapabilities,
}

impl TieredTextIndex {
    async fn tier(&self) -> Result<Tier> {
        if self.small.is_none() {
            return Ok(Tier::Large);
        }
        read_tier(self.kv.as_ref(), &self.key).await
    }

    async fn large(&self) -> Result<Arc<dyn TextIndex>> {
        if let Some(large) = self.lock().as_ref() {
            return Ok(Arc::clone(large));
        }
        let opened = self.large_indexes.text_index(&self.profile).await?;
        Ok(Arc::clone(self.lock().get_or_insert(opened)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Arc<dyn TextIndex>>> {
        self.large.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The index searches read now.
    async fn serving(&self) -> Result<Arc<dyn TextIndex>> {
        match (self.tier().await?, &self.small) {
            (Tier::Small | Tier::Moving, Some(small)) => Ok(Arc::clone(small)),
            _ => self.large().await,
        }
    }

    /// The index writes must reach now; `None` while the store writes the only one.
    async fn written(&self) -> Result<Option<Arc<dyn TextIndex>>> {
        match self.tier().await? {
            Tier::Small => Ok(None),
            Tier::Moving | Tier::Large => Ok(Some(self.large().await?)),
        }
    }
}

#[async_trait]
impl TextIndex for TieredTextIndex {
    fn backend_name(&self) -> &'static str {
        "tiered"
    }

    fn capabilities(&self) -> TextIndexCapabilities {
        self.capabilities
    }

    async fn upsert(&self, namespace: &str, documents: Vec<TextDocument>) -> Result<()> {
        match self.written().await? {
            Some(index) => index.upsert(namespace, documents).await,
            // The store wrote them with their records.
            None => Ok(()),
        }
    }

    async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64> {
        match self.written().await? {
            Some(index) => index.delete(namespace, ids).await,
            None => Ok(0),
        }
    }

    async fn search(&self, namespace: &str, query: &TextQuery) -> Result<Vec<TextHit>> {
        self.serving().await?.search(namespace, query).await
    }

    async fn search_ids(&self, namespace: &str, query: &TextQuery) -> Result<Vec<ScoredId>> {
        self.serving().await?.search_ids(namespace, query).await
    }

    async fn count(&self, namespace: &str) -> Result<u64> {
        self.serving().await?.count(namespace).await
    }

    async fn clear(&self, namespace: &str) -> Result<()> {
        match self.written().await? {
            Some(index) => index.clear(namespace).await,
            // The store's index follows its records; there is nothing of ours to clear.
            None => Ok(()),
        }
    }
}
