//! `[storage] sessions = "redis"`, `kv = "redis"`, `jobs = "redis"`: the CLI's sessions,
//! messages, context blocks, prompts and ingest jobs live on a real Redis
//! (`scripts/setup-redis.sh`; the test command requires it), under the deployment's key
//! prefix; search runs on the embedded index; deleting a session removes its keys.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::run;

use memory_redis::{RedisConfig, RedisDatabase};

#[tokio::test]
async fn context_blocks_live_on_redis_under_the_prefix() {
    let Ok(url) = std::env::var("MEMORY_REDIS_URL") else {
        assert!(
            std::env::var("MEMORY_REQUIRE_REDIS").is_err(),
            "MEMORY_REQUIRE_REDIS is set but MEMORY_REDIS_URL is not"
        );
        eprintln!("skipped: MEMORY_REDIS_URL is not set");
        return;
    };
    let prefix = format!("memorytest:cli:{}:", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        format!(
            "[[blocks]]\nlabel = \"notes\"\nkind = \"writable\"\nmax_tokens = 200\nscope = \"session\"\n\n\
             [[blocks]]\nlabel = \"team\"\nkind = \"writable\"\nmax_tokens = 200\nscope = \"shared\"\n\n\
             [storage]\nsessions = \"redis\"\nkv = \"redis\"\njobs = \"redis\"\n\n[storage.redis]\nkey_prefix = \"{prefix}\"\n\n\
             [memory]\nembedder = \"none\"\n"
        ),
    )
    .unwrap();
    let d = dir.path();
    run(d, &["session", "create", "--id", "s1"]);
    run(d, &["context", "set", "s1", "notes", "Prefers green tea"]);
    run(
        d,
        &["context", "append", "s1", "team", "Deploys on Fridays"],
    );
    run(
        d,
        &["context", "append", "s1", "team", "Reviews on Mondays"],
    );
    assert_eq!(
        run(d, &["context", "get", "s1", "notes"]).trim(),
        "Prefers green tea"
    );
    assert_eq!(
        run(d, &["context", "get", "s1", "team"]).trim(),
        "Deploys on Fridays\nReviews on Mondays"
    );
    let message = r#"{"id":"u1","role":"user","parts":[{"type":"text","text":"The heron nests by the river."}]}"#;
    run(d, &["message", "append", "s1", message]);
    let history = run(d, &["history", "s1", "--json"]);
    assert!(history.contains("heron"), "{history}");
    let hits = run(d, &["search", "heron", "--json"]);
    assert!(hits.contains("\"u1\""), "{hits}");
    let prompt = run(d, &["prompt", "s1"]);
    assert!(prompt.contains("Prefers green tea"), "{prompt}");

    let db = RedisDatabase::connect(RedisConfig::new(url).key_prefix(prefix.clone()))
        .await
        .unwrap();
    let keys = db.all_keys().await.unwrap();
    assert!(keys.iter().all(|k| k.starts_with(&prefix)));
    assert!(
        keys.iter().any(|k| k.contains("s1")),
        "the session's block is on redis: {keys:?}"
    );
    assert!(
        keys.iter().any(|k| k.ends_with("messages:s1:content"))
            && keys.iter().any(|k| k.ends_with("session:s1")),
        "the session's record and messages are on redis: {keys:?}"
    );

    // Ingest jobs queue on Redis, and the background worker runs them from there.
    let chat = d.join("chat.jsonl");
    std::fs::write(
        &chat,
        r#"{"id":"m1","role":"user","parts":[{"type":"text","text":"The boiler was serviced in May."}]}"#,
    )
    .unwrap();
    let queued: serde_json::Value = serde_json::from_str(&run(
        d,
        &[
            "profile",
            "ingest",
            "home",
            "--session",
            "c1",
            "--json",
            chat.to_str().unwrap(),
        ],
    ))
    .unwrap();
    let job = queued["jobs"][0]["id"].as_str().unwrap().to_owned();
    let mut status = String::new();
    for _ in 0..100 {
        let jobs: serde_json::Value =
            serde_json::from_str(&run(d, &["profile", "jobs", "home", "--json"])).unwrap();
        status = jobs["jobs"][0]["status"].as_str().unwrap().to_owned();
        if status == "done" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(status, "done");
    assert!(
        db.all_keys()
            .await
            .unwrap()
            .iter()
            .any(|k| k.ends_with(&format!("job:{job}"))),
        "the job is on redis"
    );

    run(d, &["session", "delete", "s1"]);
    let left = db.all_keys().await.unwrap();
    assert!(
        left.iter().all(|k| !k.contains("s1")),
        "keys of the deleted session remain: {left:?}"
    );
    assert!(
        left.iter().any(|k| k.contains("team")),
        "the shared block outlives the session: {left:?}"
    );
    db.drop_all().await.unwrap();
}
