//! The long-term memory service: a thin facade over the operations beneath it. Ingest and
//! remember (`ingest.rs`), the stored memories (`memories.rs`), jobs (`jobs.rs`), recall
//! (`recall.rs`) and transfer (`transfer.rs`) are written against the shared [`Core`];
//! none of them imports this file.

use std::sync::Arc;

use memory_core::ports::{
    Clock, Embedder, MemoryFilter, MemoryPage, MemoryProfiles, MemoryRecord, RawMessage, Reranker,
};
use memory_core::{Result, SessionId, UiMessage};

use super::backends::LongTermBackends;
use super::config::{LongTermConfig, StageModels};
use super::core::Core;
use super::ingest::{IngestMessage, IngestReport, RememberRequest, Remembered};
use super::jobs::IngestJob;
use super::memories::{PurgeReport, ReembedReport};
use super::recall::{RecallRequest, RecallResponse};
use super::transfer::{ExportCursor, ImportReport, ProfileExportPage};

/// Long-term memory over isolated profiles.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use memory_engine::long_term::{IngestMessage, MemoryService, RecallRequest};
/// use memory_testkit::in_memory::{HashingEmbedder, InMemoryProfiles, ManualClock};
/// use memory_engine::long_term::LongTermBackends;
/// use memory_testkit::in_memory::InMemoryJobQueue;
/// use memory_testkit::in_memory::InMemoryKeyValueStore;
/// let backends = LongTermBackends::new(
///     Arc::new(InMemoryProfiles::new()),
///     Arc::new(InMemoryJobQueue::new()),
///     Arc::new(InMemoryKeyValueStore::new()),
/// );
/// let memory = MemoryService::new(backends, Arc::new(ManualClock::new(0)))
///     .with_embedder(Arc::new(HashingEmbedder::new(64)));
/// memory.ingest_messages("team", "chat-1", vec![IngestMessage::new("user", "Deploys happen on Fridays")]).await?;
/// let recalled = memory.recall("team", RecallRequest::new("when do deploys happen?", 5)).await?;
/// assert!(recalled.hits[0].item.content().contains("Fridays"));
/// # Ok::<(), memory_core::MemoryError>(()) }).unwrap();
/// ```
#[derive(Clone)]
pub struct MemoryService {
    core: Core,
}

impl MemoryService {
    /// A service over `backends` with no LLM and no embedder (everything LLM-free works).
    pub fn new(backends: LongTermBackends, clock: Arc<dyn Clock>) -> Self {
        Self {
            core: Core::new(backends, clock),
        }
    }

    /// Adds an embedder: vectors are written on ingest and the vector channels run.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.core.embedder = Some(embedder);
        self
    }

    /// Adds a reranker: recall reorders its best [`LongTermConfig::rerank_depth`] items by
    /// the reranker's scores before it keeps its limit (the `rerank` stage, accounted apart
    /// in the usage report; a failing reranker leaves the fused order and says so in
    /// `degraded`).
    pub fn with_reranker(mut self, reranker: Arc<dyn Reranker>) -> Self {
        self.core.reranker = Some(reranker);
        self
    }

    /// The model id of the embedder, if any.
    pub fn embedder_model(&self) -> Option<&str> {
        self.core.embedder.as_deref().map(Embedder::model_id)
    }

    /// The model id of the reranker, if any.
    pub fn reranker_model(&self) -> Option<&str> {
        self.core.reranker.as_deref().map(Reranker::model_id)
    }

    /// Sets the model of each LLM stage.
    pub fn with_models(mut self, models: StageModels) -> Self {
        self.core.models = models;
        self
    }

    /// Sets the tunables.
    pub fn with_config(mut self, config: LongTermConfig) -> Self {
        self.core.config = config;
        self
    }

    /// The tunables.
    pub fn config(&self) -> &LongTermConfig {
        &self.core.config
    }

    /// The profiles' records behind the service.
    pub fn profiles(&self) -> &Arc<dyn MemoryProfiles> {
        &self.core.profiles
    }

    /// Every backend behind the service.
    pub fn backends(&self) -> &LongTermBackends {
        &self.core.backends
    }

    /// The shared state beneath the facade (the module's tests reach internals through it).
    #[cfg(test)]
    pub(super) fn core(&self) -> &Core {
        &self.core
    }

    /// Content-addresses messages (the session is part of the address). Messages without
    /// text are skipped; an unknown role is an error and nothing is stored.
    pub fn raw_messages(
        &self,
        session: &str,
        messages: Vec<IngestMessage>,
    ) -> Result<Vec<RawMessage>> {
        self.core.raw_messages(session, messages)
    }

    /// Stores a conversation's messages, LLM-free: content-addressed (insert-or-ignore), full-text
    /// indexed, and embedded when an embedder is configured. Extraction of typed memories is
    /// [`MemoryService::ingest_and_extract`]; background jobs run it in stages.
    pub async fn ingest(
        &self,
        profile: &str,
        session: &SessionId,
        messages: &[UiMessage],
    ) -> Result<IngestReport> {
        self.core.ingest(profile, session, messages).await
    }

    /// [`MemoryService::ingest`] for plain messages with their own timestamps.
    pub async fn ingest_messages(
        &self,
        profile: &str,
        session: &str,
        messages: Vec<IngestMessage>,
    ) -> Result<IngestReport> {
        self.core.ingest_messages(profile, session, messages).await
    }

    /// Stores a memory; a fact or instruction with the key of a current one supersedes it (the
    /// old version keeps a forward pointer and loses its vector).
    pub async fn remember(&self, profile: &str, request: RememberRequest) -> Result<MemoryRecord> {
        self.core.remember(profile, request).await
    }

    /// [`MemoryService::remember`], classified like an extracted memory when a classification
    /// model is configured (an explicit kind or key wins), with usage and what was degraded.
    pub async fn remember_with_report(
        &self,
        profile: &str,
        request: RememberRequest,
    ) -> Result<Remembered> {
        self.core.remember_with_report(profile, request).await
    }

    /// Profile names, sorted.
    pub async fn list_profiles(&self) -> Result<Vec<String>> {
        self.core.list_profiles().await
    }

    /// One page of profile names, sorted: at most `limit` (at least 1) after `after`
    /// (exclusive), and the name to pass as `after` for the next page (`None` on the last).
    /// What a listing of 100,000 profiles reads page by page.
    pub async fn list_profiles_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<String>, Option<String>)> {
        self.core.list_profiles_page(after, limit).await
    }

    /// Rebuilds the profile's text index from its records (when the engine writes it; an
    /// index its store writes has nothing to rebuild, and the report says so).
    pub async fn reindex_text(&self, profile: &str) -> Result<crate::ReindexReport> {
        self.core.reindex_text(profile).await
    }

    /// Deletes every trace of a profile (jobs, vectors, text index, records); true if it
    /// existed.
    pub async fn delete_profile(&self, profile: &str) -> Result<bool> {
        self.core.delete_profile(profile).await
    }

    /// A filtered page of memories: at most `limit`, and never more than [`MAX_LIST_PAGE`]
    /// (follow the cursor for more).
    pub async fn list(
        &self,
        profile: &str,
        filter: &MemoryFilter,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<MemoryPage> {
        self.core.list(profile, filter, cursor, limit).await
    }

    /// Hides a memory from recall and list (and removes its vector); it stays for audit.
    /// What consolidation merged into it is forgotten with it, for the same reason.
    pub async fn forget(&self, profile: &str, id: &str, reason: &str) -> Result<()> {
        self.core.forget(profile, id, reason).await
    }

    /// Erases a memory and its vector and, when `with_sources`, the raw messages it was
    /// extracted from (and their vectors): the right to erasure. What consolidation merged
    /// into it is erased with it (its sources are the memory's own after the merge).
    pub async fn purge(&self, profile: &str, id: &str, with_sources: bool) -> Result<PurgeReport> {
        self.core.purge(profile, id, with_sources).await
    }

    /// Rebuilds every vector of the profile with the current embedder (after a model change).
    pub async fn reembed(&self, profile: &str) -> Result<ReembedReport> {
        self.core.reembed(profile).await
    }

    /// Stores the messages (content-addressed, insert-or-ignore, full-text indexed) and queues
    /// a durable job for extraction and vectorization. When this returns, nothing is lost:
    /// [`MemoryService::run_job`] (or [`MemoryService::resume_jobs`], from any worker process
    /// sharing the queue) does the rest.
    pub async fn enqueue_ingest(
        &self,
        profile: &str,
        session: &str,
        messages: Vec<IngestMessage>,
    ) -> Result<IngestJob> {
        self.core.enqueue_ingest(profile, session, messages).await
    }

    /// [`MemoryService::enqueue_ingest`] under a job id of the caller's (a content address
    /// of the work): when a job with that id exists already, nothing is queued again and
    /// that job is returned with `false`. Two servers doing the same work queue it once.
    pub async fn enqueue_ingest_as(
        &self,
        profile: &str,
        session: &str,
        messages: Vec<IngestMessage>,
        id: String,
    ) -> Result<(IngestJob, bool)> {
        self.core
            .enqueue_ingest_as(profile, session, messages, id)
            .await
    }

    /// Ingests inline: queue, then run every stage before returning.
    pub async fn ingest_and_extract(
        &self,
        profile: &str,
        session: &str,
        messages: Vec<IngestMessage>,
    ) -> Result<IngestJob> {
        self.core
            .ingest_and_extract(profile, session, messages)
            .await
    }

    /// One job's current state.
    pub async fn job(&self, profile: &str, id: &str) -> Result<IngestJob> {
        self.core.job(profile, id).await
    }

    /// Every job of the profile, oldest first.
    pub async fn jobs(&self, profile: &str) -> Result<Vec<IngestJob>> {
        self.core.jobs(profile).await
    }

    /// Runs every claimable job of the profile (queued ones, and running ones whose worker's
    /// lease ran out: it died), oldest first; with `retry_failed` failed jobs too. Jobs other
    /// workers hold under a live lease are left to them. Returns the jobs as they ended.
    pub async fn resume_jobs(&self, profile: &str, retry_failed: bool) -> Result<Vec<IngestJob>> {
        self.core.resume_jobs(profile, retry_failed).await
    }

    /// Runs every claimable ingest job of any profile (queued ones, and running ones whose
    /// worker's lease ran out), oldest first, each with its profile: what a server or worker
    /// polls, at one queue claim per job whatever the number of profiles.
    pub async fn resume_queued_jobs(&self) -> Result<Vec<(String, IngestJob)>> {
        self.core.resume_queued_jobs().await
    }

    /// Stops running jobs, for a graceful shutdown: no job is claimed any more, and a job in
    /// hand is given back to the queue (not failed, no attempt counted) at its next stage
    /// boundary, so another worker resumes it from that checkpoint. Clones of this service
    /// share the signal.
    pub fn stop_jobs(&self) {
        self.core.stop_jobs()
    }

    /// True once [`MemoryService::stop_jobs`] was called.
    pub fn is_stopping(&self) -> bool {
        self.core.is_stopping()
    }

    /// Runs a job from its checkpoint to the end (a failed job is retried from the stage that
    /// failed). A stage error marks the job failed (and is returned inside the job, not as
    /// `Err`), unless a backend was unavailable: that stage is retried from its checkpoint
    /// (`stage_retry_waits`), then the job goes back to the queue and the error is `Err`
    /// (after `transient_job_runs` such runs it is failed). Storage
    /// errors are `Err`, and so is a job another worker is running
    /// ([`MemoryError::Conflict`]).
    pub async fn run_job(&self, profile: &str, id: &str) -> Result<IngestJob> {
        self.core.run_job(profile, id).await
    }

    /// The profile's own extraction settings (empty when it has none; the deployment's
    /// apply beneath them).
    pub async fn profile_settings(&self, profile: &str) -> Result<super::ProfileSettings> {
        self.core.profile_settings(profile).await
    }

    /// Replaces the profile's own extraction settings, checked first
    /// ([`super::ProfileSettings::validated`]); empty settings remove them. Returns them as
    /// stored.
    pub async fn set_profile_settings(
        &self,
        profile: &str,
        settings: super::ProfileSettings,
    ) -> Result<super::ProfileSettings> {
        self.core.set_profile_settings(profile, settings).await
    }

    /// What steers the profile's extraction: the deployment's settings under its own.
    pub async fn effective_settings(&self, profile: &str) -> Result<super::ProfileSettings> {
        self.core.effective_settings(profile).await
    }

    /// Forgets the profile's memories whose `expires_at` has passed (reason
    /// [`super::EXPIRED_REASON`], at their expiry time), as a job on the queue that one of
    /// several workers runs per profile and minute; `None` when nothing was due or another
    /// worker has this minute's sweep. Workers call it between jobs; recall and list never
    /// wait for it (they leave out what expired by their own clock).
    pub async fn sweep_expired(&self, profile: &str) -> Result<Option<super::ExpirySweep>> {
        self.core.sweep_expired(profile).await
    }

    /// The service's clock now (what list, recall and the profile block judge time by).
    pub fn now(&self) -> memory_core::Timestamp {
        self.core.clock.now()
    }

    /// Merges the profile's memories that say the same thing (see
    /// [`super::ConsolidationReport`]): planned LLM-free, confirmed by the verification model
    /// when one is configured, and written as a job unless `dry_run` (then only planned).
    pub async fn consolidate(
        &self,
        profile: &str,
        dry_run: bool,
    ) -> Result<super::ConsolidationReport> {
        self.core.consolidate(profile, dry_run).await
    }

    /// Consolidates the profile when it has recorded `consolidate_after` memories since its
    /// last run ([`super::LongTermConfig::consolidate_after`]); `None` when not due. Workers
    /// call it after ingest jobs and on their schedule.
    pub async fn consolidate_if_due(
        &self,
        profile: &str,
    ) -> Result<Option<super::ConsolidationReport>> {
        self.core.consolidate_if_due(profile).await
    }

    /// The profile's flagged contradictions (pairs of current memories the verification
    /// model said cannot both be true), newest first, with their text as it reads now.
    pub async fn contradictions(&self, profile: &str) -> Result<Vec<super::Contradiction>> {
        self.core.contradictions(profile).await
    }

    /// The profile's digest (a short summary an LLM wrote from its memories, with the
    /// memories it draws on), if one is kept.
    pub async fn digest(&self, profile: &str) -> Result<Option<super::ProfileDigest>> {
        self.core.digest(profile).await
    }

    /// Writes the profile's digest again when enough has changed since it was written (or
    /// always, with `force`), as a job; needs the synthesis model.
    pub async fn refresh_digest(&self, profile: &str, force: bool) -> Result<super::DigestReport> {
        self.core.refresh_digest(profile, force).await
    }

    /// The memories consolidation merged into `id`, oldest first (`NotFound` for a memory
    /// the profile does not hold).
    pub async fn merged_into(&self, profile: &str, id: &str) -> Result<Vec<MemoryRecord>> {
        let store = self.core.backends.existing_store(profile).await?;
        if store.get_memory(id).await?.is_none() {
            return Err(memory_core::MemoryError::not_found("memory", id));
        }
        store.merged_into(id).await
    }

    /// Recalls what the profile knows about `request.query`.
    ///
    /// Without an LLM, the query's own words (function words removed) drive full text and the
    /// key lookup, and the HyDE channel and synthesis are reported as degraded. Without an
    /// embedder, the vector channels are reported as degraded.
    pub async fn recall(&self, profile: &str, request: RecallRequest) -> Result<RecallResponse> {
        self.core.recall(profile, request).await
    }

    /// What `request`'s channels find in the profile, collected once so that
    /// [`rank`](super::rank) can rank it under any setting exactly as a recall with that
    /// setting and `request.limit` would (`memory eval fit` searches settings this way). The
    /// neighbours are collected with the service's context radius.
    pub async fn recall_candidates(
        &self,
        profile: &str,
        request: &RecallRequest,
    ) -> Result<super::Candidates> {
        self.core.recall_candidates(profile, request).await
    }

    /// Writes the profile as JSON lines to `sink`, header first; with `vectors`, each raw
    /// message and memory that has a vector is followed by it.
    pub async fn export(
        &self,
        profile: &str,
        vectors: bool,
        sink: &mut (dyn FnMut(&str) -> Result<()> + Send),
    ) -> Result<()> {
        self.core.export(profile, vectors, sink).await
    }

    /// One page of the profile's export (the lines [`MemoryService::export`] writes): the
    /// header first (when `cursor` is `None`), then raw messages, then memories (superseded
    /// and forgotten ones too), a page of each at a time; with `vectors`, each followed by
    /// its vector. A caller that streams pages can pause between them.
    pub async fn export_page(
        &self,
        profile: &str,
        vectors: bool,
        cursor: Option<ExportCursor>,
    ) -> Result<ProfileExportPage> {
        self.core.export_page(profile, vectors, cursor).await
    }

    /// Reads an export into a profile, by the rules of live writes: of the current versions of
    /// a key (the profile's and the export's) the newest stays current, and superseded ones
    /// keep no vector. Everything a write could refuse is checked before the first write
    /// (every line parses, one header, known vector namespaces, one model and dimension per
    /// namespace agreeing with the profile's), so bad input changes nothing. Known raw
    /// messages and memory ids are skipped: importing twice is a no-op, and an import cut
    /// short by a storage failure is completed by running it again.
    pub async fn import(&self, profile: &str, lines: &[String]) -> Result<ImportReport> {
        self.core.import(profile, lines).await
    }
}
