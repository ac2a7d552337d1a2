//! `memory serve` out of file descriptors: a server allowed more open profiles than its file
//! limit holds answers 503 with `Retry-After` past the limit, never aborts, never loses a
//! write it acknowledged, and serves again by itself once idle profiles are closed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
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

#[test]
fn out_of_files_is_a_503_and_the_server_recovers_by_itself() {
    let dir = tempfile::tempdir().unwrap();
    // Room for far more open profiles than 128 file descriptors hold; unused ones close
    // after five seconds.
    std::fs::write(
        dir.path().join("memory.toml"),
        "[memory]\nembedder = \"none\"\n\n[storage]\nopen_profiles = 500\nprofile_idle_secs = 5\n",
    )
    .unwrap();
    let binary = assert_cmd::cargo::cargo_bin("memory");
    let mut server = Command::new("bash")
        .arg("-c")
        .arg("ulimit -n 128 && exec \"$0\" \"$@\"")
        .arg(&binary)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["serve", "--bind", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(server.stderr.take().unwrap());
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
    // The log keeps flowing to a buffer (a full pipe would block the server).
    let log = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stderr.read_to_string(&mut rest);
        rest
    });

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
        assert!(server.try_wait().unwrap().is_none(), "the server exited");
    }
    assert!(refused > 0, "the file limit was never reached");
    assert!(!acknowledged.is_empty());

    // Once the idle profiles are closed, it serves again, and every acknowledged write is there.
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
    assert!(server.try_wait().unwrap().is_none(), "the server exited");
    server.kill().unwrap();
    server.wait().unwrap();
    let log = log.join().unwrap();
    assert!(!log.contains("panicked"), "{log}");
}
