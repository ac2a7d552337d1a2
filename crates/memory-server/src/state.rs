use std::sync::Arc;

use memory_engine::SessionManager;
use memory_engine::long_term::MemoryService;
use memory_engine::profile_link::JobRunner;

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
    /// What the deployment is made of (`GET /v1/about`, the inspector's health view).
    pub about: Arc<About>,
}

/// What a deployment is made of: the backend of each storage role, the models, and what
/// is off or not durable. The binary that composes the deployment fills it in.
#[derive(Debug, Clone, Default, serde::Serialize, utoipa::ToSchema)]
pub struct About {
    /// The backend serving each storage role (`records`, `sessions`, `text`, `vectors`,
    /// `jobs`, `kv`, `blobs`); empty when the composing binary did not say.
    pub roles: std::collections::BTreeMap<String, String>,
    /// The embedder (`local`, `openai`, `none`).
    pub embedder: Option<String>,
    /// The chat model for compaction, extraction and answers (`null` without `[llm]`).
    pub llm_model: Option<String>,
    /// What is off or weaker than it could be, in sentences.
    pub warnings: Vec<String>,
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
        let jobs = tokio_util::task::TaskTracker::new();
        // History that sessions ship to their profiles (at compaction, at their end) is
        // extracted here too, tracked like the jobs the ingest route starts.
        let sessions = if run_jobs {
            Arc::new(
                (*sessions)
                    .clone()
                    .with_job_runner(Arc::new(TrackedJobs { jobs: jobs.clone() })),
            )
        } else {
            sessions
        };
        Self {
            sessions,
            memory,
            run_jobs,
            mcp_profile: mcp_profile.into(),
            jobs,
            about: Arc::new(About::default()),
        }
    }

    /// The same state, describing its deployment with `about`.
    pub fn with_about(mut self, about: About) -> Self {
        self.about = Arc::new(about);
        self
    }

    /// Graceful shutdown of background jobs: claims no more, gives the ones in hand back
    /// to the queue at their next stage boundary, and waits for them to do so.
    pub async fn stop_jobs(&self) {
        self.memory.stop_jobs();
        self.jobs.close();
        self.jobs.wait().await;
    }
}

/// Runs shipped ingest jobs as tasks of the server's tracker (a graceful shutdown waits for
/// them to give their jobs back to the queue).
struct TrackedJobs {
    jobs: tokio_util::task::TaskTracker,
}

impl JobRunner for TrackedJobs {
    fn run(&self, memory: &MemoryService, profile: &str, job_id: &str) {
        let (memory, profile, id) = (memory.clone(), profile.to_owned(), job_id.to_owned());
        self.jobs.spawn(async move {
            match memory.run_job(&profile, &id).await {
                Ok(job) => tracing::info!(profile, job = %id, status = job.status.as_str(), "shipped history ingested"),
                // Another runner (the background poll, a worker) claimed it first.
                Err(memory_core::MemoryError::Conflict { .. }) => {
                    tracing::debug!(profile, job = %id, "shipped history's ingest job is run elsewhere")
                }
                Err(e) => tracing::warn!(profile, job = %id, error = %e, "shipped history's ingest job failed"),
            }
        });
    }
}
