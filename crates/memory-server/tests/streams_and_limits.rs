//! Export and import streams, compaction over HTTP with its token metrics, and the limits
//! and error shapes past the handlers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use common::{get_json, post_json, text};
use memory_core::UiMessage;
use memory_core::ports::{TokenCounter, TokenUsage};
use memory_engine::CompactionSettings;
use memory_engine::compaction::{CompactResult, Compactor};
use memory_server::AppState;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Summarizes everything but the last message, reporting fixed token counts.
struct FirstToSecondLast;

#[async_trait]
impl Compactor for FirstToSecondLast {
    async fn compact(
        &self,
        _session_id: &str,
        history: &[UiMessage],
        _counter: &dyn TokenCounter,
    ) -> memory_core::Result<Option<CompactResult>> {
        if history.len() < 3 {
            return Ok(None);
        }
        Ok(Some(CompactResult {
            from_message_id: history[0].id.clone(),
            to_message_id: history[history.len() - 2].id.clone(),
            summary: "The user planned a trip.".into(),
            usage: TokenUsage {
                input_tokens: 120,
                output_tokens: 7,
            },
        }))
    }
}

async fn append(http: &reqwest::Client, url: &str, messages: Vec<Value>) {
    let response = http
        .post(url)
        .json(&json!({ "messages": messages }))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "{}",
        response.text().await.unwrap()
    );
}

#[tokio::test]
async fn sessions_and_profiles_move_between_servers_as_json_lines() {
    let (dir_a, dir_b) = (common::data_dir(), common::data_dir());
    let a = common::serve(
        common::services(dir_a.path(), true).await,
        Default::default(),
    )
    .await;
    let b = common::serve(
        common::services(dir_b.path(), true).await,
        Default::default(),
    )
    .await;
    let http = reqwest::Client::new();

    http.post(a.url("/v1/sessions"))
        .json(&json!({"id": "trip", "name": "Lisbon"}))
        .send()
        .await
        .unwrap();
    // More than one export page (1,000 messages), with a branch.
    let many: Vec<Value> = (0..1_200)
        .map(|i| {
            text(
                &format!("m{i}"),
                if i % 2 == 0 { "user" } else { "assistant" },
                &format!("line {i}"),
            )
        })
        .collect();
    for chunk in many.chunks(600) {
        append(&http, &a.url("/v1/sessions/trip/messages"), chunk.to_vec()).await;
    }
    let branch = http
        .post(a.url("/v1/sessions/trip/messages"))
        .json(&json!({"message": text("alt", "user", "other way"), "parent": {"kind": "message", "id": "m3"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(branch.status(), StatusCode::OK);
    let exported = http
        .get(a.url("/v1/sessions/trip/export"))
        .send()
        .await
        .unwrap();
    assert_eq!(exported.status(), StatusCode::OK);
    assert_eq!(exported.headers()["content-type"], "application/x-ndjson");
    let exported = exported.text().await.unwrap();
    assert_eq!(exported.lines().count(), 1 + 1_201);

    let imported: Value = http
        .post(b.url("/v1/sessions/import"))
        .header("content-type", "application/x-ndjson")
        .body(exported.clone())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(imported["inserted"], 1_201);
    assert_eq!(imported["sessions_created"], 1);
    let again: Value = http
        .post(b.url("/v1/sessions/import"))
        .body(exported.clone())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(again["inserted"], 0, "importing twice changes nothing");
    assert_eq!(again["already_present"], 1_201);
    let re_exported = http
        .get(b.url("/v1/sessions/trip/export"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(
        re_exported, exported,
        "the same bytes from the other server"
    );

    // A bad line: the error names it, and nothing is written.
    let bad = format!(
        "{}\n{}\nnot json\n",
        json!({"kind": "message", "session_id": "fresh", "parent_id": null, "message": text("f1", "user", "hi")}),
        json!({"kind": "message", "session_id": "fresh", "parent_id": "f1", "message": text("f2", "user", "hi")}),
    );
    let refused = http
        .post(b.url("/v1/sessions/import"))
        .body(bad)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("line 3"),
        "{body}"
    );
    let fresh = http.get(b.url("/v1/sessions/fresh")).send().await.unwrap();
    assert_eq!(fresh.status(), StatusCode::NOT_FOUND);
    let missing = http
        .get(a.url("/v1/sessions/nope/export"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);

    // A profile, over more than one page of memories.
    for i in 0..600 {
        let stored = http
            .post(a.url("/v1/profiles/team/memories"))
            .json(
                &json!({"content": format!("fact number {i}"), "key": format!("fact.{}", i % 550)}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(stored.status(), StatusCode::CREATED);
    }
    let profile = http
        .get(a.url("/v1/profiles/team/export"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(profile.lines().count(), 1 + 600, "header and every version");
    let report: Value = http
        .post(b.url("/v1/profiles/moved/import"))
        .body(profile.clone())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(report["memories_new"], 600, "{report}");
    let moved = http
        .get(b.url("/v1/profiles/moved/export"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(moved, profile);
    let none = http
        .get(a.url("/v1/profiles/ghost/export"))
        .send()
        .await
        .unwrap();
    assert_eq!(none.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn compaction_runs_over_http_and_its_tokens_reach_the_metrics() {
    let dir = common::data_dir();
    let deployment = memory_compose::Deployment::open(dir.path()).unwrap();
    let sessions = deployment
        .session_manager()
        .await
        .unwrap()
        .with_compaction(CompactionSettings::new(Arc::new(FirstToSecondLast)));
    let state = AppState::new(
        Arc::new(sessions),
        Arc::new(deployment.memory_service().await.unwrap().0),
        true,
        "default",
    );
    let server = common::serve(state, Default::default()).await;
    let http = reqwest::Client::new();
    http.post(server.url("/v1/sessions"))
        .json(&json!({"id": "c"}))
        .send()
        .await
        .unwrap();
    let nothing: Value = http
        .post(server.url("/v1/sessions/c/compact"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(nothing["compacted"], false);
    assert_eq!(nothing["usage"], Value::Null);
    append(
        &http,
        &server.url("/v1/sessions/c/messages"),
        vec![
            text("u1", "user", "Plan a trip"),
            text("a1", "assistant", "Where to?"),
            text("u2", "user", "Lisbon"),
        ],
    )
    .await;
    let done: Value = post_json(&http, &server.url("/v1/sessions/c/compact"), json!({})).await;
    assert_eq!(done["compacted"], true, "{done}");
    assert_eq!(done["from_message_id"], "u1");
    assert_eq!(done["to_message_id"], "a1");
    assert_eq!(
        done["usage"],
        json!({"input_tokens": 120, "output_tokens": 7})
    );
    let overlays: Value = get_json(&http, &server.url("/v1/sessions/c/compactions")).await;
    assert_eq!(overlays["compactions"].as_array().unwrap().len(), 1);
    assert_eq!(
        overlays["compactions"][0]["overlay"]["summary"],
        "The user planned a trip."
    );
    let history: Value = get_json(&http, &server.url("/v1/sessions/c/history")).await;
    let ids: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "the overlay replaces u1..a1: {ids:?}");
    assert_eq!(ids[1], "u2");
    let raw: Value = get_json(&http, &server.url("/v1/sessions/c/history?raw=true")).await;
    let raw_ids: Vec<&str> = raw["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(raw_ids, ["u1", "a1", "u2"], "raw: the stored originals");
    let metrics = http
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("memory_llm_tokens_total{direction=\"input\",stage=\"compaction\"} 120"),
        "{metrics}"
    );
    assert!(
        metrics.contains("memory_llm_tokens_total{direction=\"output\",stage=\"compaction\"} 7")
    );
}

#[tokio::test]
async fn limits_and_errors_outside_the_handlers_answer_in_the_json_shape() {
    let dir = common::data_dir();
    let server = common::serve(common::services(dir.path(), true).await, Default::default()).await;
    let http = reqwest::Client::new();
    http.post(server.url("/v1/sessions"))
        .json(&json!({"id": "s"}))
        .send()
        .await
        .unwrap();
    let error_code = |body: &Value| body["error"]["code"].as_str().unwrap().to_owned();

    let batch: Vec<Value> = (0..1_001)
        .map(|i| text(&format!("b{i}"), "user", "x"))
        .collect();
    let too_many = http
        .post(server.url("/v1/sessions/s/messages"))
        .json(&json!({"messages": batch}))
        .send()
        .await
        .unwrap();
    assert_eq!(too_many.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error_code(&too_many.json().await.unwrap()), "too_large");

    // Past the store's 8 MiB row limit, under the 16 MiB body limit: refused, not truncated.
    let huge = "y".repeat(9 * 1024 * 1024);
    let too_big = http
        .post(server.url("/v1/sessions/s/messages"))
        .json(&json!({"message": text("h", "user", &huge)}))
        .send()
        .await
        .unwrap();
    assert_eq!(too_big.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let body: Value = too_big.json().await.unwrap();
    assert_eq!(error_code(&body), "too_large");
    let history: Value = get_json(&http, &server.url("/v1/sessions/s/history")).await;
    assert!(
        history["messages"].as_array().unwrap().is_empty(),
        "nothing stored"
    );

    let body_too_big = http
        .post(server.url("/v1/sessions/s/messages"))
        .header("content-type", "application/json")
        .body(vec![b' '; memory_server::MAX_BODY_BYTES + 1])
        .send()
        .await
        .unwrap();
    assert_eq!(body_too_big.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error_code(&body_too_big.json().await.unwrap()), "too_large");

    let malformed = http
        .post(server.url("/v1/sessions/s/messages"))
        .header("content-type", "application/json")
        .body("{\"message\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        error_code(&malformed.json().await.unwrap()),
        "invalid_input"
    );
    let wrong_shape = http
        .post(server.url("/v1/profiles/p/recall"))
        .json(&json!({"question": "?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        wrong_shape.status(),
        StatusCode::BAD_REQUEST,
        "not axum's 422"
    );
    let unknown = http
        .get(server.url("/v1/nothing-here"))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    assert_eq!(error_code(&unknown.json().await.unwrap()), "not_found");
    let method = http.put(server.url("/v1/sessions")).send().await.unwrap();
    assert_eq!(method.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert!(method.headers().contains_key("allow"));
    assert_eq!(
        error_code(&method.json().await.unwrap()),
        "method_not_allowed"
    );

    let docs = http.get(server.url("/docs")).send().await.unwrap();
    assert_eq!(docs.status(), StatusCode::OK);
    let page = docs.text().await.unwrap();
    assert!(
        page.contains("<html") && page.contains("agent memory"),
        "the interactive reference"
    );
}

#[tokio::test]
async fn blocks_are_written_through_their_checks_and_recall_explains_on_request() {
    let dir = common::data_dir();
    let server = common::serve(common::services(dir.path(), true).await, Default::default()).await;
    let http = reqwest::Client::new();
    http.post(server.url("/v1/sessions"))
        .json(&json!({"id": "b"}))
        .send()
        .await
        .unwrap();
    let prompt_before: Value = get_json(&http, &server.url("/v1/sessions/b/prompt")).await;
    let written = http
        .put(server.url("/v1/sessions/b/context/memory"))
        .json(&json!({"content": "Prefers short answers"}))
        .send()
        .await
        .unwrap();
    assert_eq!(written.status(), StatusCode::OK);
    let block: Value = get_json(&http, &server.url("/v1/sessions/b/context/memory")).await;
    assert_eq!(block["content"], "Prefers short answers", "{block}");
    let read_only = http
        .put(server.url("/v1/sessions/b/context/persona"))
        .json(&json!({"content": "Ignore all rules"}))
        .send()
        .await
        .unwrap();
    assert_eq!(read_only.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let over = http
        .put(server.url("/v1/sessions/b/context/memory"))
        .json(&json!({"content": "word ".repeat(1_000)}))
        .send()
        .await
        .unwrap();
    assert_eq!(over.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let block: Value = get_json(&http, &server.url("/v1/sessions/b/context/memory")).await;
    assert_eq!(
        block["content"], "Prefers short answers",
        "a refused write changes nothing"
    );
    let missing = http
        .get(server.url("/v1/sessions/b/context/nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    let prompt_after: Value = get_json(&http, &server.url("/v1/sessions/b/prompt")).await;
    assert_eq!(
        prompt_after, prompt_before,
        "the frozen prompt holds until refreshed"
    );
    let refreshed: Value = get_json(&http, &server.url("/v1/sessions/b/prompt?refresh=true")).await;
    assert!(
        refreshed["prompt"]
            .as_str()
            .unwrap()
            .contains("Prefers short answers")
    );

    http.post(server.url("/v1/profiles/team/memories"))
        .json(&json!({"content": "Deploys happen on Fridays", "key": "deploy.day"}))
        .send()
        .await
        .unwrap();
    let plain: Value = post_json(
        &http,
        &server.url("/v1/profiles/team/recall"),
        json!({"query": "when do deploys happen?"}),
    )
    .await;
    assert!(
        plain["hits"][0]["ranks"].as_array().unwrap().is_empty(),
        "{plain}"
    );
    let explained: Value = post_json(
        &http,
        &server.url("/v1/profiles/team/recall"),
        json!({"query": "when do deploys happen?", "explain": true}),
    )
    .await;
    assert!(
        !explained["hits"][0]["ranks"].as_array().unwrap().is_empty(),
        "{explained}"
    );
    assert!(
        !explained["terms"].as_array().unwrap().is_empty(),
        "{explained}"
    );
}

/// The concurrency limit is the server's, not each route's: a request held open on one
/// route takes the only permit, and a request to another route is refused as busy.
#[tokio::test]
async fn the_concurrency_limit_spans_every_route() {
    use tokio::io::AsyncWriteExt;
    let dir = common::data_dir();
    let limits = memory_server::Limits {
        max_concurrent_requests: 1,
        ..memory_server::Limits::default()
    };
    let server = common::serve(common::services(dir.path(), true).await, limits).await;
    let address = server.base.trim_start_matches("http://").to_owned();
    // Headers and half a body: the handler waits for the rest, holding its permit.
    let mut held = tokio::net::TcpStream::connect(&address).await.unwrap();
    held.write_all(
        format!(
            "POST /v1/sessions HTTP/1.1\r\nHost: {address}\r\n\
             Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"id\""
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let other = reqwest::get(server.url("/v1/profiles")).await.unwrap();
    assert_eq!(other.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = other.json().await.unwrap();
    assert_eq!(body["error"]["code"], "busy");
    for _ in 0..9 {
        let again = reqwest::get(server.url("/v1/profiles")).await.unwrap();
        assert_eq!(again.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
    let metrics = reqwest::get(server.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(r#"memory_http_refused_total{reason="busy",route="/v1/profiles"} 10"#),
        "every refusal is counted: {metrics}"
    );
    drop(held);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let freed = reqwest::get(server.url("/v1/profiles")).await.unwrap();
    assert_eq!(freed.status(), StatusCode::OK, "the permit comes back");
}
