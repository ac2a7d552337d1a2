//! The REST API end to end: a real server on a loopback port, a real HTTP client, the
//! embedded default behind it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{Server, get_json, post_json, text};
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn start() -> Server {
    start_with(memory_server::Limits::default()).await
}

async fn start_with(limits: memory_server::Limits) -> Server {
    start_full(limits, true).await
}

/// A server over a deployment with one shared writable block of 50 tokens.
async fn start_full(limits: memory_server::Limits, run_jobs: bool) -> Server {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        "[[blocks]]\nlabel = \"memory\"\nkind = \"writable\"\ndescription = \"Learned facts\"\n\
         max_tokens = 50\nscope = \"shared\"\n\n[memory]\nembedder = \"none\"\n",
    )
    .unwrap();
    let state = common::services(dir.path(), run_jobs).await;
    common::serve(state, limits).await.keeping(dir)
}

#[tokio::test]
async fn sessions_messages_history_and_search() {
    let server = start().await;
    let http = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", server.base);

    let created = http
        .post(url("/v1/sessions"))
        .json(&json!({"id": "trip", "name": "Lisbon trip"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let again = http
        .post(url("/v1/sessions"))
        .json(&json!({"id": "trip"}))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::CONFLICT);
    let body: Value = again.json().await.unwrap();
    assert_eq!(body["error"]["code"], "already_exists");

    let appended: Value = post_json(
        &http,
        &url("/v1/sessions/trip/messages"),
        json!({"messages": [
            text("u1", "user", "Weather in Lisbon?"),
            text("a1", "assistant", "Sunny, 22 degrees."),
        ]}),
    )
    .await;
    assert_eq!(appended["outcomes"][1]["outcome"], "inserted");
    let branch = http
        .post(url("/v1/sessions/trip/messages"))
        .json(
            &json!({"message": text("a1b", "assistant", "Let me check."),
                      "parent": {"kind": "message", "id": "u1"}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(branch.status(), StatusCode::OK);
    let history: Value = get_json(&http, &url("/v1/sessions/trip/history?leaf=a1")).await;
    let ids: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["u1", "a1"]);
    let hits: Value = get_json(&http, &url("/v1/search?q=sunny&session=trip")).await;
    assert_eq!(hits["hits"][0]["message_id"], "a1");

    // Errors: unknown parent, bad message, unknown session, bad limit.
    let bad_parent = http
        .post(url("/v1/sessions/trip/messages"))
        .json(&json!({"message": text("x", "user", "?"), "parent": {"kind": "message", "id": "nope"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad_parent.status(), StatusCode::NOT_FOUND);
    let bad_message = http
        .post(url("/v1/sessions/trip/messages"))
        .json(&json!({"message": {"id": "x"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad_message.status(), StatusCode::BAD_REQUEST);
    let missing = http.get(url("/v1/sessions/nope")).send().await.unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_found");
    let too_many = http
        .get(url("/v1/sessions?limit=5000"))
        .send()
        .await
        .unwrap();
    assert_eq!(too_many.status(), StatusCode::BAD_REQUEST);
    let too_big = http
        .post(url("/v1/sessions/trip/messages"))
        .header("content-type", "application/json")
        .body(vec![b' '; memory_server::MAX_BODY_BYTES + 1])
        .send()
        .await
        .unwrap();
    assert_eq!(too_big.status(), StatusCode::PAYLOAD_TOO_LARGE);

    let renamed: Value = http
        .patch(url("/v1/sessions/trip"))
        .json(&json!({"name": "Porto"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(renamed["name"], "Porto");
    let deleted = http.delete(url("/v1/sessions/trip")).send().await.unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let gone = http.get(url("/v1/sessions/trip")).send().await.unwrap();
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn long_term_remember_recall_ingest_and_forget() {
    let server = start().await;
    let http = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", server.base);

    let stored = http
        .post(url("/v1/profiles/team/memories"))
        .json(&json!({"content": "Deploys happen on Fridays", "key": "deploy.day"}))
        .send()
        .await
        .unwrap();
    assert_eq!(stored.status(), StatusCode::CREATED);
    let stored: Value = stored.json().await.unwrap();
    let id = stored["id"].as_str().unwrap().to_owned();
    let recalled: Value = post_json(
        &http,
        &url("/v1/profiles/team/recall"),
        json!({"query": "when do deploys happen?"}),
    )
    .await;
    assert_eq!(recalled["hits"][0]["item"]["id"], id.as_str());

    let accepted = http
        .post(url("/v1/profiles/team/ingest"))
        .json(&json!({"session": "c1", "messages": [
            {"role": "user", "content": "The staging database is called heron."}
        ]}))
        .send()
        .await
        .unwrap();
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);
    let accepted: Value = accepted.json().await.unwrap();
    let status_url = accepted["status_url"].as_str().unwrap().to_owned();
    let mut status = Value::Null;
    for _ in 0..100 {
        status = get_json(&http, &url(&status_url)).await;
        if status["status"] == "done" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(status["status"], "done", "{status}");

    let listed: Value = get_json(&http, &url("/v1/profiles/team/memories?key=deploy.day")).await;
    assert_eq!(listed["memories"].as_array().unwrap().len(), 1);
    let recorded = listed["memories"][0]["recorded_at"].as_i64().unwrap();
    let window = |since: i64, until: i64| {
        url(&format!(
            "/v1/profiles/team/memories?key=deploy.day&since={since}&until={until}"
        ))
    };
    let inside = get_json(&http, &window(recorded, recorded + 1)).await;
    assert_eq!(inside["memories"].as_array().unwrap().len(), 1, "{inside}");
    let after = get_json(&http, &window(recorded + 1, recorded + 10_000)).await;
    assert_eq!(after["memories"].as_array().unwrap().len(), 0, "{after}");
    let forgotten = http
        .delete(url(&format!(
            "/v1/profiles/team/memories/{id}?reason=moved"
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(forgotten.status(), StatusCode::NO_CONTENT);
    let listed: Value = get_json(&http, &url("/v1/profiles/team/memories")).await;
    assert!(listed["memories"].as_array().unwrap().is_empty());
    let unknown = http
        .post(url("/v1/profiles/nobody/recall"))
        .json(&json!({"query": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_openapi_document_lists_every_route() {
    let server = start().await;
    let doc: Value = reqwest::get(format!("{}/openapi.json", server.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    for path in [
        "/v1/sessions",
        "/v1/sessions/{id}",
        "/v1/sessions/{id}/messages",
        "/v1/sessions/{id}/history",
        "/v1/sessions/{id}/latest-leaf",
        "/v1/sessions/{id}/context/{label}/append",
        "/v1/search",
        "/v1/profiles/{profile}/memories",
        "/v1/profiles/{profile}/recall",
        "/v1/profiles/{profile}/ingest",
        "/v1/profiles/{profile}/jobs/{id}",
        "/healthz",
        "/readyz",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} is documented");
    }
    let ready = reqwest::get(format!("{}/readyz", server.base))
        .await
        .unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_non_loopback_address_is_refused_without_api_keys() {
    let server = start().await;
    drop(server);
    let dir = tempfile::tempdir().unwrap();
    let state = common::services(dir.path(), true).await;
    let error = memory_server::serve(
        state,
        memory_server::Limits::default(),
        "0.0.0.0:0".parse().unwrap(),
        |_| {},
        async {},
    )
    .await
    .err()
    .unwrap();
    assert!(matches!(error, memory_server::ServeError::NotLoopback(_)));
}

/// The generated document passes an independent validator (`openapi-spec-validator` from
/// PyPI; `scripts/setup-openapi-validator.sh` installs it and the test command requires it).
#[test]
fn the_openapi_document_passes_an_independent_validator() {
    use utoipa::OpenApi;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("openapi.json");
    let doc = memory_server::openapi::ApiDoc::openapi()
        .to_pretty_json()
        .unwrap();
    std::fs::write(&file, doc).unwrap();
    let Some(python_path) = memory_testkit::python::python_module(
        "openapi_spec_validator",
        "MEMORY_OPENAPI_VALIDATOR",
        "MEMORY_REQUIRE_OPENAPI_VALIDATOR",
    ) else {
        return;
    };
    let out = std::process::Command::new("python3")
        .args(["-m", "openapi_spec_validator"])
        .arg(&file)
        .env("PYTHONPATH", &python_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn branches_fork_update_delete_context_and_tools() {
    let server = start().await;
    let http = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", server.base);
    post_json(&http, &url("/v1/sessions"), json!({"id": "s"})).await;
    post_json(
        &http,
        &url("/v1/sessions/s/messages"),
        json!({"messages": [text("u1", "user", "hi"), text("a1", "assistant", "hello")]}),
    )
    .await;
    post_json(
        &http,
        &url("/v1/sessions/s/messages"),
        json!({"message": text("a2", "assistant", "hey"), "parent": {"kind": "message", "id": "u1"}}),
    )
    .await;
    let children = get_json(&http, &url("/v1/sessions/s/messages/u1/children")).await;
    assert_eq!(children["messages"].as_array().unwrap().len(), 2);
    let under = get_json(&http, &url("/v1/sessions/s/latest-leaf?under=u1")).await;
    assert_eq!(under["message"]["id"], "a2", "{under}");
    let under = get_json(&http, &url("/v1/sessions/s/latest-leaf?under=a1")).await;
    assert_eq!(under["message"]["id"], "a1", "{under}");
    let (missing, _) = call(http.get(url("/v1/sessions/s/latest-leaf?under=nope"))).await;
    assert_eq!(missing, StatusCode::NOT_FOUND);
    let forks = get_json(&http, &url("/v1/sessions/s/history?leaf=a1&branches=true")).await;
    assert_eq!(forks["branches"], json!({"u1": ["a1", "a2"]}), "{forks}");
    let plain = get_json(&http, &url("/v1/sessions/s/history?leaf=a1")).await;
    assert!(plain.get("branches").is_none(), "{plain}");

    let updated = http
        .put(url("/v1/sessions/s/messages/a1"))
        .json(&text("a1", "assistant", "hello again"))
        .send()
        .await
        .unwrap();
    assert_eq!(updated.status(), StatusCode::NO_CONTENT);
    let mismatch = http
        .put(url("/v1/sessions/s/messages/a1"))
        .json(&text("other", "assistant", "x"))
        .send()
        .await
        .unwrap();
    assert_eq!(mismatch.status(), StatusCode::BAD_REQUEST);

    let forked = http
        .post(url("/v1/sessions/s/fork"))
        .json(&json!({"at": "a1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(forked.status(), StatusCode::CREATED);
    let forked: Value = forked.json().await.unwrap();
    let fork_id = forked["id"].as_str().unwrap();
    let history = get_json(&http, &url(&format!("/v1/sessions/{fork_id}/history"))).await;
    assert_eq!(history["messages"][1]["parts"][0]["text"], "hello again");

    let deleted = http
        .delete(url("/v1/sessions/s/messages/a2"))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let again = http
        .delete(url("/v1/sessions/s/messages/a2"))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::NOT_FOUND);

    // Context: the frozen prompt survives a write; a refresh shows it; tools list and run.
    let blocks = get_json(&http, &url("/v1/sessions/s/context")).await;
    assert_eq!(blocks["blocks"][0]["label"], "memory");
    let frozen = get_json(&http, &url("/v1/sessions/s/prompt")).await;
    let tools = get_json(&http, &url("/v1/sessions/s/tools?format=anthropic")).await;
    assert!(tools.to_string().contains("set_context"), "{tools}");
    let result = post_json(
        &http,
        &url("/v1/sessions/s/tools/set_context"),
        json!({"label": "memory", "content": "Prefers trains"}),
    )
    .await;
    assert_eq!(result["is_error"], false, "{result}");
    let refused = post_json(
        &http,
        &url("/v1/sessions/s/tools/set_context"),
        json!({"label": "memory", "content": "word ".repeat(500)}),
    )
    .await;
    assert_eq!(
        refused["is_error"], true,
        "over the block's budget: {refused}"
    );
    let still = get_json(&http, &url("/v1/sessions/s/prompt")).await;
    assert_eq!(still, frozen, "the frozen prompt survives a write");
    let checked = get_json(&http, &url("/v1/sessions/s/prompt?check_stale=true")).await;
    assert_eq!(checked["stale"], true, "a write makes it stale: {checked}");
    assert_eq!(checked["prompt"], frozen["prompt"]);
    assert_eq!(blocks["loaded_skills"], json!([]));
    let refreshed = get_json(&http, &url("/v1/sessions/s/prompt?refresh=true")).await;
    let fresh = get_json(&http, &url("/v1/sessions/s/prompt?check_stale=true")).await;
    assert_eq!(fresh["stale"], false, "{fresh}");
    assert!(
        refreshed["prompt"]
            .as_str()
            .unwrap()
            .contains("Prefers trains")
    );
    let bad_format = http
        .get(url("/v1/sessions/s/tools?format=x"))
        .send()
        .await
        .unwrap();
    assert_eq!(bad_format.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn latest_leaf_batch_delete_and_block_append() {
    let server = start().await;
    let http = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", server.base);
    post_json(&http, &url("/v1/sessions"), json!({"id": "s"})).await;
    let empty = get_json(&http, &url("/v1/sessions/s/latest-leaf")).await;
    assert_eq!(empty["message"], Value::Null, "{empty}");
    let (missing, _) = call(http.get(url("/v1/sessions/nope/latest-leaf"))).await;
    assert_eq!(missing, StatusCode::NOT_FOUND);

    post_json(
        &http,
        &url("/v1/sessions/s/messages"),
        json!({"messages": [text("u1", "user", "hi"), text("a1", "assistant", "hello"), text("u2", "user", "more")]}),
    )
    .await;
    let leaf = get_json(&http, &url("/v1/sessions/s/latest-leaf")).await;
    assert_eq!(leaf["message"]["id"], "u2", "{leaf}");
    let last = get_json(&http, &url("/v1/sessions/s/history?limit=1")).await;
    assert_eq!(last["total"], 3, "{last}");
    assert_eq!(last["truncated"], true, "{last}");
    let all = get_json(&http, &url("/v1/sessions/s/history?limit=3")).await;
    assert_eq!(
        (&all["total"], &all["truncated"]),
        (&json!(3), &json!(false)),
        "{all}"
    );
    assert_eq!(last["messages"].as_array().unwrap().len(), 1);
    assert_eq!(last["messages"][0]["id"], "u2");
    assert_eq!(leaf["message"]["parts"][0]["text"], "more");

    // Two of three go at once (one unknown id is skipped); the child re-links to the root.
    let (status, deleted) = call(
        http.delete(url("/v1/sessions/s/messages"))
            .json(&json!({"ids": ["a1", "u2", "unknown"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{deleted}");
    assert_eq!(deleted["deleted"], 2);
    let history = get_json(&http, &url("/v1/sessions/s/history")).await;
    let ids: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["u1"]);
    let (no_ids, _) = call(
        http.delete(url("/v1/sessions/s/messages"))
            .json(&json!({"ids": []})),
    )
    .await;
    assert_eq!(no_ids, StatusCode::BAD_REQUEST);
    let (no_session, _) = call(
        http.delete(url("/v1/sessions/nope/messages"))
            .json(&json!({"ids": ["u1"]})),
    )
    .await;
    assert_eq!(no_session, StatusCode::NOT_FOUND);

    // Appends land after a newline, within the block's budget.
    post_json(
        &http,
        &url("/v1/sessions/s/context/memory/append"),
        json!({"content": "Prefers trains"}),
    )
    .await;
    let block = post_json(
        &http,
        &url("/v1/sessions/s/context/memory/append"),
        json!({"content": "Lives in Lyon"}),
    )
    .await;
    assert_eq!(block["content"], "Prefers trains\nLives in Lyon", "{block}");
    let (over, body) = call(
        http.post(url("/v1/sessions/s/context/memory/append"))
            .json(&json!({"content": "word ".repeat(500)})),
    )
    .await;
    assert_eq!(over, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let stored = get_json(&http, &url("/v1/sessions/s/context/memory")).await;
    assert_eq!(
        stored["content"], "Prefers trains\nLives in Lyon",
        "a refused append changes nothing"
    );
    for request in [
        http.put(url("/v1/sessions/s/context/..%2Fx"))
            .json(&json!({"content": "x"})),
        http.post(url("/v1/sessions/s/context/ghost/append"))
            .json(&json!({"content": "x"})),
        http.get(url("/v1/sessions/s/context/ghost")),
    ] {
        let (status, body) = call(request).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert!(
            body.to_string().contains("the declared blocks: memory"),
            "an unknown block is named, with the declared ones: {body}"
        );
    }
}

#[tokio::test]
async fn the_inspector_is_served_under_a_strict_policy_and_about_answers() {
    let server = start().await;
    let http = reqwest::Client::new();
    for (path, kind) in [
        ("/ui", "text/html"),
        ("/ui/app.js", "text/javascript"),
        ("/ui/app.css", "text/css"),
    ] {
        let response = http
            .get(format!("{}{path}", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let headers = response.headers().clone();
        assert!(headers["content-type"].to_str().unwrap().starts_with(kind));
        let policy = headers["content-security-policy"].to_str().unwrap();
        assert!(
            policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"),
            "{policy}"
        );
        assert_eq!(headers["x-content-type-options"], "nosniff");
    }
    let page = http
        .get(format!("{}/ui", server.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("/ui/app.js") && !page.contains("<script>"),
        "no inline script"
    );
    // The test server's state says nothing about its deployment: roles are empty.
    let about = get_json(&http, &format!("{}/v1/about", server.base)).await;
    assert_eq!(about["run_jobs"], true, "{about}");
    assert_eq!(about["mcp_profile"], "default");
    assert!(about["roles"].is_object() && about["warnings"].is_array());
}

#[tokio::test]
async fn profiles_list_purge_jobs_and_delete() {
    let server = start().await;
    let http = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", server.base);
    let stored = post_json(
        &http,
        &url("/v1/profiles/ops/memories"),
        json!({"content": "The pager rotates weekly"}),
    )
    .await;
    let id = stored["id"].as_str().unwrap();
    assert_eq!(
        get_json(&http, &url("/v1/profiles")).await["profiles"],
        json!(["ops"])
    );
    let jobs = get_json(&http, &url("/v1/profiles/ops/jobs")).await;
    assert!(jobs["jobs"].as_array().unwrap().is_empty());
    let purged = http
        .post(url(&format!("/v1/profiles/ops/memories/{id}/purge")))
        .send()
        .await
        .unwrap();
    assert_eq!(purged.status(), StatusCode::OK);
    let purged: Value = purged.json().await.unwrap();
    assert_eq!(purged["memory"], true);
    let twice = http
        .post(url(&format!("/v1/profiles/ops/memories/{id}/purge")))
        .send()
        .await
        .unwrap();
    assert_eq!(twice.status(), StatusCode::NOT_FOUND);
    let deleted = http.delete(url("/v1/profiles/ops")).send().await.unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let gone = http.delete(url("/v1/profiles/ops")).send().await.unwrap();
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        get_json(&http, &url("/v1/profiles")).await["profiles"],
        json!([])
    );
}

#[tokio::test]
async fn the_profile_list_is_paged_in_name_order() {
    let server = start().await;
    let http = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", server.base);
    for name in ["carol", "alice", "erin", "bob", "dave"] {
        post_json(
            &http,
            &url(&format!("/v1/profiles/{name}/memories")),
            json!({"content": format!("{name} likes tea")}),
        )
        .await;
    }
    let first = get_json(&http, &url("/v1/profiles?limit=2")).await;
    assert_eq!(first["profiles"], json!(["alice", "bob"]));
    assert_eq!(first["next"], json!("bob"));
    let second = get_json(&http, &url("/v1/profiles?limit=2&after=bob")).await;
    assert_eq!(second["profiles"], json!(["carol", "dave"]));
    let last = get_json(&http, &url("/v1/profiles?limit=2&after=dave")).await;
    assert_eq!(last["profiles"], json!(["erin"]));
    assert!(last.get("next").is_none(), "{last}");
    let all = get_json(&http, &url("/v1/profiles")).await;
    assert_eq!(all["profiles"].as_array().unwrap().len(), 5);
    assert!(all.get("next").is_none());
}

#[tokio::test]
async fn request_ids_metrics_and_limits() {
    let server = start().await;
    let http = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", server.base);
    let generated = http.get(url("/healthz")).send().await.unwrap();
    let id = generated.headers()[memory_server::REQUEST_ID]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(id.len(), 36, "a UUID: {id}");
    let echoed = http
        .get(url("/healthz"))
        .header(memory_server::REQUEST_ID, "client-chosen-id")
        .send()
        .await
        .unwrap();
    assert_eq!(
        echoed.headers()[memory_server::REQUEST_ID],
        "client-chosen-id"
    );

    post_json(&http, &url("/v1/sessions"), json!({"id": "m"})).await;
    http.get(url("/v1/sessions/nope")).send().await.unwrap();
    let metrics = http
        .get(url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(
            r#"memory_http_requests_total{method="POST",route="/v1/sessions",status="201"} 1"#
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            r#"memory_http_requests_total{method="GET",route="/v1/sessions/{id}",status="404"} 1"#
        ),
        "one series per route template, not per id: {metrics}"
    );
    assert!(metrics.contains("memory_http_request_duration_seconds_bucket"));

    // A request past the time limit is a 503 with Retry-After, never a hang: this one
    // promises a body it never sends.
    let hurried = start_with(memory_server::Limits {
        request_timeout: std::time::Duration::from_millis(200),
        ..memory_server::Limits::default()
    })
    .await;
    let late = {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let address = hurried.base.trim_start_matches("http://").to_owned();
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        stream
            .write_all(
                format!(
                    "POST /v1/sessions HTTP/1.1\r\nHost: {address}\r\n\
                     Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"id\""
                )
                .as_bytes(),
            )
            .await
            .unwrap();
        let mut response = vec![0u8; 4096];
        let n = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            stream.read(&mut response),
        )
        .await
        .expect("answered within the limit, not hung")
        .unwrap();
        String::from_utf8_lossy(&response[..n]).into_owned()
    };
    assert!(late.starts_with("HTTP/1.1 503"), "{late}");
    assert!(late.to_lowercase().contains("retry-after"), "{late}");
    assert!(late.contains(r#""code":"timeout""#), "{late}");

    // One request at a time: concurrent ones are answered or refused at once as busy.
    let narrow = start_with(memory_server::Limits {
        max_concurrent_requests: 1,
        ..memory_server::Limits::default()
    })
    .await;
    let requests = (0..32).map(|i| {
        let http = http.clone();
        let url = format!("{}/v1/sessions", narrow.base);
        async move {
            http.post(url)
                .json(&json!({"id": format!("c{i}")}))
                .send()
                .await
                .unwrap()
        }
    });
    let mut busy = 0;
    for response in futures_join_all(requests).await {
        match response.status() {
            StatusCode::CREATED => {}
            StatusCode::SERVICE_UNAVAILABLE => {
                assert!(response.headers().contains_key("retry-after"));
                let body: Value = response.json().await.unwrap();
                assert_eq!(body["error"]["code"], "busy");
                busy += 1;
            }
            other => panic!("neither answered nor refused as busy: {other}"),
        }
    }
    eprintln!("{busy} of 32 concurrent requests were refused as busy");
}

/// Runs futures concurrently and collects their outputs in order.
async fn futures_join_all<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for handle in handles {
        out.push(handle.await.unwrap());
    }
    out
}

/// A server that leaves jobs to workers accepts an ingest and leaves its job queued.
#[tokio::test]
async fn a_server_without_jobs_leaves_them_queued_for_workers() {
    let server = start_full(memory_server::Limits::default(), false).await;
    let http = reqwest::Client::new();
    let accepted = post_json(
        &http,
        &format!("{}/v1/profiles/team/ingest", server.base),
        json!({"session": "c1", "messages": [{"role": "user", "content": "hello"}]}),
    )
    .await;
    let status_url = accepted["status_url"].as_str().unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let job = get_json(&http, &format!("{}{status_url}", server.base)).await;
    assert_eq!(job["status"], "queued", "{job}");
}

/// The two tiers as one over REST: a bound session's end ships its history (the server
/// runs the job), a second session's `recall` tool finds it with provenance, the PATCH
/// route binds and unbinds, and a stored session ingests by id without re-sending.
#[tokio::test]
async fn a_bound_session_ships_its_history_and_a_later_session_recalls_it() {
    let server = start().await;
    let http = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", server.base);
    let created: Value = post_json(
        &http,
        &url("/v1/sessions"),
        json!({"id": "one", "profile": "alice"}),
    )
    .await;
    assert_eq!(created["profile"], "alice");
    post_json(
        &http,
        &url("/v1/sessions/one/messages"),
        json!({"messages": [
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "I moved to Lisbon last spring."}]},
            {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "Noted: Lisbon."}]}
        ]}),
    )
    .await;
    let ended: Value = post_json(&http, &url("/v1/sessions/one/end"), json!({})).await;
    assert_eq!(ended["session"]["end_reason"], "ended");
    assert_eq!(ended["shipped"]["shipped"], 2, "{ended}");
    let job_id = ended["shipped"]["job"]["id"].as_str().unwrap().to_owned();
    let mut status = Value::Null;
    for _ in 0..100 {
        status = get_json(&http, &url(&format!("/v1/profiles/alice/jobs/{job_id}"))).await;
        if status["status"] == "done" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        status["status"], "done",
        "the server ran the shipped job: {status}"
    );

    post_json(&http, &url("/v1/sessions"), json!({"id": "two"})).await;
    let tools: Value = get_json(&http, &url("/v1/sessions/two/tools")).await;
    assert!(
        !tools.to_string().contains("\"recall\""),
        "unbound: {tools}"
    );
    let (bound_status, _) = call(
        http.patch(url("/v1/sessions/two"))
            .json(&json!({"profile": "alice"})),
    )
    .await;
    assert_eq!(bound_status, StatusCode::OK);
    let tools: Value = get_json(&http, &url("/v1/sessions/two/tools")).await;
    assert!(tools.to_string().contains("\"recall\""), "{tools}");
    assert!(tools.to_string().contains("\"remember\""), "{tools}");
    let (_, recalled) = call(
        http.post(url("/v1/sessions/two/tools/recall"))
            .json(&json!({"query": "Lisbon"})),
    )
    .await;
    let recalled = recalled.to_string();
    assert!(recalled.contains("Lisbon"), "{recalled}");
    assert!(recalled.contains("session=\\\"one\\\""), "{recalled}");
    assert!(recalled.contains("messages=\\\"u1\\\""), "{recalled}");

    // Ingest a stored session by id: nothing new after the end shipped it all.
    let (again_status, again) = call(
        http.post(url("/v1/profiles/alice/ingest"))
            .json(&json!({"session": "one"})),
    )
    .await;
    assert_eq!(again_status, StatusCode::OK);
    assert_eq!(again["job"], Value::Null);
    assert_eq!(again["already_shipped"], 2);
    // Into another profile, one message by range: queued.
    let (ranged_status, ranged) = call(
        http.post(url("/v1/profiles/bob/ingest"))
            .json(&json!({"session": "one", "from": "u1", "to": "u1"})),
    )
    .await;
    assert_eq!(ranged_status, StatusCode::ACCEPTED);
    assert_eq!(ranged["shipped"], 1);
    let (mixed_status, _) = call(
        http.post(url("/v1/profiles/bob/ingest"))
            .json(&json!({"session": "one", "leaf": "a1", "messages": []})),
    )
    .await;
    assert_eq!(mixed_status, StatusCode::BAD_REQUEST);

    // MCP on a connection naming the bound session reads and writes its profile.
    let mcp = url("/mcp?session=two");
    let recalled = common::mcp_call(&http, &mcp, "recall", json!({"query": "Lisbon"})).await;
    assert!(recalled.contains("Lisbon"), "{recalled}");
    common::mcp_call(
        &http,
        &mcp,
        "remember",
        json!({"content": "Prefers trams to taxis.", "key": "transport"}),
    )
    .await;
    let listed: Value = get_json(&http, &url("/v1/profiles/alice/memories?key=transport")).await;
    assert_eq!(listed["memories"][0]["session_id"], "two", "{listed}");
    let default_profile =
        common::mcp_call(&http, &url("/mcp"), "recall", json!({"query": "Lisbon"})).await;
    assert!(
        !default_profile.contains("I moved to Lisbon"),
        "{default_profile}"
    );

    let (_, unbound) = call(
        http.patch(url("/v1/sessions/two"))
            .json(&json!({"profile": null})),
    )
    .await;
    assert_eq!(unbound["profile"], Value::Null, "{unbound}");
    let (empty_status, _) = call(http.patch(url("/v1/sessions/two")).json(&json!({}))).await;
    assert_eq!(empty_status, StatusCode::BAD_REQUEST);
}

/// Sends a request; its status and JSON body (`null` when it has none).
async fn call(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Metadata goes in with `remember`; `list`'s `metadata` parameter and `recall`'s `metadata`
/// field filter by it (recall inside its channels); a bad filter is refused naming its fault.
#[tokio::test]
async fn metadata_filters_list_and_recall() {
    let server = start().await;
    let http = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", server.base);
    for (content, metadata) in [
        (
            "The Atlas launch is in May",
            json!({"project": "atlas", "priority": 2}),
        ),
        (
            "The Borealis launch is in June",
            json!({"project": "borealis", "priority": 1}),
        ),
        ("The Cygnus launch is in July", json!({"project": "cygnus"})),
    ] {
        let stored = http
            .post(url("/v1/profiles/team/memories"))
            .json(&json!({"content": content, "metadata": metadata}))
            .send()
            .await
            .unwrap();
        assert_eq!(stored.status(), StatusCode::CREATED);
    }
    let filter = r#"{"priority":{"$gte":1}}"#;
    let listed: Value = get_json(
        &http,
        &url(&format!(
            "/v1/profiles/team/memories?metadata={}",
            urlencode(filter)
        )),
    )
    .await;
    assert_eq!(listed["memories"].as_array().unwrap().len(), 2, "{listed}");
    let recalled: Value = post_json(
        &http,
        &url("/v1/profiles/team/recall"),
        json!({"query": "when is the launch?", "metadata": {"$or": [{"project": "cygnus"}, {"priority": {"$lt": 2}}]}}),
    )
    .await;
    let mut contents: Vec<&str> = recalled["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["item"]["content"].as_str().unwrap())
        .collect();
    contents.sort_unstable();
    assert_eq!(
        contents,
        [
            "The Borealis launch is in June",
            "The Cygnus launch is in July"
        ],
        "{recalled}"
    );
    let refused = http
        .post(url("/v1/profiles/team/recall"))
        .json(&json!({"query": "launch", "metadata": {"priority": {"$near": 1}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let body: Value = refused.json().await.unwrap();
    assert!(body.to_string().contains("$near"), "{body}");
}

#[tokio::test]
async fn an_expired_memory_leaves_lists_and_recall_but_stays_for_audit() {
    let server = start().await;
    let http = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", server.base);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let remember = |body: Value| {
        let http = http.clone();
        let url = url("/v1/profiles/errands/memories");
        async move { http.post(url).json(&body).send().await.unwrap() }
    };
    let soon = remember(
        json!({"content": "The parcel waits at the post office", "expires_at": now + 1_500}),
    )
    .await;
    assert_eq!(soon.status(), StatusCode::CREATED);
    let soon: Value = soon.json().await.unwrap();
    assert_eq!(soon["expires_at"], now + 1_500);
    let dated = remember(json!({"content": "The parcel tracking number is 7731", "expires_at": "2999-01-31T00:00:00Z"})).await;
    assert_eq!(dated.status(), StatusCode::CREATED);
    let dated: Value = dated.json().await.unwrap();
    assert_eq!(dated["expires_at"], 32_474_736_000_000_i64);
    for (body, expected) in [
        (
            json!({"content": "x", "expires_at": now - 1}),
            "not in the future",
        ),
        (
            json!({"content": "x", "expires_at": "next week"}),
            "RFC 3339",
        ),
    ] {
        let refused = remember(body).await;
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
        let text = refused.text().await.unwrap();
        assert!(text.contains(expected), "{text}");
    }
    let ids = |page: &Value, key: &str| -> Vec<String> {
        page[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                m["id"]
                    .as_str()
                    .unwrap_or(m["item"]["id"].as_str().unwrap_or(""))
                    .to_owned()
            })
            .collect()
    };
    let listed: Value = get_json(&http, &url("/v1/profiles/errands/memories")).await;
    assert_eq!(ids(&listed, "memories").len(), 2, "{listed}");
    tokio::time::sleep(std::time::Duration::from_millis(1_600)).await;
    let listed: Value = get_json(&http, &url("/v1/profiles/errands/memories")).await;
    assert_eq!(
        ids(&listed, "memories"),
        [dated["id"].as_str().unwrap()],
        "{listed}"
    );
    let recalled: Value = post_json(
        &http,
        &url("/v1/profiles/errands/recall"),
        json!({"query": "parcel"}),
    )
    .await;
    assert_eq!(
        ids(&recalled, "hits"),
        [dated["id"].as_str().unwrap()],
        "{recalled}"
    );
    let audit: Value = get_json(&http, &url("/v1/profiles/errands/memories?all=true")).await;
    assert_eq!(ids(&audit, "memories").len(), 2, "{audit}");
}

/// One size rule for what a user stores: a memory, an ingested message, a block, a message
/// past 8 MiB is a 413 naming what and how large, and nothing is written.
#[tokio::test]
async fn an_item_past_the_size_rule_is_refused_with_413_and_nothing_is_written() {
    let server = start().await;
    let http = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", server.base);
    let huge = "x".repeat(10_000_000);
    let created = http
        .post(url("/v1/sessions"))
        .json(&json!({"id": "s"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    for (request, what) in [
        (
            http.post(url("/v1/profiles/big/memories"))
                .json(&json!({"content": huge})),
            "the memory is 10000000 bytes",
        ),
        (
            http.post(url("/v1/profiles/big/ingest"))
                .json(&json!({"session": "c1", "messages": [{"role": "user", "content": huge}]})),
            "an ingested message is 10000000 bytes",
        ),
        (
            http.put(url("/v1/sessions/s/context/memory"))
                .json(&json!({"content": huge})),
            "block \"memory\" is 10000000 bytes",
        ),
        (
            http.post(url("/v1/sessions/s/messages"))
                .json(&json!({"message": {
                "id": "m1", "role": "user", "parts": [{"type": "text", "text": huge}]}})),
            "10000",
        ),
    ] {
        let (status, body) = call(request).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{what}: {body}");
        assert_eq!(body["error"]["code"], "too_large", "{body}");
        assert!(
            body["error"]["message"].as_str().unwrap().contains(what),
            "{body}"
        );
    }
    let profiles: Value = get_json(&http, &url("/v1/profiles")).await;
    assert!(
        !profiles["profiles"].to_string().contains("big"),
        "nothing was written: {profiles}"
    );
    let history: Value = get_json(&http, &url("/v1/sessions/s/history")).await;
    assert_eq!(history["messages"], json!([]), "{history}");
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
