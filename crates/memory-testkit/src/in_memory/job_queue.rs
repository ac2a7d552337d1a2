use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use memory_core::ports::{JobFilter, JobLease, JobPage, JobQueue, JobRecord, JobState, NewJob};
use memory_core::{MemoryError, Result, Timestamp};

use super::lock;

#[derive(Default)]
struct Inner {
    /// Jobs by enqueue order (the list cursor is the position).
    jobs: BTreeMap<u64, (JobRecord, Option<String>)>,
    next: u64,
}

/// A [`JobQueue`] in memory: one mutex makes every claim atomic.
#[derive(Default)]
pub struct InMemoryJobQueue {
    inner: Mutex<Inner>,
    tokens: AtomicU64,
}

impl InMemoryJobQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    fn claim_first(
        &self,
        pick: impl Fn(&JobRecord) -> bool,
        worker: &str,
        lease_millis: u64,
        now: Timestamp,
    ) -> Option<(JobRecord, JobLease)> {
        let mut inner = lock(&self.inner);
        let (record, token_slot) = inner.jobs.values_mut().find(|(job, _)| {
            let claimable = job.state == JobState::Queued
                || (job.state == JobState::Running
                    && job.lease_expires_at.is_some_and(|t| t < now));
            claimable && pick(job)
        })?;
        let token = format!("lease-{}", self.tokens.fetch_add(1, Ordering::Relaxed));
        let expires = JobLease::expiry(now, lease_millis);
        record.state = JobState::Running;
        record.worker = Some(worker.to_owned());
        record.lease_expires_at = Some(expires);
        record.updated_at = now;
        *token_slot = Some(token.clone());
        Some((
            record.clone(),
            JobLease {
                job_id: record.id.clone(),
                worker: worker.to_owned(),
                token,
                expires_at: expires,
            },
        ))
    }

    /// Applies `change` to the leased job, or `Conflict` when the lease is gone.
    fn with_lease(&self, lease: &JobLease, change: impl FnOnce(&mut JobRecord)) -> Result<()> {
        let mut inner = lock(&self.inner);
        let held = inner.jobs.values_mut().find(|(job, token)| {
            job.id == lease.job_id
                && job.state == JobState::Running
                && token.as_deref() == Some(lease.token.as_str())
        });
        let Some((job, token)) = held else {
            return Err(lease.lost());
        };
        change(job);
        if job.state != JobState::Running {
            *token = None;
            job.worker = None;
            job.lease_expires_at = None;
        }
        Ok(())
    }
}

#[async_trait]
impl JobQueue for InMemoryJobQueue {
    fn backend_name(&self) -> &'static str {
        "in-memory"
    }

    async fn enqueue(&self, job: NewJob, now: Timestamp) -> Result<JobRecord> {
        let mut inner = lock(&self.inner);
        if inner.jobs.values().any(|(j, _)| j.id == job.id) {
            return Err(MemoryError::AlreadyExists {
                kind: "job",
                id: job.id,
            });
        }
        let record = JobRecord {
            id: job.id,
            kind: job.kind,
            profile: job.profile,
            state: JobState::Queued,
            stage: job.stage,
            body: job.body,
            attempts: 0,
            worker: None,
            lease_expires_at: None,
            created_at: now,
            updated_at: now,
        };
        inner.next += 1;
        let position = inner.next;
        inner.jobs.insert(position, (record.clone(), None));
        Ok(record)
    }

    async fn claim(
        &self,
        filter: &JobFilter,
        worker: &str,
        lease_millis: u64,
        now: Timestamp,
    ) -> Result<Option<(JobRecord, JobLease)>> {
        Ok(self.claim_first(
            |job| {
                filter.profile.as_ref().is_none_or(|p| *p == job.profile)
                    && filter.kind.as_ref().is_none_or(|k| *k == job.kind)
            },
            worker,
            lease_millis,
            now,
        ))
    }

    async fn claim_id(
        &self,
        id: &str,
        worker: &str,
        lease_millis: u64,
        now: Timestamp,
    ) -> Result<Option<(JobRecord, JobLease)>> {
        Ok(self.claim_first(|job| job.id == id, worker, lease_millis, now))
    }

    async fn heartbeat(
        &self,
        lease: &JobLease,
        lease_millis: u64,
        now: Timestamp,
    ) -> Result<JobLease> {
        let expires = JobLease::expiry(now, lease_millis);
        self.with_lease(lease, |job| {
            job.lease_expires_at = Some(expires);
            job.updated_at = now;
        })?;
        Ok(JobLease {
            expires_at: expires,
            ..lease.clone()
        })
    }

    async fn checkpoint(
        &self,
        lease: &JobLease,
        stage: &str,
        body: serde_json::Value,
        now: Timestamp,
    ) -> Result<()> {
        self.with_lease(lease, |job| {
            job.stage = stage.to_owned();
            job.body = body;
            job.updated_at = now;
        })
    }

    async fn complete(
        &self,
        lease: &JobLease,
        stage: &str,
        body: serde_json::Value,
        now: Timestamp,
    ) -> Result<()> {
        self.with_lease(lease, |job| {
            job.state = JobState::Done;
            job.stage = stage.to_owned();
            job.body = body;
            job.updated_at = now;
        })
    }

    async fn fail(
        &self,
        lease: &JobLease,
        stage: &str,
        body: serde_json::Value,
        retry: bool,
        now: Timestamp,
    ) -> Result<()> {
        self.with_lease(lease, |job| {
            job.state = if retry {
                JobState::Queued
            } else {
                JobState::Failed
            };
            job.attempts = job.attempts.saturating_add(1);
            job.stage = stage.to_owned();
            job.body = body;
            job.updated_at = now;
        })
    }

    async fn release(&self, lease: &JobLease, now: Timestamp) -> Result<()> {
        self.with_lease(lease, |job| {
            job.state = JobState::Queued;
            job.updated_at = now;
        })
    }

    async fn retry(&self, id: &str, now: Timestamp) -> Result<bool> {
        let mut inner = lock(&self.inner);
        let Some((job, _)) = inner
            .jobs
            .values_mut()
            .find(|(j, _)| j.id == id && j.state == JobState::Failed)
        else {
            return Ok(false);
        };
        job.state = JobState::Queued;
        job.updated_at = now;
        Ok(true)
    }

    async fn cancel(&self, id: &str, body: serde_json::Value, now: Timestamp) -> Result<bool> {
        let mut inner = lock(&self.inner);
        let Some((job, token)) = inner
            .jobs
            .values_mut()
            .find(|(j, _)| j.id == id && j.state != JobState::Done)
        else {
            return Ok(false);
        };
        job.state = JobState::Cancelled;
        job.body = body;
        job.updated_at = now;
        job.worker = None;
        job.lease_expires_at = None;
        *token = None;
        Ok(true)
    }

    async fn get(&self, id: &str) -> Result<Option<JobRecord>> {
        Ok(lock(&self.inner)
            .jobs
            .values()
            .find(|(j, _)| j.id == id)
            .map(|(j, _)| j.clone()))
    }

    async fn list(
        &self,
        filter: &JobFilter,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<JobPage> {
        let after = memory_core::cursor::parse_position(cursor.as_deref())?
            .map_or(Ok(0), u64::try_from)
            .map_err(|_| memory_core::MemoryError::invalid("invalid cursor"))?;
        let inner = lock(&self.inner);
        let mut jobs = Vec::new();
        let mut last = None;
        let mut more = false;
        for (position, (job, _)) in inner.jobs.range(after + 1..) {
            let keep = filter.profile.as_ref().is_none_or(|p| *p == job.profile)
                && filter.kind.as_ref().is_none_or(|k| *k == job.kind)
                && filter.state.is_none_or(|s| s == job.state);
            if !keep {
                continue;
            }
            if jobs.len() == limit {
                more = true;
                break;
            }
            jobs.push(job.clone());
            last = Some(*position);
        }
        Ok(JobPage {
            jobs,
            next_cursor: if more {
                last.map(|p: u64| {
                    memory_core::cursor::position(i64::try_from(p).unwrap_or(i64::MAX))
                })
            } else {
                None
            },
        })
    }

    async fn delete_profile_jobs(&self, profile: &str) -> Result<u64> {
        let mut inner = lock(&self.inner);
        let before = inner.jobs.len();
        inner.jobs.retain(|_, (job, _)| job.profile != profile);
        Ok((before - inner.jobs.len()) as u64)
    }
}
