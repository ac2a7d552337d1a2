//! Scale-out, shown: two `memory serve` processes and one `memory worker` share one
//! PostgreSQL. A bounded load generator on loopback appends, recalls, remembers and ingests
//! through both servers at once while one server is killed with SIGKILL and restarted.
//! Afterwards every acknowledged write must be present exactly once, every job done, and
//! the one worker must have run each job once. Prints the numbers `docs/benchmarks.md`
//! records; exits non-zero when a check fails.
//!
//! ```text
//! scale-out --memory target/release/memory [--seconds 20] [--clients 8]
//! ```
//! `MEMORY_POSTGRES_URL` names the server (`examples/scale-out/run.sh` starts one). The run
//! uses a schema of its own and drops it at the end.

mod cluster;
mod load;
mod verify;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use cluster::{Cluster, Error};

struct Options {
    memory: PathBuf,
    seconds: u64,
    clients: usize,
}

fn options() -> Result<Options, Error> {
    let mut out = Options {
        memory: PathBuf::from("target/release/memory"),
        seconds: 20,
        clients: 8,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--memory" => out.memory = PathBuf::from(value()?),
            "--seconds" => out.seconds = value()?.parse()?,
            "--clients" => out.clients = value()?.parse()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if !(4..=600).contains(&out.seconds) || !(1..=64).contains(&out.clients) {
        return Err("--seconds is 4 to 600 and --clients 1 to 64 (the load is bounded)".into());
    }
    Ok(out)
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)] as f64 / 1000.0
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let options = options()?;
    let url = std::env::var("MEMORY_POSTGRES_URL").map_err(
        |_| "MEMORY_POSTGRES_URL is not set (examples/scale-out/run.sh starts a server)",
    )?;
    let schema = format!(
        "scaleout_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let dir = std::env::temp_dir().join(&schema);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("memory.toml"),
        format!(
            "{}\n[memory]\nembedder = \"none\"\n",
            memory_config::all_on_postgres(&schema)
        ),
    )?;
    let result = run(&options, &dir).await;
    let db = memory_postgres::PostgresDatabase::connect(
        memory_postgres::PostgresConfig::new(url).schema(&schema),
    )
    .await?;
    db.drop_schema().await?;
    db.close().await;
    std::fs::remove_dir_all(&dir)?;
    result
}

async fn run(options: &Options, dir: &std::path::Path) -> Result<(), Error> {
    let cluster = Cluster {
        memory: options.memory.clone(),
        data_dir: dir.to_owned(),
    };
    let ports = [cluster::free_port()?, cluster::free_port()?];
    let mut a = cluster.serve(ports[0]).await?;
    let mut b = cluster.serve(ports[1]).await?;
    let worker_log = dir.join("worker.log");
    let mut worker = cluster.worker(&worker_log)?;
    let http = reqwest::Client::new();
    for s in 0..load::SESSIONS {
        let port = ports[s % 2];
        http.post(format!("http://127.0.0.1:{port}/v1/sessions"))
            .json(&serde_json::json!({"id": format!("s{s}")}))
            .send()
            .await?
            .error_for_status()?;
    }

    let started = Instant::now();
    let deadline = started + Duration::from_secs(options.seconds);
    let shared = load::Shared::default();
    let clients: Vec<_> = (0..options.clients)
        .map(|n| tokio::spawn(load::client(n, ports, deadline, shared.clone())))
        .collect();
    // Chaos: a quarter of the way in, server A dies without warning; two seconds later it
    // comes back on the same port.
    tokio::time::sleep(Duration::from_secs(options.seconds / 4)).await;
    a.kill()?; // SIGKILL
    a.wait()?;
    let killed_at = started.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let restart = Instant::now();
    a = cluster.serve(ports[0]).await?;
    let back_in = restart.elapsed();
    for client in clients {
        client.await?;
    }
    let elapsed = started.elapsed();

    let base = format!("http://127.0.0.1:{}", ports[1]);
    let jobs = verify::settled_jobs(&base, Duration::from_secs(120)).await?;
    cluster::interrupt(&worker)?;
    worker.wait()?;
    let log = std::fs::read_to_string(&worker_log)?;
    let worker_ran: usize = log
        .lines()
        .find_map(|l| {
            l.strip_prefix("worker ran ")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .ok_or_else(|| format!("the worker did not report its jobs: {log}"))?;
    let ledger = std::mem::take(&mut *shared.ledger.lock().map_err(|_| "ledger poisoned")?);
    let findings = verify::check(&base, &ledger, &jobs, worker_ran).await?;
    a.kill()?;
    b.kill()?;
    let _ = (a.wait(), b.wait());

    let mut guard = shared.stats.lock().map_err(|_| "stats poisoned")?;
    let stats = &mut *guard;
    println!(
        "scale-out: 2 servers + 1 worker on PostgreSQL, {} clients for {:.1} s on loopback; server A killed (SIGKILL) at {:.1} s, restarted after 2 s, ready again in {} ms",
        options.clients,
        elapsed.as_secs_f64(),
        killed_at.as_secs_f64(),
        back_in.as_millis()
    );
    println!(
        "| operation | acknowledged | failed | sent to the other server | per second | p50 ms | p95 ms | p99 ms |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (name, op) in [
        ("append", &mut stats.append),
        ("recall", &mut stats.recall),
        ("remember", &mut stats.remember),
        ("ingest (202)", &mut stats.ingest),
    ] {
        op.latencies.sort_unstable();
        println!(
            "| {name} | {} | {} | {} | {:.0} | {:.1} | {:.1} | {:.1} |",
            op.latencies.len(),
            op.failures,
            op.failed_over,
            op.latencies.len() as f64 / elapsed.as_secs_f64(),
            percentile(&op.latencies, 50.0),
            percentile(&op.latencies, 95.0),
            percentile(&op.latencies, 99.0),
        );
    }
    for (name, op) in [
        ("append", &stats.append),
        ("recall", &stats.recall),
        ("remember", &stats.remember),
        ("ingest", &stats.ingest),
    ] {
        for (reason, count) in &op.reasons {
            println!("{name} failed {count} time(s): {reason}");
        }
    }
    println!(
        "checked: {} acknowledged appends among {} stored messages, {} acknowledged memories among {} current, {} acknowledged jobs among {} (worker ran {worker_ran})",
        ledger.appends.len(),
        findings.messages_stored,
        ledger.remembers.len(),
        findings.memories_current,
        ledger.jobs.len(),
        findings.jobs,
    );
    if findings.problems.is_empty() {
        println!("every acknowledged write is present exactly once; no job was lost or ran twice");
        Ok(())
    } else {
        for problem in findings.problems.iter().take(20) {
            println!("PROBLEM: {problem}");
        }
        Err(format!("{} problem(s)", findings.problems.len()).into())
    }
}
