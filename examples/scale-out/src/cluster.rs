//! The processes of the deployment: `memory serve` on fixed loopback ports, and `memory
//! worker`, all on one data dir whose `memory.toml` puts every role on PostgreSQL.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Any failure of the example, with its message.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The `memory` binary and the data dir every process shares.
#[derive(Clone)]
pub struct Cluster {
    /// The `memory` binary.
    pub memory: PathBuf,
    /// The data dir holding `memory.toml`.
    pub data_dir: PathBuf,
    /// Variables every process gets (the backends' URLs and credentials).
    pub env: Vec<(String, String)>,
    /// More arguments for `memory serve`.
    pub serve_args: Vec<String>,
}

/// A free loopback port (bound, read, released).
pub fn free_port() -> Result<u16, Error> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl Cluster {
    /// A `memory` command on the cluster's data dir with its variables.
    pub fn command(&self) -> Command {
        let mut command = Command::new(&self.memory);
        command
            .arg("--data-dir")
            .arg(&self.data_dir)
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }

    /// Starts `memory serve` on `port` (jobs left to the worker) and waits until it is
    /// ready.
    pub async fn serve(&self, port: u16) -> Result<Child, Error> {
        let child = self
            .command()
            .args(["serve", "--no-jobs", "--max-concurrent-requests", "256"])
            .args(&self.serve_args)
            .args(["--bind", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        wait_ready(port, Duration::from_secs(30)).await?;
        Ok(child)
    }

    /// Starts `memory worker`, its stderr kept to read how many jobs it ran.
    pub fn worker(&self, log: &Path) -> Result<Child, Error> {
        Ok(self
            .command()
            .args(["worker", "--poll-ms", "50"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log)?)
            .spawn()?)
    }
}

/// How many job runs a stopped worker reported on its last line (`worker ran N ...`).
pub fn worker_runs(log: &Path) -> Result<usize, Error> {
    let log = std::fs::read_to_string(log)?;
    log.lines()
        .find_map(|l| {
            l.strip_prefix("worker ran ")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .ok_or_else(|| format!("the worker did not report its jobs: {log}").into())
}

/// Creates the load's sessions `s0`..`s{SESSIONS - 1}` through the servers in turn, bound
/// to `profile` when given.
pub async fn create_sessions(ports: [u16; 2], profile: Option<&str>) -> Result<(), Error> {
    let http = reqwest::Client::new();
    for s in 0..crate::load::SESSIONS {
        let port = ports[s % 2];
        http.post(format!("http://127.0.0.1:{port}/v1/sessions"))
            .json(&serde_json::json!({"id": format!("s{s}"), "profile": profile}))
            .send()
            .await?
            .error_for_status()?;
    }
    Ok(())
}

/// Polls `/readyz` until it answers 200.
pub async fn wait_ready(port: u16, within: Duration) -> Result<(), Error> {
    let http = reqwest::Client::new();
    let started = Instant::now();
    loop {
        if let Ok(r) = http
            .get(format!("http://127.0.0.1:{port}/readyz"))
            .send()
            .await
            && r.status().is_success()
        {
            return Ok(());
        }
        if started.elapsed() > within {
            return Err(format!("the server on port {port} did not get ready").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// SIGINT: the graceful stop of `memory worker`.
pub fn interrupt(child: &Child) -> Result<(), Error> {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()?;
    if !status.success() {
        return Err("kill -INT failed".into());
    }
    Ok(())
}
