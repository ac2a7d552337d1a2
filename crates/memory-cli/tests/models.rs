//! The local embedders' files fetched on first use and by `memory models fetch`, from a
//! loopback stand-in for the Hugging Face hub and PyPI's file host that serves the real files
//! (the float model `scripts/setup-model.sh` installs and ONNX Runtime's wheel
//! `scripts/setup-onnx.sh` keeps, which the pinned checksums must match); the default
//! embedder falling back to the float model, with one line, when the int8 one cannot be
//! fetched; and a clear line with full-text only when the hub cannot be reached.
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

/// The float model's files as the hub serves them: URL path, local file.
fn float_routes(dir: &Path) -> Vec<(String, PathBuf)> {
    FILES
        .iter()
        .map(|f| (format!("{PREFIX}{f}"), dir.join(f)))
        .collect()
}

/// Serves each route's file at its URL path on a loopback port (404 for anything else),
/// counting requests.
fn stand_in(routes: Vec<(String, PathBuf)>) -> (String, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&requests);
    let routes = Arc::new(routes);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let routes = Arc::clone(&routes);
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
                let body = routes
                    .iter()
                    .find(|(route, _)| *route == path)
                    .and_then(|(_, file)| std::fs::read(file).ok());
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

/// `memory` with a home of its own (so the models' default directories start empty), no
/// model directory named, and the hub and PyPI's file host at `endpoint`.
fn memory(home: &Path, endpoint: &str) -> Command {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("memory"));
    command
        .env("HOME", home)
        .env("HF_ENDPOINT", endpoint)
        .env("MEMORY_PACKAGES_ENDPOINT", endpoint)
        .env_remove("MEMORY_LOG")
        .env_remove("MEMORY_MODEL_DIR")
        .env_remove("MEMORY_ONNX_MODEL_DIR")
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

/// `memory --data-dir data ARGS` (as [`memory`]), which must succeed.
fn in_data_dir(home: &Path, endpoint: &str, data: &Path, args: &[&str]) -> (String, String) {
    let mut command = memory(home, endpoint);
    command.arg("--data-dir").arg(data).args(args);
    succeeds(&mut command)
}

fn fetched_dir(home: &Path) -> PathBuf {
    home.join(".cache/memory-models/all-minilm-l6-v2")
}

#[test]
fn models_fetch_downloads_the_pinned_files_once() {
    let Some(model) = installed_model() else {
        return;
    };
    let (endpoint, requests) = stand_in(float_routes(&model));
    let home = tempfile::tempdir().unwrap();
    let fetch = ["models", "fetch", "--embedder", "local"];
    let (stdout, _) = succeeds(memory(home.path(), &endpoint).args(fetch));
    assert!(stdout.contains("checksums verified"), "{stdout}");
    for file in FILES {
        assert_eq!(
            std::fs::read(fetched_dir(home.path()).join(file)).unwrap(),
            std::fs::read(model.join(file)).unwrap(),
            "{file}"
        );
    }
    assert_eq!(requests.load(Ordering::SeqCst), 3);
    let (again, _) = succeeds(memory(home.path(), &endpoint).args(fetch));
    assert!(again.contains("already"), "{again}");
    assert_eq!(requests.load(Ordering::SeqCst), 3, "nothing fetched twice");

    // Offline, a missing model is a clear error and nothing is asked for.
    let empty = tempfile::tempdir().unwrap();
    let offline = memory(empty.path(), &endpoint)
        .env("HF_HUB_OFFLINE", "1")
        .args(fetch)
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
    // The stand-in has no int8 graph: the default embedder falls back to the float model.
    let (endpoint, requests) = stand_in(float_routes(&model));
    let home = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let in_data = |args: &[&str]| in_data_dir(home.path(), &endpoint, data.path(), args);
    let (_, stderr) = in_data(&["profile", "remember", "gus", "vegetarian, no mushrooms"]);
    assert!(
        FILES
            .iter()
            .all(|f| fetched_dir(home.path()).join(f).is_file())
    );
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("using the float embedder"))
        .collect();
    assert_eq!(said.len(), 1, "one line says why: {stderr}");
    assert!(said[0].contains("404"), "{stderr}");
    // One refused request for the int8 graph, then the float model's three files.
    assert_eq!(requests.load(Ordering::SeqCst), 4);
    // With vectors, a question that shares no word with the memory finds it.
    let (recall, _) = in_data(&[
        "profile",
        "recall",
        "gus",
        "what food does the user eat?",
        "--json",
    ]);
    assert!(recall.contains("mushrooms"), "{recall}");
    // A new process remembers the failure (for a day) and asks the hub for nothing.
    assert_eq!(requests.load(Ordering::SeqCst), 4, "fetched once");

    // The int8 files put in place since (as scripts/setup-onnx.sh does) win over the
    // remembered failure: the next process runs on them, and reembed moves the profile over.
    let Some((int8, _)) = installed_int8() else {
        return;
    };
    let dir = home
        .path()
        .join(".cache/memory-models/all-minilm-l6-v2-int8-dynamic");
    for file in ["model.onnx", "tokenizer.json", "libonnxruntime.so"] {
        std::fs::copy(int8.join(file), dir.join(file)).unwrap();
    }
    let (reembed, stderr) = in_data(&["profile", "reembed", "gus"]);
    assert!(reembed.contains("onnx-int8-dynamic"), "{reembed}");
    assert!(!stderr.contains("float"), "{stderr}");
    assert_eq!(requests.load(Ordering::SeqCst), 4);
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

/// The int8 model `scripts/setup-onnx.sh` made and the runtime wheel it kept, or `None` (the
/// test then says it is skipped, unless the test command asked for the model).
fn installed_int8() -> Option<(PathBuf, PathBuf)> {
    let dir = PathBuf::from(
        std::env::var_os("MEMORY_ONNX_MODEL_DIR").unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap())
                .join(".cache/memory-models/all-minilm-l6-v2-int8-dynamic")
                .into_os_string()
        }),
    );
    let wheel = std::fs::read_dir(dir.join("wheels"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"));
    match wheel {
        Some(wheel) if dir.join("model.onnx").is_file() => Some((dir, wheel)),
        _ => {
            assert!(
                !std::env::var("MEMORY_REQUIRE_MODEL").is_ok_and(|v| v == "1"),
                "MEMORY_REQUIRE_MODEL=1 but scripts/setup-onnx.sh has not run"
            );
            eprintln!("skipped: the int8 model is not installed (scripts/setup-onnx.sh)");
            None
        }
    }
}

#[test]
fn the_default_embedder_fetches_onnx_runtime_from_its_pinned_wheel() {
    let Some((int8, wheel)) = installed_int8() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let dir = home
        .path()
        .join(".cache/memory-models/all-minilm-l6-v2-int8-dynamic");
    std::fs::create_dir_all(&dir).unwrap();
    // The graph and tokenizer are there (as scripts/setup-onnx.sh makes them); the runtime is
    // not, and comes from the stand-in at the pinned wheel's path on PyPI's file host.
    for file in ["model.onnx", "tokenizer.json"] {
        std::fs::copy(int8.join(file), dir.join(file)).unwrap();
    }
    let name = wheel.file_name().unwrap().to_str().unwrap().to_owned();
    let pinned = if name.contains("x86_64") {
        "/packages/a3/81/55845186c20cba59f614991f4065dea148e48eeb9749893768c85ce64327/"
    } else {
        "/packages/4a/8f/1e43fb994513c7c7a9c6965272ef89d963c1bd4080993a6267bf913701d1/"
    };
    let (endpoint, requests) = stand_in(vec![(format!("{pinned}{name}"), wheel)]);
    let (stdout, _) = succeeds(memory(home.path(), &endpoint).args(["models", "fetch"]));
    assert!(stdout.contains("libonnxruntime.so"), "{stdout}");
    assert!(stdout.contains("checksums verified"), "{stdout}");
    assert_eq!(
        std::fs::read(dir.join("libonnxruntime.so")).unwrap(),
        std::fs::read(int8.join("libonnxruntime.so")).unwrap()
    );
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.starts_with('.') || name.ends_with(".whl"))
        .collect();
    assert!(
        left.is_empty(),
        "no wheel or temporary file is left: {left:?}"
    );
    assert_eq!(requests.load(Ordering::SeqCst), 1);

    // The default embedder is now the int8 one: no line about the float model, nothing
    // fetched, and a question that shares no word with the memory finds it.
    let data = tempfile::tempdir().unwrap();
    let in_data = |args: &[&str]| in_data_dir(home.path(), &endpoint, data.path(), args);
    let (_, stderr) = in_data(&["profile", "remember", "gus", "vegetarian, no mushrooms"]);
    assert!(!stderr.contains("float"), "{stderr}");
    let (recall, _) = in_data(&["profile", "recall", "gus", "what food does the user eat?"]);
    assert!(recall.contains("mushrooms"), "{recall}");
    let (reembed, _) = in_data(&["profile", "reembed", "gus"]);
    assert!(reembed.contains("onnx-int8-dynamic"), "{reembed}");
    assert!(
        !fetched_dir(home.path()).exists(),
        "the float model was not fetched"
    );
    assert_eq!(requests.load(Ordering::SeqCst), 1);
}

/// The pinned path of ONNX Runtime's wheel on PyPI's file host for `wheel`.
fn pinned_wheel_route(wheel: &Path) -> String {
    let name = wheel.file_name().unwrap().to_str().unwrap().to_owned();
    let pinned = if name.contains("x86_64") {
        "/packages/a3/81/55845186c20cba59f614991f4065dea148e48eeb9749893768c85ce64327/"
    } else {
        "/packages/4a/8f/1e43fb994513c7c7a9c6965272ef89d963c1bd4080993a6267bf913701d1/"
    };
    format!("{pinned}{name}")
}

/// A catalogue model is fetched by name from its pinned repository and revision into a
/// directory of its own, ONNX Runtime first; bytes that do not match the pin fail, naming
/// it, and leave nothing in place. `memory models list` shows the catalogue.
#[test]
fn catalogue_models_are_fetched_by_name_and_checked_against_their_pins() {
    let Some((_, wheel)) = installed_int8() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let fake = home.path().join("fake.onnx");
    std::fs::write(&fake, b"not the model").unwrap();
    let (endpoint, requests) = stand_in(vec![
        (pinned_wheel_route(&wheel), wheel),
        (
            "/Xenova/bge-small-en-v1.5/resolve/ea104dacec62c0de699686887e3f920caeb4f3e3/onnx/model.onnx"
                .into(),
            fake,
        ),
    ]);
    let (list, _) = succeeds(memory(home.path(), &endpoint).args(["models", "list", "--json"]));
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    let names: Vec<&str> = list["embedders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "all-MiniLM-L6-v2",
            "bge-small-en-v1.5",
            "bge-base-en-v1.5",
            "gte-small",
            "e5-small-v2",
            "nomic-embed-text-v1.5",
            "multilingual-e5-small"
        ]
    );
    assert_eq!(list["embedders"][1]["installed"], false);
    assert_eq!(list["embedders"][1]["pooling"], "cls");
    assert_eq!(list["embedders"][3]["sizes_pinned"], false);
    assert_eq!(list["embedders"][4]["query_prefix"], "query: ");
    assert_eq!(list["rerankers"].as_array().unwrap().len(), 2);

    let out = memory(home.path(), &endpoint)
        .args(["models", "fetch", "--embedder", "BAAI/bge-small-en-v1.5"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    // Shorter than the pinned size: refused before the checksum is even computed.
    assert!(
        stderr.contains("ended after 13 of 133093490 bytes"),
        "{stderr}"
    );
    let models = home.path().join(".cache/memory-models");
    assert!(
        models
            .join("all-minilm-l6-v2-int8-dynamic/libonnxruntime.so")
            .is_file(),
        "the runtime came first"
    );
    assert!(!models.join("bge-small-en-v1.5/onnx/model.onnx").exists());
    assert_eq!(requests.load(Ordering::SeqCst), 2);

    let out = memory(home.path(), &endpoint)
        .args(["models", "fetch", "--embedder", "colbert"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bge-reranker-base"),
        "the catalogue's models are named"
    );
}

/// A named reranker that cannot be fetched (no hub) leaves recall working without the stage,
/// with one line saying reranking is off and why.
#[test]
fn an_unreachable_hub_turns_a_named_reranker_off_with_one_line() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let home = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(
        data.path().join("memory.toml"),
        "[memory]\nembedder = \"none\"\nreranker = \"ms-marco-MiniLM-L-6-v2\"\n",
    )
    .unwrap();
    let (_, stderr) = in_data_dir(
        home.path(),
        &endpoint,
        data.path(),
        &["profile", "remember", "gus", "vegetarian, no mushrooms"],
    );
    assert!(stderr.contains("reranking is off"), "{stderr}");
    assert!(stderr.contains("ms-marco-MiniLM-L-6-v2"), "{stderr}");
    let (recall, _) = in_data_dir(
        home.path(),
        &endpoint,
        data.path(),
        &["profile", "recall", "gus", "mushrooms"],
    );
    assert!(recall.contains("mushrooms"), "{recall}");
    assert!(
        !home
            .path()
            .join(".cache/memory-models/ms-marco-MiniLM-L-6-v2/onnx/model.onnx")
            .exists()
    );
}
