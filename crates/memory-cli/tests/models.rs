//! The local embedding model fetched on first use and by `memory models fetch`, from a
//! loopback stand-in for the Hugging Face hub that serves the real model files (those
//! `scripts/setup-model.sh` installs, which the pinned checksums must match), and a clear
//! line with full-text only when the hub cannot be reached.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const PREFIX: &str =
    "/sentence-transformers/all-MiniLM-L6-v2/resolve/1110a243fdf4706b3f48f1d95db1a4f5529b4d41/";
const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// The installed model's directory, or `None` (the test then says it is skipped, unless the
/// test command asked for the model).
fn installed_model() -> Option<PathBuf> {
    let dir = std::env::var_os("MEMORY_MODEL_DIR").map_or_else(
        || {
            PathBuf::from(std::env::var("HOME").unwrap())
                .join(".cache/memory-models/all-minilm-l6-v2")
        },
        PathBuf::from,
    );
    if FILES.iter().all(|f| dir.join(f).is_file()) {
        return Some(dir);
    }
    assert!(
        !std::env::var("MEMORY_REQUIRE_MODEL").is_ok_and(|v| v == "1"),
        "MEMORY_REQUIRE_MODEL=1 but the model is not installed in {}",
        dir.display()
    );
    eprintln!("skipped: the local model is not installed (scripts/setup-model.sh)");
    None
}

/// Serves `dir`'s files under the pinned revision's path on a loopback port, counting requests.
fn stand_in(dir: PathBuf) -> (String, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&requests);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let dir = dir.clone();
            let counted = Arc::clone(&counted);
            std::thread::spawn(move || {
                let mut request = Vec::new();
                let mut buffer = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buffer) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buffer[..n]),
                    }
                }
                counted.fetch_add(1, Ordering::SeqCst);
                let text = String::from_utf8_lossy(&request).into_owned();
                let path = text.split_whitespace().nth(1).unwrap_or("").to_owned();
                let body = path
                    .strip_prefix(PREFIX)
                    .filter(|f| FILES.contains(f))
                    .and_then(|f| std::fs::read(dir.join(f)).ok());
                let (status, body) = match body {
                    Some(body) => ("200 OK", body),
                    None => ("404 Not Found", b"not here".to_vec()),
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&body);
            });
        }
    });
    (endpoint, requests)
}

/// `memory` with a home of its own (so the model's default directory starts empty), no
/// model directory named, and the hub at `endpoint`.
fn memory(home: &Path, endpoint: &str) -> Command {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("memory"));
    command
        .env("HOME", home)
        .env("HF_ENDPOINT", endpoint)
        .env_remove("MEMORY_LOG")
        .env_remove("MEMORY_MODEL_DIR")
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("MEMORY_DATA_DIR");
    command
}

/// Runs `command`, which must succeed; its standard output and error.
fn succeeds(command: &mut Command) -> (String, String) {
    let out = command.output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{stderr}");
    (stdout, stderr)
}

fn fetched_dir(home: &Path) -> PathBuf {
    home.join(".cache/memory-models/all-minilm-l6-v2")
}

#[test]
fn models_fetch_downloads_the_pinned_files_once() {
    let Some(model) = installed_model() else {
        return;
    };
    let (endpoint, requests) = stand_in(model.clone());
    let home = tempfile::tempdir().unwrap();
    let (stdout, _) = succeeds(memory(home.path(), &endpoint).args(["models", "fetch"]));
    assert!(stdout.contains("checksums verified"), "{stdout}");
    for file in FILES {
        assert_eq!(
            std::fs::read(fetched_dir(home.path()).join(file)).unwrap(),
            std::fs::read(model.join(file)).unwrap(),
            "{file}"
        );
    }
    assert_eq!(requests.load(Ordering::SeqCst), 3);
    let (again, _) = succeeds(memory(home.path(), &endpoint).args(["models", "fetch"]));
    assert!(again.contains("already"), "{again}");
    assert_eq!(requests.load(Ordering::SeqCst), 3, "nothing fetched twice");

    // Offline, a missing model is a clear error and nothing is asked for.
    let empty = tempfile::tempdir().unwrap();
    let offline = memory(empty.path(), &endpoint)
        .env("HF_HUB_OFFLINE", "1")
        .args(["models", "fetch"])
        .output()
        .unwrap();
    assert!(!offline.status.success());
    assert!(
        String::from_utf8_lossy(&offline.stderr).contains("HF_HUB_OFFLINE"),
        "{}",
        String::from_utf8_lossy(&offline.stderr)
    );
    assert_eq!(requests.load(Ordering::SeqCst), 3);
}

#[test]
fn the_first_command_that_embeds_fetches_the_model() {
    let Some(model) = installed_model() else {
        return;
    };
    let (endpoint, requests) = stand_in(model);
    let home = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let in_data = |args: &[&str]| {
        let mut command = memory(home.path(), &endpoint);
        command.arg("--data-dir").arg(data.path()).args(args);
        succeeds(&mut command)
    };
    in_data(&["profile", "remember", "gus", "vegetarian, no mushrooms"]);
    assert!(
        FILES
            .iter()
            .all(|f| fetched_dir(home.path()).join(f).is_file())
    );
    assert_eq!(requests.load(Ordering::SeqCst), 3);
    // With vectors, a question that shares no word with the memory finds it.
    let (recall, _) = in_data(&[
        "profile",
        "recall",
        "gus",
        "what food does the user eat?",
        "--json",
    ]);
    assert!(recall.contains("mushrooms"), "{recall}");
    assert_eq!(requests.load(Ordering::SeqCst), 3, "fetched once");
}

#[test]
fn an_unreachable_hub_leaves_full_text_search_with_one_clear_line() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let home = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (_, stderr) = succeeds(
        memory(home.path(), &format!("http://127.0.0.1:{port}"))
            .arg("--data-dir")
            .arg(data.path())
            .args(["profile", "remember", "gus", "vegetarian, no mushrooms"]),
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(
        stderr.contains("could not be fetched") && stderr.contains("vectors are off"),
        "{stderr}"
    );
    assert!(!fetched_dir(home.path()).join("model.safetensors").exists());
}
