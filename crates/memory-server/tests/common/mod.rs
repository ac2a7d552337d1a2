//! What the server's integration tests share: a server on a loopback port over a scratch
//! deployment, and message bodies.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use memory_server::{AppState, Tenants};
use serde_json::{Value, json};

/// `memory.toml` of the test deployments: a read-only and a writable block, no embedder.
pub const CONFIG: &str = "[[blocks]]\nlabel = \"persona\"\nkind = \"readonly\"\n\
    text = \"You are a careful assistant.\"\n\n\
    [[blocks]]\nlabel = \"memory\"\nkind = \"writable\"\n\
    description = \"Learned facts\"\nmax_tokens = 200\nscope = \"session\"\n\n\
    [memory]\nembedder = \"none\"\n";

/// A running server; dropping it stops it.
pub struct Server {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    dir: Option<tempfile::TempDir>,
}

impl Server {
    /// The URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Keeps `dir` (the deployment's data) as long as the server.
    pub fn keeping(mut self, dir: tempfile::TempDir) -> Self {
        self.dir = Some(dir);
        self
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A scratch data dir holding [`CONFIG`].
pub fn data_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("memory.toml"), CONFIG).unwrap();
    dir
}

/// The services of the deployment in `dir` (jobs left to workers unless `run_jobs`).
pub async fn services(dir: &std::path::Path, run_jobs: bool) -> AppState {
    let deployment = memory_compose::Deployment::open(dir).unwrap();
    let (sessions, memory, _) = deployment.services().await.unwrap();
    AppState::new(Arc::new(sessions), Arc::new(memory), run_jobs, "default")
}

/// Serves `tenants` on a free loopback port.
pub async fn serve(tenants: impl Into<Tenants>, limits: memory_server::Limits) -> Server {
    let tenants = tenants.into();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        memory_server::serve(
            tenants,
            limits,
            "127.0.0.1:0".parse().unwrap(),
            move |address| {
                let _ = bound_tx.send(address);
            },
            async move {
                let _ = stopped.await;
            },
        )
        .await
        .unwrap();
    });
    let address = bound_rx.await.unwrap();
    Server {
        base: format!("http://{address}"),
        stop: Some(stop),
        dir: None,
    }
}

/// The JSON body of a GET.
pub async fn get_json(http: &reqwest::Client, url: &str) -> Value {
    http.get(url).send().await.unwrap().json().await.unwrap()
}

/// The JSON body of a POST of `body`.
pub async fn post_json(http: &reqwest::Client, url: &str, body: Value) -> Value {
    http.post(url)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// A UIMessage with one text part.
pub fn text(id: &str, role: &str, text: &str) -> Value {
    json!({"id": id, "role": role, "parts": [{"type": "text", "text": text}]})
}

/// Calls an MCP tool over streamable HTTP at `url` (`.../mcp`, with its query), speaking
/// JSON-RPC directly (the Python SDK client covers the protocol in memory-cli's tests);
/// the response body.
pub async fn mcp_call(http: &reqwest::Client, url: &str, name: &str, arguments: Value) -> String {
    let post = |body: Value, session: Option<String>| {
        let mut request = http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send()
    };
    let init = post(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "memory-server-tests", "version": "1"}}}),
        None,
    )
    .await
    .unwrap();
    assert_eq!(init.status(), reqwest::StatusCode::OK);
    let session = init
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let _ = init.text().await.unwrap();
    let note = post(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        session.clone(),
    )
    .await
    .unwrap();
    assert!(note.status().is_success());
    let call = post(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}}),
        session,
    )
    .await
    .unwrap();
    assert_eq!(call.status(), reqwest::StatusCode::OK);
    call.text().await.unwrap()
}
