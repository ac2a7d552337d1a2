//! Helpers shared by the CLI's end-to-end tests.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// `memory serve --bind 127.0.0.1:0 EXTRA...` on `dir`, and the address it bound with the
/// line that announced it. The caller owns the child: it kills and waits for it.
#[allow(clippy::zombie_processes)]
pub fn spawn_server(dir: &Path, extra: &[&str]) -> (Child, String, String) {
    let mut server = Command::new(assert_cmd::cargo::cargo_bin("memory"))
        .arg("--data-dir")
        .arg(dir)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(server.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the server exited"
        );
        if let Some(rest) = line.split("serving http://").nth(1) {
            let address = rest.split_whitespace().next().unwrap().to_owned();
            return (server, address, line);
        }
    }
}

/// Runs `memory --data-dir DIR ARGS...`, asserts success, and returns its standard output.
pub fn run(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("memory"))
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "memory {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The JSON a finished command printed on stdout; panics with both outputs when it failed.
pub fn json_output(out: std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
