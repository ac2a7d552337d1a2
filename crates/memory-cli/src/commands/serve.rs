//! `memory serve`: the REST API of `memory-server` over this data dir's deployment; and
//! `memory worker`: the ingest jobs of its queue, run by as many workers as are started.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use memory_compose::Deployment;
use memory_server::AppState;

use super::CliError;

/// The deployment of `data_dir` and the services the server reaches (a note on what is off,
/// such as vectors without an embedder, goes to stderr).
async fn compose(
    data_dir: &Path,
    run_jobs: bool,
    mcp_profile: &str,
) -> Result<(Deployment, AppState), CliError> {
    memory_core::validate_profile_name(mcp_profile)?;
    let deployment = Deployment::open(data_dir)?;
    let sessions = Arc::new(deployment.session_manager().await?);
    let (memory, note) = deployment.memory_service().await?;
    if let Some(note) = note {
        eprintln!("note: {note}");
    }
    let state = AppState {
        sessions,
        memory: Arc::new(memory),
        run_jobs,
        mcp_profile: mcp_profile.to_owned(),
    };
    Ok((deployment, state))
}

/// Serves until Ctrl-C (in-flight requests finish; background ingest jobs are resumable).
pub async fn run(
    data_dir: &Path,
    bind: SocketAddr,
    limits: memory_server::Limits,
    run_jobs: bool,
    mcp_profile: &str,
) -> Result<(), CliError> {
    let (deployment, state) = compose(data_dir, run_jobs, mcp_profile).await?;
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let result = memory_server::serve(
        state,
        limits,
        bind,
        |bound| {
            eprintln!(
                "serving http://{bound} (local mode: no API keys, loopback only; OpenAPI at /openapi.json)"
            );
        },
        shutdown,
    )
    .await
    .map_err(|e| CliError::Input(e.to_string()));
    deployment.close().await;
    result
}

/// Runs queued ingest jobs of every profile until Ctrl-C (or, with `once`, until the queue
/// is empty). A stop request lets the job in hand finish and claims no other, so no job is
/// left claimed by a worker that is gone; a worker killed outright leaves its job to the
/// next worker once its lease runs out.
pub async fn worker(data_dir: &Path, poll_ms: u64, once: bool) -> Result<(), CliError> {
    let deployment = Deployment::open(data_dir)?;
    let (memory, note) = deployment.memory_service().await?;
    if let Some(note) = note {
        eprintln!("note: {note}");
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("stopping: the job in hand finishes, no other is claimed");
                stop.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        });
    }
    let mut ran = 0usize;
    let result = loop {
        let mut found = 0usize;
        let profiles = match memory.list_profiles().await {
            Ok(profiles) => profiles,
            Err(e) => break Err(e.into()),
        };
        for profile in profiles {
            if stop.load(std::sync::atomic::Ordering::SeqCst) {
                break;
            }
            match memory.resume_jobs(&profile, false).await {
                Ok(jobs) => found += jobs.len(),
                Err(e) => tracing::warn!(profile, error = %e, "running jobs failed"),
            }
        }
        ran += found;
        if stop.load(std::sync::atomic::Ordering::SeqCst) || (once && found == 0) {
            break Ok(());
        }
        if found == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(poll_ms)).await;
        }
    };
    eprintln!("worker ran {ran} jobs");
    deployment.close().await;
    result
}

/// Serves MCP over stdin/stdout for `profile` until the client closes the pipe. Logs go to
/// stderr (stdout is the protocol's).
pub async fn mcp(data_dir: &Path, profile: &str) -> Result<(), CliError> {
    let (deployment, state) = compose(data_dir, true, profile).await?;
    let result = memory_server::mcp::serve_stdio(state, profile)
        .await
        .map_err(|e| CliError::io("serving MCP on stdio", e));
    deployment.close().await;
    result
}
