//! The example runs and both compositions give the agent the same answers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[test]
fn both_compositions_serve_the_same_agent_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_two-compositions"))
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    let found = |line: &str| line.split("found in ").nth(1).map(str::to_owned);
    assert_eq!(found(lines[0]), found(lines[1]), "{stdout}");
    assert!(dir.path().join("configured/memory.db").exists());
    assert!(dir.path().join("wired/index.db").exists());
}
