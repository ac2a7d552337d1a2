//! The shared contract suites against a real Redis (`scripts/setup-redis.sh` starts one; the
//! test command requires it). Each test works under a key prefix of its own and deletes it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use memory_core::ports::{JobQueue, KeyValueStore, SessionRegistry};
use memory_core::{NewSession, SessionId, Timestamp};
use memory_redis::{
    Durability, RedisConfig, RedisDatabase, RedisJobQueue, RedisKeyValueStore, RedisSessionRegistry,
};
use memory_testkit::contract;

/// The test server's URL, or `None` (skipped, saying so) when none is configured and none
/// is required.
fn redis_url() -> Option<String> {
    let Ok(url) = std::env::var("MEMORY_REDIS_URL") else {
        assert!(
            std::env::var("MEMORY_REQUIRE_REDIS").is_err(),
            "MEMORY_REQUIRE_REDIS is set but MEMORY_REDIS_URL is not (run scripts/setup-redis.sh)"
        );
        eprintln!("skipped: MEMORY_REDIS_URL is not set (scripts/setup-redis.sh starts a server)");
        return None;
    };
    Some(url)
}

/// A deployment under a fresh prefix of its own.
async fn fresh_database(name: &str) -> Option<RedisDatabase> {
    let url = redis_url()?;
    let prefix = format!("memorytest:{name}:{}:", uuid::Uuid::new_v4().simple());
    Some(
        RedisDatabase::connect(RedisConfig::new(url).key_prefix(prefix))
            .await
            .unwrap(),
    )
}

#[tokio::test]
async fn redis_key_value_store_passes_the_contract() {
    let Some(db) = fresh_database("kv").await else {
        return;
    };
    contract::key_value_store::run_all(&RedisKeyValueStore::new(db.clone())).await;
    db.drop_all().await.unwrap();
}

#[tokio::test]
async fn redis_session_registry_passes_the_contract() {
    let Some(db) = fresh_database("registry").await else {
        return;
    };
    contract::session_registry::run_all(&RedisSessionRegistry::new(db.clone())).await;
    db.drop_all().await.unwrap();
}

#[tokio::test]
async fn redis_job_queue_passes_the_contract() {
    let Some(db) = fresh_database("jobs").await else {
        return;
    };
    contract::job_queue::run_all(Arc::new(RedisJobQueue::new(db.clone()))).await;
    db.drop_all().await.unwrap();
}

/// Four instances, each with its own connection (as four worker processes hold), claiming
/// from one queue at once: every job goes to exactly one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_through_separate_connections_never_share_a_job() {
    let Some(db) = fresh_database("jobs-multi").await else {
        return;
    };
    let url = std::env::var("MEMORY_REDIS_URL").unwrap();
    let mut queues: Vec<Arc<dyn JobQueue>> = Vec::new();
    for _ in 0..4 {
        let own = RedisDatabase::connect(RedisConfig::new(url.clone()).key_prefix(db.prefix()))
            .await
            .unwrap();
        queues.push(Arc::new(RedisJobQueue::new(own)));
    }
    for _ in 0..5 {
        contract::job_queue::concurrent_claims_across_instances_never_share_a_job(queues.clone())
            .await;
    }
    db.drop_all().await.unwrap();
}

/// Deleting a session's record and a prefix of keys leaves no key of them behind: the
/// keyspace under the prefix is scanned afterwards.
#[tokio::test]
async fn deletes_leave_no_keys_behind() {
    let Some(db) = fresh_database("deletes").await else {
        return;
    };
    let registry = RedisSessionRegistry::new(db.clone());
    let kv = RedisKeyValueStore::new(db.clone());
    let id = SessionId::new("s1").unwrap();
    registry
        .create(&id, &NewSession::default(), Timestamp(1))
        .await
        .unwrap();
    for key in ["block:s1:memory", "block:s1:todos", "prompt:s1"] {
        kv.set(key, "value").await.unwrap();
    }
    kv.set("block:s2:memory", "kept").await.unwrap();
    assert!(registry.delete(&id).await.unwrap());
    assert_eq!(kv.delete_prefix("block:s1:").await.unwrap(), 2);
    assert!(kv.delete("prompt:s1").await.unwrap());
    let left = db.all_keys().await.unwrap();
    assert!(
        left.iter().all(|k| !k.contains("s1")),
        "keys of the deleted session remain: {left:?}"
    );
    assert!(left.iter().any(|k| k.ends_with("kv:v:block:s2:memory")));
    db.drop_all().await.unwrap();
    assert!(db.all_keys().await.unwrap().is_empty());
}

/// The test server runs with `appendfsync always`, and the adapter reads it.
#[tokio::test]
async fn the_servers_durability_is_read_at_connect() {
    let Some(db) = fresh_database("durability").await else {
        return;
    };
    if std::env::var("MEMORY_REQUIRE_REDIS").is_ok() {
        assert_eq!(db.durability(), &Durability::EveryWrite);
    }
}

#[tokio::test]
async fn a_prefix_that_could_collide_is_refused() {
    let Some(url) = redis_url() else {
        return;
    };
    for bad in ["", "memory", "two words:"] {
        let error = RedisDatabase::connect(RedisConfig::new(url.clone()).key_prefix(bad))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("prefix"), "{error}");
    }
}

/// A claim takes the oldest by enqueue order among queued jobs and jobs whose lease ran
/// out, and never one running under a live lease, however many there are.
#[tokio::test]
async fn claims_merge_expired_leases_with_the_queue_in_enqueue_order() {
    use memory_core::ports::{JobFilter, NewJob};
    let Some(db) = fresh_database("jobs-order").await else {
        return;
    };
    let queue = RedisJobQueue::new(db.clone());
    let job = |id: &str| NewJob {
        id: id.into(),
        kind: "ingest".into(),
        profile: "p".into(),
        stage: "queued".into(),
        body: serde_json::json!({}),
    };
    for (i, id) in ["a", "b", "c"].iter().enumerate() {
        queue.enqueue(job(id), Timestamp(i as i64)).await.unwrap();
    }
    for i in 0..50 {
        queue
            .enqueue(job(&format!("live-{i}")), Timestamp(10))
            .await
            .unwrap();
        queue
            .claim_id(&format!("live-{i}"), "busy", 1_000_000, Timestamp(10))
            .await
            .unwrap()
            .unwrap();
    }
    let any = JobFilter::default();
    let claim = |now: i64, lease: u64| {
        let (queue, any) = (&queue, &any);
        async move {
            queue
                .claim(any, "w", lease, Timestamp(now))
                .await
                .unwrap()
                .map(|(record, _)| record.id)
        }
    };
    assert_eq!(claim(100, 1_000_000).await.as_deref(), Some("a"));
    assert_eq!(
        claim(100, 100).await.as_deref(),
        Some("b"),
        "b's lease ends at 200"
    );
    assert_eq!(
        claim(300, 1_000_000).await.as_deref(),
        Some("b"),
        "b (expired) before c (queued later)"
    );
    assert_eq!(claim(300, 1_000_000).await.as_deref(), Some("c"));
    assert_eq!(
        claim(300, 1_000_000).await,
        None,
        "the 50 live leases are never taken"
    );
    db.drop_all().await.unwrap();
}
