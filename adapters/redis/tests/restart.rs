//! Durability as stated: a private `redis-server` (`appendfsync always`, as
//! `scripts/setup-redis.sh` runs it) is killed with SIGKILL right after acknowledged
//! writes, started again on the same data, and every acknowledged write is there. (The
//! same test with the append-only file off loses them; that `always` also covers a crash of
//! the machine, which a test cannot cause, is Redis's promise.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use memory_core::ports::{JobQueue, KeyValueStore, MessageStore, NewJob};
use memory_core::{NewMessage, Role, SessionId, Timestamp, UiMessage};
use memory_redis::{
    Durability, RedisConfig, RedisDatabase, RedisJobQueue, RedisKeyValueStore, RedisMessageStore,
};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server process killed when dropped (a failed assertion leaves nothing running).
struct Server(Child);

impl Server {
    fn kill(&mut self) {
        let _ = self.0.kill(); // SIGKILL
        let _ = self.0.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

fn start(dir: &std::path::Path, port: u16) -> Server {
    Server(
        Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .arg("--dir")
            .arg(dir)
            .args([
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

async fn connect(port: u16) -> RedisDatabase {
    let config = RedisConfig::new(format!("redis://127.0.0.1:{port}/")).key_prefix("restart:");
    for _ in 0..100 {
        if let Ok(db) = RedisDatabase::connect(config.clone()).await {
            return db;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("redis-server on port {port} did not start");
}

#[tokio::test]
async fn acknowledged_writes_survive_a_killed_server() {
    if std::env::var("MEMORY_REDIS_URL").is_err() {
        assert!(
            std::env::var("MEMORY_REQUIRE_REDIS").is_err(),
            "MEMORY_REQUIRE_REDIS is set but MEMORY_REDIS_URL is not"
        );
        eprintln!("skipped: no redis-server (scripts/setup-redis.sh installs one)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut server = start(dir.path(), port);
    let db = connect(port).await;
    assert_eq!(db.durability(), &Durability::EveryWrite);
    let kv = RedisKeyValueStore::new(db.clone());
    let jobs = RedisJobQueue::new(db.clone());
    for i in 0..200 {
        kv.set(&format!("block:{i}"), &format!("value {i}"))
            .await
            .unwrap();
        assert!(
            kv.compare_and_set(&format!("cas:{i}"), None, "first")
                .await
                .unwrap()
        );
    }
    for i in 0..50 {
        let job = NewJob {
            id: format!("job-{i}"),
            kind: "ingest".into(),
            profile: "p".into(),
            stage: "queued".into(),
            body: serde_json::json!({ "n": i }),
        };
        jobs.enqueue(job, Timestamp(i)).await.unwrap();
    }
    let messages = RedisMessageStore::new(db.clone());
    let session = SessionId::new("s").unwrap();
    for i in 0..100 {
        let batch = (0..2)
            .map(|j| {
                let id = format!("m{i}-{j}");
                NewMessage::new(UiMessage::text_message(id, Role::User, "kept"))
            })
            .collect();
        messages.append(&session, batch).await.unwrap();
    }
    server.kill(); // SIGKILL, right after the last acknowledgement

    let mut server = start(dir.path(), port);
    let db = connect(port).await;
    let kv = RedisKeyValueStore::new(db.clone());
    let jobs = RedisJobQueue::new(db.clone());
    for i in 0..200 {
        assert_eq!(
            kv.get(&format!("block:{i}")).await.unwrap().as_deref(),
            Some(format!("value {i}").as_str()),
            "acknowledged write {i} lost"
        );
        assert_eq!(
            kv.get(&format!("cas:{i}")).await.unwrap().as_deref(),
            Some("first")
        );
    }
    assert_eq!(kv.keys("block:").await.unwrap().len(), 200);
    for i in 0..50 {
        let job = jobs.get(&format!("job-{i}")).await.unwrap().unwrap();
        assert_eq!(job.body, serde_json::json!({ "n": i }));
    }
    let messages = RedisMessageStore::new(db.clone());
    let history = messages.history(&session, None).await.unwrap();
    assert_eq!(history.len(), 200, "acknowledged appends lost");
    assert_eq!(history[199].id, "m99-1");
    server.kill();
}
