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

use std::path::PathBuf;
use std::time::{Duration, Instant};

use scale_out::cluster::{self, Cluster, Error};
use scale_out::{load, verify};

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
        env: Vec::new(),
        serve_args: Vec::new(),
    };
    let ports = [cluster::free_port()?, cluster::free_port()?];
    let mut a = cluster.serve(ports[0]).await?;
    let mut b = cluster.serve(ports[1]).await?;
    let worker_log = dir.join("worker.log");
    let mut worker = cluster.worker(&worker_log)?;
    cluster::create_sessions(ports, None).await?;

    let started = Instant::now();
    let deadline = started + Duration::from_secs(options.seconds);
    let shared = load::Shared::default();
    let clients: Vec<_> = (0..options.clients)
        .map(|n| {
            tokio::spawn(load::client(
                n,
                load::Plan::new(ports, deadline),
                shared.clone(),
            ))
        })
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
    let worker_ran = cluster::worker_runs(&worker_log)?;
    let ledger = std::mem::take(&mut *shared.ledger.lock().map_err(|_| "ledger poisoned")?);
    let findings = verify::check(&base, &ledger, &jobs, Some(worker_ran)).await?;
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
    scale_out::report::operations(stats, elapsed, false);
    println!(
        "checked: {} (worker ran {worker_ran})",
        scale_out::report::checked(&ledger, &findings)
    );
    scale_out::report::verdict(
        &findings.problems,
        "every acknowledged write is present exactly once; no job was lost or ran twice",
    )
}
