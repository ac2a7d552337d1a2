//! The example runs against the test command's Postgres server and both backends give the
//! agent the same answers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[test]
fn the_same_agent_code_answers_the_same_on_sqlite_and_postgres() {
    if std::env::var("MEMORY_POSTGRES_URL").is_err() {
        assert!(
            std::env::var("MEMORY_REQUIRE_POSTGRES").is_err(),
            "MEMORY_REQUIRE_POSTGRES is set but MEMORY_POSTGRES_URL is not"
        );
        eprintln!("skipped: MEMORY_POSTGRES_URL is not set");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sqlite-and-postgres"))
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("same answers on both backends"), "{stdout}");
    assert!(
        stdout.contains(r#"history: ["u1", "a1b", "u2"]"#),
        "{stdout}"
    );
    assert!(dir.path().join("sqlite/memory.db").exists());
    assert!(!dir.path().join("postgres/memory.db").exists());
}
