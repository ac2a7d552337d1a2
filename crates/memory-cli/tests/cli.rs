//! End-to-end tests of the `memory` binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::{Value, json};

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn cmd(&self) -> Command {
        let mut cmd = Command::cargo_bin("memory").unwrap();
        cmd.arg("--data-dir")
            .arg(self.dir.path())
            .env_remove("MEMORY_DATA_DIR");
        cmd
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self
            .cmd()
            .args(args)
            .arg("--json")
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        serde_json::from_slice(&out).unwrap()
    }

    fn append(&self, session: &str, message: Value, extra: &[&str]) -> Value {
        let out = self
            .cmd()
            .args(["message", "append", session, &message.to_string(), "--json"])
            .args(extra)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        serde_json::from_slice(&out).unwrap()
    }
}

fn text(id: &str, role: &str, text: &str) -> Value {
    json!({"id": id, "role": role, "parts": [{"type": "text", "text": text}]})
}

fn ids(history: &Value) -> Vec<String> {
    history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn session_lifecycle() {
    let env = Env::new();
    let created = env.json(&[
        "session", "create", "--id", "s1", "--name", "First", "--model", "m",
    ]);
    assert_eq!(created["id"], "s1");
    assert_eq!(created["name"], "First");
    env.cmd()
        .args(["session", "create", "--id", "s2"])
        .assert()
        .success()
        .stdout("s2\n");
    let listed = env.json(&["session", "list"]);
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 2);
    let renamed = env.json(&["session", "rename", "s2", "Second"]);
    assert_eq!(renamed["name"], "Second");
    let shown = env.json(&["session", "show", "s2"]);
    assert_eq!(shown["name"], "Second");
    env.cmd()
        .args(["session", "show", "s2"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Second"));
    env.cmd()
        .args(["session", "delete", "s1"])
        .assert()
        .success();
    env.cmd()
        .args(["session", "show", "s1"])
        .assert()
        .failure()
        .stderr(
            predicate::str::starts_with("error: session not found: s1")
                .and(predicate::str::ends_with("\n")),
        );
    env.cmd()
        .args(["session", "create", "--id", "s2"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("already exists"));
}

#[test]
fn messages_history_branches_and_search() {
    let env = Env::new();
    env.cmd()
        .args(["session", "create", "--id", "s"])
        .assert()
        .success();
    let first = env.append("s", text("u1", "user", "Plan a trip to Porto"), &[]);
    assert_eq!(first["outcome"], "inserted");
    assert_eq!(first["parent_id"], Value::Null);
    env.append(
        "s",
        text("a1", "assistant", "Porto has great port wine cellars"),
        &[],
    );
    env.append("s", text("u2", "user", "What about food?"), &[]);
    let branch = env.append(
        "s",
        text("u2b", "user", "What about museums?"),
        &["--parent", "a1"],
    );
    assert_eq!(branch["parent_id"], "a1");
    let root = env.append("s", text("r1", "user", "Unrelated new thread"), &["--root"]);
    assert_eq!(root["parent_id"], Value::Null);
    let dup = env.append("s", text("u1", "user", "changed"), &[]);
    assert_eq!(dup["outcome"], "already_exists");
    // From standard input.
    env.cmd()
        .args(["message", "append", "s", "--parent", "u2"])
        .write_stdin(text("a2", "assistant", "Try francesinha").to_string())
        .assert()
        .success();
    assert_eq!(
        ids(&env.json(&["history", "s", "--leaf", "a2"])),
        vec!["u1", "a1", "u2", "a2"]
    );
    assert_eq!(
        ids(&env.json(&["history", "s", "--leaf", "u2b"])),
        vec!["u1", "a1", "u2b"]
    );
    assert_eq!(
        ids(&env.json(&["history", "s"])),
        vec!["u1", "a1", "u2", "a2"]
    );
    let branches = env.json(&["branches", "s", "a1"]);
    let children: Vec<&str> = branches["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(children, vec!["u2", "u2b"]);
    let hits = env.json(&["search", "port wine", "--session", "s"]);
    assert_eq!(hits["hits"][0]["message_id"], "a1");
    assert_eq!(hits["hits"][0]["session_id"], "s");
    assert_eq!(
        env.json(&["search", "wine port", "--phrase"])["hits"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    assert_eq!(
        env.json(&["search", "what about", "--limit", "1"])["hits"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // Update and delete.
    env.cmd()
        .args([
            "message",
            "update",
            "s",
            &text("u2", "user", "What about seafood?").to_string(),
        ])
        .assert()
        .success();
    assert_eq!(
        env.json(&["search", "seafood"])["hits"][0]["message_id"],
        "u2"
    );
    let deleted = env.json(&["message", "delete", "s", "a1", "missing"]);
    assert_eq!(deleted["deleted"], 1);
    assert_eq!(
        ids(&env.json(&["history", "s", "--leaf", "a2"])),
        vec!["u1", "u2", "a2"]
    );
    assert_eq!(
        env.json(&["search", "cellars"])["hits"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
}

#[test]
fn bad_input_is_one_clear_line_and_changes_nothing() {
    let env = Env::new();
    env.cmd()
        .args(["session", "create", "--id", "s"])
        .assert()
        .success();
    for (message, expected) in [
        ("{not json", "not a valid UIMessage"),
        (r#"{"id":"x","role":"robot","parts":[]}"#, "unknown variant"),
        (
            r#"{"id":"compaction_1","role":"user","parts":[]}"#,
            "reserved prefix",
        ),
    ] {
        let assert = env
            .cmd()
            .args(["message", "append", "s", message])
            .assert()
            .failure();
        let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
        assert!(
            stderr.starts_with("error: ") && stderr.contains(expected),
            "{stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    env.cmd()
        .args([
            "message",
            "append",
            "s",
            &text("u1", "user", "x").to_string(),
            "--parent",
            "ghost",
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains("parent message not found: ghost"));
    env.cmd()
        .args([
            "message",
            "append",
            "nosuch",
            &text("u1", "user", "x").to_string(),
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains("session not found: nosuch"));
    env.cmd()
        .args(["history", "s", "--leaf", "ghost"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("message not found"));
    assert!(
        env.json(&["history", "s"])["messages"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn export_then_import_is_lossless_and_idempotent() {
    let source = Env::new();
    source
        .cmd()
        .args(["session", "create", "--id", "trip", "--name", "Trip"])
        .assert()
        .success();
    let rich = json!({
        "id": "a1", "role": "assistant", "metadata": {"k": [1, 2]}, "createdAt": "2026-11-20T10:00:00Z",
        "parts": [
            {"type": "tool-getWeather", "toolCallId": "c1", "state": "output-available", "input": {"city": "Oslo"}, "output": {"t": -3}},
            {"type": "data-card", "data": {"x": true}},
            {"type": "text", "text": "Cold in Oslo"}
        ]
    });
    source.append("trip", text("u1", "user", "Weather in Oslo?"), &[]);
    source.append("trip", rich.clone(), &[]);
    source.append(
        "trip",
        text("u2", "user", "And Bergen?"),
        &["--parent", "u1"],
    );
    let file = source.dir.path().join("trip.jsonl");
    source
        .cmd()
        .args(["export", "trip", "--output"])
        .arg(&file)
        .assert()
        .success();
    let stdout = source
        .cmd()
        .args(["export", "trip"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(
        String::from_utf8(stdout).unwrap(),
        std::fs::read_to_string(&file).unwrap()
    );

    let target = Env::new();
    let first = target
        .cmd()
        .args(["import"])
        .arg(&file)
        .arg("--json")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let first: Value = serde_json::from_slice(&first).unwrap();
    assert_eq!(first["inserted"], 3);
    assert_eq!(first["sessions_created"], 1);
    let again = target
        .cmd()
        .args(["import"])
        .arg(&file)
        .arg("--json")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let again: Value = serde_json::from_slice(&again).unwrap();
    assert_eq!(again["inserted"], 0);
    assert_eq!(again["already_present"], 3);
    for leaf in ["a1", "u2"] {
        assert_eq!(
            source.json(&["history", "trip", "--leaf", leaf])["messages"],
            target.json(&["history", "trip", "--leaf", leaf])["messages"]
        );
    }
    assert_eq!(
        target.json(&["history", "trip", "--leaf", "a1"])["messages"][1],
        rich
    );
    assert_eq!(target.json(&["session", "show", "trip"])["name"], "Trip");
    let exported_again = target
        .cmd()
        .args(["export", "trip"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let lines = |b: &[u8]| {
        String::from_utf8(b.to_vec())
            .unwrap()
            .lines()
            .skip(1)
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        lines(&exported_again),
        lines(&std::fs::read(&file).unwrap())
    );
}

#[test]
fn import_rejects_a_bad_file_before_writing_anything() {
    let env = Env::new();
    let file = env.dir.path().join("bad.jsonl");
    let good = json!({"kind": "message", "session_id": "s", "parent_id": null, "message": text("u1", "user", "hi")});
    std::fs::write(&file, format!("{good}\n{{oops\n")).unwrap();
    env.cmd()
        .arg("import")
        .arg(&file)
        .assert()
        .failure()
        .stderr(predicate::str::contains("bad.jsonl:2"));
    assert!(
        env.json(&["session", "list"])["sessions"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn demo_runs_with_zero_setup() {
    let env = Env::new();
    env.cmd()
        .arg("demo")
        .assert()
        .success()
        .stdout(predicate::str::contains("a1 has 2 branches: u2, u2b"))
        .stdout(predicate::str::contains("Museu Nacional do Azulejo"))
        .stdout(predicate::str::contains("rain jacket"));
}

/// The demo walks every tier: session history, context (blocks, prompt, tools with
/// `recall` and `remember`), the session shipped into a profile, a second session's
/// recall with provenance, and the profile block in the refreshed prompt.
#[test]
fn the_demo_shows_all_three_tiers() {
    let env = Env::new();
    let out = env.cmd().arg("demo").assert().success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    for expected in [
        "1. Session memory",
        "a1 has 2 branches: u2, u2b",
        "2. Context",
        "PERSONA",
        "NOTES",
        "- traveller.food: The traveller prefers seafood restaurants.",
        "tools: set_context",
        "recall, remember",
        "session_search",
        "3. Long-term memory",
        "compaction needs a model",
        "shipped 5 message(s) to profile traveller",
        "4. A second session",
        "model calls recall(",
        "Museu Nacional do Azulejo",
        "messages=\"a2b\"",
        "frozen prompt unchanged after the write: true",
        "- style: Answer in short, practical sentences.",
        "Try next:",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
}

/// Binding from the CLI: create bound, show, end (shipping and waiting), ingest a stored
/// session by id, unbind.
#[test]
fn sessions_bind_end_and_ship_into_profiles() {
    let env = Env::new();
    let created = env.json(&["session", "create", "--id", "s1", "--profile", "alice"]);
    assert_eq!(created["profile"], "alice");
    env.append("s1", text("u1", "user", "My cat is called Miso."), &[]);
    env.append("s1", text("a1", "assistant", "Miso is a lovely name."), &[]);
    env.cmd()
        .args(["session", "show", "s1"])
        .assert()
        .success()
        .stdout(predicate::str::contains("profile:     alice"));
    let ended = env.json(&["session", "end", "s1", "--reason", "done", "--wait"]);
    assert_eq!(ended["session"]["end_reason"], "done");
    assert_eq!(ended["shipped"]["shipped"], 2, "{ended}");
    let status = ended["shipped"]["job"]["status"].as_str().unwrap();
    assert!(status == "done" || status == "done_with_errors", "{ended}");
    let recalled = env.json(&["profile", "recall", "alice", "cat called Miso"]);
    assert!(recalled.to_string().contains("Miso"), "{recalled}");
    // A stored session into another profile, by id and range, then again: nothing new.
    let shipped = env.json(&[
        "profile",
        "ingest",
        "bob",
        "--from-session",
        "s1",
        "--from",
        "u1",
        "--to",
        "u1",
        "--wait",
    ]);
    assert_eq!(shipped["shipped"], 1, "{shipped}");
    let again = env.json(&[
        "profile",
        "ingest",
        "bob",
        "--from-session",
        "s1",
        "--to",
        "u1",
    ]);
    assert_eq!(again["job"], Value::Null, "{again}");
    assert_eq!(again["already_shipped"], 1);
    let unbound = env.json(&["session", "unbind", "s1"]);
    assert_eq!(unbound["profile"], Value::Null, "{unbound}");
    env.cmd()
        .args(["session", "bind", "s1", "not a name"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("profile name"));
}

/// The README's recovery: a deployment whose Tantivy indexes are lost rebuilds them with
/// `memory reindex` (messages and every profile), and one profile's with `--profile`; each
/// index is also rebuilt by itself by the first process that opens it.
#[test]
fn a_lost_text_index_is_rebuilt_by_reindex() {
    let env = Env::new();
    std::fs::write(
        env.dir.path().join("memory.toml"),
        "[storage]\ntext = \"tantivy\"\n\n[memory]\nembedder = \"none\"\n",
    )
    .unwrap();
    env.json(&["session", "create", "--id", "s"]);
    env.append(
        "s",
        text("u1", "user", "The ferry to Madeira leaves at dawn"),
        &[],
    );
    for profile in ["alpha", "beta"] {
        env.cmd()
            .args([
                "profile",
                "remember",
                profile,
                "Madeira ferry tickets are booked",
            ])
            .assert()
            .success();
    }
    let found = |env: &Env| {
        let messages = env.json(&["search", "madeira ferry"])["hits"]
            .as_array()
            .unwrap()
            .len();
        let memories: Vec<usize> = ["alpha", "beta"]
            .iter()
            .map(|p| {
                env.json(&["profile", "recall", p, "madeira ferry"])["response"]["hits"]
                    .as_array()
                    .unwrap()
                    .len()
            })
            .collect();
        (messages, memories)
    };
    assert_eq!(found(&env), (1, vec![1, 1]));

    std::fs::remove_dir_all(env.dir.path().join("tantivy")).unwrap();
    assert_eq!(
        found(&env),
        (1, vec![1, 1]),
        "each index was rebuilt from the records by the first process that opened it"
    );

    let only_beta = env.json(&["reindex", "--profile", "beta"]);
    assert_eq!(only_beta["report"]["rebuilt"], true, "{only_beta}");
    assert_eq!(only_beta["report"]["documents"], 1, "{only_beta}");
    assert_eq!(found(&env), (1, vec![1, 1]));
    env.cmd()
        .args(["reindex", "--profile", "nobody"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("nobody"));

    // An unfinished run (its progress file says alpha is done) resumes after alpha.
    std::fs::write(
        env.dir.path().join("reindex-progress.json"),
        r#"{"sessions": false, "profiles": ["alpha"]}"#,
    )
    .unwrap();
    let resumed = env.json(&["reindex"]);
    assert_eq!(resumed["profiles"], 2, "{resumed}");
    assert_eq!(resumed["profiles_rebuilt"], 1, "alpha was done: {resumed}");
    assert_eq!(resumed["sessions"]["documents"], 1, "{resumed}");
    assert_eq!(found(&env), (1, vec![1, 1]));
    assert!(!env.dir.path().join("reindex-progress.json").exists());

    let all = env.json(&["reindex"]);
    assert_eq!(all["profiles_rebuilt"], 2, "{all}");
    assert_eq!(found(&env), (1, vec![1, 1]));
}
