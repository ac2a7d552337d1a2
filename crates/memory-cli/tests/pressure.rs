//! `memory serve` out of file descriptors or threads: a server allowed more open profiles than
//! its file limit (`RLIMIT_NOFILE`) or its thread limit (`RLIMIT_NPROC`) holds answers 503
//! with `Retry-After` past the limit, never aborts, never loses a write it acknowledged, and
//! serves again by itself once idle profiles are closed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One request on its own connection; the whole response, or `None` when the server did not
/// answer (it could not accept the connection while out of files).
fn request(address: &str, method: &str, path: &str, body: &str) -> Option<String> {
    let mut stream = std::net::TcpStream::connect(address).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    (!response.is_empty()).then_some(response)
}

fn status(response: &str) -> u16 {
    response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// A `memory serve` started under a shell `ulimit`, as `uid` when given.
struct Server {
    child: Child,
    address: String,
    /// The rest of the log, read as it comes (a full pipe would block the server).
    log: JoinHandle<String>,
}

impl Server {
    /// Starts the server on `data_dir` (whose memory.toml allows 500 open profiles, idle after
    /// five seconds) with `limit` (a `ulimit` option and value) applied first.
    fn start(binary: &Path, data_dir: &Path, limit: &str, uid: Option<u32>) -> Self {
        std::fs::write(
            data_dir.join("memory.toml"),
            "[memory]\nembedder = \"none\"\n\n[storage]\nopen_profiles = 500\nprofile_idle_secs = 5\n",
        )
        .unwrap();
        let mut command = Command::new("bash");
        command
            .arg("-c")
            .arg(format!("ulimit {limit} && exec \"$0\" \"$@\""))
            .arg(binary)
            .arg("--data-dir")
            .arg(data_dir)
            .args(["serve", "--bind", "127.0.0.1:0"])
            .stderr(Stdio::piped());
        if let Some(uid) = uid {
            command.uid(uid).gid(uid);
        }
        let mut child = command.spawn().unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let address = loop {
            line.clear();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "the server exited"
            );
            if let Some(rest) = line.split("serving http://").nth(1) {
                break rest.split_whitespace().next().unwrap().to_owned();
            }
        };
        let log = std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = stderr.read_to_string(&mut rest);
            rest
        });
        Self {
            child,
            address,
            log,
        }
    }

    fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Drives the server past its limit and back; see the module's comment.
    fn past_the_limit_and_back(mut self) {
        let address = self.address.clone();
        // Past the limit: every answer is a success or a 503 with Retry-After.
        let mut acknowledged = Vec::new();
        let mut refused = 0;
        for i in 0..300 {
            if refused >= 5 {
                break;
            }
            let profile = format!("user-{i:03}");
            let body = format!(r#"{{"content":"user {i} keeps a red bicycle"}}"#);
            let Some(response) = request(
                &address,
                "POST",
                &format!("/v1/profiles/{profile}/memories"),
                &body,
            ) else {
                refused += 1;
                continue;
            };
            match status(&response) {
                200 | 201 => acknowledged.push(profile),
                503 => {
                    assert!(
                        response.to_ascii_lowercase().contains("retry-after:"),
                        "{response}"
                    );
                    refused += 1;
                }
                other => panic!("status {other}: {response}"),
            }
            assert!(self.running(), "the server exited");
        }
        assert!(refused > 0, "the limit was never reached");
        assert!(!acknowledged.is_empty());

        // Once the idle profiles are closed, it serves again, and every acknowledged write is
        // there.
        let deadline = Instant::now() + Duration::from_secs(60);
        let recovered = loop {
            let answer = request(
                &address,
                "POST",
                "/v1/profiles/after-the-pressure/memories",
                r#"{"content":"written after the pressure went"}"#,
            );
            if answer
                .as_deref()
                .is_some_and(|r| matches!(status(r), 200 | 201))
            {
                break true;
            }
            if Instant::now() > deadline {
                break false;
            }
            std::thread::sleep(Duration::from_millis(500));
        };
        assert!(recovered, "the server did not recover");
        for profile in &acknowledged {
            let mut found = None;
            for _ in 0..20 {
                found = request(
                    &address,
                    "GET",
                    &format!("/v1/profiles/{profile}/memories"),
                    "",
                )
                .filter(|r| status(r) == 200);
                if found.is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(500));
            }
            let found = found.unwrap_or_else(|| panic!("{profile} could not be read"));
            assert!(found.contains("red bicycle"), "{profile}: {found}");
        }
        assert!(self.running(), "the server exited");
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        let log = self.log.join().unwrap();
        assert!(!log.contains("panicked"), "{log}");
    }
}

#[test]
fn out_of_files_is_a_503_and_the_server_recovers_by_itself() {
    let dir = tempfile::tempdir().unwrap();
    let binary = assert_cmd::cargo::cargo_bin("memory");
    Server::start(&binary, dir.path(), "-n 128", None).past_the_limit_and_back();
}

/// The user id of this process (Linux).
fn uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The thread limit counts every thread of the server's user, and root is exempt from it: the
/// server runs as `nobody` (65534), which runs nothing else here, from a copy of the binary
/// that user may execute. Run by another user, the test cannot tell its own threads from the
/// server's, and says so instead of running.
#[test]
fn out_of_threads_is_a_503_and_the_server_recovers_by_itself() {
    if uid() != Some(0) {
        eprintln!("skipped: RLIMIT_NPROC is tested as root (the server runs as nobody)");
        return;
    }
    const NOBODY: u32 = 65_534;
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(dir.path(), Some(NOBODY), Some(NOBODY)).unwrap();
    let binary = dir.path().join("memory");
    std::fs::copy(assert_cmd::cargo::cargo_bin("memory"), &binary).unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::os::unix::fs::chown(&data, Some(NOBODY), Some(NOBODY)).unwrap();
    Server::start(&binary, &data, "-u 64", Some(NOBODY)).past_the_limit_and_back();
}
