//! `memory` on PostgreSQL: the README's commands unchanged, and many processes sharing one
//! server (eight appenders on one session, two rememberers of one key). Against the server
//! `MEMORY_POSTGRES_URL` names (the test command starts one); each test works in a schema of
//! its own and drops it.
#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use serde_json::{Value, json};

/// A data dir whose `memory.toml` puts every role in a fresh schema, with blocks.
struct Deployment {
    dir: tempfile::TempDir,
    url: String,
    schema: String,
}

impl Deployment {
    fn new(name: &str) -> Option<Self> {
        let Ok(url) = std::env::var("MEMORY_POSTGRES_URL") else {
            assert!(
                std::env::var("MEMORY_REQUIRE_POSTGRES").is_err(),
                "MEMORY_REQUIRE_POSTGRES is set but MEMORY_POSTGRES_URL is not"
            );
            eprintln!("skipped: MEMORY_POSTGRES_URL is not set");
            return None;
        };
        let schema = format!(
            "test_cli_{name}_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..10]
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("memory.toml"),
            format!(
                r#"[[blocks]]
label = "memory"
kind = "writable"
description = "Learned facts"
max_tokens = 500
scope = "shared"

[[blocks]]
label = "knowledge"
kind = "searchable"
description = "Notes"
scope = "shared"

[memory]
embedder = "none"

{storage}"#,
                storage = memory_config::all_on_postgres(&schema)
            ),
        )
        .unwrap();
        Some(Self { dir, url, schema })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn spawn(&self, args: &[&str]) -> Child {
        spawn(self.path(), args)
    }

    fn run(&self, args: &[&str]) -> Output {
        let out = self.spawn(args).wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.push("--json");
        serde_json::from_slice(&self.run(&args).stdout).unwrap()
    }
}

/// Drops the test's schema, whether the test passed or not.
impl Drop for Deployment {
    fn drop(&mut self) {
        // No panic here: this also runs while a failed test unwinds.
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        runtime.block_on(async {
            let config = memory_postgres::PostgresConfig::new(&self.url).schema(&self.schema);
            if let Ok(db) = memory_postgres::PostgresDatabase::connect(config).await {
                if let Err(e) = db.drop_schema().await {
                    eprintln!("could not drop {}: {e}", self.schema);
                }
                db.close().await;
            }
        });
    }
}

fn spawn(dir: &Path, args: &[&str]) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin("memory"))
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .env_remove("MEMORY_DATA_DIR")
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn text(id: &str, role: &str, text: &str) -> String {
    json!({"id": id, "role": role, "parts": [{"type": "text", "text": text}]}).to_string()
}

fn ids(value: &Value, field: &str) -> Vec<String> {
    value[field]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The README's commands, unchanged, on a deployment whose every role is Postgres.
#[test]
fn the_readme_commands_work_on_postgres() {
    let Some(pg) = Deployment::new("readme") else {
        return;
    };
    pg.run(&["session", "create", "--id", "trip", "--name", "Lisbon trip"]);
    pg.run(&[
        "message",
        "append",
        "trip",
        &text("u1", "user", "Weather in Lisbon?"),
    ]);
    // `echo '{...}' | memory message append trip`
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("memory"))
        .arg("--data-dir")
        .arg(pg.path())
        .args(["message", "append", "trip"])
        .env_remove("MEMORY_DATA_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(
        &mut stdin,
        text("a1", "assistant", "Sunny, 22°C.").as_bytes(),
    )
    .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    pg.run(&[
        "message",
        "append",
        "trip",
        "--parent",
        "u1",
        &text("a1b", "assistant", "Let me check."),
    ]);
    assert_eq!(
        ids(&pg.json(&["history", "trip", "--leaf", "a1"]), "messages"),
        ["u1", "a1"]
    );
    assert_eq!(
        ids(&pg.json(&["history", "trip"]), "messages"),
        ["u1", "a1b"]
    );
    assert_eq!(
        ids(&pg.json(&["branches", "trip", "u1"]), "children"),
        ["a1", "a1b"]
    );
    let hits = pg.json(&["search", "sunny", "--session", "trip"]);
    assert_eq!(hits["hits"][0]["message_id"], "a1");

    // Export from Postgres, import into the embedded default, export again: identical.
    let exported = pg.run(&["export", "trip"]).stdout;
    let file = pg.path().join("trip.jsonl");
    std::fs::write(&file, &exported).unwrap();
    let copy = tempfile::tempdir().unwrap();
    let import = spawn(copy.path(), &["import", file.to_str().unwrap()])
        .wait_with_output()
        .unwrap();
    assert!(import.status.success());
    let again = spawn(copy.path(), &["export", "trip"])
        .wait_with_output()
        .unwrap();
    assert_eq!(
        again.stdout, exported,
        "Postgres and SQLite export the same bytes"
    );

    // Context blocks on the Postgres key-value store.
    pg.run(&["context", "list", "trip"]);
    pg.run(&["prompt", "trip"]); // freezes the prompt
    pg.run(&[
        "tools",
        "call",
        "trip",
        "set_context",
        r#"{"label":"memory","content":"Prefers trains"}"#,
    ]);
    let frozen = pg.run(&["prompt", "trip"]).stdout;
    assert!(!String::from_utf8_lossy(&frozen).contains("Prefers trains"));
    let refreshed = pg.run(&["prompt", "trip", "--refresh"]).stdout;
    assert!(String::from_utf8_lossy(&refreshed).contains("Prefers trains"));

    // Long-term memory.
    let record = pg.json(&[
        "profile",
        "remember",
        "team",
        "Deploys happen on Fridays",
        "--key",
        "deploy.day",
    ]);
    let id = record["id"].as_str().unwrap().to_owned();
    let recalled = pg.json(&["profile", "recall", "team", "when do we deploy fridays?"]);
    assert_eq!(recalled["response"]["hits"][0]["item"]["id"], id.as_str());
    pg.run(&[
        "profile",
        "remember",
        "team",
        "Deploys happen on Mondays",
        "--key",
        "deploy.day",
    ]);
    let chain = pg.json(&["profile", "list", "team", "--key", "deploy.day", "--all"]);
    assert_eq!(chain["memories"].as_array().unwrap().len(), 2);
    assert_eq!(
        chain["memories"][0]["superseded_by"],
        chain["memories"][1]["id"]
    );
    let exported = pg.run(&["profile", "export", "team", "--vectors"]).stdout;
    assert!(String::from_utf8_lossy(&exported).contains("Mondays"));
    let current = chain["memories"][1]["id"].as_str().unwrap().to_owned();
    pg.run(&["profile", "purge", "team", &current]);
    let after = pg.json(&["profile", "list", "team", "--key", "deploy.day"]);
    assert_eq!(
        ids(&after, "memories"),
        [id.as_str()],
        "the predecessor is current again"
    );

    pg.run(&["session", "delete", "trip"]);
    assert!(
        pg.json(&["session", "list"])["sessions"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert!(
        pg.json(&["search", "sunny"])["hits"]
            .as_array()
            .unwrap()
            .is_empty(),
        "a deleted session leaves nothing to find"
    );
}

/// Eight processes appending to one session at once (ten messages each, every one to the
/// latest leaf): nothing is lost and the session stays one chain with one latest leaf.
#[test]
fn eight_processes_appending_to_one_session_lose_nothing() {
    let Some(pg) = Deployment::new("append8") else {
        return;
    };
    pg.run(&["session", "create", "--id", "chat"]);
    // Eight writers, each running its ten `memory` processes one after another.
    let writers: Vec<_> = (0..8)
        .map(|p| {
            let dir = pg.path().to_owned();
            std::thread::spawn(move || {
                for i in 0..10 {
                    let m = text(
                        &format!("p{p}m{i}"),
                        "user",
                        &format!("process {p} turn {i}"),
                    );
                    let out = spawn(&dir, &["message", "append", "chat", &m])
                        .wait_with_output()
                        .unwrap();
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let history = pg.json(&["history", "chat"]);
    let all = ids(&history, "messages");
    assert_eq!(all.len(), 80, "every append is on the latest leaf's path");
    let mut unique = all.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 80);
    // One chain: every message but the last has exactly one child.
    for id in &all[..79] {
        let branches = pg.json(&["branches", "chat", id]);
        assert_eq!(branches["children"].as_array().unwrap().len(), 1, "{id}");
    }
}

/// Two processes remembering the same key at once, round after round: exactly one memory
/// of the key is current afterwards, and every version is kept.
#[test]
fn two_processes_remembering_one_key_leave_one_current() {
    let Some(pg) = Deployment::new("remember2") else {
        return;
    };
    for round in 0..5 {
        let children: Vec<Child> = ["a", "b"]
            .iter()
            .map(|who| {
                pg.spawn(&[
                    "profile",
                    "remember",
                    "team",
                    &format!("The office is in room {round}{who}"),
                    "--key",
                    "office",
                ])
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let current = pg.json(&["profile", "list", "team", "--key", "office"]);
        assert_eq!(
            current["memories"].as_array().unwrap().len(),
            1,
            "round {round}: {current}"
        );
    }
    let all = pg.json(&["profile", "list", "team", "--key", "office", "--all"]);
    assert_eq!(all["memories"].as_array().unwrap().len(), 10);
}
