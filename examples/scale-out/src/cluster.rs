//! The processes of the deployment: `memory serve` on fixed loopback ports, and `memory
//! worker`, all on one data dir whose `memory.toml` puts every role on PostgreSQL.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The `memory` binary and the data dir every process shares.
#[derive(Clone)]
pub struct Cluster {
    pub memory: PathBuf,
    pub data_dir: PathBuf,
}

/// A free loopback port (bound, read, released).
pub fn free_port() -> Result<u16, Error> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl Cluster {
    /// Starts `memory serve` on `port` (jobs left to the worker) and waits until it is
    /// ready.
    pub async fn serve(&self, port: u16) -> Result<Child, Error> {
        let child = Command::new(&self.memory)
            .arg("--data-dir")
            .arg(&self.data_dir)
            .args(["serve", "--no-jobs", "--max-concurrent-requests", "256"])
            .args(["--bind", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        wait_ready(port, Duration::from_secs(30)).await?;
        Ok(child)
    }

    /// Starts `memory worker`, its stderr kept to read how many jobs it ran.
    pub fn worker(&self, log: &Path) -> Result<Child, Error> {
        Ok(Command::new(&self.memory)
            .arg("--data-dir")
            .arg(&self.data_dir)
            .args(["worker", "--poll-ms", "50"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log)?)
            .spawn()?)
    }
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
