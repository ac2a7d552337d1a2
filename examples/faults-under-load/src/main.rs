//! Faults under load: two `memory serve` processes and a `memory worker` on PostgreSQL +
//! Redis + an S3 server + Tantivy (records, sessions and vectors on PostgreSQL, jobs and
//! key-values on Redis, blobs on S3, text on Tantivy indexes the three processes share). A
//! bounded loopback load appends, compacts, recalls, remembers and ingests through both
//! servers while, in turn:
//! 1. PostgreSQL is restarted (fast shutdown), then killed with SIGKILL and started again;
//! 2. Redis is killed with SIGKILL and restarted on its append-only file;
//! 3. the S3 server is stopped for `--outage` seconds while sessions are archived and a
//!    backup is taken (both again once it is back);
//! 4. the Tantivy directory is deleted, then rebuilt with `memory reindex` while the servers
//!    and the worker keep running.
//!
//! Afterwards every acknowledged write must be present exactly once, every job done (run
//! once by the one worker), every failed request a 503 with `Retry-After` or a 4xx (never
//! another 5xx or a hang past the request timeout), no process restarted, and the rebuilt
//! indexes must find every memory and message acknowledged. Prints the numbers
//! `docs/benchmarks.md` records, with the time to recover from each fault; exits non-zero
//! when a check fails.
//!
//! ```text
//! faults-under-load --memory target/release/memory [--clients 8] [--pause 5] [--outage 10]
//! ```
//! The servers are the run's own (its directory under the temp dir, free loopback ports),
//! stopped and deleted at the end.

mod faults;
mod llm;
mod services;

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use scale_out::cluster::{self, Cluster, Error};
use scale_out::{load, report, verify};
use serde_json::{Value, json};

use faults::Fault;
use services::{Postgres, Redis, S3};

/// The server's request timeout in the run; clients give up two seconds later.
const REQUEST_TIMEOUT_SECS: u64 = 5;

struct Options {
    memory: PathBuf,
    clients: usize,
    pause: Duration,
    outage: Duration,
}

fn options() -> Result<Options, Error> {
    let mut out = Options {
        memory: PathBuf::from("target/release/memory"),
        clients: 8,
        pause: Duration::from_secs(5),
        outage: Duration::from_secs(10),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--memory" => out.memory = PathBuf::from(value()?),
            "--clients" => out.clients = value()?.parse()?,
            "--pause" => out.pause = Duration::from_secs(value()?.parse()?),
            "--outage" => out.outage = Duration::from_secs(value()?.parse()?),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if !(1..=32).contains(&out.clients)
        || !(1..=60).contains(&out.pause.as_secs())
        || !(1..=60).contains(&out.outage.as_secs())
    {
        return Err(
            "--clients is 1 to 32, --pause and --outage 1 to 60 (the run is bounded)".into(),
        );
    }
    Ok(out)
}

/// `memory.toml` of the deployment on the run's servers: records, sessions and vectors on
/// PostgreSQL in `schema`, jobs and key-values on Redis under `prefix`, blobs in the S3
/// bucket under `prefix`, text on Tantivy indexes shared by every process.
fn config(schema: &str, prefix: &str, s3: &S3, llm: &str) -> String {
    format!(
        r#"[llm]
base_url = "{llm}/v1"
model = "stand-in"
structured_output = "json_schema"

[compaction]
compact_after = 300
protect_head = 1
tail_token_budget = 80
min_tail_messages = 2

[memory]
embedder = "none"

[storage]
records = "postgres"
sessions = "postgres"
text = "tantivy"
vectors = "postgres"
jobs = "redis"
kv = "redis"
blobs = "s3"

[storage.postgres]
schema = "{schema}"

[storage.tantivy]
shared = true

[storage.redis]
key_prefix = "{prefix}:"

[storage.s3]
bucket = "{bucket}"
prefix = "{prefix}/"
endpoint = "{endpoint}"
region = "us-east-1"
access_key_env = "FAULTS_S3_KEY"
secret_key_env = "FAULTS_S3_SECRET"
"#,
        bucket = services::S3_BUCKET,
        endpoint = s3.endpoint(),
    )
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let options = options()?;
    let run = format!(
        "faults_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let dir = std::env::temp_dir().join(&run);
    std::fs::create_dir_all(&dir)?;
    let started = Instant::now();
    let postgres = Postgres::start(&dir)?;
    let redis = match Redis::start(&dir) {
        Ok(redis) => redis,
        Err(e) => {
            postgres.stop()?;
            return Err(e);
        }
    };
    let s3 = S3::start(&dir).await;
    let result = match s3 {
        Ok(mut s3) => {
            println!(
                "faults-under-load: private PostgreSQL, Redis and S3 server up in {:.1} s",
                started.elapsed().as_secs_f64()
            );
            let result = run_faults(&options, &dir, &postgres, &redis, &mut s3).await;
            drop(s3);
            result
        }
        Err(e) => Err(e),
    };
    let stopped = postgres.stop().and(redis.stop());
    if result.is_ok() && stopped.is_ok() {
        std::fs::remove_dir_all(&dir)?;
    } else {
        println!("the run's files are kept in {}", dir.display());
    }
    result.and(stopped)
}

/// A deployment's processes and what its clients saw.
struct Deployment {
    cluster: Cluster,
    ports: [u16; 2],
    servers: Vec<Child>,
    shared: load::Shared,
}

impl Drop for Deployment {
    fn drop(&mut self) {
        for server in &mut self.servers {
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}

/// A process killed when dropped, so a failed run leaves none behind.
struct Owned(Child);

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Deployment {
    fn new(data_dir: PathBuf, options: &Options, env: &[(String, String)]) -> Self {
        Self {
            cluster: Cluster {
                memory: options.memory.clone(),
                data_dir,
                env: env.to_vec(),
                serve_args: vec![
                    "--request-timeout-secs".into(),
                    REQUEST_TIMEOUT_SECS.to_string(),
                ],
            },
            ports: [0, 0],
            servers: Vec::new(),
            shared: load::Shared::default(),
        }
    }

    fn plan(&self, deadline: Instant, started: Instant) -> load::Plan {
        load::Plan {
            ports: self.ports,
            started,
            deadline,
            compact: true,
            timeout: Duration::from_secs(REQUEST_TIMEOUT_SECS + 2),
        }
    }
}

/// Runs a `memory` command of `cluster`, bounded to a minute: (succeeded, the first line
/// of what it printed on failure, seconds taken).
fn cli(cluster: &Cluster, args: &[&str]) -> Result<(bool, String, f64), Error> {
    let started = Instant::now();
    let mut child = cluster
        .command()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    loop {
        if let Some(status) = child.try_wait()? {
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                std::io::Read::read_to_string(&mut pipe, &mut stderr)?;
            }
            let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            return Ok((
                status.success(),
                first.to_owned(),
                started.elapsed().as_secs_f64(),
            ));
        }
        if started.elapsed() > Duration::from_secs(60) {
            child.kill()?;
            child.wait()?;
            return Ok((false, "still running after 60 s (killed)".into(), 60.0));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sessions no client writes to, archived during the S3 outage: (id, message ids).
const IDLE_SESSIONS: usize = 3;
const IDLE_MESSAGES: usize = 5;

async fn seed_idle_sessions(port: u16) -> Result<(), Error> {
    let http = reqwest::Client::new();
    for s in 0..IDLE_SESSIONS {
        let base = format!("http://127.0.0.1:{port}/v1/sessions");
        http.post(&base)
            .json(&json!({"id": format!("idle{s}")}))
            .send()
            .await?
            .error_for_status()?;
        for m in 0..IDLE_MESSAGES {
            http.post(format!("{base}/idle{s}/messages"))
                .json(
                    &json!({"message": {"id": format!("idle{s}-{m}"), "role": "user",
                    "parts": [{"type": "text", "text": format!("idle message {m}")}]}}),
                )
                .send()
                .await?
                .error_for_status()?;
        }
    }
    Ok(())
}

async fn run_faults(
    options: &Options,
    dir: &Path,
    postgres: &Postgres,
    redis: &Redis,
    s3: &mut S3,
) -> Result<(), Error> {
    let llm = llm::start().await;
    let env = vec![
        ("MEMORY_POSTGRES_URL".to_owned(), postgres.url.clone()),
        ("MEMORY_REDIS_URL".to_owned(), redis.url.clone()),
        ("FAULTS_S3_KEY".to_owned(), services::S3_KEY.to_owned()),
        (
            "FAULTS_S3_SECRET".to_owned(),
            services::S3_SECRET.to_owned(),
        ),
        ("OPENAI_API_KEY".to_owned(), "stand-in".to_owned()),
    ];
    let mut a = Deployment::new(dir.join("a"), options, &env);
    std::fs::create_dir_all(&a.cluster.data_dir)?;
    std::fs::write(
        a.cluster.data_dir.join("memory.toml"),
        config("faults_a", "a", s3, &llm.uri()),
    )?;

    a.ports = [cluster::free_port()?, cluster::free_port()?];
    for port in a.ports {
        a.servers.push(a.cluster.serve(port).await?);
    }
    let worker_log = dir.join("worker.log");
    let mut worker = Owned(a.cluster.worker(&worker_log)?);
    cluster::create_sessions(a.ports, Some(load::PROFILE)).await?;
    seed_idle_sessions(a.ports[0]).await?;

    let started = Instant::now();
    let deadline = started + Duration::from_secs(600);
    let mut clients = Vec::new();
    for n in 0..options.clients {
        clients.push(tokio::spawn(load::client(
            n,
            a.plan(deadline, started),
            a.shared.clone(),
        )));
    }
    let now = || u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let mut faults: Vec<Fault> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    tokio::time::sleep(options.pause).await;

    // 1. PostgreSQL: a fast restart, then SIGKILL and crash recovery.
    let began_ms = now();
    tokio::task::block_in_place(|| postgres.restart())?;
    faults.push(Fault {
        name: "PostgreSQL restarted (fast shutdown)",
        began_ms,
        restored_ms: now(),
    });
    tokio::time::sleep(options.pause).await;
    let began_ms = now();
    tokio::task::block_in_place(|| postgres.kill_and_start())?;
    faults.push(Fault {
        name: "PostgreSQL killed (SIGKILL), started again",
        began_ms,
        restored_ms: now(),
    });
    tokio::time::sleep(options.pause).await;

    // 2. Redis: SIGKILL, then a start on its append-only file.
    let began_ms = now();
    tokio::task::block_in_place(|| redis.kill_and_start())?;
    faults.push(Fault {
        name: "Redis killed (SIGKILL), restarted on its AOF",
        began_ms,
        restored_ms: now(),
    });
    tokio::time::sleep(options.pause).await;

    // 3. The S3 server stopped while sessions are archived and a backup is taken.
    let began_ms = now();
    tokio::task::block_in_place(|| s3.pause())?;
    let outage_ends = Instant::now() + options.outage;
    // Both at once, each in its own process, while the server is away.
    let during: Vec<_> = [
        ("archive of idle0", vec!["session", "archive", "idle0"]),
        ("backup", vec!["backup", "create"]),
    ]
    .into_iter()
    .map(|(what, args)| {
        let cluster = a.cluster.clone();
        tokio::task::spawn_blocking(move || -> Result<String, Error> {
            let (ok, why, secs) = cli(&cluster, &args)?;
            Ok(format!(
                "{what} started during the outage: {} in {secs:.1} s {why}",
                verdict(ok)
            ))
        })
    })
    .collect();
    tokio::time::sleep_until(outage_ends.into()).await;
    s3.resume().await?;
    faults.push(Fault {
        name: "S3 server stopped during archiving and a backup",
        began_ms,
        restored_ms: now(),
    });
    for task in during {
        notes.push(task.await??);
    }
    let after = {
        let cluster = a.cluster.clone();
        tokio::task::spawn_blocking(move || -> Result<Vec<(bool, String)>, Error> {
            let mut out = Vec::new();
            for s in 0..IDLE_SESSIONS {
                let (ok, why, secs) = cli(&cluster, &["session", "archive", &format!("idle{s}")])?;
                out.push((
                    ok,
                    format!(
                        "archive idle{s} after the outage: {} in {secs:.1} s {why}",
                        verdict(ok)
                    ),
                ));
            }
            let (ok, why, secs) = cli(&cluster, &["backup", "create"])?;
            out.push((
                ok,
                format!(
                    "backup after the outage: {} in {secs:.1} s {why}",
                    verdict(ok)
                ),
            ));
            Ok(out)
        })
    }
    .await??;
    let mut problems: Vec<String> = Vec::new();
    for (ok, line) in after {
        if !ok {
            problems.push(line.clone());
        }
        notes.push(line);
    }
    tokio::time::sleep(options.pause).await;

    // 4. The Tantivy directory deleted under load, rebuilt while every process runs.
    let began_ms = now();
    // Moved away, then deleted: the processes keep writing while it goes.
    let lost = dir.join("tantivy-lost");
    std::fs::rename(a.cluster.data_dir.join("tantivy"), &lost)?;
    std::fs::remove_dir_all(&lost)?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (ok, why, secs) = tokio::task::block_in_place(|| cli(&a.cluster, &["reindex"]))?;
    notes.push(format!(
        "memory reindex while the servers and the worker run: {} in {secs:.1} s {why}",
        verdict(ok)
    ));
    if !ok {
        problems.push(format!("memory reindex failed: {why}"));
    }
    faults.push(Fault {
        name: "Tantivy directory deleted, rebuilt (memory reindex)",
        began_ms,
        restored_ms: now(),
    });
    tokio::time::sleep(options.pause).await;

    a.shared
        .stop
        .store(true, std::sync::atomic::Ordering::Relaxed);
    for client in clients {
        client.await?;
    }
    let elapsed = started.elapsed();
    let end_ms = now();

    // The checks.
    let base_a = format!("http://127.0.0.1:{}", a.ports[0]);
    let jobs_a = verify::settled_jobs(&base_a, Duration::from_secs(60)).await?;
    for (name, server) in ["1", "2"].iter().zip(a.servers.iter_mut()) {
        if let Some(status) = server.try_wait()? {
            problems.push(format!("server {name} exited during the run: {status}"));
        }
    }
    if let Some(status) = worker.0.try_wait()? {
        problems.push(format!("the worker exited during the run: {status}"));
    }
    cluster::interrupt(&worker.0)?;
    tokio::task::block_in_place(|| worker.0.wait())?;
    let worker_ran = cluster::worker_runs(&worker_log)?;
    let ledger_a = std::mem::take(&mut *a.shared.ledger.lock().map_err(|_| "ledger poisoned")?);
    let found_a = verify::check(&base_a, &ledger_a, &jobs_a, Some(worker_ran)).await?;
    problems.extend(found_a.problems.iter().cloned());
    problems.extend(idle_sessions_whole(&base_a).await?);
    let (searched, missing) = rebuilt_index_finds(&base_a, &ledger_a).await?;
    problems.extend(missing);

    // The report.
    println!(
        "faults-under-load: 2 servers + 1 worker on one PostgreSQL, Redis and S3 server, text on shared Tantivy indexes; {} clients for {:.1} s on loopback",
        options.clients,
        elapsed.as_secs_f64()
    );
    println!(
        "| fault | took | requests failed / succeeded while it lasted and until the next | time to recover |"
    );
    println!("|---|---:|---:|---:|");
    let mut stats = a.shared.stats.lock().map_err(|_| "stats poisoned")?;
    for (i, fault) in faults.iter().enumerate() {
        let until = faults.get(i + 1).map_or(end_ms, |f| f.began_ms);
        let seen = faults::seen(&stats.timeline, fault, until);
        println!(
            "| {} | {:.1} s | {} / {} | {:.1} s |",
            fault.name,
            (fault.restored_ms - fault.began_ms) as f64 / 1000.0,
            seen.failed,
            seen.succeeded,
            seen.recovery_ms as f64 / 1000.0
        );
    }
    for note in &notes {
        println!("{note}");
    }
    report::operations(&mut stats, elapsed, true);
    for (violation, count) in &stats.violations {
        problems.push(format!("{count} × {violation}"));
    }
    let unreachable: u64 = stats
        .ops()
        .iter()
        .map(|(_, op)| op.reasons.get("unreachable").copied().unwrap_or(0))
        .sum();
    if unreachable > 0 {
        problems.push(format!(
            "{unreachable} request(s) found no server, though the servers never stopped"
        ));
    }
    println!(
        "checked: {} (worker ran {worker_ran}); {searched} memories and messages found through the rebuilt indexes",
        report::checked(&ledger_a, &found_a),
    );
    report::verdict(
        &problems,
        "every acknowledged write is present exactly once; no job was lost or ran twice; every failed request was a 503 with Retry-After or a 4xx",
    )
}

fn verdict(ok: bool) -> &'static str {
    if ok { "succeeded" } else { "failed" }
}

/// The idle sessions, archived, come back whole when read.
async fn idle_sessions_whole(base: &str) -> Result<Vec<String>, Error> {
    let http = reqwest::Client::new();
    let mut problems = Vec::new();
    for s in 0..IDLE_SESSIONS {
        let export = http
            .get(format!("{base}/v1/sessions/idle{s}/export"))
            .send()
            .await?
            .error_for_status()?
            .text()
            .await?;
        let ids: Vec<String> = export
            .lines()
            .skip(1)
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|r| r["message"]["id"].as_str().map(str::to_owned))
            .collect();
        let expected: Vec<String> = (0..IDLE_MESSAGES).map(|m| format!("idle{s}-{m}")).collect();
        if ids != expected {
            problems.push(format!("archived session idle{s} came back as {ids:?}"));
        }
    }
    Ok(problems)
}

/// Every memory acknowledged is found by recalling its own words (text only: the
/// run has no embedder), and every message by searching its words in its session, so the
/// rebuilt indexes hold them all. Returns how many were looked for.
async fn rebuilt_index_finds(
    base: &str,
    ledger: &load::Ledger,
) -> Result<(usize, Vec<String>), Error> {
    let http = reqwest::Client::new();
    let mut problems = Vec::new();
    for (key, id) in &ledger.remembers {
        let tag = key.trim_start_matches("k.");
        let hits: Value = http
            .post(format!("{base}/v1/profiles/{}/recall", load::PROFILE))
            .json(&json!({"query": format!("fact from client {tag}"), "limit": 10}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        if !hits["hits"].to_string().contains(id.as_str()) {
            problems.push(format!(
                "the rebuilt index does not recall memory {key} ({id})"
            ));
        }
    }
    // The messages appended, found by their words in their session.
    for (session, id) in &ledger.appends {
        let url = reqwest::Url::parse_with_params(
            &format!("{base}/v1/search"),
            &[
                ("q", format!("message {id}")),
                ("session", session.clone()),
                ("limit", "50".to_owned()),
            ],
        )?;
        let hits: Value = http
            .get(url)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let found = hits["hits"]
            .as_array()
            .is_some_and(|hits| hits.iter().any(|h| h["message_id"] == id.as_str()));
        if !found {
            problems.push(format!(
                "the rebuilt index does not find message {id} of {session}"
            ));
        }
    }
    Ok((ledger.remembers.len() + ledger.appends.len(), problems))
}
