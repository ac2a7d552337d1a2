//! `fetch` against a loopback stand-in for the hub that serves
//! `/<repo>/resolve/<revision>/<file>` and can misbehave: a truncated body, altered bytes, a
//! refusal, silence, or no server at all.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memory_hub::{HubFile, HubModel, HubSettings, Progress, fetch, fetch_blocking};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const REPO: &str = "acme/tiny-model";
const REVISION: &str = "0123456789abcdef0123456789abcdef01234567";

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Serve,
    /// Announces the whole length, sends this many bytes and closes.
    Truncate(usize),
    /// Sends the right length with one byte changed.
    Alter,
    Refuse,
    /// Reads the request and never answers.
    Silent,
}

struct StandIn {
    endpoint: String,
    mode: Arc<Mutex<Mode>>,
    requests: Arc<AtomicUsize>,
}

impl StandIn {
    async fn start(files: HashMap<String, Vec<u8>>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let mode = Arc::new(Mutex::new(Mode::Serve));
        let requests = Arc::new(AtomicUsize::new(0));
        let files = Arc::new(files);
        let (served_mode, counted) = (Arc::clone(&mode), Arc::clone(&requests));
        tokio::spawn(async move {
            loop {
                let (mut stream, _) = listener.accept().await.unwrap();
                let (mode, files, counted) = (
                    Arc::clone(&served_mode),
                    Arc::clone(&files),
                    Arc::clone(&counted),
                );
                tokio::spawn(async move {
                    let mut request = Vec::new();
                    let mut buffer = [0u8; 1024];
                    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                        let n = stream.read(&mut buffer).await.unwrap();
                        if n == 0 {
                            return;
                        }
                        request.extend_from_slice(&buffer[..n]);
                    }
                    counted.fetch_add(1, Ordering::SeqCst);
                    let line = String::from_utf8_lossy(&request)
                        .lines()
                        .next()
                        .unwrap()
                        .to_owned();
                    let path = line.split_whitespace().nth(1).unwrap().to_owned();
                    let prefix = format!("/{REPO}/resolve/{REVISION}/");
                    let body = path
                        .strip_prefix(&prefix)
                        .and_then(|f| files.get(f))
                        .cloned();
                    let mode = *mode.lock().unwrap();
                    let (status, mut body) = match (mode, body) {
                        (Mode::Silent, _) => {
                            tokio::time::sleep(Duration::from_secs(60)).await;
                            return;
                        }
                        (Mode::Refuse, _) | (_, None) => ("404 Not Found", b"no".to_vec()),
                        (_, Some(body)) => ("200 OK", body),
                    };
                    let length = body.len();
                    match mode {
                        Mode::Truncate(n) => body.truncate(n),
                        Mode::Alter => body[0] ^= 0xff,
                        _ => {}
                    }
                    let head = format!(
                        "HTTP/1.1 {status}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n"
                    );
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(&body).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Self {
            endpoint,
            mode,
            requests,
        }
    }

    fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    fn settings(&self) -> HubSettings {
        settings(&self.endpoint)
    }
}

fn settings(endpoint: &str) -> HubSettings {
    HubSettings {
        endpoint: endpoint.to_owned(),
        offline: false,
        connect_timeout: Duration::from_secs(2),
        read_timeout: Duration::from_millis(500),
        progress: Progress::Log,
    }
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A model of two files (one in a subdirectory), and the stand-in serving them.
async fn model_and_hub() -> (HubModel, StandIn) {
    let config = br#"{"hidden_size": 8}"#.to_vec();
    let weights: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let model = HubModel {
        repo: REPO.into(),
        revision: REVISION.into(),
        files: vec![
            HubFile::new("config.json", config.len() as u64, sha256(&config)),
            HubFile::new(
                "1_Pooling/weights.bin",
                weights.len() as u64,
                sha256(&weights),
            ),
        ],
    };
    let files = HashMap::from([
        ("config.json".to_owned(), config),
        ("1_Pooling/weights.bin".to_owned(), weights),
    ]);
    (model, StandIn::start(files).await)
}

/// Every file under `dir`, relative names.
fn listing(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                names.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    names.sort();
    names
}

#[tokio::test]
async fn each_missing_file_is_fetched_once_verified_and_put_in_place() {
    let (model, hub) = model_and_hub().await;
    let dir = tempfile::tempdir().unwrap();
    let report = fetch(&model, dir.path(), &hub.settings()).await.unwrap();
    assert_eq!(report.fetched.len(), 2);
    assert_eq!(
        listing(dir.path()),
        vec!["1_Pooling/weights.bin".to_owned(), "config.json".to_owned()]
    );
    assert!(model.is_in(dir.path()));
    assert_eq!(hub.requests(), 2);
    // Present: nothing is asked for again.
    let again = fetch(&model, dir.path(), &hub.settings()).await.unwrap();
    assert!(again.fetched.is_empty());
    assert_eq!(hub.requests(), 2);
    // One lost: only that one is fetched.
    std::fs::remove_file(dir.path().join("config.json")).unwrap();
    assert_eq!(model.missing_bytes(dir.path()), model.files[0].size);
    let report = fetch(&model, dir.path(), &hub.settings()).await.unwrap();
    assert_eq!(report.fetched, vec!["config.json".to_owned()]);
    assert_eq!(hub.requests(), 3);
}

#[tokio::test]
async fn a_truncated_download_leaves_nothing_in_place_and_a_retry_completes() {
    let (model, hub) = model_and_hub().await;
    let dir = tempfile::tempdir().unwrap();
    hub.set(Mode::Truncate(5));
    let error = fetch(&model, dir.path(), &hub.settings())
        .await
        .unwrap_err();
    assert!(error.is_transient(), "{error}");
    assert!(error.to_string().contains("ended after"), "{error}");
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
    hub.set(Mode::Serve);
    fetch(&model, dir.path(), &hub.settings()).await.unwrap();
    assert!(model.is_in(dir.path()));
}

#[tokio::test]
async fn altered_bytes_fail_the_checksum_and_leave_nothing_in_place() {
    let (model, hub) = model_and_hub().await;
    let dir = tempfile::tempdir().unwrap();
    hub.set(Mode::Alter);
    let error = fetch(&model, dir.path(), &hub.settings())
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(text.contains("checksum"), "{text}");
    assert!(text.contains(&model.files[0].sha256), "{text}");
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
}

#[tokio::test]
async fn a_refusal_names_the_url_and_the_status() {
    let (model, hub) = model_and_hub().await;
    let dir = tempfile::tempdir().unwrap();
    hub.set(Mode::Refuse);
    let error = fetch(&model, dir.path(), &hub.settings())
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(text.contains("404"), "{text}");
    assert!(
        text.contains(&format!("/{REPO}/resolve/{REVISION}/config.json")),
        "{text}"
    );
}

#[tokio::test]
async fn a_silent_hub_is_given_up_after_the_read_timeout() {
    let (model, hub) = model_and_hub().await;
    let dir = tempfile::tempdir().unwrap();
    hub.set(Mode::Silent);
    let started = Instant::now();
    let error = fetch(&model, dir.path(), &hub.settings())
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(error.is_transient(), "{error}");
    assert!(listing(dir.path()).is_empty());
}

#[tokio::test]
async fn an_unreachable_hub_is_a_clear_error_at_once() {
    let (model, _) = model_and_hub().await;
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let error = fetch(
        &model,
        dir.path(),
        &settings(&format!("http://127.0.0.1:{port}")),
    )
    .await
    .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(error.is_transient(), "{error}");
    assert!(error.to_string().contains("could not reach"), "{error}");
}

#[tokio::test]
async fn offline_nothing_is_asked_for() {
    let (model, hub) = model_and_hub().await;
    let dir = tempfile::tempdir().unwrap();
    let offline = HubSettings {
        offline: true,
        ..hub.settings()
    };
    let error = fetch(&model, dir.path(), &offline).await.unwrap_err();
    assert!(error.to_string().contains("HF_HUB_OFFLINE"), "{error}");
    assert_eq!(hub.requests(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_blocking_form_runs_from_inside_a_runtime() {
    let (model, hub) = model_and_hub().await;
    let dir = tempfile::tempdir().unwrap();
    let report = fetch_blocking(&model, dir.path(), &hub.settings()).unwrap();
    assert_eq!(report.fetched.len(), 2);
    assert!(model.is_in(dir.path()));
}

#[test]
fn the_hub_clients_environment_is_honoured() {
    let defaults = HubSettings::from_vars(|_| None);
    assert_eq!(defaults.endpoint, "https://huggingface.co");
    assert!(!defaults.offline);
    let set = HubSettings::from_vars(|name| match name {
        "HF_ENDPOINT" => Some("https://mirror.example/".into()),
        "HF_HUB_OFFLINE" => Some("0".into()),
        _ => None,
    });
    assert_eq!(set.endpoint, "https://mirror.example");
    assert!(!set.offline);
    for on in ["1", "true", "YES", "on"] {
        assert!(
            HubSettings::from_vars(|name| (name == "HF_HUB_OFFLINE").then(|| on.into())).offline
        );
    }
}
