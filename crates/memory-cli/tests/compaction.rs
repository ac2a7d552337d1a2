//! `compact`, `history --raw` and `compactions` end to end, with the LLM on a local server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn memory(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("memory").unwrap();
    cmd.arg("--data-dir")
        .arg(dir)
        .env_remove("MEMORY_DATA_DIR")
        .env_remove("OPENAI_API_KEY");
    cmd
}

fn json_out(cmd: &mut Command) -> Value {
    serde_json::from_slice(&cmd.assert().success().get_output().stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_summarizes_through_the_configured_endpoint() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "model": "tiny",
            "choices": [{"message": {"role": "assistant", "content": "## Goal\nPlan a trip."}}],
            "usage": {"prompt_tokens": 300, "completion_tokens": 12}
        })))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_owned();
    std::fs::write(
        d.join("memory.toml"),
        format!("[llm]\nbase_url = \"{}/v1\"\nmodel = \"tiny\"\n\n[compaction]\nprotect_head = 1\ntail_token_budget = 10\n", server.uri()),
    )
    .unwrap();
    tokio::task::spawn_blocking(move || {
        memory(&d).args(["session", "create", "--id", "s"]).assert().success();
        for i in 0..8 {
            let m = json!({"id": format!("m{i}"), "role": "user", "parts": [{"type": "text", "text": format!("turn {i} about the trip")}]});
            memory(&d).args(["message", "append", "s", &m.to_string()]).assert().success();
        }
        let result = json_out(memory(&d).args(["compact", "s", "--json"]));
        assert_eq!(result["compacted"], true);
        assert_eq!(result["from_message_id"], "m1");
        assert_eq!(result["usage"]["input_tokens"], 300);
        let visible = json_out(memory(&d).args(["history", "s", "--json"]));
        let ids: Vec<&str> = visible["messages"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), 4);
        assert!(ids[1].starts_with("compaction_"));
        assert_eq!(visible["messages"][1]["parts"][0]["text"], "## Goal\nPlan a trip.");
        let raw = json_out(memory(&d).args(["history", "s", "--raw", "--json"]));
        assert_eq!(raw["messages"].as_array().unwrap().len(), 8);
        let listed = json_out(memory(&d).args(["compactions", "s", "--json"]));
        assert_eq!(listed["compactions"].as_array().unwrap().len(), 1);
        assert_eq!(listed["compactions"][0]["superseded_by"], Value::Null);
    })
    .await
    .unwrap();
}

#[test]
fn compact_without_an_llm_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    memory(dir.path())
        .args(["session", "create", "--id", "s"])
        .assert()
        .success();
    memory(dir.path())
        .args(["compact", "s"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "compaction needs an [llm] section",
        ));
}
