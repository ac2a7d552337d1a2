//! Contract of [`JobQueue`]. Times are explicit, so lease expiry is tested without waiting.

use std::sync::Arc;

use memory_core::ports::{JobFilter, JobQueue, JobState, NewJob};
use memory_core::{MemoryError, Timestamp};
use serde_json::json;

use super::unique;

fn job(id: &str, profile: &str) -> NewJob {
    NewJob {
        id: id.into(),
        kind: "ingest".into(),
        profile: profile.into(),
        stage: "queued".into(),
        body: json!({ "step": 0 }),
    }
}

fn only(profile: &str) -> JobFilter {
    JobFilter {
        profile: Some(profile.into()),
        ..JobFilter::default()
    }
}

/// Runs every job-queue contract check. `queue` must be shareable across tasks for the
/// concurrent-claim check.
pub async fn run_all(queue: Arc<dyn JobQueue>) {
    enqueue_is_durable_and_unique(queue.as_ref()).await;
    claims_take_the_oldest_and_lease_it(queue.as_ref()).await;
    a_lost_lease_refuses_every_write(queue.as_ref()).await;
    fail_retry_cancel_and_complete(queue.as_ref()).await;
    list_pages_and_filters(queue.as_ref()).await;
    listings_by_state_follow_every_move(queue.as_ref()).await;
    concurrent_claims_never_share_a_job(queue).await;
}

/// `enqueue` stores a queued job and refuses a duplicate id.
pub async fn enqueue_is_durable_and_unique(queue: &dyn JobQueue) {
    let profile = unique("jq");
    let id = unique("job");
    let record = queue
        .enqueue(job(&id, &profile), Timestamp(10))
        .await
        .unwrap();
    assert_eq!(record.state, JobState::Queued);
    assert_eq!(record.attempts, 0);
    assert_eq!(record.created_at, Timestamp(10));
    assert_eq!(queue.get(&id).await.unwrap(), Some(record));
    assert!(matches!(
        queue.enqueue(job(&id, &profile), Timestamp(11)).await,
        Err(MemoryError::AlreadyExists { .. })
    ));
    assert_eq!(queue.delete_profile_jobs(&profile).await.unwrap(), 1);
    assert!(queue.get(&id).await.unwrap().is_none());
}

/// A claim takes the oldest claimable job; a live lease keeps others off it; an expired one
/// lets another worker take it over, from the last checkpoint.
pub async fn claims_take_the_oldest_and_lease_it(queue: &dyn JobQueue) {
    let profile = unique("jq");
    let (first, second) = (unique("job"), unique("job"));
    queue
        .enqueue(job(&first, &profile), Timestamp(1))
        .await
        .unwrap();
    queue
        .enqueue(job(&second, &profile), Timestamp(2))
        .await
        .unwrap();
    let (record, lease) = queue
        .claim(&only(&profile), "w1", 1_000, Timestamp(100))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.id, first);
    assert_eq!(record.state, JobState::Running);
    assert_eq!(record.worker.as_deref(), Some("w1"));
    assert_eq!(lease.expires_at, Timestamp(1_100));
    queue
        .checkpoint(&lease, "extracting", json!({ "step": 1 }), Timestamp(200))
        .await
        .unwrap();
    let (other, _) = queue
        .claim(&only(&profile), "w2", 1_000, Timestamp(300))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(other.id, second, "a leased job is not claimed twice");
    assert!(
        queue
            .claim(&only(&profile), "w3", 1_000, Timestamp(400))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        queue
            .claim_id(&first, "w3", 1_000, Timestamp(400))
            .await
            .unwrap()
            .is_none()
    );
    let lease = queue
        .heartbeat(&lease, 1_000, Timestamp(900))
        .await
        .unwrap();
    assert_eq!(lease.expires_at, Timestamp(1_900));
    assert!(
        queue
            .claim_id(&first, "w3", 1_000, Timestamp(1_500))
            .await
            .unwrap()
            .is_none()
    );
    // w1 dies: after its lease runs out, w3 takes the job over from the checkpoint.
    let (taken, _) = queue
        .claim_id(&first, "w3", 1_000, Timestamp(2_000))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(taken.stage, "extracting");
    assert_eq!(taken.body, json!({ "step": 1 }));
    assert_eq!(taken.worker.as_deref(), Some("w3"));
    queue.delete_profile_jobs(&profile).await.unwrap();
}

/// Once the lease moved on, the old holder's writes are `Conflict` and change nothing.
pub async fn a_lost_lease_refuses_every_write(queue: &dyn JobQueue) {
    let profile = unique("jq");
    let id = unique("job");
    queue
        .enqueue(job(&id, &profile), Timestamp(0))
        .await
        .unwrap();
    let (_, old) = queue
        .claim_id(&id, "w1", 10, Timestamp(0))
        .await
        .unwrap()
        .unwrap();
    let (_, new) = queue
        .claim_id(&id, "w2", 1_000, Timestamp(20))
        .await
        .unwrap()
        .unwrap();
    let conflict = |r: memory_core::Result<()>| matches!(r, Err(MemoryError::Conflict { .. }));
    assert!(conflict(
        queue.checkpoint(&old, "x", json!(1), Timestamp(21)).await
    ));
    assert!(conflict(
        queue.complete(&old, "x", json!(1), Timestamp(21)).await
    ));
    assert!(conflict(
        queue.fail(&old, "x", json!(1), true, Timestamp(21)).await
    ));
    assert!(conflict(queue.release(&old, Timestamp(21)).await));
    assert!(matches!(
        queue.heartbeat(&old, 10, Timestamp(21)).await,
        Err(MemoryError::Conflict { .. })
    ));
    let record = queue.get(&id).await.unwrap().unwrap();
    assert_eq!(record.worker.as_deref(), Some("w2"));
    assert_eq!(record.body, json!({ "step": 0 }));
    queue.release(&new, Timestamp(22)).await.unwrap();
    assert_eq!(
        queue.get(&id).await.unwrap().unwrap().state,
        JobState::Queued
    );
    queue.delete_profile_jobs(&profile).await.unwrap();
}

/// `fail` counts attempts (and requeues with `retry`); `retry` requeues a failed job;
/// `cancel` is final, even for a running job; `complete` is final.
pub async fn fail_retry_cancel_and_complete(queue: &dyn JobQueue) {
    let profile = unique("jq");
    let id = unique("job");
    queue
        .enqueue(job(&id, &profile), Timestamp(0))
        .await
        .unwrap();
    let (_, lease) = queue
        .claim_id(&id, "w", 100, Timestamp(1))
        .await
        .unwrap()
        .unwrap();
    queue
        .fail(&lease, "extracting", json!("e1"), true, Timestamp(2))
        .await
        .unwrap();
    let record = queue.get(&id).await.unwrap().unwrap();
    assert_eq!((record.state, record.attempts), (JobState::Queued, 1));
    let (_, lease) = queue
        .claim_id(&id, "w", 100, Timestamp(3))
        .await
        .unwrap()
        .unwrap();
    queue
        .fail(&lease, "verifying", json!("e2"), false, Timestamp(4))
        .await
        .unwrap();
    let record = queue.get(&id).await.unwrap().unwrap();
    assert_eq!((record.state, record.attempts), (JobState::Failed, 2));
    assert_eq!(record.stage, "verifying");
    assert!(
        queue
            .claim_id(&id, "w", 100, Timestamp(5))
            .await
            .unwrap()
            .is_none()
    );
    assert!(queue.retry(&id, Timestamp(6)).await.unwrap());
    assert!(
        !queue.retry(&id, Timestamp(6)).await.unwrap(),
        "only a failed job is retried"
    );
    let (_, lease) = queue
        .claim_id(&id, "w", 100, Timestamp(7))
        .await
        .unwrap()
        .unwrap();
    assert!(
        queue
            .cancel(&id, json!("scrubbed"), Timestamp(8))
            .await
            .unwrap()
    );
    assert!(matches!(
        queue
            .checkpoint(&lease, "x", json!("secret"), Timestamp(9))
            .await,
        Err(MemoryError::Conflict { .. })
    ));
    let record = queue.get(&id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Cancelled);
    assert_eq!(record.body, json!("scrubbed"));
    assert!(
        queue
            .claim_id(&id, "w", 100, Timestamp(10_000))
            .await
            .unwrap()
            .is_none()
    );

    let done = unique("job");
    queue
        .enqueue(job(&done, &profile), Timestamp(0))
        .await
        .unwrap();
    let (_, lease) = queue
        .claim_id(&done, "w", 100, Timestamp(1))
        .await
        .unwrap()
        .unwrap();
    queue
        .complete(&lease, "done", json!({ "ok": true }), Timestamp(2))
        .await
        .unwrap();
    let record = queue.get(&done).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Done);
    assert_eq!((record.worker, record.lease_expires_at), (None, None));
    assert!(
        !queue
            .cancel(&done, json!(null), Timestamp(3))
            .await
            .unwrap()
    );
    assert!(
        queue
            .claim_id(&done, "w", 100, Timestamp(10_000))
            .await
            .unwrap()
            .is_none()
    );
    queue.delete_profile_jobs(&profile).await.unwrap();
}

/// `list` pages oldest first with opaque cursors, filtered by profile, kind and state.
pub async fn list_pages_and_filters(queue: &dyn JobQueue) {
    let profile = unique("jq");
    let ids: Vec<String> = (0..5).map(|_| unique("job")).collect();
    for (i, id) in ids.iter().enumerate() {
        queue
            .enqueue(job(id, &profile), Timestamp(i as i64))
            .await
            .unwrap();
    }
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = queue.list(&only(&profile), cursor, 2).await.unwrap();
        assert!(page.jobs.len() <= 2);
        seen.extend(page.jobs.into_iter().map(|j| j.id));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, ids);
    queue
        .claim_id(&ids[1], "w", 100, Timestamp(10))
        .await
        .unwrap()
        .unwrap();
    let running = JobFilter {
        state: Some(JobState::Running),
        ..only(&profile)
    };
    let page = queue.list(&running, None, 10).await.unwrap();
    assert_eq!(page.jobs.len(), 1);
    assert_eq!(page.jobs[0].id, ids[1]);
    let other_kind = JobFilter {
        kind: Some("reembed".into()),
        ..only(&profile)
    };
    assert!(
        queue
            .list(&other_kind, None, 10)
            .await
            .unwrap()
            .jobs
            .is_empty()
    );
    assert!(
        queue
            .list(&only(&profile), Some("not a cursor".into()), 10)
            .await
            .is_err()
    );
    assert_eq!(queue.delete_profile_jobs(&profile).await.unwrap(), 5);
}

/// A listing by state holds exactly the jobs in that state, oldest first and page by page,
/// after every move: a failure with and without retry, a retry, a completion, a
/// cancellation, and a claim.
pub async fn listings_by_state_follow_every_move(queue: &dyn JobQueue) {
    let (profile, other) = (unique("jq"), unique("jq"));
    let profile = &profile;
    let ids: Vec<String> = (0..6).map(|_| unique("job")).collect();
    for (i, id) in ids.iter().enumerate() {
        queue
            .enqueue(job(id, profile), Timestamp(i as i64))
            .await
            .unwrap();
    }
    // A failed job of another profile, which no listing of `profile` shows.
    let stranger = unique("job");
    queue
        .enqueue(job(&stranger, &other), Timestamp(6))
        .await
        .unwrap();
    let fail = |id: String, retry: bool, at: i64| async move {
        let (_, lease) = queue
            .claim_id(&id, "w", 100, Timestamp(at))
            .await
            .unwrap()
            .unwrap();
        queue
            .fail(&lease, "extracting", json!("e"), retry, Timestamp(at + 1))
            .await
            .unwrap();
    };
    fail(ids[0].clone(), false, 10).await;
    fail(ids[2].clone(), false, 12).await;
    fail(ids[4].clone(), false, 14).await;
    fail(ids[1].clone(), true, 16).await;
    fail(stranger.clone(), false, 18).await;
    let (_, lease) = queue
        .claim_id(&ids[5], "w", 100, Timestamp(20))
        .await
        .unwrap()
        .unwrap();
    queue
        .complete(&lease, "done", json!(null), Timestamp(21))
        .await
        .unwrap();
    let listed = |state: JobState| {
        let filter = JobFilter {
            state: Some(state),
            ..only(profile)
        };
        async move {
            let (mut seen, mut cursor) = (Vec::new(), None);
            loop {
                let page = queue.list(&filter, cursor, 2).await.unwrap();
                assert!(
                    page.jobs
                        .iter()
                        .all(|j| j.state == state && j.profile == *profile)
                );
                seen.extend(page.jobs.into_iter().map(|j| j.id));
                match page.next_cursor {
                    Some(next) => cursor = Some(next),
                    None => return seen,
                }
            }
        }
    };
    assert_eq!(
        listed(JobState::Failed).await,
        [&ids[0], &ids[2], &ids[4]].map(String::clone)
    );
    assert_eq!(
        listed(JobState::Queued).await,
        [&ids[1], &ids[3]].map(String::clone)
    );
    assert_eq!(listed(JobState::Done).await, [ids[5].clone()]);
    assert!(queue.retry(&ids[2], Timestamp(30)).await.unwrap());
    assert!(
        queue
            .cancel(&ids[4], json!(null), Timestamp(31))
            .await
            .unwrap()
    );
    // A failure after the first listings is listed too.
    fail(ids[3].clone(), false, 32).await;
    queue
        .claim_id(&ids[1], "w", 100, Timestamp(34))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        listed(JobState::Failed).await,
        [&ids[0], &ids[3]].map(String::clone)
    );
    assert_eq!(listed(JobState::Queued).await, [ids[2].clone()]);
    assert_eq!(listed(JobState::Running).await, [ids[1].clone()]);
    assert_eq!(listed(JobState::Cancelled).await, [ids[4].clone()]);
    assert_eq!(queue.delete_profile_jobs(profile).await.unwrap(), 6);
    assert!(listed(JobState::Failed).await.is_empty());
    assert!(listed(JobState::Queued).await.is_empty());
    assert_eq!(queue.delete_profile_jobs(&other).await.unwrap(), 1);
}

/// Of many concurrent claims, each job goes to exactly one.
pub async fn concurrent_claims_never_share_a_job(queue: Arc<dyn JobQueue>) {
    concurrent_claims_across_instances_never_share_a_job(vec![queue]).await;
}

/// Of many concurrent claims through several instances on the same data (as several worker
/// processes would hold), each job goes to exactly one.
pub async fn concurrent_claims_across_instances_never_share_a_job(queues: Vec<Arc<dyn JobQueue>>) {
    let Some(queue) = queues.first().map(Arc::clone) else {
        return;
    };
    let profile = unique("jq");
    for i in 0..8 {
        queue
            .enqueue(job(&unique("job"), &profile), Timestamp(i))
            .await
            .unwrap();
    }
    let mut tasks = Vec::new();
    for w in 0..16 {
        let queue = Arc::clone(&queues[w % queues.len()]);
        let filter = only(&profile);
        tasks.push(tokio::spawn(async move {
            queue
                .claim(&filter, &format!("w{w}"), 60_000, Timestamp(100))
                .await
                .unwrap()
                .map(|(record, _)| record.id)
        }));
    }
    let mut claimed = Vec::new();
    for task in tasks {
        if let Some(id) = task.await.unwrap() {
            claimed.push(id);
        }
    }
    assert_eq!(claimed.len(), 8, "every job claimed once: {claimed:?}");
    claimed.sort();
    claimed.dedup();
    assert_eq!(claimed.len(), 8, "no job claimed twice");
    queue.delete_profile_jobs(&profile).await.unwrap();
}
