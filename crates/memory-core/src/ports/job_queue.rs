use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{Result, Timestamp};

/// Where a job is, as the queue sees it (the engine's own stage is [`JobRecord::stage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Waiting for a worker (new, retried, or released).
    Queued,
    /// Claimed by a worker whose lease has not expired. A `Running` job with an expired
    /// lease is claimable again: its worker is presumed dead.
    Running,
    /// Finished.
    Done,
    /// Stopped by an error; [`JobQueue::retry`] queues it again.
    Failed,
    /// Given up for good (its data was erased); never claimed again.
    Cancelled,
}

impl JobState {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Parses a stored name.
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "queued" => Self::Queued,
            "running" => Self::Running,
            "done" => Self::Done,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            other => {
                return Err(crate::MemoryError::serialization(format!(
                    "unknown job state {other:?}"
                )));
            }
        })
    }

    /// True for `Done`, `Failed` and `Cancelled`.
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Done | Self::Failed | Self::Cancelled)
    }
}

/// A job to enqueue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewJob {
    /// Identifier, unique in the queue (the engine uses UUIDv7).
    pub id: String,
    /// What kind of work (`ingest`, ...): workers may claim one kind only.
    pub kind: String,
    /// The profile the work belongs to: deleting a profile deletes its jobs.
    pub profile: String,
    /// The engine's stage name.
    pub stage: String,
    /// The engine's checkpoint.
    pub body: serde_json::Value,
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Identifier.
    pub id: String,
    /// What kind of work.
    pub kind: String,
    /// The profile it belongs to.
    pub profile: String,
    /// The queue's view.
    pub state: JobState,
    /// The engine's stage at the last checkpoint.
    pub stage: String,
    /// The engine's checkpoint.
    pub body: serde_json::Value,
    /// Failed runs so far.
    pub attempts: u32,
    /// The worker holding the lease, while `Running`.
    pub worker: Option<String>,
    /// When the lease runs out, while `Running`.
    pub lease_expires_at: Option<Timestamp>,
    /// When it was queued.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// Proof of a claim: every write of a running job presents it, and is refused
/// ([`crate::MemoryError::Conflict`]) once the lease was lost to another worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobLease {
    /// The job.
    pub job_id: String,
    /// The worker that claimed it.
    pub worker: String,
    /// Unique per claim: a worker that claims the same job twice holds two different leases.
    pub token: String,
    /// When it runs out unless renewed by [`JobQueue::heartbeat`].
    pub expires_at: Timestamp,
}

impl JobLease {
    /// When a lease of `lease_millis` taken at `now` runs out (saturating).
    ///
    /// ```
    /// use memory_core::Timestamp;
    /// use memory_core::ports::JobLease;
    /// assert_eq!(JobLease::expiry(Timestamp(100), 1_000), Timestamp(1_100));
    /// assert_eq!(JobLease::expiry(Timestamp(1), u64::MAX), Timestamp(i64::MAX));
    /// ```
    pub fn expiry(now: Timestamp, lease_millis: u64) -> Timestamp {
        Timestamp(
            now.millis()
                .saturating_add(i64::try_from(lease_millis).unwrap_or(i64::MAX)),
        )
    }

    /// The [`crate::MemoryError::Conflict`] of a write under this lease after it was lost.
    pub fn lost(&self) -> crate::MemoryError {
        crate::MemoryError::Conflict {
            message: format!(
                "job {} is no longer leased to worker {:?} (the lease expired and another worker took it, or the job was cancelled)",
                self.job_id, self.worker
            ),
        }
    }
}

/// Which jobs to claim or list; every set field must match.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct JobFilter {
    /// Only this profile.
    pub profile: Option<String>,
    /// Only this kind.
    pub kind: Option<String>,
    /// Only this state (ignored by `claim`).
    pub state: Option<JobState>,
}

/// A page of jobs, oldest first, with the cursor of the next page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobPage {
    /// The jobs.
    pub jobs: Vec<JobRecord>,
    /// Pass to the next `list` call; `None` at the end.
    pub next_cursor: Option<String>,
}

/// A durable queue of background jobs (ingest now; re-embedding and consolidation later)
/// shared by every worker process of a deployment.
///
/// Times are passed in (`now`), so the queue never reads a clock of its own: workers and
/// tests agree on one clock.
///
/// # Contract
/// (asserted by `memory_testkit::contract::job_queue`)
/// - `enqueue` refuses an existing id ([`crate::MemoryError::AlreadyExists`]); a job is
///   durable once it returns.
/// - `claim` is atomic: of any number of concurrent claims, at most one gets a given job. It
///   takes the oldest `Queued` job, or a `Running` one whose lease expired before `now`.
/// - `heartbeat`, `checkpoint`, `complete`, `fail` and `release` need the current lease: after
///   it expired and another worker claimed the job they are `Conflict` and change nothing.
/// - `fail` counts an attempt; with `retry` the job is `Queued` again, else `Failed`.
/// - `retry` queues a `Failed` job. `cancel` makes any job not `Done` `Cancelled` with the
///   given body, even one running under a live lease: that worker's next write is `Conflict`,
///   so it cannot write back data the cancel removed.
/// - `list` pages oldest first with opaque cursors; `delete_profile_jobs` removes a profile's jobs.
#[async_trait]
pub trait JobQueue: Send + Sync {
    /// The adapter's name, for errors and logs.
    fn backend_name(&self) -> &'static str;
    /// Adds a job in state `Queued`.
    async fn enqueue(&self, job: NewJob, now: Timestamp) -> Result<JobRecord>;
    /// Claims the oldest claimable job that matches `filter`, for `lease_millis`.
    async fn claim(
        &self,
        filter: &JobFilter,
        worker: &str,
        lease_millis: u64,
        now: Timestamp,
    ) -> Result<Option<(JobRecord, JobLease)>>;
    /// Claims one job by id, if it is claimable.
    async fn claim_id(
        &self,
        id: &str,
        worker: &str,
        lease_millis: u64,
        now: Timestamp,
    ) -> Result<Option<(JobRecord, JobLease)>>;
    /// Extends the lease to `now + lease_millis`.
    async fn heartbeat(
        &self,
        lease: &JobLease,
        lease_millis: u64,
        now: Timestamp,
    ) -> Result<JobLease>;
    /// Stores a checkpoint of a running job (and extends nothing).
    async fn checkpoint(
        &self,
        lease: &JobLease,
        stage: &str,
        body: serde_json::Value,
        now: Timestamp,
    ) -> Result<()>;
    /// Marks the job `Done` with its last checkpoint and drops the lease.
    async fn complete(
        &self,
        lease: &JobLease,
        stage: &str,
        body: serde_json::Value,
        now: Timestamp,
    ) -> Result<()>;
    /// Records a failed run: `Queued` again with `retry`, else `Failed`; drops the lease.
    async fn fail(
        &self,
        lease: &JobLease,
        stage: &str,
        body: serde_json::Value,
        retry: bool,
        now: Timestamp,
    ) -> Result<()>;
    /// Gives the job back (`Queued`) without counting an attempt, e.g. on shutdown.
    async fn release(&self, lease: &JobLease, now: Timestamp) -> Result<()>;
    /// Queues a `Failed` job again; false if it was not failed.
    async fn retry(&self, id: &str, now: Timestamp) -> Result<bool>;
    /// Cancels an unfinished or failed job for good, replacing its body.
    async fn cancel(&self, id: &str, body: serde_json::Value, now: Timestamp) -> Result<bool>;
    /// One job.
    async fn get(&self, id: &str) -> Result<Option<JobRecord>>;
    /// A page of jobs, oldest first.
    async fn list(
        &self,
        filter: &JobFilter,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<JobPage>;
    /// Removes every job of a profile; returns how many.
    async fn delete_profile_jobs(&self, profile: &str) -> Result<u64>;
}
