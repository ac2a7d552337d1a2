//! `profile ingest --wait` against a local server that behaves like llama-cpp-python: it
//! refuses `json_schema` with a 500 and takes `json_object`; its classifier call fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

fn memory(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("memory").unwrap();
    cmd.arg("--data-dir")
        .arg(dir)
        .env_remove("MEMORY_DATA_DIR")
        .env_remove("OPENAI_API_KEY");
    cmd
}

fn reply(content: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "model": "smollm2",
        "choices": [{"message": {"role": "assistant", "content": content.to_string()}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20}
    }))
}

/// llama-cpp-python's answers, by request format and stage.
struct LlamaLike;

impl Respond for LlamaLike {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        if body["response_format"]["type"] == "json_schema" {
            return ResponseTemplate::new(500).set_body_json(json!({"error": {
                "message": "1 validation error: {'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\"}",
                "type": "internal_server_error"
            }}));
        }
        assert_eq!(
            body["response_format"]["type"], "json_object",
            "the fallback format"
        );
        let system = body["messages"][0]["content"].as_str().unwrap();
        assert!(
            system.contains("JSON Schema"),
            "the schema is in the prompt"
        );
        if system.contains("extract durable memories") {
            reply(
                json!({"memories": [{"content": "Deploys happen on Fridays.", "lines": [0], "date": null}]}),
            )
        } else if system.contains("concrete details") {
            reply(json!({"memories": []}))
        } else if system.contains("verify memories") {
            reply(
                json!({"results": [{"index": 0, "verdict": "passed", "content": null, "failed_checks": []}]}),
            )
        } else {
            ResponseTemplate::new(400)
                .set_body_json(json!({"error": {"message": "classifier model not loaded"}}))
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingest_falls_back_to_json_object_and_a_failed_call_is_done_with_errors() {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::method("POST"))
        .respond_with(LlamaLike)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_owned();
    std::fs::write(
        d.join("memory.toml"),
        format!(
            "[llm]\nbase_url = \"{}/v1\"\nmodel = \"smollm2\"\nmax_retries = 2\n\n[memory]\nembedder = \"none\"\n",
            server.uri()
        ),
    )
    .unwrap();
    let file = d.join("chat.jsonl");
    std::fs::write(
        &file,
        json!({"id": "m1", "role": "user", "parts": [{"type": "text", "text": "Deploys happen on Fridays."}]}).to_string() + "\n",
    )
    .unwrap();
    tokio::task::spawn_blocking(move || {
        let out = memory(&d)
            .args([
                "profile",
                "ingest",
                "p",
                "--session",
                "s",
                "--wait",
                "--json",
            ])
            .arg(&file)
            .assert()
            .failure()
            .stderr(predicate::str::contains(
                "1 of 1 ingest job(s) failed or finished with errors",
            ))
            .get_output()
            .stdout
            .clone();
        let out: Value = serde_json::from_slice(&out).unwrap();
        let job = &out["jobs"][0];
        assert_eq!(job["status"], "done_with_errors", "{job:#}");
        assert!(
            job["error"]
                .as_str()
                .unwrap()
                .contains("classifier model not loaded"),
            "{job:#}"
        );
        assert_eq!(job["extraction"]["stored"], 1, "what succeeded is stored");
        // The refusal was sent once, and counted as a request of the extraction call.
        let extraction = &job["usage"]["stages"]["extraction"];
        assert_eq!(
            (
                extraction["calls"].as_u64(),
                extraction["requests"].as_u64()
            ),
            (Some(1), Some(2)),
            "{job:#}"
        );
        let listed: Value = serde_json::from_slice(
            &memory(&d)
                .args(["profile", "list", "p", "--json"])
                .assert()
                .success()
                .get_output()
                .stdout,
        )
        .unwrap();
        assert_eq!(
            listed["memories"].as_array().unwrap().len(),
            1,
            "{listed:#}"
        );
    })
    .await
    .unwrap();
}
