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
