//! A loopback stand-in for the hub and for PyPI's file host that serves fixed files and can
//! misbehave: a truncated body, altered bytes, a refusal, silence.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use memory_hub::{HubSettings, Progress};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Clone, Copy, PartialEq)]
pub enum Mode {
    Serve,
    /// Announces the whole length, sends this many bytes and closes.
    Truncate(usize),
    /// Sends the right length with one byte changed.
    Alter,
    Refuse,
    /// Reads the request and never answers.
    Silent,
}

pub struct StandIn {
    pub endpoint: String,
    mode: Arc<Mutex<Mode>>,
    requests: Arc<AtomicUsize>,
}

impl StandIn {
    /// Serves each of `files` at `/<its key>`.
    pub async fn start(files: HashMap<String, Vec<u8>>) -> Self {
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
                    let body = path.strip_prefix('/').and_then(|f| files.get(f)).cloned();
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

    pub fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    pub fn settings(&self) -> HubSettings {
        settings(&self.endpoint)
    }
}

pub fn settings(endpoint: &str) -> HubSettings {
    HubSettings {
        endpoint: endpoint.to_owned(),
        packages_endpoint: endpoint.to_owned(),
        offline: false,
        connect_timeout: Duration::from_secs(2),
        read_timeout: Duration::from_millis(500),
        progress: Progress::Log,
    }
}

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every file under `dir`, relative names.
pub fn listing(dir: &Path) -> Vec<String> {
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
