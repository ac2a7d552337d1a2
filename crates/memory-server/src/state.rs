use std::sync::Arc;

use memory_engine::SessionManager;
use memory_engine::long_term::MemoryService;

/// What every handler reaches: the engine's services over the deployment's backends. The
/// server keeps no state of its own between requests, so any number of servers can share
/// one set of backends.
#[derive(Clone)]
pub struct AppState {
    /// Sessions, their messages and search.
    pub sessions: Arc<SessionManager>,
    /// Long-term memory profiles.
    pub memory: Arc<MemoryService>,
    /// Run each accepted ingest job in this process (else `memory worker` processes claim
    /// them from the queue).
    pub run_jobs: bool,
    /// The long-term profile the MCP endpoint (`/mcp`) reads and writes (a connection may
    /// name another with `?profile=`).
    pub mcp_profile: String,
    /// The ingest jobs this process runs in the background (a graceful shutdown stops the
    /// memory service's jobs and waits for these to give theirs back).
    pub jobs: tokio_util::task::TaskTracker,
}

impl AppState {
    /// The services of one deployment (or one tenant of it), running accepted ingest jobs
    /// in this process when `run_jobs`.
    pub fn new(
        sessions: Arc<SessionManager>,
        memory: Arc<MemoryService>,
        run_jobs: bool,
        mcp_profile: impl Into<String>,
    ) -> Self {
        Self {
            sessions,
            memory,
            run_jobs,
            mcp_profile: mcp_profile.into(),
            jobs: tokio_util::task::TaskTracker::new(),
        }
    }

    /// Graceful shutdown of background jobs: claims no more, gives the ones in hand back
    /// to the queue at their next stage boundary, and waits for them to do so.
    pub async fn stop_jobs(&self) {
        self.memory.stop_jobs();
        self.jobs.close();
        self.jobs.wait().await;
    }
}
