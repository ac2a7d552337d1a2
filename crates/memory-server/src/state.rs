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
    /// The long-term profile the MCP endpoint (`/mcp`) reads and writes.
    pub mcp_profile: String,
}
