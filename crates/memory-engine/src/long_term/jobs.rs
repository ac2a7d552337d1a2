//! Durable ingest jobs: the raw messages are stored (and searchable) the moment the job is
//! queued; extraction, verification, storing and vectorization then run as stages, each
//! checkpointed in the [`JobQueue`](memory_core::ports::JobQueue), so a crash or restart
//! resumes where it stopped and nothing acknowledged is lost. A worker runs a job under a
//! lease it renews while a stage runs; a worker that dies loses the lease, and another
//! resumes the job from its last checkpoint.

use memory_core::ports::{
    JobFilter, JobLease, JobRecord, JobState, LongTermMemoryStore, MemoryRecord, NewJob, RawMessage,
};
use memory_core::{MemoryError, Result};
use serde::{Deserialize, Serialize};

use super::accounting::UsageReport;
use super::backends::{INGEST_KIND, LongTermBackends};
use super::content_id::content_id;
use super::core::Core;
use super::degradation::Degradation;
use super::extraction::{
    Candidate, Draft, ExtractionReport, build_transcript, build_transcript_in, chunk_lines,
    classify, detail_windows, extract, merge_candidates, parse_iso_date, verify,
};
use super::ingest::IngestMessage;

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Raw messages stored; nothing else yet.
    Queued,
    /// Running the extraction passes.
    Extracting,
    /// Verifying and classifying candidates.
    Verifying,
    /// Writing memories (with supersession).
    Storing,
    /// Embedding raw messages and memories.
    Vectorizing,
    /// Finished.
    Done,
    /// Finished, but some LLM calls failed: the memories they would have given are missing
    /// (`error` says which, `extraction.problems` has each one).
    DoneWithErrors,
    /// Stopped by an error; `resume` retries from `failed_stage`. The raw messages are stored,
    /// searchable and (when an LLM stage failed) vectorized all the same.
    Failed,
}

impl JobStatus {
    /// The name stored in the job table.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Extracting => "extracting",
            Self::Verifying => "verifying",
            Self::Storing => "storing",
            Self::Vectorizing => "vectorizing",
            Self::Done => "done",
            Self::DoneWithErrors => "done_with_errors",
            Self::Failed => "failed",
        }
    }

    /// True once nothing more will happen without a retry.
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Done | Self::DoneWithErrors | Self::Failed)
    }

    /// True when the job failed or finished with errors.
    pub fn has_errors(self) -> bool {
        matches!(self, Self::DoneWithErrors | Self::Failed)
    }

    /// The feature a failure of this stage takes away (`degraded` on jobs and recall).
    fn feature(self) -> &'static str {
        match self {
            Self::Queued | Self::Extracting => "extraction",
            Self::Verifying => "verification",
            Self::Storing => "memories",
            Self::Vectorizing => "vectors",
            Self::Done | Self::DoneWithErrors | Self::Failed => "ingest",
        }
    }
}

/// An ingest job and everything it has done so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IngestJob {
    /// Identifier.
    pub id: String,
    /// Conversation.
    pub session_id: String,
    /// Current stage.
    pub status: JobStatus,
    /// The stage that failed, when `status` is `failed`.
    pub failed_stage: Option<JobStatus>,
    /// Why it failed.
    pub error: Option<String>,
    /// Messages newly stored when the job was queued.
    pub new_messages: u64,
    /// Messages that were already known.
    pub known_messages: u64,
    /// The conversation (dropped once the job is done).
    pub messages: Vec<RawMessage>,
    /// Ids of the newly stored messages (to vectorize).
    pub new_message_ids: Vec<String>,
    /// Checkpoint after extraction (dropped once done).
    pub candidates: Vec<Candidate>,
    /// Checkpoint after verification and classification (dropped once done).
    pub drafts: Vec<Draft>,
    /// Memories stored by this job.
    pub memory_ids: Vec<String>,
    /// Extraction counts.
    pub extraction: ExtractionReport,
    /// Vectors written.
    pub vectorized: u64,
    /// The raw messages' vectors are written (they are, even when an LLM stage failed).
    #[serde(default)]
    pub raw_vectorized: bool,
    /// Stages that did not run, and why.
    pub degraded: Vec<Degradation>,
    /// LLM and embedder usage over every run of the job.
    pub usage: UsageReport,
    /// Cancelled because data it held was purged; never resumed.
    #[serde(default)]
    pub cancelled: bool,
    /// Failed runs so far (from the queue's record; a failed job retried shows each
    /// failure).
    #[serde(default)]
    pub attempts: u32,
}

/// Jobs read per page when listing a profile's jobs.
const JOB_PAGE: usize = 500;

/// How a stage failure starts its `degraded` reason (and how a retry finds it to clear it).
const FAILED: &str = "failed:";

/// Failed jobs a recall looks at to say what is missing.
const FAILED_SAMPLE: usize = 100;

fn from_record(record: &JobRecord) -> Result<IngestJob> {
    let mut job: IngestJob = serde_json::from_value(record.body.clone())
        .map_err(|e| MemoryError::serialization(format!("job {}: {e}", record.id)))?;
    job.attempts = record.attempts;
    Ok(job)
}

impl Core {
    /// Stores the messages (content-addressed, insert-or-ignore, full-text indexed) and queues
    /// a durable job for extraction and vectorization. When this returns, nothing is lost:
    /// [`MemoryService::run_job`] (or [`MemoryService::resume_jobs`], from any worker process
    /// sharing the queue) does the rest.
    pub(super) async fn enqueue_ingest(
        &self,
        profile: &str,
        session: &str,
        messages: Vec<IngestMessage>,
    ) -> Result<IngestJob> {
        let id = uuid::Uuid::now_v7().to_string();
        self.enqueue_ingest_as(profile, session, messages, id)
            .await
            .map(|(job, _)| job)
    }

    /// [`MemoryService::enqueue_ingest`] under a job id of the caller's (a content address
    /// of the work): when a job with that id exists already, nothing is queued again and
    /// that job is returned with `false`. Two servers doing the same work queue it once.
    pub(super) async fn enqueue_ingest_as(
        &self,
        profile: &str,
        session: &str,
        messages: Vec<IngestMessage>,
        id: String,
    ) -> Result<(IngestJob, bool)> {
        match self.job(profile, &id).await {
            Ok(existing) => return Ok((existing, false)),
            Err(MemoryError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
        if messages.iter().all(|m| m.content.trim().is_empty()) {
            return Err(MemoryError::invalid(
                "nothing to ingest: every message is empty",
            ));
        }
        // Checked before the profile is opened (and so created): a refused ingest leaves
        // nothing behind.
        for m in &messages {
            memory_core::size::check_item_size("an ingested message", m.content.len())?;
        }
        let store = self.backends.store(profile).await?;
        let (raw, known, counts) = self.store_raw(store.as_ref(), session, messages).await?;
        let ids: Vec<String> = raw.iter().map(|m| m.id.clone()).collect();
        let job = IngestJob {
            id,
            session_id: session.to_owned(),
            status: JobStatus::Queued,
            failed_stage: None,
            error: None,
            new_messages: counts.inserted,
            known_messages: counts.existing,
            new_message_ids: ids.into_iter().filter(|id| !known.contains(id)).collect(),
            messages: raw,
            candidates: Vec::new(),
            drafts: Vec::new(),
            memory_ids: Vec::new(),
            extraction: ExtractionReport::default(),
            vectorized: 0,
            raw_vectorized: false,
            degraded: Vec::new(),
            usage: UsageReport::default(),
            cancelled: false,
            attempts: 0,
        };
        let new = NewJob {
            id: job.id.clone(),
            kind: INGEST_KIND.to_owned(),
            profile: profile.to_owned(),
            stage: job.status.as_str().to_owned(),
            body: serde_json::to_value(&job)?,
        };
        match self.backends.jobs.enqueue(new, self.clock.now()).await {
            Ok(_) => Ok((job, true)),
            // Another process queued the same work first.
            Err(MemoryError::AlreadyExists { .. }) => {
                Ok((self.job(profile, &job.id).await?, false))
            }
            Err(e) => Err(e),
        }
    }

    /// Ingests inline: queue, then run every stage before returning.
    pub(super) async fn ingest_and_extract(
        &self,
        profile: &str,
        session: &str,
        messages: Vec<IngestMessage>,
    ) -> Result<IngestJob> {
        let job = self.enqueue_ingest(profile, session, messages).await?;
        self.run_job(profile, &job.id).await
    }

    /// The queue's record of one of the profile's ingest jobs.
    async fn job_record(&self, profile: &str, id: &str) -> Result<JobRecord> {
        memory_core::validate_profile_name(profile)?;
        match self.backends.jobs.get(id).await? {
            Some(record) if record.profile == profile && record.kind == INGEST_KIND => Ok(record),
            _ => Err(MemoryError::not_found("job", id)),
        }
    }

    /// One job's current state.
    pub(super) async fn job(&self, profile: &str, id: &str) -> Result<IngestJob> {
        from_record(&self.job_record(profile, id).await?)
    }

    /// Every job of the profile, oldest first.
    pub(super) async fn jobs(&self, profile: &str) -> Result<Vec<IngestJob>> {
        let mut out = Vec::new();
        for record in self.job_records(profile).await? {
            out.push(from_record(&record)?);
        }
        Ok(out)
    }

    async fn job_records(&self, profile: &str) -> Result<Vec<JobRecord>> {
        memory_core::validate_profile_name(profile)?;
        let filter = LongTermBackends::ingest_jobs(profile);
        let mut records = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.backends.jobs.list(&filter, cursor, JOB_PAGE).await?;
            records.extend(page.jobs);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(records),
            }
        }
    }

    /// Runs every claimable job of the profile (queued ones, and running ones whose worker's
    /// lease ran out: it died), oldest first; with `retry_failed` failed jobs too. Jobs other
    /// workers hold under a live lease are left to them. Returns the jobs as they ended; an
    /// error is returned only when no job ran to an end first.
    pub(super) async fn resume_jobs(
        &self,
        profile: &str,
        retry_failed: bool,
    ) -> Result<Vec<IngestJob>> {
        if self.is_stopping() {
            return Ok(Vec::new());
        }
        if retry_failed {
            for record in self.job_records(profile).await? {
                if record.state == JobState::Failed {
                    self.backends
                        .jobs
                        .retry(&record.id, self.clock.now())
                        .await?;
                }
            }
        }
        self.claim_and_run(&LongTermBackends::ingest_jobs(profile))
            .await
            .map(|ran| ran.into_iter().map(|(_, job)| job).collect())
    }

    /// Runs every claimable ingest job of any profile, oldest first, with the profile each
    /// belongs to: one claim on the queue per job, whatever the number of profiles (never a
    /// look at each profile). An error is returned only when no job ran to an end first.
    pub(super) async fn resume_queued_jobs(&self) -> Result<Vec<(String, IngestJob)>> {
        let filter = JobFilter {
            profile: None,
            kind: Some(INGEST_KIND.to_owned()),
            state: None,
        };
        self.claim_and_run(&filter).await
    }

    /// Claims the jobs `filter` matches one at a time and runs each to its end.
    async fn claim_and_run(&self, filter: &JobFilter) -> Result<Vec<(String, IngestJob)>> {
        let mut out = Vec::new();
        while !self.is_stopping() {
            let claimed = self
                .backends
                .jobs
                .claim(
                    filter,
                    &self.worker,
                    self.config.job_lease_millis,
                    self.clock.now(),
                )
                .await;
            let ran = match claimed {
                Ok(Some((record, lease))) => {
                    let profile = record.profile.clone();
                    self.run_claimed(&profile, record, lease)
                        .await
                        .map(|job| (profile, job))
                }
                Ok(None) => break,
                Err(e) => Err(e),
            };
            match ran {
                Ok(done) => out.push(done),
                // The jobs that ran to an end are reported even when a later one could not
                // be claimed or run (it is left to the next round).
                Err(e) if !out.is_empty() => {
                    tracing::warn!(error = %e, "running a job failed; it is left to the next round");
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Stops running jobs, for a graceful shutdown: no job is claimed any more, and a job in
    /// hand is given back to the queue (not failed, no attempt counted) at its next stage
    /// boundary, so another worker resumes it from that checkpoint. Clones of this service
    /// share the signal.
    pub(super) fn stop_jobs(&self) {
        self.stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// True once [`MemoryService::stop_jobs`] was called.
    pub(super) fn is_stopping(&self) -> bool {
        self.stopping.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Runs a job from its checkpoint to the end (a failed job is retried from the stage that
    /// failed). A stage error marks the job failed (and is returned inside the job, not as
    /// `Err`), unless a backend was unavailable: that stage is retried from its checkpoint
    /// (`stage_retry_waits`), then the job goes back to the queue and the error is `Err`
    /// (after `transient_job_runs` such runs it is failed). Storage
    /// errors are `Err`, and so is a job another worker is running
    /// ([`MemoryError::Conflict`]).
    pub(super) async fn run_job(&self, profile: &str, id: &str) -> Result<IngestJob> {
        let record = self.job_record(profile, id).await?;
        match record.state {
            JobState::Done | JobState::Cancelled => return from_record(&record),
            JobState::Failed => {
                self.backends.jobs.retry(id, self.clock.now()).await?;
            }
            JobState::Queued | JobState::Running => {}
        }
        let claimed = self
            .backends
            .jobs
            .claim_id(
                id,
                &self.worker,
                self.config.job_lease_millis,
                self.clock.now(),
            )
            .await?;
        let Some((record, lease)) = claimed else {
            let now = self.job_record(profile, id).await?;
            if now.state.is_finished() {
                return from_record(&now);
            }
            return Err(MemoryError::Conflict {
                message: format!(
                    "job {id} is being run by worker {:?} (lease until {:?})",
                    now.worker.unwrap_or_default(),
                    now.lease_expires_at
                ),
            });
        };
        self.run_claimed(profile, record, lease).await
    }

    /// Runs a claimed job, checkpointing after every stage and renewing the lease while a stage
    /// runs; a lost lease stops the run (`Conflict`) without another write.
    async fn run_claimed(
        &self,
        profile: &str,
        record: JobRecord,
        lease: JobLease,
    ) -> Result<IngestJob> {
        let store = self.backends.store(profile).await?;
        let mut job = from_record(&record)?;
        if job.status == JobStatus::Failed {
            let stage = job.failed_stage.unwrap_or(JobStatus::Queued);
            job.degraded
                .retain(|d| !(d.feature == stage.feature() && d.reason.starts_with(FAILED)));
            job.status = stage;
            job.failed_stage = None;
            job.error = None;
        }
        let queue = &self.backends.jobs;
        let lease = std::sync::Mutex::new(lease);
        let current = || {
            lease
                .lock()
                .map(|l| l.clone())
                .map_err(|_| MemoryError::Conflict {
                    message: "job lease lock poisoned".into(),
                })
        };
        let meter = self.meter(profile);
        loop {
            let stage = job.status;
            let checkpoint = job.clone();
            let mut outcome = self
                .with_heartbeat(
                    &lease,
                    self.run_stage(profile, store.as_ref(), &meter, &mut job),
                )
                .await?;
            // A backend that is unavailable for a moment (a restart, a failover) costs
            // retries of the stage from its checkpoint, not a failed job.
            for wait in self.config.stage_retry_waits.iter().copied() {
                match &outcome {
                    Err(e) if e.is_transient() && !self.is_stopping() => {
                        tracing::warn!(job = %job.id, stage = stage.as_str(), error = %e, retry_in = ?wait, "a backend is unavailable; retrying the stage");
                    }
                    _ => break,
                }
                self.with_heartbeat(&lease, futures_timer::Delay::new(wait))
                    .await?;
                job = checkpoint.clone();
                outcome = self
                    .with_heartbeat(
                        &lease,
                        self.run_stage(profile, store.as_ref(), &meter, &mut job),
                    )
                    .await?;
            }
            let outcome = match outcome {
                // Still unavailable: unless this job's runs ended that way too often, it
                // goes back to the queue at its last checkpoint (an attempt counted) for the
                // next claim; if even that cannot be written, its lease runs out and it is
                // claimed again all the same.
                Err(e)
                    if e.is_transient()
                        && job.attempts.saturating_add(1) < self.config.transient_job_runs =>
                {
                    job = checkpoint;
                    let body = serde_json::to_value(&job)?;
                    if let Err(r) = queue
                        .fail(&current()?, stage.as_str(), body, true, self.clock.now())
                        .await
                    {
                        tracing::warn!(job = %job.id, error = %r, "requeueing the job failed; it is claimed again when its lease runs out");
                    }
                    return Err(e);
                }
                other => other,
            };
            if stage.is_finished() {
                break;
            }
            job.usage.merge(&meter.report_and_reset());
            let now = self.clock.now();
            match outcome {
                Ok(next) => {
                    job.status = next;
                    if next == JobStatus::Done {
                        if let Some(errors) = job.extraction.errors() {
                            job.status = JobStatus::DoneWithErrors;
                            job.error = Some(errors);
                        }
                        // The checkpoints held conversation text; a finished job keeps counts only.
                        job.messages.clear();
                        job.candidates.clear();
                        job.drafts.clear();
                        let body = serde_json::to_value(&job)?;
                        queue
                            .complete(&current()?, job.status.as_str(), body, now)
                            .await?;
                        // Enough new memories: the profile is consolidated by this worker
                        // now. Its failure is logged; the ingest is done all the same.
                        if job.extraction.stored > 0
                            && let Err(e) = self.consolidate_if_due(profile).await
                        {
                            tracing::warn!(profile, job = %job.id, error = %e, "consolidation after an ingest failed; the schedule tries again");
                        }
                        break;
                    }
                    let body = serde_json::to_value(&job)?;
                    queue
                        .checkpoint(&current()?, next.as_str(), body, now)
                        .await?;
                    if self.is_stopping() {
                        // Shutting down: the job goes back to the queue at the checkpoint
                        // just written, and the next worker resumes it from there.
                        queue.release(&current()?, self.clock.now()).await?;
                        tracing::info!(job = %job.id, stage = next.as_str(), "job released on shutdown");
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(job = %job.id, stage = stage.as_str(), error = %e, "ingest job failed");
                    if matches!(stage, JobStatus::Extracting | JobStatus::Verifying) {
                        // The raw messages are a retrieval channel of their own: they get their
                        // vectors even though no memories came from this run.
                        let raw =
                            self.vectorize_raw_stage(profile, store.as_ref(), &meter, &mut job);
                        if let Err(v) = self.with_heartbeat(&lease, raw).await? {
                            job.degraded.push(Degradation {
                                feature: "vectors".into(),
                                reason: format!(
                                    "{FAILED} the raw messages were not vectorized: {v}"
                                ),
                            });
                        }
                        job.usage.merge(&meter.report_and_reset());
                    }
                    job.degraded.push(Degradation {
                        feature: stage.feature().into(),
                        reason: format!("{FAILED} {e}"),
                    });
                    job.failed_stage = Some(stage);
                    job.error = Some(e.to_string());
                    job.status = JobStatus::Failed;
                    let body = serde_json::to_value(&job)?;
                    queue
                        .fail(&current()?, stage.as_str(), body, false, now)
                        .await?;
                    break;
                }
            }
        }
        Ok(job)
    }

    /// Runs the stage `job` is at; returns the stage it reaches.
    async fn run_stage(
        &self,
        profile: &str,
        store: &dyn LongTermMemoryStore,
        meter: &super::accounting::Meter,
        job: &mut IngestJob,
    ) -> Result<JobStatus> {
        let stage = job.status;
        match stage {
            JobStatus::Queued => Ok(JobStatus::Extracting),
            JobStatus::Extracting => self
                .extract_stage(profile, meter, job)
                .await
                .map(|()| JobStatus::Verifying),
            JobStatus::Verifying => self
                .verify_stage(profile, meter, job)
                .await
                .map(|()| JobStatus::Storing),
            JobStatus::Storing => self
                .store_stage(profile, meter, job)
                .await
                .map(|()| JobStatus::Vectorizing),
            JobStatus::Vectorizing => self
                .vectorize_stage(profile, store, meter, job)
                .await
                .map(|()| JobStatus::Done),
            JobStatus::Done | JobStatus::DoneWithErrors | JobStatus::Failed => Ok(stage),
        }
    }

    /// Runs `work` while renewing the lease every third of its length. A renewal refused
    /// (the lease was lost) drops `work` and returns the `Conflict`.
    async fn with_heartbeat<T>(
        &self,
        lease: &std::sync::Mutex<JobLease>,
        work: impl std::future::Future<Output = T>,
    ) -> Result<T> {
        let beat = self.renew_lease(lease);
        let work = std::pin::pin!(work);
        let beat: std::pin::Pin<&mut _> = std::pin::pin!(beat);
        match futures::future::select(work, beat).await {
            futures::future::Either::Left((value, _)) => Ok(value),
            futures::future::Either::Right((Err(lost), _)) => Err(lost),
            futures::future::Either::Right((Ok(never), _)) => match never {},
        }
    }

    /// Renews the lease every third of its length until a renewal is refused.
    async fn renew_lease(
        &self,
        lease: &std::sync::Mutex<JobLease>,
    ) -> Result<std::convert::Infallible> {
        let every = std::time::Duration::from_millis((self.config.job_lease_millis / 3).max(1));
        loop {
            futures_timer::Delay::new(every).await;
            let held = lease
                .lock()
                .map(|l| l.clone())
                .map_err(|_| MemoryError::Conflict {
                    message: "job lease lock poisoned".into(),
                })?;
            let renewed = match self
                .backends
                .jobs
                .heartbeat(&held, self.config.job_lease_millis, self.clock.now())
                .await
            {
                Ok(renewed) => renewed,
                // The queue was briefly unreachable: the lease still runs; try again next beat.
                Err(e) if e.is_transient() => {
                    tracing::warn!(error = %e, job = %held.job_id, "heartbeat failed; retrying");
                    continue;
                }
                Err(e) => return Err(e),
            };
            if let Ok(mut slot) = lease.lock() {
                *slot = renewed;
            }
        }
    }

    /// What failed ingest jobs took away, one entry per failed stage, for recall's `degraded`
    /// (their raw messages are still recalled: stored, searchable and vectorized).
    pub(super) async fn failed_job_degradations(&self, profile: &str) -> Result<Vec<Degradation>> {
        let mut filter = LongTermBackends::ingest_jobs(profile);
        filter.state = Some(JobState::Failed);
        let page = self
            .backends
            .jobs
            .list(&filter, None, FAILED_SAMPLE)
            .await?;
        let more = if page.next_cursor.is_some() {
            "or more "
        } else {
            ""
        };
        let mut by_stage: std::collections::BTreeMap<&'static str, (usize, String)> =
            std::collections::BTreeMap::new();
        // Only two fields of each body are read: a failed job keeps its conversation for the
        // retry, and recall has no use for it.
        for record in &page.jobs {
            let stage: JobStatus = record
                .body
                .get("failed_stage")
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or(JobStatus::Queued);
            let entry = by_stage.entry(stage.feature()).or_default();
            entry.0 += 1;
            entry.1 = record
                .body
                .get("error")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned();
        }
        Ok(by_stage
            .into_iter()
            .map(|(feature, (count, latest))| Degradation {
                feature: feature.into(),
                reason: format!(
                    "{count} {more}ingest job(s) failed at {feature} (latest: {latest}); their \
                     raw messages are recalled, the memories they would give are missing; \
                     `memory profile jobs PROFILE --run --retry-failed` retries them"
                ),
            })
            .collect())
    }

    /// Cancels unfinished jobs whose checkpoints hold erased data (a resume would otherwise
    /// bring it back) and drops that data from them. Returns how many were cancelled.
    pub(super) async fn scrub_jobs(
        &self,
        profile: &str,
        raw_ids: &[String],
        memory: &MemoryRecord,
    ) -> Result<u64> {
        let mut cancelled = 0;
        for record in self.job_records(profile).await? {
            if record.state == JobState::Done || record.state == JobState::Cancelled {
                continue;
            }
            let mut job = from_record(&record)?;
            let holds = job.messages.iter().any(|m| raw_ids.contains(&m.id))
                || job.memory_ids.contains(&memory.id)
                || job.candidates.iter().any(|c| c.content == memory.content)
                || job
                    .drafts
                    .iter()
                    .any(|d| d.candidate.content == memory.content);
            if !holds {
                continue;
            }
            job.messages.clear();
            job.candidates.clear();
            job.drafts.clear();
            job.cancelled = true;
            job.status = JobStatus::Failed;
            job.error = Some("cancelled: data it held was purged".into());
            let body = serde_json::to_value(&job)?;
            if self
                .backends
                .jobs
                .cancel(&record.id, body, self.clock.now())
                .await?
            {
                cancelled += 1;
            }
        }
        Ok(cancelled)
    }

    async fn extract_stage(
        &self,
        profile: &str,
        meter: &super::accounting::Meter,
        job: &mut IngestJob,
    ) -> Result<()> {
        let Some(model) = self.models.extraction.as_deref() else {
            job.degraded.push(Degradation {
                feature: "extraction".into(),
                reason: "no LLM configured: raw messages only, no typed memories".into(),
            });
            return Ok(());
        };
        let settings = self.effective_settings(profile).await?;
        let languages = self.date_languages(profile, &settings).await?;
        let transcript = build_transcript_in(&job.messages, &languages);
        let sizes: Vec<usize> = transcript.iter().map(|l| l.render().len() + 1).collect();
        let chunks = chunk_lines(&sizes, self.config.chunk_chars, self.config.chunk_overlap);
        let windows = if transcript.len() >= self.config.detail_min_messages {
            detail_windows(
                transcript.len(),
                self.config.detail_window,
                self.config.chunk_overlap,
            )
        } else {
            Vec::new()
        };
        let mut report = ExtractionReport {
            chunks: chunks.len() as u64,
            detail_windows: windows.len() as u64,
            ..ExtractionReport::default()
        };
        let candidates = extract(
            meter,
            model,
            &settings,
            &transcript,
            &chunks,
            &windows,
            self.config.max_concurrent_chunks,
            &mut report,
        )
        .await;
        let calls = (chunks.len() + windows.len()) as u64;
        if report.failed_calls == calls && calls > 0 {
            return Err(MemoryError::backend(
                "extraction",
                format!(
                    "every extraction call failed: {}",
                    report.problems.join("; ")
                ),
            ));
        }
        report.candidates = candidates.len() as u64;
        let (merged, duplicates) = merge_candidates(candidates);
        report.duplicates = duplicates as u64;
        job.candidates = merged;
        job.extraction = report;
        Ok(())
    }

    async fn verify_stage(
        &self,
        profile: &str,
        meter: &super::accounting::Meter,
        job: &mut IngestJob,
    ) -> Result<()> {
        if job.candidates.is_empty() {
            return Ok(());
        }
        let settings = self.effective_settings(profile).await?;
        let languages = self.date_languages(profile, &settings).await?;
        let transcript = build_transcript_in(&job.messages, &languages);
        let concurrency = self.config.max_concurrent_chunks;
        let mut report = std::mem::take(&mut job.extraction);
        let before = report.clone();
        let verified = match self.models.verification.as_deref() {
            Some(model) => {
                let kept = verify(
                    meter,
                    model,
                    &settings,
                    &transcript,
                    job.candidates.clone(),
                    concurrency,
                    &mut report,
                )
                .await;
                if kept.is_empty()
                    && report.unverified - before.unverified == job.candidates.len() as u64
                {
                    // The retry verifies every candidate again: this run's counts are not kept
                    // (its problems are in the error).
                    let problems = report.problems
                        [before.problems.len().min(report.problems.len())..]
                        .join("; ");
                    job.extraction = before;
                    return Err(MemoryError::backend(
                        "verification",
                        format!("no candidate could be verified: {problems}"),
                    ));
                }
                kept
            }
            None => {
                job.degraded.push(Degradation {
                    feature: "verification".into(),
                    reason: "no verification model configured: candidates stored unverified".into(),
                });
                job.candidates.clone()
            }
        };
        job.drafts = classify(
            meter,
            self.models.classification.as_deref(),
            &settings,
            verified,
            concurrency,
            &mut report,
        )
        .await;
        if self.models.classification.is_none() {
            job.degraded.push(Degradation {
                feature: "classification".into(),
                reason:
                    "no classification model configured: stored as facts without keys or questions"
                        .into(),
            });
        }
        job.extraction = report;
        Ok(())
    }

    async fn store_stage(
        &self,
        profile: &str,
        meter: &super::accounting::Meter,
        job: &mut IngestJob,
    ) -> Result<()> {
        if job.drafts.is_empty() {
            return Ok(());
        }
        let transcript = build_transcript(&job.messages);
        let metadata: std::collections::HashMap<&str, &memory_core::Metadata> = job
            .messages
            .iter()
            .map(|m| (m.id.as_str(), &m.metadata))
            .collect();
        let now = self.clock.now();
        let records: Vec<MemoryRecord> = job
            .drafts
            .iter()
            .map(|d| {
                let lines = &d.candidate.lines;
                let first = lines.first().and_then(|&l| transcript.get(l));
                let valid_at = d
                    .candidate
                    .date
                    .as_deref()
                    .and_then(parse_iso_date)
                    .or(first.map(|l| l.at));
                let sources: Vec<String> = lines
                    .iter()
                    .filter_map(|&l| transcript.get(l).map(|t| t.message_id.clone()))
                    .collect();
                // What its source messages share, and the categories it was given.
                let shared = with_categories(
                    memory_core::Metadata::shared(
                        sources
                            .iter()
                            .filter_map(|id| metadata.get(id.as_str()).copied()),
                    ),
                    &d.categories,
                );
                MemoryRecord {
                    // Deterministic: re-running the stage, or re-ingesting the conversation,
                    // finds the memory already stored; the same words said again later (a
                    // fact that changed back) come from other messages, so they are a new
                    // version.
                    id: content_id(
                        &job.session_id,
                        "memory",
                        &format!("{}\n{}", d.candidate.content, sources.join(",")),
                    ),
                    kind: d.kind,
                    content: d.candidate.content.clone(),
                    key: d.key.clone(),
                    questions: d.questions.clone(),
                    session_id: Some(job.session_id.clone()),
                    source_message_ids: sources,
                    source_lines: match (lines.first(), lines.last()) {
                        (Some(&a), Some(&b)) => Some([a as u32, b as u32]),
                        _ => None,
                    },
                    recorded_at: now,
                    valid_at,
                    superseded_by: None,
                    forgotten: None,
                    metadata: shared,
                    expires_at: self.config.lifetimes.expiry(d.kind, now),
                    merged: None,
                    confirmed_at: None,
                    recalled_at: None,
                }
            })
            .collect();
        job.memory_ids = records.iter().map(|r| r.id.clone()).collect();
        let (stored, superseded, vectorized) = self.store_memories(profile, meter, records).await?;
        job.extraction.stored += stored;
        job.extraction.superseded += superseded;
        job.vectorized += vectorized;
        Ok(())
    }

    /// Embeds the job's raw messages once (a retried job skips it).
    async fn vectorize_raw_stage(
        &self,
        profile: &str,
        store: &dyn LongTermMemoryStore,
        meter: &super::accounting::Meter,
        job: &mut IngestJob,
    ) -> Result<()> {
        if job.raw_vectorized || self.embedder.is_none() {
            return Ok(());
        }
        let known: std::collections::HashSet<String> = job
            .messages
            .iter()
            .map(|m| m.id.clone())
            .filter(|id| !job.new_message_ids.contains(id))
            .collect();
        job.vectorized += self
            .vectorize_raw(profile, store, meter, job.messages.clone(), &known, true)
            .await?;
        job.raw_vectorized = true;
        Ok(())
    }

    async fn vectorize_stage(
        &self,
        profile: &str,
        store: &dyn LongTermMemoryStore,
        meter: &super::accounting::Meter,
        job: &mut IngestJob,
    ) -> Result<()> {
        if self.embedder.is_none() {
            job.degraded.push(Degradation {
                feature: "vectors".into(),
                reason: "no embedder configured: full-text search only".into(),
            });
            return Ok(());
        }
        self.vectorize_raw_stage(profile, store, meter, job).await?;
        // Memories stored by an earlier run of this job were embedded with them; this covers
        // a crash between storing and embedding.
        let mut memories = Vec::new();
        for id in &job.memory_ids {
            if let Some(m) = store.get_memory(id).await? {
                memories.push(m);
            }
        }
        job.vectorized += self
            .vectorize_memories(profile, meter, &memories, &[])
            .await?;
        Ok(())
    }
}

/// `metadata` with `categories` added under [`super::CATEGORIES_KEY`] (merged with a list
/// already there, sorted, without repeats); unchanged without categories, or (logged) when
/// the result would pass the metadata's bounds.
pub(super) fn with_categories(
    metadata: memory_core::Metadata,
    categories: &[String],
) -> memory_core::Metadata {
    if categories.is_empty() {
        return metadata;
    }
    let mut object: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&metadata.to_json()).unwrap_or_default();
    let mut names: Vec<String> = match object.get(super::CATEGORIES_KEY) {
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        Some(serde_json::Value::String(one)) => vec![one.clone()],
        _ => Vec::new(),
    };
    names.extend(categories.iter().cloned());
    names.sort();
    names.dedup();
    object.insert(super::CATEGORIES_KEY.to_owned(), serde_json::json!(names));
    match memory_core::Metadata::from_json(object) {
        Ok(labelled) => labelled,
        Err(e) => {
            // Only when the metadata was already at its bounds: the memory keeps it as it was.
            tracing::warn!(error = %e, ?categories, "categories left out of a memory's metadata");
            metadata
        }
    }
}
