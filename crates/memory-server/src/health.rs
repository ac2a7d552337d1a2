use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::ApiResult;
use crate::tenants::Tenants;

/// A liveness or readiness answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok`.
    pub status: &'static str,
}

/// The process is up.
#[utoipa::path(get, path = "/healthz", tag = "health",
    responses((status = 200, description = "The process answers", body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// The backends answer (one read of each tenant's session registry).
#[utoipa::path(get, path = "/readyz", tag = "health",
    responses(
        (status = 200, description = "Ready", body = Health),
        (status = 503, description = "A backend does not answer", body = crate::error::ErrorBody)))]
pub async fn readyz(State(tenants): State<Tenants>) -> ApiResult<Json<Health>> {
    for state in tenants.services() {
        // Public route: the backend's own error (hosts, paths) goes to the log only.
        if let Err(e) = state.sessions.list(1, 0).await {
            tracing::warn!(error = %e, "readiness check failed");
            return Err(crate::error::ApiError::unavailable(
                "unavailable",
                "a backend does not answer",
            ));
        }
    }
    Ok(Json(Health { status: "ok" }))
}

/// The deployment behind this key (or the local one), with `run_jobs` and the MCP profile.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct AboutAnswer {
    /// What the deployment is made of.
    #[serde(flatten)]
    pub about: crate::state::About,
    /// Whether this process runs accepted ingest jobs (else `memory worker` does).
    pub run_jobs: bool,
    /// The profile `/mcp` serves by default.
    pub mcp_profile: String,
}

/// What the deployment is made of: each storage role's backend, the models, warnings.
#[utoipa::path(get, path = "/v1/about", tag = "health",
    responses((status = 200, description = "The deployment", body = AboutAnswer)))]
pub async fn about(
    axum::Extension(state): axum::Extension<crate::state::AppState>,
) -> Json<AboutAnswer> {
    Json(AboutAnswer {
        about: (*state.about).clone(),
        run_jobs: state.run_jobs,
        mcp_profile: state.mcp_profile.clone(),
    })
}
