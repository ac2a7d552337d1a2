//! The faults example, shortened (four clients, two seconds between faults, the S3 server
//! stopped for four): its own checks (every acknowledged write once, every job run once,
//! every failure a 503 with Retry-After or a 4xx, the rebuilt indexes complete) must pass.
//! It starts private PostgreSQL, Redis and S3 servers through the repository's setup
//! scripts, so it runs wherever the test command can start them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[test]
fn backends_restarted_killed_and_lost_under_load_lose_nothing_acknowledged() {
    let memory = assert_cmd::cargo::cargo_bin("memory");
    assert!(
        memory.exists(),
        "{} is not built: build memory-cli first (the workspace test command does)",
        memory.display()
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_faults-under-load"))
        .arg("--memory")
        .arg(&memory)
        .args(["--clients", "4", "--pause", "2", "--outage", "4"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for expected in [
        "every acknowledged write is present exactly once; no job was lost or ran twice",
        "PostgreSQL killed (SIGKILL)",
        "Redis killed (SIGKILL)",
        "S3 server stopped",
        "memory reindex while the servers and the worker run: succeeded",
    ] {
        assert!(stdout.contains(expected), "{expected:?} not in\n{stdout}");
    }
}
