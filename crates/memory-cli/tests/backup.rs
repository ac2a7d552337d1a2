//! `memory backup create | list | restore` end to end on the embedded default: the restored
//! data directory answers like the original.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::run;

use std::process::Command;

#[test]
fn a_restored_data_directory_answers_like_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    run(d, &["session", "create", "--id", "trip"]);
    for (id, text) in [("u1", "Weather in Lisbon?"), ("a1", "Sunny, 22°C.")] {
        let message = serde_json::json!({"id": id, "role": "user", "parts": [{"type": "text", "text": text}]});
        run(d, &["message", "append", "trip", &message.to_string()]);
    }
    let backup: serde_json::Value =
        serde_json::from_str(&run(d, &["backup", "create", "--keep", "3", "--json"])).unwrap();
    let id = backup["id"].as_str().unwrap().to_owned();
    let listed: serde_json::Value =
        serde_json::from_str(&run(d, &["backup", "list", "--json"])).unwrap();
    assert_eq!(listed[0]["id"], id.as_str());

    let target = tempfile::tempdir().unwrap();
    let into = target.path().join("restored");
    run(
        d,
        &[
            "backup",
            "restore",
            "--id",
            &id,
            "--into",
            into.to_str().unwrap(),
        ],
    );
    assert_eq!(
        run(&into, &["history", "trip", "--json"]),
        run(d, &["history", "trip", "--json"])
    );
    assert_eq!(
        run(&into, &["search", "lisbon", "--json"]),
        run(d, &["search", "lisbon", "--json"])
    );
    // Restoring over existing data is refused.
    let out = Command::new(assert_cmd::cargo::cargo_bin("memory"))
        .arg("--data-dir")
        .arg(d)
        .args(["backup", "restore", "--into", into.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty data directory"));
}

#[test]
fn an_archived_session_comes_back_on_the_next_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    run(d, &["session", "create", "--id", "cold"]);
    let message = serde_json::json!({"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Old news."}]});
    run(d, &["message", "append", "cold", &message.to_string()]);
    let before = run(d, &["history", "cold", "--json"]);
    let archived: serde_json::Value =
        serde_json::from_str(&run(d, &["session", "archive", "cold", "--json"])).unwrap();
    assert_eq!(archived[0]["messages"], 1);
    assert!(
        d.join("blobs")
            .join(archived[0]["key"].as_str().unwrap())
            .is_file()
    );
    assert!(
        run(d, &["session", "list"]).contains("cold"),
        "the record stays listed"
    );
    assert_eq!(run(d, &["history", "cold", "--json"]), before);
    let moved: serde_json::Value = serde_json::from_str(&run(
        d,
        &["session", "archive", "--idle-days", "0", "--json"],
    ))
    .unwrap();
    assert_eq!(moved.as_array().unwrap().len(), 1);
}
