//! Expiry: explicit and per-kind lifetimes, hidden from recall and lists by the clock, made
//! durable by the sweep (one worker of several per profile and minute), erased by purge.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use memory_core::ports::{
    JobFilter, JobQueue, MemoryFilter, MemoryKind, MemoryRecord, VectorIndexes,
};
use memory_core::{MemoryError, Timestamp};
use memory_testkit::in_memory::{HashingEmbedder, InMemoryProfiles, ManualClock};

use super::*;

struct Rig {
    profiles: Arc<InMemoryProfiles>,
    clock: Arc<ManualClock>,
}

impl Rig {
    fn new() -> Self {
        Self {
            profiles: Arc::new(InMemoryProfiles::new()),
            clock: Arc::new(ManualClock::new(1_000)),
        }
    }

    /// A service (a worker) over the rig's shared backends; tasks live 2 s by default.
    fn service(&self) -> MemoryService {
        let clock: Arc<dyn memory_core::ports::Clock> = self.clock.clone();
        MemoryService::new(super::in_memory(Arc::clone(&self.profiles)), clock)
            .with_embedder(Arc::new(HashingEmbedder::new(32)))
            .with_config(LongTermConfig {
                lifetimes: KindLifetimes {
                    task: Some(2_000),
                    ..KindLifetimes::default()
                },
                ..LongTermConfig::default()
            })
    }
}

fn note(content: &str, kind: MemoryKind, expires_at: Option<i64>) -> RememberRequest {
    RememberRequest {
        content: content.into(),
        kind: Some(kind),
        expires_at: expires_at.map(Timestamp),
        ..RememberRequest::default()
    }
}

async fn listed(s: &MemoryService, filter: MemoryFilter) -> Vec<MemoryRecord> {
    s.list("ada", &filter, None, 100).await.unwrap().memories
}

/// Every memory, expired and forgotten ones too.
async fn audit(s: &MemoryService) -> Vec<MemoryRecord> {
    listed(
        s,
        MemoryFilter {
            include_forgotten: true,
            ..MemoryFilter::default()
        },
    )
    .await
}

/// The queue's expiry sweep jobs.
async fn sweep_jobs(rig: &Rig) -> Vec<memory_core::ports::JobRecord> {
    rig.profiles
        .jobs()
        .list(
            &JobFilter {
                kind: Some(EXPIRE_KIND.to_owned()),
                ..JobFilter::default()
            },
            None,
            10,
        )
        .await
        .unwrap()
        .jobs
}

async fn recalled(s: &MemoryService, query: &str) -> Vec<String> {
    let response = s
        .recall("ada", RecallRequest::new(query, 10))
        .await
        .unwrap();
    response
        .hits
        .into_iter()
        .filter_map(|h| match h.item {
            RecallItem::Memory(m) => Some(m.content),
            RecallItem::Raw { .. } => None,
        })
        .collect()
}

#[tokio::test]
async fn expired_memories_leave_recall_and_lists_at_once_and_the_sweep_forgets_them() {
    let rig = Rig::new();
    let s = rig.service();
    let passport = s
        .remember(
            "ada",
            note(
                "Renew the passport before the trip",
                MemoryKind::Fact,
                Some(5_000),
            ),
        )
        .await
        .unwrap();
    assert_eq!(passport.expires_at, Some(Timestamp(5_000)));
    let task = s
        .remember(
            "ada",
            note("Book the passport photo", MemoryKind::Task, None),
        )
        .await
        .unwrap();
    assert_eq!(
        task.expires_at,
        Some(Timestamp(3_000)),
        "a task gets its kind's lifetime from when it was recorded"
    );
    let lasting = s
        .remember(
            "ada",
            note("The passport number ends in 42", MemoryKind::Fact, None),
        )
        .await
        .unwrap();
    assert_eq!(
        lasting.expires_at, None,
        "facts have no default lifetime here"
    );
    assert_eq!(recalled(&s, "passport").await.len(), 3);

    // The task's lifetime is over: gone from recall and from the current list before any sweep.
    rig.clock.set(3_000);
    let recall = recalled(&s, "passport").await;
    assert_eq!(recall.len(), 2, "{recall:?}");
    assert!(!recall.contains(&task.content));
    let current: Vec<String> = listed(&s, MemoryFilter::default())
        .await
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(current, [passport.id.clone(), lasting.id.clone()]);

    rig.clock.set(6_000);
    assert_eq!(
        recalled(&s, "passport").await,
        std::slice::from_ref(&lasting.content)
    );
    let kept = audit(&s).await;
    assert_eq!(kept.len(), 3, "expired memories stay for audit");
    assert!(kept.iter().all(|m| m.forgotten.is_none()), "not swept yet");

    let sweep = s.sweep_expired("ada").await.unwrap().unwrap();
    assert_eq!(sweep.expired, 2);
    let reasons: Vec<(String, Option<(String, i64)>)> = audit(&s)
        .await
        .iter()
        .map(|m| {
            let forgotten = m
                .forgotten
                .as_ref()
                .map(|f| (f.reason.clone(), f.at.millis()));
            (m.id.clone(), forgotten)
        })
        .collect();
    assert_eq!(
        reasons,
        [
            (
                passport.id.clone(),
                Some((EXPIRED_REASON.to_owned(), 5_000))
            ),
            (task.id.clone(), Some((EXPIRED_REASON.to_owned(), 3_000))),
            (lasting.id.clone(), None),
        ],
        "forgotten as expired, at the time each expired"
    );
    let vectors = rig.profiles.vector_index("ada").await.unwrap();
    assert!(
        vectors
            .get(
                super::vectorize::MEMORY_NAMESPACE,
                std::slice::from_ref(&passport.id)
            )
            .await
            .unwrap()
            .is_empty(),
        "an expired memory loses its vector"
    );
    assert!(
        s.sweep_expired("ada").await.unwrap().is_none(),
        "nothing left to do"
    );
    let jobs = sweep_jobs(&rig).await;
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].state, memory_core::ports::JobState::Done);
    assert_eq!(jobs[0].body["expired"], 2);
    assert!(
        s.jobs("ada").await.unwrap().is_empty(),
        "sweeps are not ingest jobs"
    );

    // Purge erases an expired memory like any other.
    assert!(s.purge("ada", &passport.id, false).await.unwrap().memory);
    let left = audit(&s).await;
    assert_eq!(left.len(), 2);
    assert!(left.iter().all(|m| m.id != passport.id));
}

#[tokio::test]
async fn of_several_workers_one_sweeps_a_profile_and_nothing_is_forgotten_twice() {
    let rig = Rig::new();
    let (a, b) = (rig.service(), rig.service());
    for i in 0..600 {
        a.remember(
            "ada",
            note(&format!("errand {i}"), MemoryKind::Fact, Some(2_000 + i)),
        )
        .await
        .unwrap();
    }
    rig.clock.set(10_000);
    let (from_a, from_b) = tokio::join!(a.sweep_expired("ada"), b.sweep_expired("ada"));
    let swept: u64 = [from_a.unwrap(), from_b.unwrap()]
        .into_iter()
        .flatten()
        .map(|s| s.expired)
        .sum();
    assert_eq!(swept, 600, "every expired memory is forgotten exactly once");
    let jobs = sweep_jobs(&rig).await;
    assert_eq!(jobs.len(), 1, "one sweep job for the profile and minute");
    assert!(audit(&a).await.iter().all(|m| m.forgotten.is_some()));
}

#[tokio::test]
async fn an_expiry_in_the_past_is_refused_and_nothing_is_stored() {
    let rig = Rig::new();
    let s = rig.service();
    let refused = s
        .remember("ada", note("Too late", MemoryKind::Fact, Some(1_000)))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, MemoryError::InvalidInput { .. }),
        "{refused}"
    );
    assert!(
        refused.to_string().contains("not in the future"),
        "{refused}"
    );
    assert!(
        s.list_profiles().await.unwrap().is_empty()
            || listed(&s, MemoryFilter::default()).await.is_empty()
    );
}
