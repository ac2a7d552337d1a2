//! Tenants: every route of the API (read from the OpenAPI document, so a new route is
//! covered without editing this file's list of routes) tried by one tenant with another
//! tenant's ids; keys required, compared against the keys file's digests; rates per key.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::sync::Arc;

use memory_server::{AppState, RateLimit, Tenants};
use reqwest::StatusCode;
use serde_json::{Value, json};
use utoipa::OpenApi;

mod common;

use common::{Server, text};

/// A key per `(tenant, requests_per_second)`; the keys file is written as an operator
/// would, from `memory keys new` output.
async fn start(tenants: &[(&str, Option<u32>)]) -> (Server, tempfile::TempDir, Vec<String>) {
    let dir = common::data_dir();
    let base = memory_compose::Deployment::open(dir.path()).unwrap();
    let mut file = String::new();
    let mut keys = Vec::new();
    let mut services = HashMap::new();
    for (tenant, rate) in tenants {
        let (key, digest) = memory_server::tenants::new_api_key();
        file.push_str(&format!(
            "[[keys]]\ntenant = \"{tenant}\"\nsha256 = \"{digest}\"\n"
        ));
        if let Some(rate) = rate {
            file.push_str(&format!("requests_per_second = {rate}\nburst = {rate}\n"));
        }
        keys.push(key);
        let deployment = base.for_tenant(&memory_config::TenantName::new(*tenant).unwrap());
        let state = AppState::new(
            Arc::new(deployment.session_manager().await.unwrap()),
            Arc::new(deployment.memory_service().await.unwrap().0),
            false,
            "p",
        );
        services.insert((*tenant).to_owned(), state);
    }
    let entries = memory_config::parse_api_keys(&file, std::path::Path::new("keys.toml")).unwrap();
    let tenants = Tenants::keyed(entries, &services, RateLimit::default()).unwrap();
    let server = common::serve(tenants, memory_server::Limits::default()).await;
    (server, dir, keys)
}

/// A client that sends `key` on every request.
fn client(key: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {key}").parse().unwrap(),
    );
    reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap()
}

/// What tenant A owns, to look for in tenant B's answers.
struct Owned {
    memory_id: String,
    job_id: String,
}

const MARKERS: [&str; 3] = ["acme-secret-alpha", "acme-secret-beta", "acme-secret-gamma"];

async fn write_acme(acme: &reqwest::Client, base: &str) -> Owned {
    let url = |p: &str| format!("{base}{p}");
    let created = acme
        .post(url("/v1/sessions"))
        .json(&json!({"id": "s1", "name": "acme-secret-gamma"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let appended = acme
        .post(url("/v1/sessions/s1/messages"))
        .json(&json!({"messages": [
            text("m1", "user", "acme-secret-alpha is the launch code"),
            text("m2", "assistant", "noted"),
        ]}))
        .send()
        .await
        .unwrap();
    assert_eq!(appended.status(), StatusCode::OK);
    let set = acme
        .post(url("/v1/sessions/s1/tools/set_context"))
        .json(&json!({"label": "memory", "content": "acme-secret-gamma"}))
        .send()
        .await
        .unwrap();
    assert_eq!(set.status(), StatusCode::OK);
    let remembered: Value = acme
        .post(url("/v1/profiles/p/memories"))
        .json(&json!({"content": "acme-secret-beta is the vault", "key": "vault"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let settings = acme
        .put(url("/v1/profiles/p/settings"))
        .json(&json!({"instructions": "acme-secret-gamma rules"}))
        .send()
        .await
        .unwrap();
    assert_eq!(settings.status(), StatusCode::OK);
    let accepted: Value = acme
        .post(url("/v1/profiles/p/ingest"))
        .json(&json!({"session": "c1", "messages": [{"role": "user", "content": "acme-secret-alpha again"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    Owned {
        memory_id: remembered["id"].as_str().unwrap().to_owned(),
        job_id: accepted["job"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{accepted}"))
            .to_owned(),
    }
}

/// Everything tenant A can read of its own data, to compare before and after B's attempts.
async fn snapshot(acme: &reqwest::Client, base: &str, owned: &Owned) -> Vec<String> {
    let mut out = Vec::new();
    for path in [
        "/v1/sessions/s1/export".to_owned(),
        "/v1/sessions/s1/context".to_owned(),
        "/v1/profiles/p/export".to_owned(),
        "/v1/profiles/p/settings".to_owned(),
        format!("/v1/profiles/p/jobs/{}", owned.job_id),
        "/v1/sessions".to_owned(),
    ] {
        let response = acme.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        out.push(response.text().await.unwrap());
    }
    out
}

/// Routes whose success for tenant B is B's own write (B's own session `s1`, B's own
/// profile `p`): tried last, and checked to leave A's data as it was.
const CREATING: [(&str, &str); 6] = [
    ("post", "/v1/sessions"),
    ("post", "/v1/sessions/import"),
    ("post", "/v1/profiles/{profile}/memories"),
    ("post", "/v1/profiles/{profile}/ingest"),
    ("post", "/v1/profiles/{profile}/import"),
    ("put", "/v1/profiles/{profile}/settings"),
];

/// The body tenant B sends to a route (one that gets past parsing, so the route's own
/// lookup is what answers). A route missing here fails the test: add its body.
fn body_for(method: &str, template: &str) -> Option<Value> {
    let body = match (method, template) {
        ("delete", "/v1/sessions/{id}/messages") => json!({"ids": ["m1"]}),
        ("get" | "delete", _) => return None,
        ("post", "/v1/sessions") => json!({"id": "s1"}),
        ("patch", "/v1/sessions/{id}") => json!({"name": "taken"}),
        ("post", "/v1/sessions/{id}/messages") => json!({"message": text("b1", "user", "hello")}),
        ("put", "/v1/sessions/{id}/messages/{message_id}") => text("m1", "user", "overwritten"),
        ("put", "/v1/sessions/{id}/context/{label}") => json!({"content": "overwritten"}),
        ("post", "/v1/sessions/{id}/context/{label}/append") => json!({"content": "appended"}),
        ("post", "/v1/sessions/{id}/fork") => json!({"at": "m1"}),
        ("post", "/v1/sessions/{id}/end") => json!({}),
        ("post", "/v1/sessions/{id}/compact") => json!({}),
        ("post", "/v1/sessions/{id}/tools/{name}") => {
            json!({"label": "memory", "content": "overwritten"})
        }
        ("post", "/v1/profiles/{profile}/memories") => json!({"content": "bolt's own"}),
        ("post", "/v1/profiles/{profile}/memories/{id}/purge") => json!({}),
        ("post", "/v1/profiles/{profile}/recall") => json!({"query": "acme-secret-beta vault"}),
        ("post", "/v1/profiles/{profile}/ingest") => {
            json!({"session": "c9", "messages": [{"role": "user", "content": "bolt's own"}]})
        }
        ("post", "/v1/sessions/import") => Value::String(
            [
                json!({"kind": "message", "session_id": "s1", "parent_id": null,
                       "message": text("b9", "user", "bolt's own")})
                .to_string(),
            ]
            .join("\n"),
        ),
        ("post", "/v1/profiles/{profile}/import") => Value::String(String::new()),
        ("put", "/v1/profiles/{profile}/settings") => json!({"instructions": "bolt's own"}),
        ("post", "/v1/profiles/{profile}/consolidate") => json!({"dry_run": false}),
        ("post", "/v1/profiles/{profile}/digest") => json!({"force": true}),
        _ => panic!("no body for {method} {template}: add one to body_for"),
    };
    Some(body)
}

fn concrete(template: &str, owned: &Owned) -> String {
    let id = if template.contains("/memories/{id}") {
        owned.memory_id.as_str()
    } else if template.contains("/jobs/{id}") {
        owned.job_id.as_str()
    } else {
        "s1"
    };
    template
        .replace("{id}", id)
        .replace("{message_id}", "m1")
        .replace("{profile}", "p")
        .replace("{name}", "set_context")
        .replace("{label}", "memory")
}

#[tokio::test]
async fn a_tenant_reaches_nothing_of_another_on_any_route() {
    let (server, _dir, keys) = start(&[("acme", None), ("bolt", None)]).await;
    let (acme, bolt) = (client(&keys[0]), client(&keys[1]));
    let base = server.base.clone();
    let owned = write_acme(&acme, &base).await;
    let before = snapshot(&acme, &base, &owned).await;
    let leaks = |body: &str| {
        MARKERS.iter().any(|m| body.contains(m))
            || body.contains(&owned.memory_id)
            || body.contains(&owned.job_id)
    };

    let doc = memory_server::openapi::ApiDoc::openapi();
    let mut operations = Vec::new();
    for (template, item) in &doc.paths.paths {
        if !template.starts_with("/v1/") {
            continue;
        }
        for (method, present) in [
            ("get", item.get.is_some()),
            ("post", item.post.is_some()),
            ("put", item.put.is_some()),
            ("patch", item.patch.is_some()),
            ("delete", item.delete.is_some()),
        ] {
            if present {
                operations.push((method, template.clone()));
            }
        }
    }
    assert!(operations.len() >= 30, "{} operations", operations.len());
    // Reads and writes on A's ids first, then B's own creations.
    operations.sort_by_key(|(m, t)| CREATING.contains(&(*m, t.as_str())));
    let mut tried = 0;
    for (method, template) in &operations {
        let path = concrete(template, &owned);
        let mut url = format!("{base}{path}");
        if template == "/v1/search" {
            url.push_str("?q=acme-secret-alpha");
        }
        let request = match *method {
            "get" => bolt.get(&url),
            "post" => bolt.post(&url),
            "put" => bolt.put(&url),
            "patch" => bolt.patch(&url),
            _ => bolt.delete(&url),
        };
        let request = match body_for(method, template) {
            Some(Value::String(lines)) => request
                .header("content-type", "application/x-ndjson")
                .body(lines),
            Some(body) => request.json(&body),
            None => request,
        };
        let response = request.send().await.unwrap();
        let status = response.status();
        let body = response.text().await.unwrap();
        assert!(
            !status.is_server_error(),
            "{method} {path}: {status} {body}"
        );
        // An error may echo the id B sent; nothing else of A's may appear.
        let leaked = if status.is_success() {
            leaks(&body)
        } else {
            MARKERS.iter().any(|m| body.contains(m))
        };
        assert!(!leaked, "{method} {path} leaked A's data: {body}");
        let names_an_id_of_a = template.contains("/v1/sessions/{id}")
            || template.contains("/memories/{id}")
            || template.contains("/jobs/{id}");
        if names_an_id_of_a && !CREATING.contains(&(*method, template.as_str())) {
            assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {body}");
        }
        tried += 1;
    }
    assert_eq!(tried, operations.len());

    // B's writes went to B's own data: A's is exactly as it was, and B's s1 is B's.
    assert_eq!(snapshot(&acme, &base, &owned).await, before);
    let bolt_history: Value = bolt
        .get(format!("{base}/v1/sessions/s1/history"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(!leaks(&bolt_history.to_string()));
    assert_eq!(bolt_history["messages"][0]["id"], "b9");

    // MCP over HTTP: the same key decides the tenant.
    let acme_recall = mcp_recall(&base, &keys[0], "acme-secret-beta vault").await;
    assert!(acme_recall.contains("acme-secret-beta"), "{acme_recall}");
    let bolt_recall = mcp_recall(&base, &keys[1], "acme-secret-beta vault").await;
    assert!(!leaks(&bolt_recall), "{bolt_recall}");
}

/// Calls the MCP `recall` tool over streamable HTTP with `key`.
async fn mcp_recall(base: &str, key: &str, query: &str) -> String {
    common::mcp_call(
        &client(key),
        &format!("{base}/mcp"),
        "recall",
        json!({"query": query}),
    )
    .await
}

#[tokio::test]
async fn keys_are_required_compared_and_rate_limited() {
    let (server, _dir, keys) = start(&[("acme", Some(2)), ("bolt", None)]).await;
    let base = &server.base;
    let anonymous = reqwest::Client::new();

    for path in ["/healthz", "/readyz", "/openapi.json", "/docs"] {
        let response = anonymous.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path} is public");
    }
    let missing = anonymous
        .get(format!("{base}/v1/sessions"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(missing.headers()["www-authenticate"], "Bearer");
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unauthorized");
    let wrong = client("mk_not-a-key")
        .get(format!("{base}/v1/sessions"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let mcp = anonymous
        .post(format!("{base}/mcp"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        mcp.status(),
        StatusCode::UNAUTHORIZED,
        "MCP needs a key too"
    );
    let by_header = anonymous
        .get(format!("{base}/v1/sessions"))
        .header("x-api-key", &keys[1])
        .send()
        .await
        .unwrap();
    assert_eq!(by_header.status(), StatusCode::OK);
    // With keys, MCP serves any host name (the key protects it, not the Host header).
    let named_host = client(&keys[1])
        .post(format!("{base}/mcp"))
        .header("host", "memory.example.com")
        .header("accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "host-test", "version": "1"}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        named_host.status(),
        StatusCode::OK,
        "{}",
        named_host.text().await.unwrap()
    );

    // acme may make 2 requests at once, then 2 per second: 6 at once see 429s.
    let acme = client(&keys[0]);
    let mut limited = None;
    for _ in 0..6 {
        let response = acme
            .get(format!("{base}/v1/sessions"))
            .send()
            .await
            .unwrap();
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            limited = Some(response);
        }
    }
    let limited = limited.expect("a key past its rate is refused");
    let retry: u64 = limited.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry >= 1);
    let body: Value = limited.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limited");
    // Another key has its own budget.
    let bolt = client(&keys[1]);
    for _ in 0..6 {
        let response = bolt
            .get(format!("{base}/v1/sessions"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
    // And acme's budget comes back.
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let again = acme
        .get(format!("{base}/v1/sessions"))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::OK);
}
