//! `memory serve` end to end: the binary serves the REST API over its data dir, and what a
//! client writes over HTTP is what the CLI reads from the same data dir afterwards.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::{Command, Stdio};

#[test]
fn serve_answers_over_http_and_shares_the_data_dir_with_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        "[memory]\nembedder = \"none\"\n",
    )
    .unwrap();
    let binary = assert_cmd::cargo::cargo_bin("memory");
    let (mut server, address, line) = common::spawn_server(dir.path(), &[]);
    assert!(line.contains("loopback only"), "{line}");
    let post = |path: &str, body: &str| request(&address, "POST", path, body);
    assert!(post("/v1/sessions", r#"{"id":"s1"}"#).starts_with("HTTP/1.1 201"));
    let appended = post(
        "/v1/sessions/s1/messages",
        r#"{"message":{"id":"m1","role":"user","parts":[{"type":"text","text":"hello over http"}]}}"#,
    );
    assert!(appended.starts_with("HTTP/1.1 200"), "{appended}");
    let doc = request(&address, "GET", "/openapi.json", "");
    assert!(doc.contains("/v1/sessions"));
    server.kill().unwrap();
    server.wait().unwrap();

    let out = Command::new(&binary)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["history", "s1", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("hello over http"));
}

/// One HTTP/1.1 request over a fresh connection; the whole response as text.
fn request(address: &str, method: &str, path: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// Jobs queued without anyone to run them are run by `memory worker`, and only once: two
/// workers started at once share the queue.
#[test]
fn workers_run_every_queued_job_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        "[memory]\nembedder = \"none\"\n",
    )
    .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ids: Vec<(String, String)> = runtime.block_on(async {
        let deployment = memory_compose::Deployment::open(dir.path()).unwrap();
        let (memory, _) = deployment.memory_service().await.unwrap();
        let mut ids = Vec::new();
        for (profile, i) in [("a", 0), ("a", 1), ("b", 2), ("b", 3), ("b", 4)] {
            let job = memory
                .enqueue_ingest(
                    profile,
                    &format!("c{i}"),
                    vec![memory_engine::long_term::IngestMessage::new(
                        "user",
                        format!("fact number {i}"),
                    )],
                )
                .await
                .unwrap();
            ids.push((profile.to_owned(), job.id));
        }
        deployment.close().await;
        ids
    });
    let binary = assert_cmd::cargo::cargo_bin("memory");
    let workers: Vec<_> = (0..2)
        .map(|_| {
            Command::new(&binary)
                .arg("--data-dir")
                .arg(dir.path())
                .args(["worker", "--once"])
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut ran = 0;
    for worker in workers {
        let out = worker.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let count: usize = stderr
            .split("worker ran ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        ran += count;
    }
    assert_eq!(ran, 5, "every job ran exactly once across the two workers");
    runtime.block_on(async {
        let deployment = memory_compose::Deployment::open(dir.path()).unwrap();
        let (memory, _) = deployment.memory_service().await.unwrap();
        for (profile, id) in &ids {
            let job = memory.job(profile, id).await.unwrap();
            assert_eq!(
                job.status,
                memory_engine::long_term::JobStatus::Done,
                "{id}"
            );
        }
        deployment.close().await;
    });
}
