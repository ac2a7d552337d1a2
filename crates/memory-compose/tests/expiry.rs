//! Expiry on the compositions that hold long-term records: the embedded default (SQLite) and
//! every role on PostgreSQL. `[memory.lifetimes]` gives new tasks their lifetime; an expired
//! memory leaves recall and the current list by the clock; the sweep (a job on the
//! deployment's queue) forgets it durably; purge erases it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use memory_compose::Deployment;
use memory_core::Timestamp;
use memory_core::ports::{MemoryFilter, MemoryKind};
use memory_engine::long_term::{
    EXPIRED_REASON, MemoryService, RecallItem, RecallRequest, RememberRequest,
};
use memory_testkit::in_memory::ManualClock;

const LIFETIMES: &str = "\n[memory]\nembedder = \"none\"\n\n[memory.lifetimes]\ntask = \"30d\"\n";
const DAY: i64 = 86_400_000;

fn note(content: &str, kind: MemoryKind, expires_at: Option<i64>) -> RememberRequest {
    RememberRequest {
        content: content.into(),
        kind: Some(kind),
        expires_at: expires_at.map(Timestamp),
        ..RememberRequest::default()
    }
}

async fn recalled(memory: &MemoryService, query: &str) -> Vec<String> {
    let response = memory
        .recall("ada", RecallRequest::new(query, 10))
        .await
        .unwrap();
    response
        .hits
        .into_iter()
        .filter_map(|h| match h.item {
            RecallItem::Memory(m) => Some(m.id),
            RecallItem::Raw { .. } => None,
        })
        .collect()
}

/// Every memory of "ada", expired and forgotten ones too.
async fn audit(memory: &MemoryService) -> Vec<memory_core::ports::MemoryRecord> {
    let all = MemoryFilter {
        include_forgotten: true,
        ..MemoryFilter::default()
    };
    memory.list("ada", &all, None, 10).await.unwrap().memories
}

async fn expiry_through_the_deployment(deployment: &Deployment) {
    let (configured, _) = deployment.memory_service().await.unwrap();
    let task = configured
        .remember(
            "ada",
            note("Water the plants on Friday", MemoryKind::Task, None),
        )
        .await
        .unwrap();
    assert_eq!(
        task.expires_at,
        Some(Timestamp(task.recorded_at.millis() + 30 * DAY)),
        "[memory.lifetimes] task = \"30d\""
    );

    // The same backends on a clock the test moves.
    let clock = Arc::new(ManualClock::new(task.recorded_at.millis()));
    let memory = MemoryService::new(
        deployment.long_term_backends().await.unwrap(),
        clock.clone(),
    );
    let now = clock_now(&clock);
    let errand = memory
        .remember(
            "ada",
            note(
                "Pick up the plants order",
                MemoryKind::Fact,
                Some(now + 1_000),
            ),
        )
        .await
        .unwrap();
    let lasting = memory
        .remember("ada", note("The plants like shade", MemoryKind::Fact, None))
        .await
        .unwrap();
    let mut found = recalled(&memory, "plants").await;
    found.sort();
    let mut all = vec![task.id.clone(), errand.id.clone(), lasting.id.clone()];
    all.sort();
    assert_eq!(found, all);

    clock.set(now + 1_000);
    let found = recalled(&memory, "plants").await;
    assert!(!found.contains(&errand.id), "expired: {found:?}");
    assert_eq!(found.len(), 2);
    let current = memory
        .list("ada", &MemoryFilter::default(), None, 10)
        .await
        .unwrap()
        .memories;
    assert!(current.iter().all(|m| m.id != errand.id));

    clock.set(now + 31 * DAY);
    assert_eq!(
        recalled(&memory, "plants").await,
        std::slice::from_ref(&lasting.id)
    );
    let sweep = memory.sweep_expired("ada").await.unwrap().unwrap();
    assert_eq!(sweep.expired, 2);
    assert!(memory.sweep_expired("ada").await.unwrap().is_none());
    for m in &audit(&memory).await {
        let expired = m.id == task.id || m.id == errand.id;
        assert_eq!(
            m.forgotten.as_ref().map(|f| (f.reason.as_str(), f.at)),
            expired.then(|| (EXPIRED_REASON, m.expires_at.unwrap())),
            "{m:?}"
        );
    }
    assert!(memory.purge("ada", &errand.id, false).await.unwrap().memory);
    let left = audit(&memory).await;
    assert_eq!(left.len(), 2, "purge erases an expired memory");
}

fn clock_now(clock: &ManualClock) -> i64 {
    memory_core::ports::Clock::now(clock).millis()
}

#[tokio::test]
async fn expiry_on_the_embedded_default() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("memory.toml"), LIFETIMES).unwrap();
    let deployment = Deployment::open(dir.path()).unwrap();
    expiry_through_the_deployment(&deployment).await;
    deployment.close().await;
}

#[tokio::test]
async fn expiry_on_postgres() {
    common::on_postgres("test_expiry", LIFETIMES, expiry_through_the_deployment).await;
}
