//! The shared contract suites against a real Redis (`scripts/setup-redis.sh` starts one; the
//! test command requires it). Each test works under a key prefix of its own and deletes it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use memory_core::ports::{JobQueue, KeyValueStore, SessionRegistry};
use memory_core::{NewSession, SessionId, Timestamp};
use memory_redis::{
    Durability, RedisConfig, RedisDatabase, RedisJobQueue, RedisKeyValueStore, RedisMessageStore,
    RedisSessionRegistry, RedisSkillStore,
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

/// The whole message-store contract, the 100,000-message path included. (Search is the
/// text index's: the pairing with the embedded index is `memory-compose`'s test.)
#[tokio::test]
async fn redis_message_store_passes_the_contract() {
    let Some(db) = fresh_database("messages").await else {
        return;
    };
    contract::message_store::run_all(&RedisMessageStore::new(db.clone()), None, 100_000).await;
    db.drop_all().await.unwrap();
}

#[tokio::test]
async fn redis_skill_store_passes_the_contract() {
    let Some(db) = fresh_database("skills").await else {
        return;
    };
    contract::skill_store::run_all(&RedisSkillStore::new(db.clone(), "skills")).await;
    db.drop_all().await.unwrap();
}

/// Eight writers, each with its own connection (as eight server processes hold), append to
/// one session at once, each a chain of batches under the latest leaf: nothing is lost,
/// every message is stored once, and the tree stays one linear history (each append saw
/// the one before it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appends_through_separate_connections_lose_nothing() {
    use memory_core::ports::{MessageStore, MessageStoreExt};
    use memory_core::{NewMessage, Role, UiMessage};
    let Some(db) = fresh_database("messages-multi").await else {
        return;
    };
    let url = std::env::var("MEMORY_REDIS_URL").unwrap();
    let session = SessionId::new("shared").unwrap();
    let mut writers = Vec::new();
    for w in 0..8 {
        let own = RedisDatabase::connect(RedisConfig::new(url.clone()).key_prefix(db.prefix()))
            .await
            .unwrap();
        let store = RedisMessageStore::new(own);
        let session = session.clone();
        writers.push(tokio::spawn(async move {
            for b in 0..10 {
                let batch = (0..3)
                    .map(|i| {
                        NewMessage::new(UiMessage::text_message(
                            format!("w{w}-b{b}-{i}"),
                            Role::User,
                            "hello",
                        ))
                    })
                    .collect();
                store.append(&session, batch).await.unwrap();
            }
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }
    let store = RedisMessageStore::new(db.clone());
    let history = store.history(&session, None).await.unwrap();
    assert_eq!(
        history.len(),
        8 * 10 * 3,
        "one linear history of every message"
    );
    let mut ids: Vec<&str> = history.iter().map(|m| m.id.as_str()).collect();
    // Each batch is contiguous and in order on the path.
    for chunk in ids.chunks(3) {
        let head = chunk[0].trim_end_matches("-0");
        assert_eq!(
            chunk,
            [
                format!("{head}-0"),
                format!("{head}-1"),
                format!("{head}-2")
            ]
        );
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 240);
    assert_eq!(store.path_length(&session, None).await.unwrap(), 240);
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

/// A job that failed before the queue kept its failed jobs in sets of their own (as an
/// older version left it: in no such set, and no marker that they were filled) is found by
/// the next listing of failed jobs; and deleting the profile's jobs leaves none of the sets.
#[tokio::test]
async fn failed_jobs_from_before_the_failed_sets_are_listed() {
    use memory_core::ports::{JobFilter, JobState, NewJob};
    let Some(db) = fresh_database("jobs-failed").await else {
        return;
    };
    let queue = RedisJobQueue::new(db.clone());
    let failed_in = |profile: &str| JobFilter {
        profile: Some(profile.to_owned()),
        kind: None,
        state: Some(JobState::Failed),
    };
    for id in ["j1", "j2"] {
        let job = NewJob {
            id: id.into(),
            kind: "ingest".into(),
            profile: "p".into(),
            stage: "queued".into(),
            body: serde_json::json!({}),
        };
        queue.enqueue(job, Timestamp(1)).await.unwrap();
    }
    let (_, lease) = queue
        .claim_id("j1", "w", 100, Timestamp(2))
        .await
        .unwrap()
        .unwrap();
    queue
        .fail(
            &lease,
            "extracting",
            serde_json::json!("e"),
            false,
            Timestamp(3),
        )
        .await
        .unwrap();
    let ids = |page: memory_core::ports::JobPage| -> Vec<String> {
        page.jobs.into_iter().map(|j| j.id).collect()
    };
    assert_eq!(
        ids(queue.list(&failed_in("p"), None, 10).await.unwrap()),
        ["j1"]
    );

    let client = redis::Client::open(std::env::var("MEMORY_REDIS_URL").unwrap()).unwrap();
    let mut raw = client.get_multiplexed_async_connection().await.unwrap();
    let prefix = db.prefix().to_owned();
    let mut forget = redis::pipe();
    forget
        .cmd("ZREM")
        .arg(format!("{prefix}jobs:failed"))
        .arg("j1");
    forget
        .cmd("ZREM")
        .arg(format!("{prefix}jobs:failed:p"))
        .arg("j1");
    forget
        .cmd("DEL")
        .arg(format!("{prefix}jobs:failed-indexed"));
    let (a, b, c): (u64, u64, u64) = forget.query_async(&mut raw).await.unwrap();
    assert_eq!(
        (a, b, c),
        (1, 1, 1),
        "the sets and the marker as this version keeps them"
    );
    // A queue that has seen the marker trusts the sets without reading it again.
    assert!(ids(queue.list(&failed_in("p"), None, 10).await.unwrap()).is_empty());
    // A process started on the older data fills the sets on its first listing.
    let started = RedisJobQueue::new(db.clone());
    assert_eq!(
        ids(started.list(&failed_in("p"), None, 10).await.unwrap()),
        ["j1"]
    );
    assert!(ids(started.list(&failed_in("q"), None, 10).await.unwrap()).is_empty());
    assert_eq!(
        ids(queue.list(&failed_in("p"), None, 10).await.unwrap()),
        ["j1"]
    );

    assert_eq!(queue.delete_profile_jobs("p").await.unwrap(), 2);
    let left = db.all_keys().await.unwrap();
    assert!(
        left.iter()
            .all(|k| !k.contains("jobs:failed:") && !k.ends_with("jobs:failed")),
        "failed sets remain: {left:?}"
    );
    db.drop_all().await.unwrap();
}

/// Deleting a session's record and a prefix of keys leaves no key of them behind: the
/// keyspace under the prefix is scanned afterwards.
#[tokio::test]
async fn deletes_leave_no_keys_behind() {
    let Some(db) = fresh_database("deletes").await else {
        return;
    };
    use memory_core::ports::{MessageStore, MessageStoreExt};
    use memory_core::{NewCompaction, Parent, Role, UiMessage};
    let registry = RedisSessionRegistry::new(db.clone());
    let kv = RedisKeyValueStore::new(db.clone());
    let messages = RedisMessageStore::new(db.clone());
    let id = SessionId::new("s1").unwrap();
    let other = SessionId::new("s2").unwrap();
    for (session, parent) in [(&id, Parent::LatestLeaf), (&other, Parent::LatestLeaf)] {
        for m in ["a", "b", "c"] {
            let message = UiMessage::text_message(m, Role::User, "text");
            messages
                .append_one(session, message, parent.clone())
                .await
                .unwrap();
        }
    }
    messages
        .append_one(
            &id,
            UiMessage::text_message("d", Role::User, "branch"),
            Parent::message("a"),
        )
        .await
        .unwrap();
    messages
        .add_compaction(
            &id,
            NewCompaction {
                summary: "summary".into(),
                from_message_id: "a".into(),
                to_message_id: "b".into(),
            },
        )
        .await
        .unwrap();
    messages.delete(&id, &["b".to_owned()]).await.unwrap();
    messages.clear(&id).await.unwrap();
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
    assert!(left.iter().any(|k| k.ends_with("messages:s2:content")));
    assert_eq!(messages.history(&other, None).await.unwrap().len(), 3);
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

/// History reads while another connection deletes messages of the same path (re-linking
/// their children) and appends to it: every read is one whole path, in order, never an
/// error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_reads_under_concurrent_deletes_see_whole_paths() {
    use memory_core::ports::MessageStore;
    use memory_core::{NewMessage, Role, UiMessage};
    let Some(db) = fresh_database("messages-reads").await else {
        return;
    };
    let url = std::env::var("MEMORY_REDIS_URL").unwrap();
    let session = SessionId::new("busy").unwrap();
    let store = RedisMessageStore::new(db.clone());
    let message =
        |i: usize| NewMessage::new(UiMessage::text_message(format!("m{i:05}"), Role::User, "x"));
    store
        .append(&session, (0..3_000).map(message).collect())
        .await
        .unwrap();
    let writer = {
        let own = RedisDatabase::connect(RedisConfig::new(url).key_prefix(db.prefix()))
            .await
            .unwrap();
        let store = RedisMessageStore::new(own);
        let session = session.clone();
        tokio::spawn(async move {
            for i in 1..300 {
                store
                    .delete(&session, &[format!("m{:05}", i * 7)])
                    .await
                    .unwrap();
                store
                    .append(&session, vec![message(3_000 + i)])
                    .await
                    .unwrap();
            }
        })
    };
    let mut reads = 0;
    loop {
        let history = store.history(&session, None).await.unwrap();
        assert_eq!(history[0].id, "m00000");
        assert!(
            history.windows(2).all(|w| w[0].id < w[1].id),
            "a path out of order"
        );
        assert!(history.len() >= 3_000 - 300);
        reads += 1;
        if writer.is_finished() {
            break;
        }
    }
    writer.await.unwrap();
    assert!(reads > 0);
    let history = store.history(&session, None).await.unwrap();
    assert_eq!(history.len(), 3_000 - 299 + 299);
    db.drop_all().await.unwrap();
}
