//! A server restart in the middle of a run: every failure the adapter returns is the
//! retryable kind, reads retry through it on their own, every acknowledged append survives
//! exactly once, and the run goes on afterwards. Runs a private server (same binaries as
//! `scripts/setup-postgres.sh`, its own data directory and port) so the shared test server
//! is never restarted under other tests.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use memory_core::ports::MessageStore;
use memory_core::{AppendOutcome, NewMessage, Role, SessionId, UiMessage};
use memory_postgres::{PostgresConfig, PostgresDatabase, PostgresMessageStore};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/setup-postgres.sh")
}

/// A private server: started on a free port, stopped when dropped.
struct PrivateServer {
    _dir: tempfile::TempDir,
    data: PathBuf,
    port: u16,
}

impl PrivateServer {
    fn start() -> (Self, String) {
        let dir = tempfile::tempdir().unwrap();
        // The server's own user must reach its data directory.
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = Self {
            data: dir.path().join("data"),
            _dir: dir,
            port,
        };
        let out = server.script("start");
        let url = String::from_utf8(out).unwrap().trim().to_owned();
        assert!(url.starts_with("postgres://"), "{url}");
        (server, url)
    }

    fn script(&self, action: &str) -> Vec<u8> {
        let out = Command::new("bash")
            .arg(script())
            .arg(action)
            .env_remove("MEMORY_POSTGRES_URL")
            .env("MEMORY_PG_DATA", &self.data)
            .env("MEMORY_PG_PORT", self.port.to_string())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "setup-postgres.sh {action}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .arg("stop")
            .env("MEMORY_PG_DATA", &self.data)
            .env("MEMORY_PG_PORT", self.port.to_string())
            .output();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_mid_run_loses_no_acknowledged_write() {
    // Runs with the test command (which starts the shared server, so the binaries exist).
    if std::env::var("MEMORY_POSTGRES_URL").is_err() {
        assert!(std::env::var("MEMORY_REQUIRE_POSTGRES").is_err());
        eprintln!("skipped: MEMORY_POSTGRES_URL is not set");
        return;
    }
    let (server, url) = PrivateServer::start();
    let db = PostgresDatabase::connect(
        PostgresConfig::new(url)
            .schema("restart")
            .max_connections(4)
            .acquire_timeout(Duration::from_millis(500))
            .retry_for(Duration::from_secs(30)),
    )
    .await
    .unwrap();
    let store = Arc::new(PostgresMessageStore::new(db.clone()));
    let session = SessionId::new("s").unwrap();
    let acknowledged = Arc::new(AtomicUsize::new(0));
    let transient = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));

    // The writer appends one message at a time; a failure must be transient, and the same
    // message is sent again until it is acknowledged (appends are insert-if-absent, so a
    // resend of a write that did commit answers AlreadyExists).
    let writer = {
        let (store, session) = (store.clone(), session.clone());
        let (acknowledged, transient, stop) =
            (acknowledged.clone(), transient.clone(), stop.clone());
        tokio::spawn(async move {
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
                let message =
                    UiMessage::text_message(format!("m{i}"), Role::User, format!("turn {i}"));
                match store.append(&session, vec![NewMessage::new(message)]).await {
                    Ok(outcomes) => {
                        assert!(matches!(
                            outcomes[0],
                            AppendOutcome::Inserted { .. } | AppendOutcome::AlreadyExists
                        ));
                        acknowledged.fetch_add(1, Ordering::SeqCst);
                        i += 1;
                    }
                    Err(e) => {
                        assert!(e.is_transient(), "not the retryable kind: {e:?}");
                        transient.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            }
            i
        })
    };
    // The reader reads the history again and again: reads retry by themselves.
    let reader = {
        let (store, session, stop) = (store.clone(), session.clone(), stop.clone());
        tokio::spawn(async move {
            let mut reads = 0;
            while !stop.load(Ordering::SeqCst) {
                let history = store.history(&session, None).await;
                assert!(
                    history.is_ok(),
                    "a read failed through the restart: {history:?}"
                );
                reads += 1;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            reads
        })
    };

    while acknowledged.load(Ordering::SeqCst) < 50 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let server = tokio::task::spawn_blocking(move || {
        server.script("restart");
        server
    })
    .await
    .unwrap();
    let after_restart = acknowledged.load(Ordering::SeqCst);
    while acknowledged.load(Ordering::SeqCst) < after_restart + 50 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stop.store(true, Ordering::SeqCst);
    let written = writer.await.unwrap();
    let reads = reader.await.unwrap();
    assert!(reads > 0);

    let history = store.history(&session, None).await.unwrap();
    let ids: Vec<String> = history.iter().map(|m| m.id.clone()).collect();
    let expected: Vec<String> = (0..written).map(|i| format!("m{i}")).collect();
    assert_eq!(
        ids, expected,
        "every acknowledged append, once, in order, one chain"
    );
    eprintln!(
        "restart: {written} appends acknowledged, {} transient failures returned, {reads} reads",
        transient.load(Ordering::SeqCst)
    );
    db.drop_schema().await.unwrap();
    db.close().await;
    drop(server);
}
