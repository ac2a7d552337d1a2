//! The job queue on Redis: a hash per job (the authoritative record, with its lease token),
//! an order of every job and of each profile's (sorted sets by enqueue sequence), the queued
//! and the failed jobs (by enqueue sequence) and the running ones (by lease expiry) in sorted
//! sets of their own, so a claim reads only jobs it could take: the oldest queued, and those
//! whose lease has run out, never the many running under live leases; and a listing of the
//! queued or the failed jobs (recall asks for a profile's failed ingests on every call) reads
//! only those, never the done jobs that stay. Claims and lease-checked writes are Lua
//! scripts: atomic on the server, so of any number of concurrent claims exactly one gets a
//! job.
//!
//! Times come from the caller (`now`), as the port requires, so a lease expires by the
//! workers' clock, never the server's. The job body is stored as the caller's JSON text and
//! never parsed on the server.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use memory_core::ports::{JobFilter, JobLease, JobPage, JobQueue, JobRecord, JobState, NewJob};
use memory_core::{MemoryError, Result, Timestamp};

use crate::database::RedisDatabase;
use crate::error::{corrupt, redis};

/// Lua helpers every script below starts with: `place` moves a job into the queued or the
/// failed sets (score: its enqueue sequence), the running sets (score: its lease expiry) or
/// none of them.
macro_rules! lua_index {
    () => {
        r"
local function place(prefix, key, where, score)
  local id = redis.call('HGET', key, 'id')
  local profile = redis.call('HGET', key, 'profile')
  local sets = { prefix .. 'jobs:queued', prefix .. 'jobs:queued:' .. profile,
                 prefix .. 'jobs:running', prefix .. 'jobs:running:' .. profile,
                 prefix .. 'jobs:failed', prefix .. 'jobs:failed:' .. profile }
  for _, set in ipairs(sets) do redis.call('ZREM', set, id) end
  if where == 'queued' or where == 'failed' then
    local seq = redis.call('HGET', key, 'seq')
    local first = 1
    if where == 'failed' then first = 5 end
    redis.call('ZADD', sets[first], seq, id)
    redis.call('ZADD', sets[first + 1], seq, id)
  elseif where == 'running' then
    redis.call('ZADD', sets[3], score, id)
    redis.call('ZADD', sets[4], score, id)
  end
end
"
    };
}

/// Enqueues unless the id exists. KEYS: job, order, profile order, queued, profile queued,
/// sequence. ARGV: id, kind, profile, stage, body, now. The sequence, or 0.
const ENQUEUE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local seq = redis.call('INCR', KEYS[6])
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'kind', ARGV[2], 'profile', ARGV[3],
  'state', 'queued', 'stage', ARGV[4], 'body', ARGV[5], 'attempts', 0,
  'created_at', ARGV[6], 'updated_at', ARGV[6], 'seq', seq)
for i = 2, 5 do redis.call('ZADD', KEYS[i], seq, ARGV[1]) end
return seq
";

/// Claims the oldest claimable job (queued, or running under an expired lease; oldest by
/// enqueue order), or one job by id. KEYS: the queued set and the running set to look in.
/// ARGV: key prefix, kind filter (empty: any), now, lease expiry, worker, token, wanted id
/// (empty: the oldest). The job's fields, or nil. A claim reads the queued jobs up to the
/// first of its kind and the running jobs whose lease has expired: never the jobs running
/// under live leases.
const CLAIM: &str = concat!(
    lua_index!(),
    r"
local prefix, kind, now, expires = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local worker, token, wanted = ARGV[5], ARGV[6], ARGV[7]
local function claimable(key)
  local state = redis.call('HGET', key, 'state')
  if state == 'queued' then return true end
  if state == 'running' then
    local lease = tonumber(redis.call('HGET', key, 'lease_expires_at'))
    return lease ~= nil and lease < now
  end
  return false
end
local function take(key)
  redis.call('HSET', key, 'state', 'running', 'worker', worker,
    'lease_expires_at', expires, 'token', token, 'updated_at', ARGV[3])
  place(prefix, key, 'running', expires)
  return redis.call('HGETALL', key)
end
local function of_kind(key)
  return kind == '' or redis.call('HGET', key, 'kind') == kind
end
if wanted ~= '' then
  local key = prefix .. 'job:' .. wanted
  if redis.call('EXISTS', key) == 1 and claimable(key) then return take(key) end
  return nil
end
local best, best_seq = nil, nil
local start = 0
while best == nil do
  local ids = redis.call('ZRANGE', KEYS[1], start, start + 99, 'WITHSCORES')
  if #ids == 0 then break end
  for i = 1, #ids, 2 do
    if of_kind(prefix .. 'job:' .. ids[i]) then
      best, best_seq = ids[i], tonumber(ids[i + 1])
      break
    end
  end
  start = start + 100
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[3])) do
  local key = prefix .. 'job:' .. id
  if of_kind(key) then
    local seq = tonumber(redis.call('HGET', key, 'seq'))
    if best_seq == nil or seq < best_seq then best, best_seq = id, seq end
  end
end
if best == nil then return nil end
return take(prefix .. 'job:' .. best)
"
);

/// A write under a lease: refused (0) unless the job is running under this token. KEYS: the
/// job. ARGV: key prefix, token, operation, stage, body, retry (`1`/`0`), now, lease expiry.
const LEASED: &str = concat!(
    lua_index!(),
    r"
if redis.call('HGET', KEYS[1], 'state') ~= 'running'
  or redis.call('HGET', KEYS[1], 'token') ~= ARGV[2] then return 0 end
local prefix, op, now = ARGV[1], ARGV[3], ARGV[7]
if op == 'heartbeat' then
  redis.call('HSET', KEYS[1], 'lease_expires_at', ARGV[8], 'updated_at', now)
  place(prefix, KEYS[1], 'running', ARGV[8])
  return 1
end
if op == 'checkpoint' then
  redis.call('HSET', KEYS[1], 'stage', ARGV[4], 'body', ARGV[5], 'updated_at', now)
  return 1
end
redis.call('HDEL', KEYS[1], 'worker', 'lease_expires_at', 'token')
if op == 'complete' then
  redis.call('HSET', KEYS[1], 'state', 'done', 'stage', ARGV[4], 'body', ARGV[5], 'updated_at', now)
  place(prefix, KEYS[1], 'none', 0)
elseif op == 'fail' then
  redis.call('HINCRBY', KEYS[1], 'attempts', 1)
  local state = 'failed'
  if ARGV[6] == '1' then state = 'queued' end
  redis.call('HSET', KEYS[1], 'state', state, 'stage', ARGV[4], 'body', ARGV[5], 'updated_at', now)
  place(prefix, KEYS[1], state, 0)
else
  redis.call('HSET', KEYS[1], 'state', 'queued', 'updated_at', now)
  place(prefix, KEYS[1], 'queued', 0)
end
return 1
"
);

/// Queues a failed job again. KEYS: the job. ARGV: key prefix, now. 1 when retried.
const RETRY: &str = concat!(
    lua_index!(),
    r"
if redis.call('HGET', KEYS[1], 'state') ~= 'failed' then return 0 end
redis.call('HSET', KEYS[1], 'state', 'queued', 'updated_at', ARGV[2])
place(ARGV[1], KEYS[1], 'queued', 0)
return 1
"
);

/// Cancels any job that is not done, even under a live lease. KEYS: the job. ARGV: key
/// prefix, body, now. 1 when cancelled.
const CANCEL: &str = concat!(
    lua_index!(),
    r"
local state = redis.call('HGET', KEYS[1], 'state')
if not state or state == 'done' then return 0 end
redis.call('HDEL', KEYS[1], 'worker', 'lease_expires_at', 'token')
redis.call('HSET', KEYS[1], 'state', 'cancelled', 'body', ARGV[2], 'updated_at', ARGV[3])
place(ARGV[1], KEYS[1], 'none', 0)
return 1
"
);

/// Jobs read per round trip while listing.
const LIST_BATCH: usize = 200;

/// Up to [`LIST_BATCH`] members of the sorted set `set` (job ids scored by enqueue
/// sequence) scored after `after`, lowest first, with their scores.
async fn page_after(
    connection: &mut redis::aio::ConnectionManager,
    set: &str,
    after: i64,
) -> Result<Vec<(String, i64)>> {
    redis::cmd("ZRANGEBYSCORE")
        .arg(set)
        .arg(format!("({after}"))
        .arg("+inf")
        .arg("WITHSCORES")
        .arg("LIMIT")
        .arg(0)
        .arg(LIST_BATCH)
        .query_async(connection)
        .await
        .map_err(redis)
}

/// [`JobQueue`] on Redis.
#[derive(Debug, Clone)]
pub struct RedisJobQueue {
    db: RedisDatabase,
    enqueue: redis::Script,
    claim: redis::Script,
    leased: redis::Script,
    retry: redis::Script,
    cancel: redis::Script,
    /// The failed sets are known to be filled (the marker was seen or set): shared by clones,
    /// so a listing reads the marker once per process, not once per call.
    failed_indexed: Arc<AtomicBool>,
}

/// A record from `HGETALL`'s field/value pairs.
fn record(pairs: &[String]) -> Result<JobRecord> {
    let map = crate::database::hash_fields(pairs);
    let text = |field: &str| -> Result<String> {
        map.get(field)
            .map(|v| (*v).to_owned())
            .ok_or_else(|| corrupt("job", format!("no {field}")))
    };
    let number = |field: &str| -> Result<i64> {
        text(field)?
            .parse()
            .map_err(|e| corrupt("job", format!("{field}: {e}")))
    };
    let body =
        serde_json::from_str(&text("body")?).map_err(|e| corrupt("job", format!("body: {e}")))?;
    Ok(JobRecord {
        id: text("id")?,
        kind: text("kind")?,
        profile: text("profile")?,
        state: JobState::parse(&text("state")?)?,
        stage: text("stage")?,
        body,
        attempts: u32::try_from(number("attempts")?).unwrap_or(u32::MAX),
        worker: map.get("worker").map(|v| (*v).to_owned()),
        lease_expires_at: map
            .get("lease_expires_at")
            .map(|v| v.parse().map(Timestamp))
            .transpose()
            .map_err(|e| corrupt("job", format!("lease_expires_at: {e}")))?,
        created_at: Timestamp(number("created_at")?),
        updated_at: Timestamp(number("updated_at")?),
    })
}

impl RedisJobQueue {
    /// The job queue of `db`.
    pub fn new(db: RedisDatabase) -> Self {
        Self {
            db,
            enqueue: redis::Script::new(ENQUEUE),
            claim: redis::Script::new(CLAIM),
            leased: redis::Script::new(LEASED),
            retry: redis::Script::new(RETRY),
            cancel: redis::Script::new(CANCEL),
            failed_indexed: Arc::new(AtomicBool::new(false)),
        }
    }

    fn job(&self, id: &str) -> String {
        self.db.key(&format!("job:{id}"))
    }

    fn order(&self, profile: Option<&str>) -> String {
        match profile {
            Some(p) => self.db.key(&format!("jobs:order:{p}")),
            None => self.db.key("jobs:order"),
        }
    }

    fn queued(&self, profile: Option<&str>) -> String {
        match profile {
            Some(p) => self.db.key(&format!("jobs:queued:{p}")),
            None => self.db.key("jobs:queued"),
        }
    }

    fn running(&self, profile: Option<&str>) -> String {
        match profile {
            Some(p) => self.db.key(&format!("jobs:running:{p}")),
            None => self.db.key("jobs:running"),
        }
    }

    fn failed(&self, profile: Option<&str>) -> String {
        match profile {
            Some(p) => self.db.key(&format!("jobs:failed:{p}")),
            None => self.db.key("jobs:failed"),
        }
    }

    /// Puts the jobs that failed before the failed sets were kept into them, once per
    /// deployment: the first listing of failed jobs reads every job's state, later ones
    /// find the marker. A job that leaves the failed state meanwhile may stay in a set; a
    /// listing checks each job's state, and its next move takes it out.
    async fn index_failed(&self) -> Result<()> {
        if self.failed_indexed.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut connection = self.db.connection.clone();
        let marker = self.db.key("jobs:failed-indexed");
        let indexed: bool = redis::cmd("EXISTS")
            .arg(&marker)
            .query_async(&mut connection)
            .await
            .map_err(redis)?;
        if indexed {
            self.failed_indexed.store(true, Ordering::Release);
            return Ok(());
        }
        let mut after = 0i64;
        loop {
            let page = page_after(&mut connection, &self.order(None), after).await?;
            let Some((_, last)) = page.last() else {
                break;
            };
            after = *last;
            let mut pipe = redis::pipe();
            for (id, _) in &page {
                pipe.cmd("HMGET")
                    .arg(self.job(id))
                    .arg("state")
                    .arg("profile");
            }
            let fields: Vec<(Option<String>, Option<String>)> =
                pipe.query_async(&mut connection).await.map_err(redis)?;
            let mut pipe = redis::pipe();
            let mut found = 0;
            for ((id, seq), (state, profile)) in page.iter().zip(fields) {
                if let (Some("failed"), Some(profile)) = (state.as_deref(), profile) {
                    found += 1;
                    pipe.cmd("ZADD")
                        .arg(self.failed(None))
                        .arg(seq)
                        .arg(id)
                        .ignore();
                    pipe.cmd("ZADD")
                        .arg(self.failed(Some(&profile)))
                        .arg(seq)
                        .arg(id)
                        .ignore();
                }
            }
            if found > 0 {
                pipe.query_async::<()>(&mut connection)
                    .await
                    .map_err(redis)?;
            }
            if page.len() < LIST_BATCH {
                break;
            }
        }
        redis::cmd("SET")
            .arg(&marker)
            .arg(1)
            .query_async::<()>(&mut connection)
            .await
            .map_err(redis)?;
        self.failed_indexed.store(true, Ordering::Release);
        Ok(())
    }

    async fn claim_one(
        &self,
        profile: Option<&str>,
        kind: Option<&str>,
        wanted: Option<&str>,
        worker: &str,
        lease_millis: u64,
        now: Timestamp,
    ) -> Result<Option<(JobRecord, JobLease)>> {
        let expires = JobLease::expiry(now, lease_millis);
        let token = uuid::Uuid::new_v4().to_string();
        let mut connection = self.db.connection.clone();
        let fields: Option<Vec<String>> = self
            .claim
            .key(self.queued(profile))
            .key(self.running(profile))
            .arg(self.db.prefix())
            .arg(kind.unwrap_or_default())
            .arg(now.millis())
            .arg(expires.millis())
            .arg(worker)
            .arg(&token)
            .arg(wanted.unwrap_or_default())
            .invoke_async(&mut connection)
            .await
            .map_err(redis)?;
        let Some(fields) = fields else {
            return Ok(None);
        };
        let record = record(&fields)?;
        let lease = JobLease {
            job_id: record.id.clone(),
            worker: worker.to_owned(),
            token,
            expires_at: expires,
        };
        Ok(Some((record, lease)))
    }

    async fn leased(&self, lease: &JobLease, write: Write<'_>, now: Timestamp) -> Result<()> {
        let null = serde_json::Value::Null;
        let (op, stage, body, retry, expires) = match write {
            Write::Heartbeat(expires) => ("heartbeat", "", &null, false, expires),
            Write::Checkpoint(stage, body) => ("checkpoint", stage, body, false, now),
            Write::Complete(stage, body) => ("complete", stage, body, false, now),
            Write::Fail(stage, body, retry) => ("fail", stage, body, retry, now),
            Write::Release => ("release", "", &null, false, now),
        };
        let mut connection = self.db.connection.clone();
        let done: i64 = self
            .leased
            .key(self.job(&lease.job_id))
            .arg(self.db.prefix())
            .arg(&lease.token)
            .arg(op)
            .arg(stage)
            .arg(serde_json::to_string(body)?)
            .arg(if retry { "1" } else { "0" })
            .arg(now.millis())
            .arg(expires.millis())
            .invoke_async(&mut connection)
            .await
            .map_err(redis)?;
        if done == 0 {
            return Err(lease.lost());
        }
        Ok(())
    }
}

/// A write under a lease.
enum Write<'a> {
    /// Renew the lease until the time given.
    Heartbeat(Timestamp),
    /// Record the stage reached and its checkpoint.
    Checkpoint(&'a str, &'a serde_json::Value),
    /// Finish.
    Complete(&'a str, &'a serde_json::Value),
    /// Record a failed run (queued again when `true`).
    Fail(&'a str, &'a serde_json::Value, bool),
    /// Give the job back.
    Release,
}

#[async_trait]
impl JobQueue for RedisJobQueue {
    fn backend_name(&self) -> &'static str {
        "redis"
    }

    async fn enqueue(&self, job: NewJob, now: Timestamp) -> Result<JobRecord> {
        let body = serde_json::to_string(&job.body)?;
        let mut connection = self.db.connection.clone();
        let seq: i64 = self
            .enqueue
            .key(self.job(&job.id))
            .key(self.order(None))
            .key(self.order(Some(&job.profile)))
            .key(self.queued(None))
            .key(self.queued(Some(&job.profile)))
            .key(self.db.key("jobs:seq"))
            .arg(&job.id)
            .arg(&job.kind)
            .arg(&job.profile)
            .arg(&job.stage)
            .arg(body)
            .arg(now.millis())
            .invoke_async(&mut connection)
            .await
            .map_err(redis)?;
        if seq == 0 {
            return Err(MemoryError::AlreadyExists {
                kind: "job",
                id: job.id,
            });
        }
        Ok(JobRecord {
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
        })
    }

    async fn claim(
        &self,
        filter: &JobFilter,
        worker: &str,
        lease_millis: u64,
        now: Timestamp,
    ) -> Result<Option<(JobRecord, JobLease)>> {
        self.claim_one(
            filter.profile.as_deref(),
            filter.kind.as_deref(),
            None,
            worker,
            lease_millis,
            now,
        )
        .await
    }

    async fn claim_id(
        &self,
        id: &str,
        worker: &str,
        lease_millis: u64,
        now: Timestamp,
    ) -> Result<Option<(JobRecord, JobLease)>> {
        self.claim_one(None, None, Some(id), worker, lease_millis, now)
            .await
    }

    async fn heartbeat(
        &self,
        lease: &JobLease,
        lease_millis: u64,
        now: Timestamp,
    ) -> Result<JobLease> {
        let expires = JobLease::expiry(now, lease_millis);
        self.leased(lease, Write::Heartbeat(expires), now).await?;
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
        self.leased(lease, Write::Checkpoint(stage, &body), now)
            .await
    }

    async fn complete(
        &self,
        lease: &JobLease,
        stage: &str,
        body: serde_json::Value,
        now: Timestamp,
    ) -> Result<()> {
        self.leased(lease, Write::Complete(stage, &body), now).await
    }

    async fn fail(
        &self,
        lease: &JobLease,
        stage: &str,
        body: serde_json::Value,
        retry: bool,
        now: Timestamp,
    ) -> Result<()> {
        self.leased(lease, Write::Fail(stage, &body, retry), now)
            .await
    }

    async fn release(&self, lease: &JobLease, now: Timestamp) -> Result<()> {
        self.leased(lease, Write::Release, now).await
    }

    async fn retry(&self, id: &str, now: Timestamp) -> Result<bool> {
        let mut connection = self.db.connection.clone();
        let done: i64 = self
            .retry
            .key(self.job(id))
            .arg(self.db.prefix())
            .arg(now.millis())
            .invoke_async(&mut connection)
            .await
            .map_err(redis)?;
        Ok(done == 1)
    }

    async fn cancel(&self, id: &str, body: serde_json::Value, now: Timestamp) -> Result<bool> {
        let mut connection = self.db.connection.clone();
        let done: i64 = self
            .cancel
            .key(self.job(id))
            .arg(self.db.prefix())
            .arg(serde_json::to_string(&body)?)
            .arg(now.millis())
            .invoke_async(&mut connection)
            .await
            .map_err(redis)?;
        Ok(done == 1)
    }

    async fn get(&self, id: &str) -> Result<Option<JobRecord>> {
        let mut connection = self.db.connection.clone();
        let pairs: Vec<String> = redis::cmd("HGETALL")
            .arg(self.job(id))
            .query_async(&mut connection)
            .await
            .map_err(redis)?;
        if pairs.is_empty() {
            return Ok(None);
        }
        record(&pairs).map(Some)
    }

    async fn list(
        &self,
        filter: &JobFilter,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<JobPage> {
        let mut after = memory_core::cursor::parse_position(cursor.as_deref())?.unwrap_or(0);
        let profile = filter.profile.as_deref();
        // Every set read here is scored by enqueue sequence; each job read is checked
        // against the whole filter below.
        let order = match filter.state {
            Some(JobState::Queued) => self.queued(profile),
            Some(JobState::Failed) => {
                self.index_failed().await?;
                self.failed(profile)
            }
            _ => self.order(profile),
        };
        let mut connection = self.db.connection.clone();
        let mut jobs = Vec::new();
        let mut last = None;
        let mut more = false;
        'pages: loop {
            let page = page_after(&mut connection, &order, after).await?;
            if page.is_empty() {
                break;
            }
            let mut pipe = redis::pipe();
            for (id, _) in &page {
                pipe.cmd("HGETALL").arg(self.job(id));
            }
            let records: Vec<Vec<String>> =
                pipe.query_async(&mut connection).await.map_err(redis)?;
            for ((_, seq), pairs) in page.iter().zip(records) {
                after = *seq;
                if pairs.is_empty() {
                    continue; // deleted between the two reads
                }
                let job = record(&pairs)?;
                let wanted = filter.kind.as_ref().is_none_or(|k| *k == job.kind)
                    && filter.state.is_none_or(|s| s == job.state)
                    && filter.profile.as_ref().is_none_or(|p| *p == job.profile);
                if !wanted {
                    continue;
                }
                if jobs.len() == limit {
                    more = true;
                    break 'pages;
                }
                last = Some(*seq);
                jobs.push(job);
            }
            if page.len() < LIST_BATCH {
                break;
            }
        }
        Ok(JobPage {
            jobs,
            next_cursor: if more {
                last.map(memory_core::cursor::position)
            } else {
                None
            },
        })
    }

    async fn delete_profile_jobs(&self, profile: &str) -> Result<u64> {
        // Batch by batch, each batch leaving every index in one transaction, until the
        // profile's order is empty: a job enqueued meanwhile is taken by a later batch.
        let mut connection = self.db.connection.clone();
        let mut removed = 0u64;
        loop {
            let ids: Vec<String> = redis::cmd("ZRANGE")
                .arg(self.order(Some(profile)))
                .arg(0)
                .arg(LIST_BATCH - 1)
                .query_async(&mut connection)
                .await
                .map_err(redis)?;
            if ids.is_empty() {
                return Ok(removed);
            }
            let jobs: Vec<String> = ids.iter().map(|id| self.job(id)).collect();
            let mut pipe = redis::pipe();
            pipe.atomic().cmd("UNLINK").arg(&jobs);
            for set in [
                self.order(None),
                self.order(Some(profile)),
                self.queued(None),
                self.queued(Some(profile)),
                self.running(None),
                self.running(Some(profile)),
                self.failed(None),
                self.failed(Some(profile)),
            ] {
                pipe.cmd("ZREM").arg(set).arg(&ids).ignore();
            }
            let (deleted,): (u64,) = pipe.query_async(&mut connection).await.map_err(redis)?;
            removed += deleted;
        }
    }
}
