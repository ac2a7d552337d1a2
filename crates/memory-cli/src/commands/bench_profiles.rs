//! `memory bench profiles`: many small profiles on one server, as an application with a
//! profile per end user makes them. N profiles get K memories each (`POST
//! /v1/profiles/{p}/memories`) and one recall, from C clients, while the process's resident
//! memory, threads and open files are sampled; then recall on a profile that is open and on
//! profiles that must be reopened, and the profile list. On SQLite (the embedded default) or
//! PostgreSQL (`--postgres`).
//!
//! The server runs in this process beside the load generator (they share its cores and its
//! numbers: threads and files are the server's plus a few of the HTTP client's). LLM-free:
//! memories are stored as given and embedded by the deterministic hashing embedder, whose
//! cost is reported apart (it is microseconds, where a local model's is milliseconds).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use memory_compose::Deployment;
use memory_core::ports::{Embedder, SystemClock};
use memory_engine::long_term::MemoryService;
use memory_hashing::HashingEmbedder;
use memory_server::AppState;
use serde_json::json;

use super::CliError;
use super::bench::{Latency, latency};
use super::bench_serve::InProcessServer;

/// What `memory bench profiles` runs.
pub struct ProfilesBench {
    /// Profiles made.
    pub profiles: usize,
    /// Memories remembered in each.
    pub memories: usize,
    /// Concurrent clients.
    pub clients: usize,
    /// `[storage] open_profiles` (SQLite and Tantivy profile files open at once).
    pub open_profiles: usize,
    /// On PostgreSQL (`MEMORY_POSTGRES_URL`) instead of the embedded default.
    pub postgres: bool,
}

/// The process's resident memory (MB), threads and open files, now (Linux `/proc`).
#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    rss_mb: f64,
    threads: usize,
    files: usize,
}

impl Usage {
    fn now() -> Self {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let rss_kb: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        let count = |dir: &str| std::fs::read_dir(dir).map_or(0, |d| d.count());
        Self {
            rss_mb: rss_kb / 1024.0,
            threads: count("/proc/self/task"),
            files: count("/proc/self/fd"),
        }
    }

    fn max(self, other: Self) -> Self {
        Self {
            rss_mb: self.rss_mb.max(other.rss_mb),
            threads: self.threads.max(other.threads),
            files: self.files.max(other.files),
        }
    }
}

/// Bytes the files under `dir` take on disk (allocated blocks, as `du` counts).
fn disk_bytes(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(m) if m.is_dir() => disk_bytes(&entry.path()),
            Ok(m) => m.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}

fn profile_name(i: usize) -> String {
    format!("user-{i:06}")
}

/// The memory a profile is given (about 80 bytes of text).
fn content(profile: usize, m: usize) -> String {
    format!("User {profile} noted fact number {m}: prefers tea number {m} in the afternoon.")
}

/// What the fill phase saw.
#[derive(Default)]
struct Fill {
    remember: Vec<f64>,
    first_recall: Vec<f64>,
    failures: usize,
    statuses: Vec<u16>,
}

/// Runs the benchmark and prints a table.
pub async fn run(bench: ProfilesBench) -> Result<(), CliError> {
    let scratch = tempfile::Builder::new()
        .prefix("memory-bench-profiles-")
        .tempdir()
        .map_err(|e| CliError::io("creating a scratch directory", e))?;
    let schema = format!("bench_profiles_{}", std::process::id());
    let mut config = "[memory]\nembedder = \"none\"\n".to_owned();
    if bench.postgres {
        config = format!("{}\n{config}", memory_config::all_on_postgres(&schema));
    } else {
        config.push_str(&format!(
            "\n[storage]\nopen_profiles = {}\n",
            bench.open_profiles
        ));
    }
    std::fs::write(scratch.path().join("memory.toml"), config)
        .map_err(|e| CliError::io("writing the scratch memory.toml", e))?;
    let deployment = Deployment::open(scratch.path())?;
    let result = measure(&deployment, &bench, scratch.path()).await;
    deployment.close().await;
    if bench.postgres {
        super::bench::drop_scratch_schema(&schema).await?;
    }
    result
}

async fn measure(
    deployment: &Deployment,
    bench: &ProfilesBench,
    dir: &std::path::Path,
) -> Result<(), CliError> {
    let sessions = Arc::new(deployment.session_manager().await?);
    let backends = deployment.long_term_backends().await?;
    let hashing: Arc<dyn Embedder> = Arc::new(HashingEmbedder::new(384));
    let memory = MemoryService::new(backends, Arc::new(SystemClock)).with_embedder(hashing);
    let state = AppState::new(sessions, Arc::new(memory), false, "default");
    let server = InProcessServer::start(state, memory_server::Limits::default()).await?;
    let base = server.base.clone();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(bench.clients * 2)
        .build()
        .map_err(|e| CliError::Input(e.to_string()))?;

    let backend = match bench.postgres {
        true => "PostgreSQL".to_owned(),
        false => format!(
            "the embedded default (SQLite profiles; their text in each profile's FTS5 below {} documents, then Tantivy; open_profiles = {})",
            deployment
                .storage()
                .tantivy
                .as_ref()
                .map_or(0, |t| t.profiles_from_documents),
            bench.open_profiles
        ),
    };
    println!(
        "memory bench profiles on {backend}: {} profiles x {} memories from {} clients; server and load generator in one process",
        bench.profiles, bench.memories, bench.clients
    );
    let at_start = Usage::now();

    // Usage sampled four times a second while the profiles are filled.
    let sampling = Arc::new(std::sync::Mutex::new(at_start));
    let (sample_stop, mut sample_stopped) = tokio::sync::oneshot::channel::<()>();
    let sampler = {
        let sampling = Arc::clone(&sampling);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = &mut sample_stopped => return,
                    () = tokio::time::sleep(Duration::from_millis(250)) => {}
                }
                let mut peak = sampling.lock().unwrap_or_else(|p| p.into_inner());
                *peak = peak.max(Usage::now());
            }
        })
    };

    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let checkpoints = 10usize.min(bench.profiles.max(1));
    let done = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..bench.clients.max(1))
        .map(|_| {
            let (http, base, next, done) = (
                http.clone(),
                base.clone(),
                Arc::clone(&next),
                Arc::clone(&done),
            );
            let (profiles, memories) = (bench.profiles, bench.memories);
            let dir = dir.to_owned();
            tokio::spawn(async move {
                let mut fill = Fill::default();
                loop {
                    let p = next.fetch_add(1, Ordering::Relaxed);
                    if p >= profiles {
                        return fill;
                    }
                    let name = profile_name(p);
                    for m in 0..memories {
                        let body = json!({"content": content(p, m)});
                        let url = format!("{base}/v1/profiles/{name}/memories");
                        match timed(http.post(&url).json(&body)).await {
                            Ok(ms) => fill.remember.push(ms),
                            Err(status) => {
                                fill.failures += 1;
                                fill.statuses.push(status);
                            }
                        }
                    }
                    let body = json!({"query": "what does the user prefer in the afternoon?", "limit": 10});
                    let url = format!("{base}/v1/profiles/{name}/recall");
                    match timed(http.post(&url).json(&body)).await {
                        Ok(ms) => fill.first_recall.push(ms),
                        Err(status) => {
                            fill.failures += 1;
                            fill.statuses.push(status);
                        }
                    }
                    let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if finished % (profiles / checkpoints).max(1) == 0 {
                        let u = Usage::now();
                        eprintln!(
                            "{finished} profiles, {:.0} s: RSS {:.0} MB, {} threads, {} open files, {:.1} MB on disk",
                            started.elapsed().as_secs_f64(),
                            u.rss_mb,
                            u.threads,
                            u.files,
                            disk_bytes(&dir) as f64 / 1e6
                        );
                    }
                }
            })
        })
        .collect();
    let mut fill = Fill::default();
    for task in tasks {
        let part = task
            .await
            .map_err(|e| CliError::Input(format!("a client failed: {e}")))?;
        fill.remember.extend(part.remember);
        fill.first_recall.extend(part.first_recall);
        fill.failures += part.failures;
        fill.statuses.extend(part.statuses);
    }
    let fill_seconds = started.elapsed().as_secs_f64();
    let _ = sample_stop.send(());
    let _ = sampler.await;
    let peak = *sampling.lock().unwrap_or_else(|p| p.into_inner());
    let after_fill = Usage::now();

    // Recall on a profile that is open (the last one filled, recalled again and again), and on
    // profiles that are not (the first ones filled, each recalled once: each is reopened).
    let query = json!({"query": "what does the user prefer in the afternoon?", "limit": 10});
    let last = profile_name(bench.profiles.saturating_sub(1));
    let samples = 200usize;
    let mut open_recall = Vec::new();
    for _ in 0..samples {
        let url = format!("{base}/v1/profiles/{last}/recall");
        if let Ok(ms) = timed(http.post(&url).json(&query)).await {
            open_recall.push(ms);
        }
    }
    let mut reopened_recall = Vec::new();
    for p in 0..samples.min(
        bench
            .profiles
            .saturating_sub(bench.open_profiles + bench.clients),
    ) {
        let url = format!("{base}/v1/profiles/{}/recall", profile_name(p));
        if let Ok(ms) = timed(http.post(&url).json(&query)).await {
            reopened_recall.push(ms);
        }
    }
    let mut list = Vec::new();
    let mut listed = 0usize;
    for _ in 0..5 {
        let t = Instant::now();
        let response = http
            .get(format!("{base}/v1/profiles"))
            .send()
            .await
            .map_err(|e| CliError::Input(format!("GET /v1/profiles: {e}")))?;
        let body: serde_json::Value = response
            .json()
            .await
            .map_err(|e| CliError::Input(format!("GET /v1/profiles: {e}")))?;
        list.push(t.elapsed().as_secs_f64() * 1_000.0);
        listed = body
            .get("profiles")
            .and_then(|p| p.as_array())
            .map_or(0, Vec::len);
    }
    server.stop().await;

    // Disk: the whole data directory and the profiles' part of it, beside what the profiles
    // hold (text, and a 384-dimension float vector per memory).
    let total_disk = disk_bytes(dir);
    let profile_disk = disk_bytes(&dir.join("profiles")) + disk_bytes(&dir.join("tantivy"));
    let text_bytes = (0..bench.memories)
        .map(|m| content(0, m).len() as u64)
        .sum::<u64>();
    let vector_bytes = (bench.memories * 384 * 4) as u64;
    let n = bench.profiles.max(1) as f64;

    println!();
    println!("| what | figure |");
    println!("|---|---|");
    println!(
        "| filled | {} profiles x {} memories in {:.0} s ({:.0} remembers/s) |",
        bench.profiles,
        bench.memories,
        fill_seconds,
        fill.remember.len() as f64 / fill_seconds.max(1e-9)
    );
    let mut statuses = fill.statuses.clone();
    statuses.sort_unstable();
    statuses.dedup();
    println!(
        "| failed requests | {} (statuses {:?}) |",
        fill.failures, statuses
    );
    println!(
        "| RSS, threads, open files at start | {:.0} MB, {}, {} |",
        at_start.rss_mb, at_start.threads, at_start.files
    );
    println!(
        "| peak while filling (sampled every 250 ms) | {:.0} MB, {}, {} |",
        peak.rss_mb, peak.threads, peak.files
    );
    println!(
        "| after filling | {:.0} MB, {}, {} |",
        after_fill.rss_mb, after_fill.threads, after_fill.files
    );
    print_latency("remember (HTTP; hashing embedder)", &fill.remember);
    print_latency("recall, first on each profile", &fill.first_recall);
    print_latency("recall on an open profile", &open_recall);
    print_latency("recall on a profile reopened", &reopened_recall);
    print_latency(&format!("profile list ({listed} names)"), &list);
    println!(
        "| disk, whole data dir | {:.1} MB ({:.0} bytes per profile) |",
        total_disk as f64 / 1e6,
        total_disk as f64 / n
    );
    println!(
        "| disk, profiles (records, vectors, text indexes) | {:.1} MB ({:.0} bytes per profile; its data: {} bytes of text, {} of vectors) |",
        profile_disk as f64 / 1e6,
        profile_disk as f64 / n,
        text_bytes,
        vector_bytes
    );
    if fill.failures > 0 {
        return Err(CliError::Input(format!(
            "{} requests failed while filling",
            fill.failures
        )));
    }
    Ok(())
}

fn print_latency(name: &str, samples: &[f64]) {
    match samples.is_empty() {
        true => println!("| {name} | no sample |"),
        false => {
            let Latency {
                p50_ms,
                p95_ms,
                p99_ms,
            } = latency(samples.to_vec());
            println!(
                "| {name} | p50 {p50_ms:.2} ms, p95 {p95_ms:.2} ms, p99 {p99_ms:.2} ms ({} calls) |",
                samples.len()
            );
        }
    }
}

/// Sends the request; its time in milliseconds, or the status it failed with (0: no answer).
async fn timed(request: reqwest::RequestBuilder) -> Result<f64, u16> {
    let t = Instant::now();
    match request.send().await {
        Ok(r) if r.status().is_success() => {
            let _ = r.bytes().await;
            Ok(t.elapsed().as_secs_f64() * 1_000.0)
        }
        Ok(r) => Err(r.status().as_u16()),
        Err(_) => Err(0),
    }
}
