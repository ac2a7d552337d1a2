//! `memory serve`: the REST API of `memory-server` over this data dir's deployment.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use memory_compose::Deployment;
use memory_server::AppState;

use super::CliError;

/// Serves until Ctrl-C (in-flight requests finish; background ingest jobs are resumable).
pub async fn run(
    data_dir: &Path,
    bind: SocketAddr,
    limits: memory_server::Limits,
) -> Result<(), CliError> {
    let deployment = Deployment::open(data_dir)?;
    let sessions = Arc::new(deployment.session_manager().await?);
    let (memory, note) = deployment.memory_service().await?;
    if let Some(note) = note {
        eprintln!("note: {note}");
    }
    let state = AppState {
        sessions,
        memory: Arc::new(memory),
    };
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
