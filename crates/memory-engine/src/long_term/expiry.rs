//! Expiry: the sweep that forgets memories whose `expires_at` has passed.
//!
//! Recall and list never wait for it: they leave out what expired by their own clock. The
//! sweep makes expiry durable and cheap to read back (an expired memory becomes a forgotten
//! one, reason [`EXPIRED_REASON`], at its expiry time, and loses its vector), and it runs as
//! a job on the queue: every worker may try a profile's sweep, the job's id names the
//! profile and the minute, so of several workers one does it and the others move on.

use memory_core::ports::{ForgetRequest, JobLease, NewJob};
use memory_core::{MemoryError, Result, Timestamp};
use serde::Serialize;

use super::core::Core;
use super::vectorize::MEMORY_NAMESPACE;

/// The job kind of an expiry sweep.
pub const EXPIRE_KIND: &str = "expire";

/// The forget reason an expired memory carries.
pub const EXPIRED_REASON: &str = "expired";

/// Memories forgotten per store round trip.
const SWEEP_BATCH: usize = 256;

/// One sweep job per profile per this many milliseconds, at most.
const SWEEP_PERIOD_MILLIS: i64 = 60_000;

/// The job's only stage.
const STAGE: &str = "expiring";

/// What one expiry sweep did.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ExpirySweep {
    /// The sweep's job.
    pub job_id: String,
    /// Memories it forgot as expired.
    pub expired: u64,
}

impl Core {
    /// Forgets the profile's memories that expired by now, as a job on the queue; `None`
    /// when nothing was due, or another worker holds this minute's sweep, or jobs are
    /// stopping. A store error fails the job (the next minute's sweep picks the work up).
    pub(super) async fn sweep_expired(&self, profile: &str) -> Result<Option<ExpirySweep>> {
        if self.is_stopping() {
            return Ok(None);
        }
        memory_core::validate_profile_name(profile)?;
        if !self.backends.records.exists(profile).await? {
            return Err(MemoryError::not_found("profile", profile));
        }
        let now = self.clock.now();
        // The look for something due reads the records alone: a profile with nothing due
        // costs no open text index (a sweep looks at many profiles).
        if self
            .backends
            .records
            .open(profile)
            .await?
            .expired(now, 1)
            .await?
            .is_empty()
        {
            return Ok(None);
        }
        let id = format!(
            "expire-{profile}-{}",
            now.millis().div_euclid(SWEEP_PERIOD_MILLIS)
        );
        let job = NewJob {
            id: id.clone(),
            kind: EXPIRE_KIND.to_owned(),
            profile: profile.to_owned(),
            stage: STAGE.to_owned(),
            body: serde_json::json!({ "expired": 0 }),
        };
        let Some((record, lease)) = self.start_one_stage_job(job).await? else {
            return Ok(None);
        };
        let done_before = record
            .body
            .get("expired")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        let mut sweep = ExpirySweep {
            job_id: id,
            expired: done_before,
        };
        let result = self.sweep(profile, now, lease, &mut sweep).await;
        if let Err((lease, e)) = result {
            let body = serde_json::json!({ "expired": sweep.expired, "error": e.to_string() });
            self.record_job_failure(&lease, STAGE, body).await;
            return Err(e);
        }
        tracing::info!(profile, job = %sweep.job_id, expired = sweep.expired, "expiry sweep");
        Ok(Some(sweep))
    }

    /// The sweep's work under `lease`: batches of expired memories forgotten and their
    /// vectors removed, a checkpoint and a heartbeat after each batch.
    async fn sweep(
        &self,
        profile: &str,
        now: Timestamp,
        mut lease: JobLease,
        sweep: &mut ExpirySweep,
    ) -> std::result::Result<(), (JobLease, MemoryError)> {
        let jobs = &self.backends.jobs;
        let lease_millis = self.config.job_lease_millis;
        let mut previous: Vec<String> = Vec::new();
        loop {
            let batch = async {
                let store = self.backends.existing_store(profile).await?;
                let ids = store.expired(now, SWEEP_BATCH).await?;
                if !ids.is_empty() && ids == previous {
                    return Err(MemoryError::backend(
                        "expiry sweep",
                        format!(
                            "the store still lists {} memories as expired after forgetting them",
                            ids.len()
                        ),
                    ));
                }
                previous.clone_from(&ids);
                for memory in store.get_memories(&ids).await? {
                    let request = ForgetRequest {
                        reason: EXPIRED_REASON.to_owned(),
                        at: memory.expires_at.unwrap_or(now),
                    };
                    store.forget(&memory.id, request).await?;
                }
                if !ids.is_empty() {
                    self.backends
                        .vector_index(profile)
                        .await?
                        .delete(MEMORY_NAMESPACE, &ids)
                        .await?;
                }
                Ok::<u64, MemoryError>(ids.len() as u64)
            }
            .await;
            let forgotten = match batch {
                Ok(n) => n,
                Err(e) => return Err((lease, e)),
            };
            sweep.expired += forgotten;
            let body = serde_json::json!({ "expired": sweep.expired });
            if forgotten == 0 || self.is_stopping() {
                return match jobs.complete(&lease, STAGE, body, self.clock.now()).await {
                    Ok(()) => Ok(()),
                    Err(e) => Err((lease, e)),
                };
            }
            if let Err(e) = jobs.checkpoint(&lease, STAGE, body, self.clock.now()).await {
                return Err((lease, e));
            }
            lease = match jobs.heartbeat(&lease, lease_millis, self.clock.now()).await {
                Ok(renewed) => renewed,
                Err(e) => return Err((lease, e)),
            };
        }
    }
}
