//! Compaction over HTTP: run it on a branch, and list a session's overlays. Compaction is
//! non-destructive: an overlay replaces a range of messages with a summary at read time,
//! and the originals stay stored.

use axum::extract::Path;
use axum::{Extension, Json};
use memory_core::CompactionRecord;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{ApiResult, ErrorBody};
use crate::sessions::session_id;
use crate::state::AppState;

/// Which branch to compact.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct Compact {
    /// The branch's leaf (the latest leaf by default).
    pub leaf: Option<String>,
}

/// What a compaction did.
#[derive(Debug, Serialize, ToSchema)]
pub struct Compacted {
    /// False when there was nothing to compact (no overlay was written).
    pub compacted: bool,
    /// The first message the new overlay covers.
    pub from_message_id: Option<String>,
    /// The last message it covers.
    pub to_message_id: Option<String>,
    /// The summary that replaces the range at read time.
    pub summary: Option<String>,
    /// The summarizing call's tokens (`input_tokens`, `output_tokens`); `null` when nothing
    /// was compacted.
    #[schema(value_type = Option<Object>)]
    pub usage: Option<memory_core::ports::TokenUsage>,
}

/// Compacts a branch now (the deployment's `[llm]` summarizes; without one this is a 400).
#[utoipa::path(post, path = "/v1/sessions/{id}/compact", tag = "sessions",
    request_body(content = Compact, description = "Optional: the branch's leaf"),
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "The overlay written, or `compacted: false`", body = Compacted),
        (status = 400, description = "No compactor configured, or a bad leaf", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody)))]
pub async fn compact(
    Extension(state): Extension<AppState>,
    Extension(metrics): Extension<crate::Metrics>,
    Path(id): Path<String>,
    body: Option<Json<Compact>>,
) -> ApiResult<Json<Compacted>> {
    let leaf = body.and_then(|Json(b)| b.leaf);
    let session = state.sessions.session(&session_id(&id)?).await?;
    let result = session.compact(leaf.as_deref()).await?;
    if let Some(r) = &result {
        metrics.record_compaction(&r.usage);
    }
    Ok(Json(match result {
        Some(r) => Compacted {
            compacted: true,
            from_message_id: Some(r.from_message_id),
            to_message_id: Some(r.to_message_id),
            summary: Some(r.summary),
            usage: Some(r.usage),
        },
        None => Compacted {
            compacted: false,
            from_message_id: None,
            to_message_id: None,
            summary: None,
            usage: None,
        },
    }))
}

/// One overlay and the overlay that supersedes it, if any.
#[derive(Debug, Serialize, ToSchema)]
pub struct Overlay {
    /// The stored overlay (id, summary, range, time, order).
    #[schema(value_type = Object)]
    pub overlay: CompactionRecord,
    /// The id of a later overlay that covers this one.
    pub superseded_by: Option<String>,
}

/// A session's overlays.
#[derive(Debug, Serialize, ToSchema)]
pub struct Overlays {
    /// In recording order.
    pub compactions: Vec<Overlay>,
}

/// The session's compaction overlays, in recording order.
#[utoipa::path(get, path = "/v1/sessions/{id}/compactions", tag = "sessions",
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "The overlays", body = Overlays),
        (status = 404, description = "No such session", body = ErrorBody)))]
pub async fn compactions(
    Extension(state): Extension<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<Overlays>> {
    let session = state.sessions.session(&session_id(&id)?).await?;
    let compactions = session
        .compactions()
        .await?
        .into_iter()
        .map(|(overlay, superseded_by)| Overlay {
            overlay,
            superseded_by,
        })
        .collect();
    Ok(Json(Overlays { compactions }))
}
