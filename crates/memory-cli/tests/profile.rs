//! `profile` commands end to end.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::{Value, json};

fn memory(dir: &std::path::Path) -> Command {
    let mut cmd = Command::cargo_bin("memory").unwrap();
    cmd.arg("--data-dir").arg(dir).env_remove("MEMORY_DATA_DIR");
    cmd
}

fn json_out(cmd: &mut Command) -> Value {
    serde_json::from_slice(&cmd.assert().success().get_output().stdout).unwrap()
}

#[test]
fn ingest_remember_recall_forget() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = d.join("chat.jsonl");
    let lines = [
        json!({"id": "m1", "role": "user", "parts": [{"type": "text", "text": "We adopted a cat named Miso."}]}),
        json!({"id": "m2", "role": "assistant", "parts": [{"type": "text", "text": "Miso is a lovely name."}]}),
    ];
    std::fs::write(
        &file,
        lines
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .unwrap();
    memory(d)
        .args(["profile", "ingest", "ada"])
        .arg(&file)
        .assert()
        .failure()
        .stderr(predicate::str::contains("pass --session"));
    let first = json_out(
        memory(d)
            .args(["profile", "ingest", "ada", "--session", "c1", "--json"])
            .arg(&file),
    );
    assert_eq!(
        (first["new"].as_u64(), first["known"].as_u64()),
        (Some(2), Some(0))
    );
    let again = json_out(
        memory(d)
            .args(["profile", "ingest", "ada", "--session", "c1", "--json"])
            .arg(&file),
    );
    assert_eq!(again["known"], 2);
    let record = json_out(memory(d).args([
        "profile",
        "remember",
        "ada",
        "Has a cat called Miso",
        "--key",
        "pets",
        "--json",
    ]));
    let id = record["id"].as_str().unwrap().to_owned();
    let recalled = json_out(memory(d).args(["profile", "recall", "ada", "Miso", "--json"]));
    let results = recalled["results"].as_array().unwrap();
    assert_eq!(results[0]["item"]["type"], "memory");
    assert!(results.iter().any(|r| r["item"]["type"] == "raw"));
    assert!(
        results[0]["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["channel"] == "memory_fts")
    );
    memory(d)
        .args(["profile", "recall", "ada", "Miso", "--explain"])
        .assert()
        .success()
        .stdout(predicate::str::contains("memory_fts #1"));
    memory(d)
        .args(["profile", "forget", "ada", &id])
        .assert()
        .success();
    let after = json_out(memory(d).args(["profile", "recall", "ada", "Miso", "--json"]));
    assert!(
        after["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["item"]["type"] == "raw")
    );
    let audit = json_out(memory(d).args(["profile", "list", "ada", "--all", "--json"]));
    assert_eq!(
        audit["memories"][0]["forgotten"]["reason"],
        "forgotten by request"
    );
    memory(d)
        .args(["profile", "purge", "ada", &id])
        .assert()
        .success();
    memory(d)
        .args(["profile", "purge", "ada", &id])
        .assert()
        .failure()
        .stderr(predicate::str::contains("memory not found"));
    assert!(
        d.join("profiles/ada.db").exists(),
        "one database file per profile"
    );
    memory(d)
        .args(["profile", "remember", "../x", "y"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("profile name"));
}
