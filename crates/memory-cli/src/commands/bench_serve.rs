//! `memory bench serve`: the REST API under load, on SQLite (or PostgreSQL with
//! `--postgres`): requests per second and p50/p95/p99 of append, history, search, recall and
//! remember over many sessions and a large profile, beside the same calls made on the engine
//! directly in the same run (the HTTP layer's cost is the ratio).
//!
//! The server runs in this process and the load generator beside it, on the same machine
//! (they share its cores). LLM-free: no model is configured; recall's vector channels use
//! the deterministic 384-dimension hashing embedder, so the numbers are the server's and
//! the pipeline's own cost, without a local model's query embedding.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use memory_compose::Deployment;
use memory_core::ports::{Embedder, SystemClock};
use memory_core::{NewSession, Parent, Part, Role, SearchQuery, SessionId, UiMessage};
use memory_engine::long_term::{MemoryService, RecallRequest, RememberRequest};
use memory_hashing::HashingEmbedder;
use memory_server::AppState;
use serde_json::{Value, json};

use super::CliError;
use super::bench::{Latency, Words, latency, seed_memories};

/// What `memory bench serve` runs.
pub struct ServeBench {
    /// Sessions seeded (ten messages each).
    pub sessions: usize,
    /// Memories seeded in the profile recalled from.
    pub memories: usize,
    /// Seconds per closed-loop phase and for the fixed-rate recall.
    pub seconds: u64,
    /// Concurrent clients in the closed-loop phases.
    pub clients: usize,
    /// Recall requests per second of each fixed-rate phase.
    pub recall_rates: Vec<u32>,
    /// On PostgreSQL (`MEMORY_POSTGRES_URL`) instead of SQLite.
    pub postgres: bool,
    /// SQLite: concurrent single appends share transactions.
    pub group_commit: bool,
    /// SQLite: vector searches scan exactly instead of through the approximate graph.
    pub exact_vectors: bool,
    /// SQLite: `[storage] text` (`sqlite` or `tantivy`), when not the default.
    pub text: Option<String>,
    /// SQLite: `[storage] session_text`, when not the default.
    pub session_text: Option<String>,
    /// SQLite: `[storage] profile_text`, when not the default.
    pub profile_text: Option<String>,
    /// Tantivy held by one process (`[storage.tantivy] shared = false`), not shared.
    pub tantivy_unshared: bool,
}

const PROFILE: &str = "bench";
const MESSAGES_PER_SESSION: usize = 10;

/// One phase's numbers.
struct Phase {
    name: String,
    requests: usize,
    failures: usize,
    seconds: f64,
    latency: Option<Latency>,
}

impl Phase {
    fn print(&self) {
        let rate = self.requests as f64 / self.seconds;
        match self.latency {
            Some(l) => println!(
                "| {} | {:.0} | {:.2} | {:.2} | {:.2} | {} |",
                self.name, rate, l.p50_ms, l.p95_ms, l.p99_ms, self.failures
            ),
            None => println!("| {} | 0 | - | - | - | {} |", self.name, self.failures),
        }
    }
}

/// Where the full-text indexes are, for the report's first line.
fn text_on(storage: &memory_config::StorageConfig) -> String {
    let name = |backend: memory_config::Backend| match backend {
        memory_config::Backend::Sqlite => "FTS5",
        memory_config::Backend::Tantivy => {
            match storage.tantivy.as_ref().is_some_and(|t| t.shared) {
                true => "Tantivy (shared)",
                false => "Tantivy (one process)",
            }
        }
        _ => "another backend",
    };
    format!(
        "profiles {}, session messages {}, blocks {}",
        name(storage.profile_text),
        name(storage.session_text),
        name(storage.text)
    )
}

/// A memory a caller remembers (LLM-free: stored as given, a fact).
fn remembered(tag: &str) -> RememberRequest {
    RememberRequest {
        content: format!("The user noted ({tag}) that the spare key is under the blue pot."),
        ..RememberRequest::default()
    }
}

fn message(id: &str, text: &str) -> UiMessage {
    UiMessage::new(id, Role::User, vec![Part::text(text)])
}

/// Runs the benchmark and prints a table.
pub async fn run(bench: ServeBench) -> Result<(), CliError> {
    let scratch = tempfile::Builder::new()
        .prefix("memory-bench-serve-")
        .tempdir()
        .map_err(|e| CliError::io("creating a scratch directory", e))?;
    let schema = format!("bench_serve_{}", std::process::id());
    let mut config = "[memory]\nembedder = \"none\"\n".to_owned();
    if bench.postgres {
        config = format!("{}\n{config}", memory_config::all_on_postgres(&schema));
    } else {
        config.push_str("\n[storage]\n");
        for (role, backend) in [
            ("text", &bench.text),
            ("session_text", &bench.session_text),
            ("profile_text", &bench.profile_text),
        ] {
            if let Some(backend) = backend {
                config.push_str(&format!("{role} = \"{backend}\"\n"));
            }
        }
        if bench.tantivy_unshared {
            config.push_str("\n[storage.tantivy]\nshared = false\n");
        }
        config.push_str(&format!(
            "\n[storage.sqlite]\ngroup_commit = {}\nexact_vectors = {}\n",
            bench.group_commit, bench.exact_vectors
        ));
    }
    std::fs::write(scratch.path().join("memory.toml"), config)
        .map_err(|e| CliError::io("writing the scratch memory.toml", e))?;
    let deployment = Deployment::open(scratch.path())?;
    let result = measure(&deployment, &bench).await;
    deployment.close().await;
    if bench.postgres {
        super::bench::drop_scratch_schema(&schema).await?;
    }
    result
}

async fn measure(deployment: &Deployment, bench: &ServeBench) -> Result<(), CliError> {
    let sessions = Arc::new(deployment.session_manager().await?);
    let backends = deployment.long_term_backends().await?;
    let hashing: Arc<dyn Embedder> = Arc::new(HashingEmbedder::new(384));
    let memory = MemoryService::new(backends.clone(), Arc::new(SystemClock))
        .with_embedder(Arc::clone(&hashing));
    let mut words = Words::new(7, 20_000);

    // Seed: sessions of ten messages, and a large profile.
    let started = Instant::now();
    for s in 0..bench.sessions {
        let id = SessionId::new(format!("s{s}"))?;
        sessions
            .create(NewSession {
                id: Some(id.clone()),
                ..NewSession::default()
            })
            .await?;
        let batch = (0..MESSAGES_PER_SESSION)
            .map(|m| message(&format!("m{m}"), &words.sentence(14)))
            .collect();
        sessions.append_all(&id, batch, Parent::LatestLeaf).await?;
    }
    let seed_sessions = started.elapsed();
    let started = Instant::now();
    seed_memories(&backends, &hashing, PROFILE, bench.memories, &mut words).await?;
    // The seeded records were written beside the engine: an index the engine writes is
    // rebuilt from them (one the store writes is in step already).
    let report = backends.reindex(PROFILE).await?;
    if report.rebuilt && report.documents < bench.memories as u64 {
        return Err(CliError::Input(format!(
            "the Tantivy index was rebuilt with {} documents; the profile holds {}",
            report.documents, bench.memories
        )));
    }
    // The approximate graphs (SQLite) are built before anything is timed.
    deployment.prepare_vectors(PROFILE).await?;
    let seed_memories_took = started.elapsed();
    let backend = if bench.postgres {
        "PostgreSQL".to_owned()
    } else {
        format!(
            "SQLite (group commit {}, vectors {}, text: {})",
            if bench.group_commit { "on" } else { "off" },
            if bench.exact_vectors {
                "exact"
            } else {
                "approximate"
            },
            text_on(deployment.storage())
        )
    };
    println!(
        "memory bench serve on {backend}: {} sessions ({} messages, seeded in {:.0} s), {} memories (seeded in {:.0} s); server and load generator in one process on this machine",
        bench.sessions,
        bench.sessions * MESSAGES_PER_SESSION,
        seed_sessions.as_secs_f64(),
        bench.memories,
        seed_memories_took.as_secs_f64()
    );

    // The engine directly, the baseline of the same calls without HTTP.
    let queries: Vec<String> = (0..200).map(|_| words.query()).collect();
    let search_words: Vec<String> = (0..200).map(|_| words.sentence(1)).collect();
    memory
        .recall(PROFILE, RecallRequest::new(queries[0].clone(), 10))
        .await?;
    let mut direct = Vec::new();
    {
        let mut samples = Vec::new();
        for q in &queries {
            let t = Instant::now();
            memory
                .recall(PROFILE, RecallRequest::new(q.clone(), 10))
                .await?;
            samples.push(t.elapsed().as_secs_f64() * 1_000.0);
        }
        direct.push(("recall", latency(samples)));
        let mut samples = Vec::new();
        for (i, w) in search_words.iter().enumerate() {
            let session = SessionId::new(format!("s{}", i % bench.sessions.max(1)))?;
            let t = Instant::now();
            sessions
                .search(&SearchQuery::new(w.clone()).in_session(session))
                .await?;
            samples.push(t.elapsed().as_secs_f64() * 1_000.0);
        }
        direct.push(("search (one session)", latency(samples)));
        let mut samples = Vec::new();
        for i in 0..200 {
            let session = SessionId::new(format!("s{}", i % bench.sessions.max(1)))?;
            let t = Instant::now();
            sessions
                .append(
                    &session,
                    message(&format!("direct-{i}"), "a direct append"),
                    Parent::LatestLeaf,
                )
                .await?;
            samples.push(t.elapsed().as_secs_f64() * 1_000.0);
        }
        direct.push(("append", latency(samples)));
        let mut samples = Vec::new();
        for i in 0..200 {
            let t = Instant::now();
            memory
                .remember(PROFILE, remembered(&format!("direct-{i}")))
                .await?;
            samples.push(t.elapsed().as_secs_f64() * 1_000.0);
        }
        direct.push(("remember", latency(samples)));
    }

    // The engine directly under the same concurrency: what HTTP adds under load.
    let seconds = Duration::from_secs(bench.seconds);
    let n_sessions = bench.sessions.max(1);
    let mut engine = Vec::new();
    let appends = Arc::clone(&sessions);
    engine.push(
        closed_loop_calls("append", bench.clients, seconds, move |client, i| {
            let sessions = Arc::clone(&appends);
            async move {
                let s = (client * 7_919 + i * 104_729) % n_sessions;
                let message = message(&format!("e{client}-{i}"), "an appended line");
                sessions
                    .append(
                        &SessionId::new(format!("s{s}"))?,
                        message,
                        Parent::LatestLeaf,
                    )
                    .await?;
                Ok(())
            }
        })
        .await,
    );
    let (recalls, recall_queries) = (memory.clone(), Arc::new(queries.clone()));
    engine.push(
        closed_loop_calls("recall", bench.clients, seconds, move |_, i| {
            let (memory, queries) = (recalls.clone(), Arc::clone(&recall_queries));
            async move {
                let query = queries[i % queries.len()].clone();
                memory
                    .recall(PROFILE, RecallRequest::new(query, 10))
                    .await?;
                Ok(())
            }
        })
        .await,
    );

    let state = AppState::new(sessions, Arc::new(memory), false, "default");
    let limits = memory_server::Limits {
        max_concurrent_requests: 1_024,
        request_timeout: Duration::from_secs(30),
    };
    let server = InProcessServer::start(state, limits).await?;
    let base = server.base.clone();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(bench.clients * 2)
        .build()
        .map_err(|e| CliError::Input(e.to_string()))?;

    // The same calls as the direct baseline, one at a time over HTTP.
    let mut one_client = Vec::new();
    {
        let mut samples = Vec::new();
        for q in &queries {
            let t = Instant::now();
            send(
                &http,
                "POST",
                &format!("{base}/v1/profiles/{PROFILE}/recall"),
                Some(json!({"query": q, "limit": 10})),
            )
            .await?;
            samples.push(t.elapsed().as_secs_f64() * 1_000.0);
        }
        one_client.push(latency(samples));
        let mut samples = Vec::new();
        for (i, w) in search_words.iter().enumerate() {
            let s = i % bench.sessions.max(1);
            let t = Instant::now();
            send(
                &http,
                "GET",
                &format!("{base}/v1/search?q={w}&session=s{s}"),
                None,
            )
            .await?;
            samples.push(t.elapsed().as_secs_f64() * 1_000.0);
        }
        one_client.push(latency(samples));
        let mut samples = Vec::new();
        for i in 0..200 {
            let s = i % bench.sessions.max(1);
            let body = json!({"message": {"id": format!("http-{i}"), "role": "user",
                "parts": [{"type": "text", "text": "an appended line"}]}});
            let t = Instant::now();
            send(
                &http,
                "POST",
                &format!("{base}/v1/sessions/s{s}/messages"),
                Some(body),
            )
            .await?;
            samples.push(t.elapsed().as_secs_f64() * 1_000.0);
        }
        one_client.push(latency(samples));
        let mut samples = Vec::new();
        for i in 0..200 {
            let t = Instant::now();
            send(
                &http,
                "POST",
                &format!("{base}/v1/profiles/{PROFILE}/memories"),
                Some(json!({"content": remembered(&format!("http-{i}")).content})),
            )
            .await?;
            samples.push(t.elapsed().as_secs_f64() * 1_000.0);
        }
        one_client.push(latency(samples));
    }

    // Recall at fixed rates first, on the profile as seeded (the closed loops after it add
    // messages and memories, and a slow remember would still be running into it).
    let mut fixed = Vec::new();
    for rate in &bench.recall_rates {
        fixed.push(fixed_rate_recall(&http, &base, &queries, *rate, seconds).await);
    }
    let mut phases = Vec::new();
    for kind in [
        "append",
        "history",
        "search (one session)",
        "search (all sessions)",
        "recall",
        "remember",
    ] {
        let queries = queries.clone();
        let search_words = search_words.clone();
        let phase = closed_loop(
            kind,
            &http,
            &base,
            bench.clients,
            seconds,
            move |client, i| {
                let s = (client * 7_919 + i * 104_729) % n_sessions;
                match kind {
                    "append" => (
                        "POST",
                        format!("/v1/sessions/s{s}/messages"),
                        Some(
                            json!({"message": {"id": format!("c{client}-{i}"), "role": "user",
                        "parts": [{"type": "text", "text": "an appended line"}]}}),
                        ),
                    ),
                    "history" => ("GET", format!("/v1/sessions/s{s}/history"), None),
                    "search (one session)" => (
                        "GET",
                        format!(
                            "/v1/search?q={}&session=s{s}",
                            search_words[i % search_words.len()]
                        ),
                        None,
                    ),
                    "search (all sessions)" => (
                        "GET",
                        format!(
                            "/v1/search?q={}&limit=10",
                            search_words[i % search_words.len()]
                        ),
                        None,
                    ),
                    "remember" => (
                        "POST",
                        format!("/v1/profiles/{PROFILE}/memories"),
                        Some(json!({"content": remembered(&format!("c{client}-{i}")).content})),
                    ),
                    _ => (
                        "POST",
                        format!("/v1/profiles/{PROFILE}/recall"),
                        Some(json!({"query": queries[i % queries.len()], "limit": 10})),
                    ),
                }
            },
        )
        .await;
        phases.push(phase);
    }

    println!();
    println!(
        "| over HTTP ({} clients, closed loop, {} s each) | requests/s | p50 ms | p95 ms | p99 ms | failed |",
        bench.clients, bench.seconds
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for phase in &phases {
        phase.print();
    }
    for phase in &fixed {
        phase.print();
    }
    println!();
    println!(
        "| on the engine directly ({} callers, closed loop, {} s each) | calls/s | p50 ms | p95 ms | p99 ms | failed |",
        bench.clients, bench.seconds
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for phase in &engine {
        phase.print();
    }
    println!();
    println!(
        "| one caller at a time | engine directly p50 ms | p99 ms | over HTTP p50 ms | p99 ms | HTTP / direct (p50) |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for ((name, d), h) in direct.iter().zip(&one_client) {
        println!(
            "| {name} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2}× |",
            d.p50_ms,
            d.p99_ms,
            h.p50_ms,
            h.p99_ms,
            h.p50_ms / d.p50_ms.max(1e-9)
        );
    }
    server.stop().await;
    Ok(())
}

/// One request that must succeed (the baseline's calls are not load).
async fn send(
    http: &reqwest::Client,
    method: &str,
    url: &str,
    body: Option<Value>,
) -> Result<(), CliError> {
    let builder = if method == "GET" {
        http.get(url)
    } else {
        http.post(url)
    };
    let builder = match body {
        Some(body) => builder.json(&body),
        None => builder,
    };
    let response = builder
        .send()
        .await
        .map_err(|e| CliError::Input(format!("{method} {url}: {e}")))?;
    if !response.status().is_success() {
        return Err(CliError::Input(format!(
            "{method} {url}: {}",
            response.status()
        )));
    }
    let _ = response.bytes().await;
    Ok(())
}

/// `clients` callers, each sending its next request as soon as the last one answered,
/// for `duration`.
async fn closed_loop(
    name: &str,
    http: &reqwest::Client,
    base: &str,
    clients: usize,
    duration: Duration,
    request: impl Fn(usize, usize) -> (&'static str, String, Option<Value>) + Send + Sync + 'static,
) -> Phase {
    let (http, base) = (http.clone(), base.to_owned());
    closed_loop_calls(name, clients, duration, move |client, i| {
        let (method, path, body) = request(client, i);
        let url = format!("{base}{path}");
        let builder = if method == "GET" {
            http.get(&url)
        } else {
            http.post(&url)
        };
        let builder = match body {
            Some(body) => builder.json(&body),
            None => builder,
        };
        async move {
            match builder.send().await {
                Ok(r) if r.status().is_success() => {
                    let _ = r.bytes().await;
                    Ok(())
                }
                Ok(r) => Err(CliError::Input(format!("{method} {url}: {}", r.status()))),
                Err(e) => Err(CliError::Input(format!("{method} {url}: {e}"))),
            }
        }
    })
    .await
}

/// `clients` callers each making its next call as soon as the last one returned, for
/// `duration` (the engine's own calls, or HTTP requests through [`closed_loop`]).
async fn closed_loop_calls<F, Fut>(name: &str, clients: usize, duration: Duration, call: F) -> Phase
where
    F: Fn(usize, usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), CliError>> + Send + 'static,
{
    // Progress on stderr (the tables go to stdout), so a profiler can be pointed at a phase.
    eprintln!(
        "closed loop: {name}, {clients} callers, {} s",
        duration.as_secs()
    );
    let call = Arc::new(call);
    let started = Instant::now();
    let deadline = started + duration;
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            let call = Arc::clone(&call);
            tokio::spawn(async move {
                let (mut samples, mut failures, mut i) = (Vec::new(), 0usize, 0usize);
                while Instant::now() < deadline {
                    let t = Instant::now();
                    match call(client, i).await {
                        Ok(()) => samples.push(t.elapsed().as_secs_f64() * 1_000.0),
                        Err(_) => failures += 1,
                    }
                    i += 1;
                }
                (samples, failures)
            })
        })
        .collect();
    let (mut samples, mut failures) = (Vec::new(), 0);
    for task in tasks {
        if let Ok((s, f)) = task.await {
            samples.extend(s);
            failures += f;
        }
    }
    Phase {
        name: name.to_owned(),
        requests: samples.len(),
        failures,
        seconds: started.elapsed().as_secs_f64(),
        latency: (!samples.is_empty()).then(|| latency(samples)),
    }
}

/// Recall at a fixed rate (open loop): each request is due at its slot and its latency
/// counts from the slot, so a slow server cannot hide its queue (no coordinated omission).
async fn fixed_rate_recall(
    http: &reqwest::Client,
    base: &str,
    queries: &[String],
    rate: u32,
    duration: Duration,
) -> Phase {
    let interval = Duration::from_secs_f64(1.0 / f64::from(rate.max(1)));
    let total = (duration.as_secs_f64() * f64::from(rate)) as usize;
    let started = tokio::time::Instant::now();
    let mut tasks = Vec::with_capacity(total);
    for i in 0..total {
        let due = started + interval * u32::try_from(i).unwrap_or(u32::MAX);
        tokio::time::sleep_until(due).await;
        let (http, url) = (http.clone(), format!("{base}/v1/profiles/{PROFILE}/recall"));
        let body = json!({"query": queries[i % queries.len()], "limit": 10});
        tasks.push(tokio::spawn(async move {
            match http.post(&url).json(&body).send().await {
                Ok(r) if r.status().is_success() => {
                    let _ = r.bytes().await;
                    Some(due.elapsed().as_secs_f64() * 1_000.0)
                }
                _ => None,
            }
        }));
    }
    let (mut samples, mut failures) = (Vec::new(), 0);
    for task in tasks {
        match task.await {
            Ok(Some(ms)) => samples.push(ms),
            _ => failures += 1,
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    Phase {
        name: format!("recall at a fixed {rate}/s (open loop)"),
        requests: samples.len(),
        failures,
        seconds,
        latency: (!samples.is_empty()).then(|| latency(samples)),
    }
}

/// `memory-server` on a free loopback port in this process, beside a load generator.
pub(super) struct InProcessServer {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), memory_server::ServeError>>,
}

impl InProcessServer {
    /// Serves `state` within `limits` until [`InProcessServer::stop`].
    pub(super) async fn start(
        state: AppState,
        limits: memory_server::Limits,
    ) -> Result<Self, CliError> {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (bound_tx, bound_rx) = tokio::sync::oneshot::channel::<SocketAddr>();
        let task = tokio::spawn(memory_server::serve(
            state,
            limits,
            SocketAddr::from(([127, 0, 0, 1], 0)),
            move |address| {
                let _ = bound_tx.send(address);
            },
            async move {
                let _ = stopped.await;
            },
        ));
        let address = bound_rx
            .await
            .map_err(|_| CliError::Input("the server did not start".into()))?;
        Ok(Self {
            base: format!("http://{address}"),
            stop,
            task,
        })
    }

    /// Stops the server and waits for it.
    pub(super) async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}
