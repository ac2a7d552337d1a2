//! Where long-term memory lives: each role served by whatever backend the deployment chose.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memory_core::Result;
use memory_core::open_handles::OpenHandles;
use memory_core::ports::{
    JobFilter, JobQueue, KeyValueStore, LongTermMemoryStore, MemoryProfiles, TextIndex,
    TextIndexes, VectorIndex, VectorIndexes,
};

use super::indexed_profile_store::{IndexedProfileStore, ProfileSync};
use super::tiered_text::{SmallProfileText, Tier, TieredTextIndexes};
use crate::ReindexReport;

/// The queue's kind of ingest jobs.
pub(super) const INGEST_KIND: &str = "ingest";

/// Outbox keys of a profile's index updates live under this prefix and the profile name.
const OUTBOX_PREFIX: &str = "index-outbox/profiles/";

/// Profiles whose index-syncing state a process keeps between requests (the least recently
/// used one not in use is dropped first; a dropped state costs one index check when the
/// profile is next used).
const SYNCED_PROFILES: usize = 1_024;

/// A profile on the small text tier has its size checked at its first use by a process and
/// every this many uses after.
const TIER_CHECK_EVERY: u64 = 16;

/// A rebuild of a profile's index keeps its progress under this prefix and the profile name
/// until it is done (outside the outbox's prefix, so a replay never reads it as an entry).
const REBUILD_PREFIX: &str = "index-rebuild/profiles/";

/// The ports long-term memory runs on. Records, text indexes, vectors and jobs may come from
/// different adapters (records on Postgres, vectors on LanceDB, ...); the engine reaches each
/// profile's indexes through the factories, never through another adapter.
#[derive(Clone)]
pub struct LongTermBackends {
    /// Each profile's raw messages and memories.
    pub records: Arc<dyn MemoryProfiles>,
    /// Each profile's full-text index.
    pub text: Arc<dyn TextIndexes>,
    /// Each profile's vectors.
    pub vectors: Arc<dyn VectorIndexes>,
    /// Ingest jobs of every profile, shared by every worker.
    pub jobs: Arc<dyn JobQueue>,
    /// The deployment's key-value store: index updates wait here until a text index the
    /// engine writes has them (the outbox), and profiles keep their extraction settings.
    pub outbox: Arc<dyn KeyValueStore>,
    /// The index-syncing state of the profiles whose text index the engine writes, for at
    /// most [`SYNCED_PROFILES`] of them.
    synced: Arc<Mutex<OpenHandles<Arc<ProfileSync>>>>,
    /// `text` when it keeps small profiles on their store's own index
    /// ([`with_small_profile_text`](Self::with_small_profile_text)).
    tiers: Option<Arc<TieredTextIndexes>>,
}

impl LongTermBackends {
    /// Records, text and vectors from one backend (SQLite's `SqliteProfiles`, the in-memory
    /// profiles), jobs from a queue, index updates through an outbox.
    pub fn new<P>(profiles: Arc<P>, jobs: Arc<dyn JobQueue>, outbox: Arc<dyn KeyValueStore>) -> Self
    where
        P: MemoryProfiles + TextIndexes + VectorIndexes + 'static,
    {
        Self::from_parts(profiles.clone(), profiles.clone(), profiles, jobs, outbox)
    }

    /// Each role from its own backend.
    pub fn from_parts(
        records: Arc<dyn MemoryProfiles>,
        text: Arc<dyn TextIndexes>,
        vectors: Arc<dyn VectorIndexes>,
        jobs: Arc<dyn JobQueue>,
        outbox: Arc<dyn KeyValueStore>,
    ) -> Self {
        Self {
            records,
            text,
            vectors,
            jobs,
            outbox,
            synced: Arc::new(Mutex::new(OpenHandles::new(SYNCED_PROFILES, Duration::MAX))),
            tiers: None,
        }
    }

    /// Keeps each profile's text on `small.index` (an index the profile's store writes, such
    /// as SQLite's FTS5 in the profile's own file) until it holds `small.documents`
    /// documents, then moves it to the `text` index given before (see
    /// [`TieredTextIndexes`]): a small profile then costs no file and no commit of a search
    /// engine. `small.documents == 0` leaves every profile on `text`.
    pub fn with_small_profile_text(mut self, small: SmallProfileText) -> Self {
        if small.documents == 0 {
            return self;
        }
        let tiers = Arc::new(TieredTextIndexes::new(
            small,
            Arc::clone(&self.text),
            Arc::clone(&self.outbox),
        ));
        self.text = Arc::clone(&tiers) as Arc<dyn TextIndexes>;
        self.tiers = Some(tiers);
        self
    }

    /// Whether the profile's text index is written by its store now (nothing for the engine
    /// to rebuild or discard).
    async fn store_writes_text(&self, profile: &str, index: &dyn TextIndex) -> Result<bool> {
        if index.capabilities().written_by_store {
            return Ok(true);
        }
        match &self.tiers {
            Some(tiers) => Ok(tiers.tier(profile).await? == Tier::Small),
            None => Ok(false),
        }
    }

    /// Moves the profile's text to the large tier when it has grown to it (checked at the
    /// first use by this process and every [`TIER_CHECK_EVERY`] uses after). A move that
    /// fails is logged and retried at a later check: the profile stays searchable on its
    /// small index meanwhile, and the caller's request goes on.
    async fn grow(&self, profile: &str, synced: &IndexedProfileStore, sync: &ProfileSync) {
        let uses = sync.uses.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if self.tiers.is_none() || !uses.is_multiple_of(TIER_CHECK_EVERY) {
            return;
        }
        if let Err(e) = self.move_if_due(profile, synced, sync).await {
            tracing::warn!(
                profile,
                error = %e,
                "could not move a profile's text index to the large tier; retried later"
            );
        }
    }

    /// Moves the profile's text to the large tier if it is due (see
    /// [`TieredTextIndexes`]); the documents written, `None` when no move was due (or another
    /// request of this process is moving it).
    async fn move_if_due(
        &self,
        profile: &str,
        synced: &IndexedProfileStore,
        sync: &ProfileSync,
    ) -> Result<Option<u64>> {
        let Some(tiers) = &self.tiers else {
            return Ok(None);
        };
        let Some(_moving) = sync.moving.try_lock() else {
            return Ok(None);
        };
        if !tiers.due(profile).await? {
            return Ok(None);
        }
        tiers.set_tier(profile, Tier::Moving).await?;
        let documents = synced.reindex().await?;
        tiers.finish_move(profile).await?;
        tracing::info!(
            profile,
            documents,
            "moved a profile's text index to the large tier"
        );
        Ok(Some(documents))
    }

    /// The profile's records to read and write: as they are when the store writes the text
    /// index, else wrapped so that every write reaches the index.
    /// The store of a profile that must exist already: `NotFound` otherwise, and nothing is
    /// created (a read of a misspelt profile must not leave an empty one behind).
    pub(super) async fn existing_store(
        &self,
        profile: &str,
    ) -> Result<Arc<dyn LongTermMemoryStore>> {
        memory_core::validate_profile_name(profile)?;
        if !self.records.exists(profile).await? {
            return Err(memory_core::MemoryError::not_found("profile", profile));
        }
        self.store(profile).await
    }

    pub(super) async fn store(&self, profile: &str) -> Result<Arc<dyn LongTermMemoryStore>> {
        let records = self.records.open(profile).await?;
        let index = self.text.text_index(profile).await?;
        if index.capabilities().written_by_store {
            return Ok(records);
        }
        let sync = self.profile_sync(profile);
        let synced = Arc::new(IndexedProfileStore::new(records, index, Arc::clone(&sync)));
        synced.ensure_built_for_write().await?;
        self.grow(profile, &synced, &sync).await;
        Ok(synced)
    }

    fn synced(
        &self,
        profile: &str,
        records: Arc<dyn LongTermMemoryStore>,
        index: Arc<dyn TextIndex>,
    ) -> Arc<IndexedProfileStore> {
        Arc::new(IndexedProfileStore::new(
            records,
            index,
            self.profile_sync(profile),
        ))
    }

    /// The profile's syncing state, shared by every request that uses the profile at once.
    fn profile_sync(&self, profile: &str) -> Arc<ProfileSync> {
        let mut synced = self.synced.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(sync) = synced.get(profile, Instant::now()) {
            return sync;
        }
        let sync = Arc::new(ProfileSync::new(
            Arc::clone(&self.outbox),
            format!("{OUTBOX_PREFIX}{profile}/"),
            format!("{REBUILD_PREFIX}{profile}"),
        ));
        // With every kept state in use (as many profiles in use at once), this one is not
        // kept: its syncs still converge with the others', as another process's would.
        if synced.make_room(|s| Arc::strong_count(s) > 1).is_ok() {
            synced.insert(profile, Arc::clone(&sync), Instant::now());
        }
        sync
    }

    /// The profile's text index, caught up with every write (rebuilt from the records first
    /// if it cannot be trusted, then an update a crash or outage left in the outbox is
    /// replayed).
    pub(super) async fn text_index(&self, profile: &str) -> Result<Arc<dyn TextIndex>> {
        let index = self.text.text_index(profile).await?;
        if !index.capabilities().written_by_store {
            let records = self.records.open(profile).await?;
            let synced = self.synced(profile, records, Arc::clone(&index));
            synced.ensure_built().await?;
            synced.catch_up().await?;
        }
        Ok(index)
    }

    /// Rebuilds the profile's text index from its records (when the engine writes it). A
    /// profile on the small text tier that has grown past its size is moved to the large
    /// one here (records written beside the engine, by a bulk load, are counted then).
    pub async fn reindex(&self, profile: &str) -> Result<ReindexReport> {
        let records = self.records.open(profile).await?;
        let index = self.text.text_index(profile).await?;
        if self.tiers.is_some() {
            let sync = self.profile_sync(profile);
            let synced = IndexedProfileStore::new(
                Arc::clone(&records),
                Arc::clone(&index),
                Arc::clone(&sync),
            );
            if let Some(documents) = self.move_if_due(profile, &synced, &sync).await? {
                return Ok(ReindexReport {
                    documents,
                    rebuilt: true,
                });
            }
        }
        if self.store_writes_text(profile, index.as_ref()).await? {
            return Ok(ReindexReport {
                documents: 0,
                rebuilt: false,
            });
        }
        Ok(ReindexReport {
            documents: self.synced(profile, records, index).reindex().await?,
            rebuilt: true,
        })
    }

    /// Empties the profile's text index and has it rebuilt from the records when the profile
    /// is next opened, by this process or another (after a restore brought the records back
    /// without the index, perhaps beside an older one). Nothing to do when the store writes
    /// its index.
    pub async fn discard_text_index(&self, profile: &str) -> Result<()> {
        let index = self.text.text_index(profile).await?;
        if self.store_writes_text(profile, index.as_ref()).await? {
            return Ok(());
        }
        let records = self.records.open(profile).await?;
        self.synced(profile, records, index).discard().await
    }

    /// The profile's vector index.
    pub(super) async fn vector_index(&self, profile: &str) -> Result<Arc<dyn VectorIndex>> {
        self.vectors.vector_index(profile).await
    }

    /// Deletes every trace of a profile: its jobs, vectors, text index and records. True if
    /// the profile existed.
    pub async fn delete_profile(&self, profile: &str) -> Result<bool> {
        memory_core::validate_profile_name(profile)?;
        self.jobs.delete_profile_jobs(profile).await?;
        self.vectors.delete_vector_index(profile).await?;
        self.text.delete_text_index(profile).await?;
        self.outbox
            .delete_prefix(&format!("{OUTBOX_PREFIX}{profile}/"))
            .await?;
        self.outbox
            .delete(&format!("{REBUILD_PREFIX}{profile}"))
            .await?;
        self.outbox
            .delete(&format!("{}{profile}", super::settings::SETTINGS_PREFIX))
            .await?;
        self.outbox
            .delete(&format!(
                "{}{profile}",
                super::consolidation::LAST_RUN_PREFIX
            ))
            .await?;
        self.outbox
            .delete(&format!("{}{profile}", super::digest::DIGEST_PREFIX))
            .await?;
        self.outbox
            .delete(&format!(
                "{}{profile}",
                super::consolidation::CONTRADICTIONS_PREFIX
            ))
            .await?;
        self.synced
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(profile);
        let existed = self.records.delete(profile).await?;
        // A request that opened the profile meanwhile may have rebuilt its index from the
        // records just deleted (an empty index beside records): erase it again.
        self.text.delete_text_index(profile).await?;
        Ok(existed)
    }

    /// A filter for one profile's ingest jobs.
    pub(super) fn ingest_jobs(profile: &str) -> JobFilter {
        JobFilter {
            profile: Some(profile.to_owned()),
            kind: Some(INGEST_KIND.to_owned()),
            state: None,
        }
    }
}
