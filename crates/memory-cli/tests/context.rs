//! End-to-end tests of `context`, `prompt`, `tools` and `config`, with the shipped example
//! `memory.toml`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn data_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/config");
    std::fs::copy(example.join("memory.toml"), dir.path().join("memory.toml")).unwrap();
    std::fs::copy(example.join("SOUL.md"), dir.path().join("SOUL.md")).unwrap();
    std::fs::create_dir(dir.path().join("skills")).unwrap();
    for skill in ["code-review.md", "release.md"] {
        std::fs::copy(
            example.join("skills").join(skill),
            dir.path().join("skills").join(skill),
        )
        .unwrap();
    }
    dir
}

fn memory(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("memory").unwrap();
    cmd.arg("--data-dir").arg(dir).env_remove("MEMORY_DATA_DIR");
    cmd
}

fn failed_stdout(cmd: &mut Command) -> String {
    let out = cmd
        .assert()
        .failure()
        .stderr(predicate::str::contains("failed"))
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

fn stdout(cmd: &mut Command) -> String {
    String::from_utf8(cmd.assert().success().get_output().stdout.clone()).unwrap()
}

#[test]
fn blocks_prompt_and_tools_end_to_end() {
    let dir = data_dir();
    let d = dir.path();
    memory(d)
        .args(["session", "create", "--id", "s"])
        .assert()
        .success();
    let list = stdout(memory(d).args(["context", "list", "s"]));
    for label in ["soul", "memory", "todos", "knowledge", "skills"] {
        assert!(list.contains(label), "{list}");
    }
    let frozen = stdout(memory(d).args(["prompt", "s"]));
    assert!(frozen.contains("SOUL (Who you are) [readonly]"), "{frozen}");
    assert!(
        frozen.contains("- code-review: How to review a change"),
        "{frozen}"
    );
    assert!(frozen.contains("- [ ] understand the request"), "{frozen}");

    // A tool call writes the block; the frozen prompt does not change until --refresh.
    let out = stdout(memory(d).args([
        "tools",
        "call",
        "s",
        "set_context",
        r#"{"label":"memory","content":"The user is called Ada."}"#,
    ]));
    assert!(out.starts_with("Written to memory. Usage: "), "{out}");
    assert_eq!(
        stdout(memory(d).args(["prompt", "s"])),
        frozen,
        "a new process returns the stored frozen prompt"
    );
    let refreshed = stdout(memory(d).args(["prompt", "s", "--refresh"]));
    assert!(refreshed.contains("The user is called Ada."));
    assert_eq!(
        stdout(memory(d).args(["context", "get", "s", "memory"])).trim(),
        "The user is called Ada."
    );

    // Shared block: another session sees it; per-session todos stay separate.
    memory(d)
        .args(["session", "create", "--id", "t"])
        .assert()
        .success();
    assert_eq!(
        stdout(memory(d).args(["context", "get", "t", "memory"])).trim(),
        "The user is called Ada."
    );
    memory(d)
        .args(["context", "append", "s", "todos", "- [ ] write tests"])
        .assert()
        .success();
    assert!(!stdout(memory(d).args(["context", "get", "t", "todos"])).contains("write tests"));

    // Read-only and over-budget writes fail with one clear line.
    memory(d)
        .args(["context", "set", "s", "soul", "evil"])
        .assert()
        .failure()
        .stderr("error: Block \"soul\" is readonly\n");
    let long = "word ".repeat(2_000);
    memory(d)
        .args(["context", "set", "s", "todos", &long])
        .assert()
        .failure()
        .stderr(predicate::str::starts_with(
            "error: Block \"todos\" exceeds maxTokens: ",
        ));
    // The model's error result on stdout, and a failing exit for scripts.
    let out = failed_stdout(memory(d).args([
        "tools",
        "call",
        "s",
        "set_context",
        r#"{"label":"soul","content":"x"}"#,
    ]));
    assert_eq!(out.trim(), "Error: Block \"soul\" is readonly");
    let out = failed_stdout(memory(d).args(["tools", "call", "s", "no_such_tool", "{}"]));
    assert_eq!(out.trim(), "Error: unknown tool \"no_such_tool\"");

    // Keyed entries, search, skills.
    let out = stdout(memory(d).args([
        "context",
        "set",
        "s",
        "knowledge",
        "CI runs on every push",
        "--title",
        "CI policy",
    ]));
    assert_eq!(out.trim(), "Indexed \"ci-policy\" in knowledge.");
    let out = stdout(memory(d).args([
        "tools",
        "call",
        "s",
        "search_context",
        r#"{"label":"knowledge","query":"push"}"#,
    ]));
    assert_eq!(out.trim(), "[ci-policy]\nCI runs on every push");
    let out = stdout(memory(d).args([
        "tools",
        "call",
        "s",
        "load_context",
        r#"{"label":"skills","key":"release"}"#,
    ]));
    assert!(out.contains("Tag `vX.Y.Z`"), "{out}");
    let tools: Value = serde_json::from_str(&stdout(memory(d).args([
        "tools",
        "s",
        "--format",
        "anthropic",
    ])))
    .unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "set_context",
            "load_context",
            "unload_context",
            "search_context",
            "recall",
            "remember",
            "session_search"
        ]
    );
    assert!(
        tools[2]["description"]
            .as_str()
            .unwrap()
            .contains("Currently loaded: skills:release.")
    );
    let mcp: Value =
        serde_json::from_str(&stdout(memory(d).args(["tools", "s", "--format", "mcp"]))).unwrap();
    assert!(mcp[0]["inputSchema"]["properties"]["label"]["enum"].is_array());
    memory(d)
        .args(["tools", "s", "--format", "xml"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("unknown tool format"));
    let bad = failed_stdout(memory(d).args([
        "tools",
        "call",
        "s",
        "set_context",
        r#"{"label":"memory"}"#,
    ]));
    assert!(
        bad.starts_with("Error: invalid input: invalid arguments for set_context"),
        "{bad}"
    );

    // Deleting the session removes its per-session blocks but not shared ones.
    memory(d)
        .args(["session", "delete", "s"])
        .assert()
        .success();
    assert_eq!(
        stdout(memory(d).args(["context", "get", "t", "memory"])).trim(),
        "The user is called Ada."
    );
}

#[test]
fn config_check_names_line_and_key() {
    let dir = data_dir();
    memory(dir.path())
        .args(["config", "check"])
        .assert()
        .success()
        .stdout(predicate::str::contains("ok, 6 block(s)"))
        .stdout(predicate::str::contains("profile [readonly]"));
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[[blocks]]\nlabel = \"m\"\nkind = \"writable\"\nmax_tokens = 0\n",
    )
    .unwrap();
    memory(dir.path())
        .args(["config", "check"])
        .arg(&bad)
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "bad.toml:4: `blocks[0].max_tokens`: must be a positive number",
        ));
    // A broken memory.toml in the data dir stops every command with the same clear line.
    std::fs::copy(&bad, dir.path().join("memory.toml")).unwrap();
    memory(dir.path())
        .args(["session", "list"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(":4: `blocks[0].max_tokens`"));
}
