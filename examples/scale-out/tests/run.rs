//! The scale-out example, shortened, against the test command's PostgreSQL: its own checks
//! (every acknowledged write once, every job run once) must pass.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[test]
fn two_servers_and_a_worker_survive_a_killed_server() {
    if std::env::var("MEMORY_POSTGRES_URL").is_err() {
        assert!(
            std::env::var("MEMORY_REQUIRE_POSTGRES").is_err(),
            "MEMORY_REQUIRE_POSTGRES is set but MEMORY_POSTGRES_URL is not"
        );
        eprintln!("skipped: MEMORY_POSTGRES_URL is not set");
        return;
    }
    let memory = assert_cmd::cargo::cargo_bin("memory");
    assert!(
        memory.exists(),
        "{} is not built: build memory-cli first (the workspace test command does)",
        memory.display()
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_scale-out"))
        .arg("--memory")
        .arg(&memory)
        .args(["--seconds", "6", "--clients", "4"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(
            "every acknowledged write is present exactly once; no job was lost or ran twice"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("killed (SIGKILL)"), "{stdout}");
}
