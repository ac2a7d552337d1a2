//! The backends of the run, private to it: PostgreSQL (the `pgserver` wheel, through
//! `scripts/setup-postgres.sh`), Redis (`scripts/setup-redis.sh`, append-only file fsync'd
//! on every write) and SeaweedFS's S3 server (`weed mini`), each on its own loopback ports
//! and data directory under the run's directory, so that stopping or killing them touches
//! no other server on the machine.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use scale_out::cluster::{Error, free_port};

/// The repository's `scripts/` directory.
fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts")
}

/// Runs a setup script with `env`, returning its last line of output.
fn script(name: &str, args: &[&str], env: &[(&str, String)], unset: &str) -> Result<String, Error> {
    let out = Command::new(scripts().join(name))
        .args(args)
        .env_remove(unset)
        .envs(env.iter().map(|(k, v)| (*k, v)))
        .stderr(Stdio::inherit())
        .output()?;
    if !out.status.success() {
        return Err(format!("{name} {args:?} failed: {}", out.status).into());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .trim()
        .to_owned())
}

/// Sends `signal` to `pid`.
fn signal(pid: &str, signal: &str) -> Result<(), Error> {
    let status = Command::new("kill").args([signal, pid]).status()?;
    if !status.success() {
        return Err(format!("kill {signal} {pid} failed").into());
    }
    Ok(())
}

/// The first line of a pid file.
fn pid_in(file: &Path) -> Result<String, Error> {
    let text =
        std::fs::read_to_string(file).map_err(|e| format!("reading {}: {e}", file.display()))?;
    Ok(text.lines().next().unwrap_or_default().trim().to_owned())
}

/// Waits until `pid` is gone.
fn wait_gone(pid: &str, within: Duration) -> Result<(), Error> {
    let started = Instant::now();
    while Path::new(&format!("/proc/{pid}")).exists() {
        if started.elapsed() > within {
            return Err(format!("process {pid} still runs after {within:?}").into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// A private PostgreSQL server.
pub struct Postgres {
    data: PathBuf,
    port: u16,
    /// Its URL.
    pub url: String,
}

impl Postgres {
    fn env(data: &Path, port: u16) -> Vec<(&'static str, String)> {
        vec![
            ("MEMORY_PG_DATA", data.display().to_string()),
            ("MEMORY_PG_PORT", port.to_string()),
        ]
    }

    /// Initialises and starts one in `dir/postgres`.
    pub fn start(dir: &Path) -> Result<Self, Error> {
        let data = dir.join("postgres");
        let port = free_port()?;
        let url = script(
            "setup-postgres.sh",
            &[],
            &Self::env(&data, port),
            "MEMORY_POSTGRES_URL",
        )?;
        Ok(Self { data, port, url })
    }

    /// `pg_ctl restart -m fast`: clients are disconnected, the server comes back.
    pub fn restart(&self) -> Result<(), Error> {
        script(
            "setup-postgres.sh",
            &["restart"],
            &Self::env(&self.data, self.port),
            "MEMORY_POSTGRES_URL",
        )?;
        Ok(())
    }

    /// SIGKILL to the postmaster, then a start (crash recovery), retried while the killed
    /// server's backends are still exiting.
    pub fn kill_and_start(&self) -> Result<(), Error> {
        let pid = pid_in(&self.data.join("postmaster.pid"))?;
        signal(&pid, "-KILL")?;
        wait_gone(&pid, Duration::from_secs(10))?;
        let mut last = None;
        for _ in 0..40 {
            match script(
                "setup-postgres.sh",
                &[],
                &Self::env(&self.data, self.port),
                "MEMORY_POSTGRES_URL",
            ) {
                Ok(_) => return Ok(()),
                Err(e) => last = Some(e),
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        Err(last.unwrap_or_else(|| "PostgreSQL did not start".into()))
    }

    /// Stops it.
    pub fn stop(&self) -> Result<(), Error> {
        script(
            "setup-postgres.sh",
            &["stop"],
            &Self::env(&self.data, self.port),
            "MEMORY_POSTGRES_URL",
        )?;
        Ok(())
    }
}

/// A private Redis server with `appendfsync always`.
pub struct Redis {
    data: PathBuf,
    port: u16,
    /// Its URL.
    pub url: String,
}

impl Redis {
    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("MEMORY_REDIS_DATA", self.data.display().to_string()),
            ("MEMORY_REDIS_PORT", self.port.to_string()),
        ]
    }

    /// Starts one in `dir/redis`.
    pub fn start(dir: &Path) -> Result<Self, Error> {
        let mut redis = Self {
            data: dir.join("redis"),
            port: free_port()?,
            url: String::new(),
        };
        redis.url = script("setup-redis.sh", &[], &redis.env(), "MEMORY_REDIS_URL")?;
        Ok(redis)
    }

    /// SIGKILL, then a start on the same append-only file.
    pub fn kill_and_start(&self) -> Result<(), Error> {
        let pid = pid_in(&self.data.join("redis.pid"))?;
        signal(&pid, "-KILL")?;
        wait_gone(&pid, Duration::from_secs(10))?;
        script("setup-redis.sh", &[], &self.env(), "MEMORY_REDIS_URL")?;
        Ok(())
    }

    /// Stops it.
    pub fn stop(&self) -> Result<(), Error> {
        script("setup-redis.sh", &["stop"], &self.env(), "MEMORY_REDIS_URL")?;
        Ok(())
    }
}

/// The S3 server's local credentials (it listens on loopback only).
pub const S3_KEY: &str = "faults";
/// The secret of [`S3_KEY`].
pub const S3_SECRET: &str = "faults-secret";
/// The bucket the run uses.
pub const S3_BUCKET: &str = "faults";

/// A private SeaweedFS `weed mini` (S3 with its master, volume and filer), every port its own.
pub struct S3 {
    weed: PathBuf,
    data: PathBuf,
    /// `-flag=port` for every port it opens.
    ports: Vec<(&'static str, u16)>,
    child: Option<Child>,
}

impl S3 {
    /// Its S3 endpoint.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port("s3.port"))
    }

    fn port(&self, flag: &str) -> u16 {
        self.ports
            .iter()
            .find(|(f, _)| *f == flag)
            .map_or(0, |(_, p)| *p)
    }

    /// Starts one in `dir/s3` (`scripts/setup-s3.sh binary` names the binary).
    pub async fn start(dir: &Path) -> Result<Self, Error> {
        let weed = PathBuf::from(script(
            "setup-s3.sh",
            &["binary"],
            &[],
            "MEMORY_S3_ENDPOINT",
        )?);
        let mut ports = Vec::new();
        for flag in [
            "s3.port",
            "s3.port.grpc",
            "s3.port.iceberg",
            "s3.port.lance",
            "filer.port",
            "filer.port.grpc",
            "master.port",
            "master.port.grpc",
            "volume.port",
            "volume.port.grpc",
            "webdav.port",
            "admin.port",
            "admin.port.grpc",
        ] {
            // Below 55,000: SeaweedFS derives some ports by adding 10,000.
            let port = loop {
                let p = free_port()?;
                if p < 55_000 && !ports.iter().any(|(_, q)| *q == p) {
                    break p;
                }
            };
            ports.push((flag, port));
        }
        let mut s3 = Self {
            weed,
            data: dir.join("s3"),
            ports,
            child: None,
        };
        std::fs::create_dir_all(&s3.data)?;
        s3.resume().await?;
        Ok(s3)
    }

    /// Starts the server again on its data and ports, and waits until the bucket answers.
    pub async fn resume(&mut self) -> Result<(), Error> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.data.with_extension("log"))?;
        let mut command = Command::new(&self.weed);
        command
            .arg("mini")
            .arg(format!("-dir={}", self.data.display()))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-admin.ui=false"])
            .arg(format!("-bucket={S3_BUCKET}"))
            .env("AWS_ACCESS_KEY_ID", S3_KEY)
            .env("AWS_SECRET_ACCESS_KEY", S3_SECRET)
            .stdout(Stdio::null())
            .stderr(log);
        for (flag, port) in &self.ports {
            command.arg(format!("-{flag}={port}"));
        }
        self.child = Some(command.spawn()?);
        let filer = format!(
            "http://127.0.0.1:{}/buckets/{S3_BUCKET}/",
            self.port("filer.port")
        );
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()?;
        let started = Instant::now();
        loop {
            let s3_up = http.get(self.endpoint()).send().await.is_ok();
            let bucket = matches!(http.get(&filer).send().await, Ok(r) if r.status().is_success());
            if s3_up && bucket {
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(90) {
                return Err(format!(
                    "the S3 server did not come up; see {}",
                    self.data.with_extension("log").display()
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Stops the server (SIGTERM) and waits for it to exit.
    pub fn pause(&mut self) -> Result<(), Error> {
        if let Some(mut child) = self.child.take() {
            signal(&child.id().to_string(), "-TERM")?;
            child.wait()?;
        }
        Ok(())
    }
}

impl Drop for S3 {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
