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
    AppState::new(
        Arc::new(deployment.session_manager().await.unwrap()),
        Arc::new(deployment.memory_service().await.unwrap().0),
        run_jobs,
        "default",
    )
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
