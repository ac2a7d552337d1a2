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
    assert!(appended.starts_with("HTTP/1.1 2"), "{appended}");
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
    request_with(address, method, path, body, "")
}

/// [`request`] with extra header lines (each ending in `\r\n`).
fn request_with(address: &str, method: &str, path: &str, body: &str, headers: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         {headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
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

/// `memory keys new` prints a key and its entry; `memory serve --keys` lets only that key
/// in and keeps the tenant's data under `tenants/<tenant>/`; `memory worker --keys` runs
/// that tenant's jobs.
#[test]
fn keys_from_memory_keys_new_open_their_tenant_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        "[memory]\nembedder = \"none\"\n",
    )
    .unwrap();
    let binary = assert_cmd::cargo::cargo_bin("memory");
    let printed = Command::new(&binary)
        .args(["keys", "new", "acme", "--label", "acme-ci"])
        .output()
        .unwrap();
    assert!(printed.status.success());
    let printed = String::from_utf8(printed.stdout).unwrap();
    let key = printed
        .split_whitespace()
        .find(|w| w.starts_with("mk_"))
        .unwrap()
        .to_owned();
    let entry = &printed[printed.find("[[keys]]").unwrap()..];
    assert!(
        !entry.contains(&key),
        "the file holds the digest, never the key"
    );
    let keys = dir.path().join("keys.toml");
    // The key also binds the tenant's new sessions to a profile.
    std::fs::write(&keys, format!("{entry}profile = \"acme-agent\"\n")).unwrap();
    let bad = Command::new(&binary)
        .args(["keys", "new", "Not-A-Tenant"])
        .output()
        .unwrap();
    assert!(!bad.status.success());

    let keys_arg = keys.to_str().unwrap();
    let (mut server, address, line) =
        common::spawn_server(dir.path(), &["--keys", keys_arg, "--no-jobs"]);
    assert!(line.contains("API keys required"), "{line}");
    let auth = format!("Authorization: Bearer {key}\r\n");
    let denied = request(&address, "POST", "/v1/sessions", r#"{"id":"s1"}"#);
    assert!(denied.starts_with("HTTP/1.1 401"), "{denied}");
    let wrong = request_with(
        &address,
        "POST",
        "/v1/sessions",
        r#"{"id":"s1"}"#,
        "Authorization: Bearer mk_wrong\r\n",
    );
    assert!(wrong.starts_with("HTTP/1.1 401"), "{wrong}");
    let created = request_with(&address, "POST", "/v1/sessions", r#"{"id":"s1"}"#, &auth);
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    assert!(created.contains(r#""profile":"acme-agent""#), "{created}");
    let queued = request_with(
        &address,
        "POST",
        "/v1/profiles/team/ingest",
        r#"{"session":"c1","messages":[{"role":"user","content":"The build server is called kestrel."}]}"#,
        &auth,
    );
    assert!(queued.starts_with("HTTP/1.1 202"), "{queued}");
    server.kill().unwrap();
    server.wait().unwrap();

    assert!(dir.path().join("tenants/acme/memory.db").exists());
    assert!(
        !dir.path().join("memory.db").exists(),
        "nothing in the base deployment"
    );
    let listed = Command::new(&binary)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["session", "list"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&listed.stdout).contains("s1"));
    let worked = Command::new(&binary)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["worker", "--once", "--keys", keys_arg])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&worked.stderr);
    assert!(worked.status.success(), "{stderr}");
    assert!(stderr.contains("worker ran 1 jobs"), "{stderr}");
}

/// `memory bench serve`, tiny, with text on FTS5, on the default (profiles on Tantivy) and
/// all on Tantivy: every phase answers every request, and the baseline table is printed
/// beside it.
#[test]
fn bench_serve_measures_every_operation_without_failures() {
    for (text, named) in [
        (
            Some("sqlite"),
            "text: profiles FTS5, session messages FTS5, blocks FTS5",
        ),
        (
            None,
            "text: profiles Tantivy (shared), session messages FTS5, blocks FTS5",
        ),
        (
            Some("tantivy"),
            "text: profiles Tantivy (shared), session messages Tantivy (shared)",
        ),
    ] {
        let out = Command::new(assert_cmd::cargo::cargo_bin("memory"))
            .args(["bench", "serve", "--sessions", "20", "--memories", "300"])
            .args(["--seconds", "1", "--clients", "2", "--recall-rates", "20"])
            .args(text.map(|text| ["--text", text]).into_iter().flatten())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains(named), "{stdout}");
        for row in [
            "| append |",
            "| history |",
            "| search (one session) |",
            "| search (all sessions) |",
            "| recall |",
            "| remember |",
            "| recall at a fixed 20/s (open loop) |",
        ] {
            let line = stdout
                .lines()
                .find(|l| l.starts_with(row))
                .unwrap_or_else(|| panic!("no {row} row: {stdout}"));
            assert!(line.ends_with("| 0 |"), "failures in {line}");
        }
        assert!(stdout.contains("HTTP / direct (p50)"), "{stdout}");
        // Each closed-loop phase is announced on stderr as it starts, for profilers.
        let stderr = String::from_utf8_lossy(&out.stderr);
        for phase in [
            "closed loop: append, 2 callers",
            "closed loop: recall, 2 callers",
        ] {
            assert!(stderr.contains(phase), "no {phase:?} on stderr: {stderr}");
        }
    }
}

/// A server killed with SIGKILL after a bound session's history was shipped, before the
/// job ran (`--no-jobs` leaves it queued, so the kill always lands in between), loses
/// nothing: the job is in the queue, `memory worker` runs it, and recall finds the history.
#[test]
fn a_shipped_job_survives_a_killed_server() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        "[sessions]\nprofile = \"alice\"\n\n[memory]\nembedder = \"none\"\n",
    )
    .unwrap();
    let (mut server, address, _) = common::spawn_server(dir.path(), &["--no-jobs"]);
    let created = request(&address, "POST", "/v1/sessions", r#"{"id":"s1"}"#);
    assert!(created.contains(r#""profile":"alice""#), "{created}");
    let appended = request(
        &address,
        "POST",
        "/v1/sessions/s1/messages",
        r#"{"message":{"id":"u1","role":"user","parts":[{"type":"text","text":"My locker code is 4312."}]}}"#,
    );
    assert!(appended.starts_with("HTTP/1.1 2"), "{appended}");
    let ended = request(&address, "POST", "/v1/sessions/s1/end", "{}");
    assert!(ended.contains(r#""shipped":1"#), "{ended}");
    assert!(ended.contains(r#""status":"queued""#), "{ended}");
    server.kill().unwrap();
    server.wait().unwrap();

    let worked = Command::new(assert_cmd::cargo::cargo_bin("memory"))
        .arg("--data-dir")
        .arg(dir.path())
        .args(["worker", "--once"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&worked.stderr);
    assert!(worked.status.success(), "{stderr}");
    assert!(stderr.contains("worker ran 1 jobs"), "{stderr}");
    let recalled = common::run(dir.path(), &["profile", "recall", "alice", "locker code"]);
    assert!(recalled.contains("4312"), "{recalled}");
    let jobs = common::run(dir.path(), &["profile", "jobs", "alice", "--json"]);
    assert!(jobs.contains(r#""status": "done""#), "{jobs}");
}

/// `memory serve` running jobs also runs the jobs no request of its own started: here one
/// queued through another server on the same data dir that runs none (`--no-jobs`).
#[test]
fn a_server_running_jobs_runs_jobs_queued_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memory.toml"),
        "[sessions]\nprofile = \"alice\"\n\n[memory]\nembedder = \"none\"\n",
    )
    .unwrap();
    let (mut running, running_address, _) = common::spawn_server(dir.path(), &[]);
    let (mut queueing, address, _) = common::spawn_server(dir.path(), &["--no-jobs"]);
    let created = request(&address, "POST", "/v1/sessions", r#"{"id":"s1"}"#);
    assert!(created.contains(r#""profile":"alice""#), "{created}");
    let appended = request(
        &address,
        "POST",
        "/v1/sessions/s1/messages",
        r#"{"message":{"id":"u1","role":"user","parts":[{"type":"text","text":"My bike lock code is 7291."}]}}"#,
    );
    assert!(appended.starts_with("HTTP/1.1 2"), "{appended}");
    let ended = request(&address, "POST", "/v1/sessions/s1/end", "{}");
    assert!(ended.contains(r#""status":"queued""#), "{ended}");
    let started = std::time::Instant::now();
    loop {
        let jobs = request(&running_address, "GET", "/v1/profiles/alice/jobs", "");
        if jobs.contains(r#""status":"done""#) {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "the queued job did not run: {jobs}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    for server in [&mut running, &mut queueing] {
        server.kill().unwrap();
        server.wait().unwrap();
    }
}

/// `[storage.tantivy] shared = true`: two servers and the CLI on one data dir share the
/// Tantivy indexes, and each finds at once what another wrote. Without it, the CLI is
/// refused while a server holds them, with an error that names the setting.
#[test]
fn servers_and_the_cli_share_tantivy_indexes_when_shared() {
    let dir = tempfile::tempdir().unwrap();
    let config = |shared: bool| {
        format!(
            "[storage]\ntext = \"tantivy\"\n\n[storage.tantivy]\nshared = {shared}\n\n\
             [memory]\nembedder = \"none\"\n"
        )
    };
    std::fs::write(dir.path().join("memory.toml"), config(true)).unwrap();
    let (mut one, first, _) = common::spawn_server(dir.path(), &[]);
    let (mut two, second, _) = common::spawn_server(dir.path(), &["--no-jobs"]);
    assert!(request(&first, "POST", "/v1/sessions", r#"{"id":"s1"}"#).starts_with("HTTP/1.1 201"));
    let appended = request(
        &first,
        "POST",
        "/v1/sessions/s1/messages",
        r#"{"message":{"id":"u1","role":"user","parts":[{"type":"text","text":"The ferry to Madeira leaves at dawn"}]}}"#,
    );
    assert!(appended.starts_with("HTTP/1.1 2"), "{appended}");
    let searched = request(&second, "GET", "/v1/search?q=madeira%20ferry", "");
    assert!(searched.contains(r#""message_id":"u1""#), "{searched}");
    let remembered = request(
        &second,
        "POST",
        "/v1/profiles/alice/memories",
        r#"{"content":"Madeira ferry tickets are booked"}"#,
    );
    assert!(remembered.starts_with("HTTP/1.1 201"), "{remembered}");
    let recalled = request(
        &first,
        "POST",
        "/v1/profiles/alice/recall",
        r#"{"query":"madeira tickets"}"#,
    );
    assert!(recalled.contains("tickets are booked"), "{recalled}");
    // The CLI writes and reads the same indexes while both servers run.
    common::run(
        dir.path(),
        &["profile", "remember", "alice", "Madeira hotel is paid"],
    );
    let recalled = request(
        &second,
        "POST",
        "/v1/profiles/alice/recall",
        r#"{"query":"madeira hotel"}"#,
    );
    assert!(recalled.contains("hotel is paid"), "{recalled}");
    let found = common::run(dir.path(), &["search", "madeira"]);
    assert!(found.contains("leaves at dawn"), "{found}");
    two.kill().unwrap();
    two.wait().unwrap();

    // Not shared: the server holds the indexes, and the CLI is told what to set.
    one.kill().unwrap();
    one.wait().unwrap();
    std::fs::write(dir.path().join("memory.toml"), config(false)).unwrap();
    let (mut holding, _, _) = common::spawn_server(dir.path(), &[]);
    let out = Command::new(assert_cmd::cargo::cargo_bin("memory"))
        .arg("--data-dir")
        .arg(dir.path())
        .args(["search", "madeira"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("shared"), "{stderr}");
    holding.kill().unwrap();
    holding.wait().unwrap();
}
