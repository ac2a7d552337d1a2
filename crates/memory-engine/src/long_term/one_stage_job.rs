//! Jobs of one stage (expiry sweeps, consolidation runs, digests): queued and claimed at
//! once by the process that runs them, so they show in the job listing with their counts,
//! a process that dies leaves them to their lease, and a failure is recorded with its error.

use memory_core::ports::{JobLease, JobRecord, NewJob};
use memory_core::{MemoryError, Result};

use super::core::Core;

impl Core {
    /// Queues `job` and claims it under a lease of `job_lease_millis`; `None` when another
    /// worker holds it. A job whose id is queued already is claimed as it stands (a job named
    /// for its period, such as an expiry sweep, runs once, resuming from its checkpoint).
    pub(super) async fn start_one_stage_job(
        &self,
        job: NewJob,
    ) -> Result<Option<(JobRecord, JobLease)>> {
        let now = self.clock.now();
        let id = job.id.clone();
        match self.backends.jobs.enqueue(job, now).await {
            Ok(_) | Err(MemoryError::AlreadyExists { .. }) => {}
            Err(e) => return Err(e),
        }
        self.backends
            .jobs
            .claim_id(&id, &self.worker, self.config.job_lease_millis, now)
            .await
    }

    /// [`Self::start_one_stage_job`] for a job with a fresh id: another worker holding it is
    /// a `Conflict`.
    pub(super) async fn start_fresh_job(&self, job: NewJob) -> Result<JobLease> {
        let (id, kind) = (job.id.clone(), job.kind.clone());
        match self.start_one_stage_job(job).await? {
            Some((_, lease)) => Ok(lease),
            None => Err(MemoryError::Conflict {
                message: format!("{kind} job {id} was claimed by another worker"),
            }),
        }
    }

    /// Records the job under `lease` as failed at `stage` with `body` (not retried). When
    /// even that cannot be written it is logged: the lease runs out, and the job shows as
    /// running until then.
    pub(super) async fn record_job_failure(
        &self,
        lease: &JobLease,
        stage: &str,
        body: serde_json::Value,
    ) {
        if let Err(e) = self
            .backends
            .jobs
            .fail(lease, stage, body, false, self.clock.now())
            .await
        {
            tracing::warn!(job = %lease.job_id, error = %e, "recording a failed job failed");
        }
    }
}
