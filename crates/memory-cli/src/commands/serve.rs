//! `memory serve`: the REST API and MCP endpoint of `memory-server` over this data dir's
//! deployment (or, with a keys file, over each tenant's slice of it); `memory worker`: the
//! ingest jobs of the queue(s), run by as many workers as are started; `memory mcp`: the
//! MCP tools on stdio; `memory keys new`: a new API key.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use memory_compose::Deployment;
use memory_config::{ApiKeyEntry, TenantName};
use memory_engine::long_term::MemoryService;
use memory_server::{AppState, RateLimit, Tenants};

use super::CliError;

/// How often `memory serve` (running jobs) and `memory worker` sweep expired memories.
const EXPIRY_SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Profiles one expiry sweep of a deployment looks at, at most: the next ones after where
/// the last sweep stopped, in name order, wrapping around. Reads never wait for a sweep
/// (they leave out what expired by their own clock), so a deployment of 100,000 profiles is
/// swept whole every 100 minutes instead of opening every profile every minute.
const EXPIRY_PROFILES_PER_SWEEP: usize = 1_000;

/// How often `memory serve` (running jobs) and `memory worker` consolidate the profiles
/// that recorded `[memory] consolidate_after` memories since their last run.
const CONSOLIDATION_EVERY: std::time::Duration = std::time::Duration::from_secs(600);

/// The next profiles of a round over the deployment: up to `limit` after `after` in name
/// order, wrapping around; `after` moves to the last one. A round over 100,000 profiles
/// looks at a slice of them each time instead of opening every profile at once.
async fn next_profiles(
    tenant: Option<&TenantName>,
    memory: &MemoryService,
    after: &mut Option<String>,
    limit: usize,
) -> Vec<String> {
    let profiles = match memory.list_profiles().await {
        Ok(profiles) => profiles,
        Err(e) => {
            tracing::warn!(tenant = ?tenant, error = %e, "listing profiles for a background round failed");
            return Vec::new();
        }
    };
    let start = after
        .as_ref()
        .map_or(0, |last| profiles.partition_point(|p| p <= last));
    let (done, next) = profiles.split_at(start.min(profiles.len()));
    let round: Vec<String> = next.iter().chain(done).take(limit).cloned().collect();
    if let Some(last) = round.last() {
        *after = Some(last.clone());
    }
    round
}

/// Runs `work` on each of the next [`EXPIRY_PROFILES_PER_SWEEP`] profiles of a round (see
/// [`next_profiles`]), logging what fails as `what`; returns the sum of what it counted.
async fn each_in_round<F, Fut>(
    tenant: Option<&TenantName>,
    memory: &MemoryService,
    after: &mut Option<String>,
    what: &str,
    work: F,
) -> u64
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = memory_core::Result<u64>>,
{
    let mut done = 0;
    for profile in next_profiles(tenant, memory, after, EXPIRY_PROFILES_PER_SWEEP).await {
        if memory.is_stopping() {
            break;
        }
        match work(profile.clone()).await {
            Ok(n) => done += n,
            Err(e) => tracing::warn!(tenant = ?tenant, profile, error = %e, "{what} failed"),
        }
    }
    done
}

/// The expiry sweep of the next profiles of the round (a job per profile with something
/// due; another process may hold it); returns how many memories expired.
async fn sweep_expired(
    tenant: Option<&TenantName>,
    memory: &MemoryService,
    after: &mut Option<String>,
) -> u64 {
    each_in_round(
        tenant,
        memory,
        after,
        "expiry sweep",
        |profile| async move {
            Ok(memory
                .sweep_expired(&profile)
                .await?
                .map_or(0, |sweep| sweep.expired))
        },
    )
    .await
}

/// The consolidation of the next profiles of the round that recorded enough memories since
/// their last run; returns how many memories were merged.
async fn consolidate_due(
    tenant: Option<&TenantName>,
    memory: &MemoryService,
    after: &mut Option<String>,
) -> u64 {
    each_in_round(
        tenant,
        memory,
        after,
        "consolidation",
        |profile| async move {
            Ok(memory
                .consolidate_if_due(&profile)
                .await?
                .map_or(0, |report| report.absorbed))
        },
    )
    .await
}

/// How often `memory serve` (running jobs) looks for jobs no request is running: those a
/// failed run gave back, a dead worker's whose lease ran out, compaction's shipments.
const JOB_POLL_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Runs every claimable job of each deployment, once, claiming from the queue across
/// profiles (never a look at each profile: a deployment of 100,000 profiles costs one claim
/// per poll when nothing is queued); returns how many ran to an end (failed ones included).
/// A deployment whose jobs fail to claim or run is skipped this round (the job goes back to
/// the queue, as a failed run's does) and its error logged.
async fn run_claimable_jobs(
    memories: &[(Option<TenantName>, Arc<MemoryService>)],
    stopped: &(dyn Fn() -> bool + Sync),
) -> usize {
    let mut found = 0usize;
    for (tenant, memory) in memories {
        if stopped() {
            break;
        }
        let jobs = match memory.resume_queued_jobs().await {
            Ok(jobs) => jobs,
            Err(e) => {
                tracing::warn!(tenant = ?tenant, error = %e, "running queued jobs failed; retried at the next poll");
                continue;
            }
        };
        for (profile, job) in &jobs {
            let spent = job.usage.total();
            tracing::info!(
                tenant = ?tenant,
                profile,
                job = %job.id,
                status = job.status.as_str(),
                llm_calls = spent.calls,
                input_tokens = spent.input_tokens,
                output_tokens = spent.output_tokens,
                "job ran"
            );
        }
        found += jobs.len();
    }
    found
}

/// The background work of `memory serve` when it runs jobs, until jobs stop: every
/// [`JOB_POLL_EVERY`] the claimable jobs, every [`EXPIRY_SWEEP_EVERY`] the expiry sweep,
/// every [`CONSOLIDATION_EVERY`] the consolidation of the profiles due.
fn spawn_background_jobs(memories: Vec<(Option<TenantName>, Arc<MemoryService>)>) {
    tokio::spawn(async move {
        let stopped = || memories.iter().any(|(_, m)| m.is_stopping());
        let mut swept_at = std::time::Instant::now();
        let mut swept_to: Vec<Option<String>> = vec![None; memories.len()];
        let mut consolidated_at = std::time::Instant::now();
        let mut consolidated_to: Vec<Option<String>> = vec![None; memories.len()];
        loop {
            tokio::time::sleep(JOB_POLL_EVERY).await;
            if stopped() {
                break;
            }
            run_claimable_jobs(&memories, &stopped).await;
            if swept_at.elapsed() >= EXPIRY_SWEEP_EVERY {
                swept_at = std::time::Instant::now();
                for ((tenant, memory), after) in memories.iter().zip(&mut swept_to) {
                    sweep_expired(tenant.as_ref(), memory, after).await;
                }
            }
            if consolidated_at.elapsed() >= CONSOLIDATION_EVERY {
                consolidated_at = std::time::Instant::now();
                for ((tenant, memory), after) in memories.iter().zip(&mut consolidated_to) {
                    consolidate_due(tenant.as_ref(), memory, after).await;
                }
            }
        }
    });
}

/// How `memory serve` runs.
pub struct ServeOptions<'a> {
    /// The address to listen on.
    pub bind: SocketAddr,
    /// The server's limits.
    pub limits: memory_server::Limits,
    /// Run accepted ingest jobs in this process.
    pub run_jobs: bool,
    /// The MCP endpoint's default profile.
    pub mcp_profile: &'a str,
    /// The API keys file (keyed mode), if any.
    pub keys: Option<&'a Path>,
    /// The rate of a key that names none.
    pub rate: RateLimit,
}

/// The services of one deployment (a note on what is off, such as vectors without an
/// embedder, goes to stderr once).
async fn services(
    deployment: &Deployment,
    run_jobs: bool,
    mcp_profile: &str,
    quiet: bool,
) -> Result<AppState, CliError> {
    let (sessions, memory, note) = deployment.services().await?;
    let sessions = Arc::new(sessions);
    if let Some(note) = note
        && !quiet
    {
        eprintln!("note: {note}");
    }
    Ok(
        AppState::new(sessions, Arc::new(memory), run_jobs, mcp_profile)
            .with_about(about(deployment)),
    )
}

/// What the deployment is made of, for `GET /v1/about` and the inspector's health view.
fn about(deployment: &Deployment) -> memory_server::About {
    let config = deployment.config();
    let storage = deployment.storage();
    let roles = [
        ("records", storage.records),
        ("sessions", storage.sessions),
        ("text", storage.text),
        ("session_text", storage.session_text),
        ("profile_text", storage.profile_text),
        ("vectors", storage.vectors),
        ("jobs", storage.jobs),
        ("kv", storage.kv),
        ("blobs", storage.blobs),
    ]
    .into_iter()
    .map(|(role, backend)| (role.to_owned(), backend.to_string()))
    .collect::<std::collections::BTreeMap<_, _>>();
    let embedder = config.memory.embedder.to_string();
    let mut warnings = Vec::new();
    if config.llm.is_none() {
        warnings.push(
            "no [llm]: no compaction summaries, no typed memories (raw messages only), no synthesized answers"
                .to_owned(),
        );
    }
    if matches!(config.memory.embedder, memory_config::EmbedderChoice::None) {
        warnings.push("no embedder: recall runs on full text and keys, without vectors".to_owned());
    }
    warnings.extend(deployment.durability_warnings());
    memory_server::About {
        roles,
        embedder: Some(embedder),
        llm_model: config.llm.as_ref().map(|llm| llm.model.clone()),
        warnings,
    }
}

/// The deployments a process serves: the data dir's own (local mode), or one per tenant
/// named in the keys file.
struct Served {
    deployments: Vec<(Option<TenantName>, Deployment)>,
    keys: Option<Vec<ApiKeyEntry>>,
}

impl Served {
    fn open(data_dir: &Path, keys: Option<&Path>) -> Result<Self, CliError> {
        let base = Deployment::open(data_dir)?;
        let Some(path) = keys else {
            return Ok(Self {
                deployments: vec![(None, base)],
                keys: None,
            });
        };
        let keys = memory_config::load_api_keys(path)?;
        if keys.is_empty() {
            return Err(CliError::Input(format!(
                "{} lists no keys; add one with `memory keys new TENANT`",
                path.display()
            )));
        }
        let mut tenants: Vec<TenantName> = keys.iter().map(|k| k.tenant.clone()).collect();
        tenants.sort();
        tenants.dedup();
        let deployments = tenants
            .into_iter()
            .map(|t| {
                // A key may bind the tenant's new sessions to a profile (one per tenant).
                let profile = keys
                    .iter()
                    .filter(|k| k.tenant == t)
                    .find_map(|k| k.profile.clone());
                let deployment = base.for_tenant(&t).with_session_profile(profile);
                (Some(t), deployment)
            })
            .collect();
        Ok(Self {
            deployments,
            keys: Some(keys),
        })
    }

    async fn close(&self) {
        for (_, deployment) in &self.deployments {
            deployment.close().await;
        }
    }
}

/// Serves until Ctrl-C: in-flight requests finish, and ingest jobs running in this process
/// go back to the queue at their next stage boundary.
pub async fn run(data_dir: &Path, options: ServeOptions<'_>) -> Result<(), CliError> {
    memory_core::validate_profile_name(options.mcp_profile)?;
    let served = Served::open(data_dir, options.keys)?;
    let mut states = HashMap::new();
    let mut all = Vec::new();
    let mut sweepers = Vec::new();
    for (i, (tenant, deployment)) in served.deployments.iter().enumerate() {
        let state = services(deployment, options.run_jobs, options.mcp_profile, i > 0).await?;
        sweepers.push((tenant.clone(), Arc::clone(&state.memory)));
        all.push(state.clone());
        states.insert(
            tenant
                .as_ref()
                .map_or("local".to_owned(), ToString::to_string),
            state,
        );
    }
    let tenants = match served.keys.clone() {
        None => all
            .first()
            .cloned()
            .map(Tenants::local)
            .ok_or_else(|| CliError::Input("no deployment".into()))?,
        Some(keys) => Tenants::keyed(keys, &states, options.rate)
            .map_err(|e| CliError::Input(e.to_string()))?,
    };
    if options.run_jobs {
        spawn_background_jobs(sweepers);
    }
    let local = tenants.is_local();
    let tenant_count = states.len();
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let result = memory_server::serve(
        tenants,
        options.limits,
        options.bind,
        |bound| {
            if local {
                eprintln!(
                    "serving http://{bound} (local mode: no API keys, loopback only; OpenAPI at /openapi.json, docs at /docs, MCP at /mcp, inspector at /ui)"
                );
            } else {
                eprintln!(
                    "serving http://{bound} for {tenant_count} tenant(s) (API keys required; OpenAPI at /openapi.json, docs at /docs, MCP at /mcp, inspector at /ui)"
                );
            }
        },
        shutdown,
    )
    .await
    .map_err(|e| CliError::Input(e.to_string()));
    for state in &all {
        state.stop_jobs().await;
    }
    served.close().await;
    result
}

/// Runs queued ingest jobs of every profile (of every tenant, with a keys file), every
/// minute the expiry sweep of each (see `MemoryService::sweep_expired`), and every ten
/// minutes the consolidation of those due (`MemoryService::consolidate_if_due`), until
/// Ctrl-C (or, with `once`, until the queues are empty). A stop request claims no other
/// job and gives the one in hand back to the queue at its next stage boundary, so no job is
/// left claimed by a worker that is gone; a worker killed outright leaves its job to the
/// next worker once its lease runs out.
pub async fn worker(
    data_dir: &Path,
    keys: Option<&Path>,
    poll_ms: u64,
    once: bool,
) -> Result<(), CliError> {
    let served = Served::open(data_dir, keys)?;
    let mut services = Vec::new();
    for (i, (tenant, deployment)) in served.deployments.iter().enumerate() {
        let (memory, note) = deployment.memory_service().await?;
        if let Some(note) = note
            && i == 0
        {
            eprintln!("note: {note}");
        }
        services.push((tenant.clone(), Arc::new(memory)));
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        let memories: Vec<_> = services.iter().map(|(_, m)| Arc::clone(m)).collect();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("stopping: the job in hand goes back to the queue at its next stage");
                stop.store(true, std::sync::atomic::Ordering::SeqCst);
                for memory in &memories {
                    memory.stop_jobs();
                }
            }
        });
    }
    let stopped = || stop.load(std::sync::atomic::Ordering::SeqCst);
    let mut ran = 0usize;
    let mut swept_at: Option<std::time::Instant> = None;
    let mut swept_to: Vec<Option<String>> = vec![None; services.len()];
    let mut consolidated_at: Option<std::time::Instant> = None;
    let mut consolidated_to: Vec<Option<String>> = vec![None; services.len()];
    let result = loop {
        let found = run_claimable_jobs(&services, &stopped).await;
        ran += found;
        if !stopped() && swept_at.is_none_or(|at| at.elapsed() >= EXPIRY_SWEEP_EVERY) {
            swept_at = Some(std::time::Instant::now());
            for ((tenant, memory), after) in services.iter().zip(&mut swept_to) {
                sweep_expired(tenant.as_ref(), memory, after).await;
            }
        }
        if !stopped() && consolidated_at.is_none_or(|at| at.elapsed() >= CONSOLIDATION_EVERY) {
            consolidated_at = Some(std::time::Instant::now());
            for ((tenant, memory), after) in services.iter().zip(&mut consolidated_to) {
                consolidate_due(tenant.as_ref(), memory, after).await;
            }
        }
        if stopped() || (once && found == 0) {
            break Ok(());
        }
        if found == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(poll_ms)).await;
        }
    };
    eprintln!("worker ran {ran} jobs");
    served.close().await;
    result
}

/// Serves MCP over stdin/stdout for `profile` (and `session`'s context blocks) until the
/// client closes the pipe. Logs go to stderr (stdout is the protocol's).
pub async fn mcp(data_dir: &Path, profile: &str, session: Option<String>) -> Result<(), CliError> {
    memory_core::validate_profile_name(profile)?;
    let deployment = Deployment::open(data_dir)?;
    let state = services(&deployment, true, profile, false).await?;
    let result = memory_server::mcp::serve_stdio(state.clone(), profile, session)
        .await
        .map_err(|e| CliError::io("serving MCP on stdio", e));
    state.stop_jobs().await;
    deployment.close().await;
    result
}

/// Prints a new API key for `tenant` and the entry that lets it in (the key itself is
/// never stored: the keys file holds its SHA-256).
pub fn new_key(tenant: &str, label: Option<&str>) -> Result<(), CliError> {
    let tenant = TenantName::new(tenant)?;
    let (key, digest) = memory_server::tenants::new_api_key();
    println!("API key (shown once; give it to the client): {key}");
    println!();
    println!("Add to the keys file (`memory serve --keys FILE`):");
    println!("[[keys]]");
    println!("tenant = \"{tenant}\"");
    println!("sha256 = \"{digest}\"");
    if let Some(label) = label {
        println!("label = {label:?}");
    }
    Ok(())
}
