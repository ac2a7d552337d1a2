//! Export and import as streams of JSON lines (`application/x-ndjson`): a session in the
//! format of `memory_engine::session_transfer`, a profile in the long-term export format.
//! The same lines the CLI writes to files, so a session or profile moves between the CLI and
//! any server.
//!
//! An export streams page by page as the client reads (a slow client pauses the export, it
//! never piles up in memory); a failure after the first bytes ends the stream abruptly, so a
//! client never mistakes a cut export for a whole one. An import validates every line
//! before writing any, so it holds the body in memory: at most [`MAX_IMPORT_BYTES`].

use axum::Extension;
use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use memory_engine::session_transfer::SessionImportReport;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::sessions::session_id;
use crate::state::AppState;

/// The largest import body (the lines are validated together before the first write).
pub const MAX_IMPORT_BYTES: usize = 256 * 1024 * 1024;

/// Messages per page of a session export.
const PAGE: usize = 1_000;

/// Lines buffered between an export and a slow client.
const BUFFERED_LINES: usize = 1_024;

const NDJSON: &str = "application/x-ndjson";

/// A response streaming the lines received on `lines`; an `Err` cuts the stream.
fn ndjson(lines: tokio::sync::mpsc::Receiver<Result<String, std::io::Error>>) -> Response {
    let stream = futures_util::stream::unfold(lines, |mut lines| async move {
        lines.recv().await.map(|line| {
            (
                line.map(|mut l| {
                    l.push('\n');
                    Bytes::from(l)
                }),
                lines,
            )
        })
    });
    ([(header::CONTENT_TYPE, NDJSON)], Body::from_stream(stream)).into_response()
}

/// A session as JSON lines: its record, then every message in insertion order.
#[utoipa::path(get, path = "/v1/sessions/{id}/export", tag = "sessions",
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "The session as JSON lines", content_type = "application/x-ndjson", body = String),
        (status = 404, description = "No such session", body = ErrorBody)))]
pub async fn export_session(
    Extension(state): Extension<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = session_id(&id)?;
    let first = state.sessions.export_page(&id, None, PAGE).await?;
    let (tx, rx) = tokio::sync::mpsc::channel(BUFFERED_LINES);
    tokio::spawn(async move {
        let mut page = first;
        loop {
            for line in page.lines {
                if tx.send(Ok(line)).await.is_err() {
                    return; // the client went away
                }
            }
            let Some(next) = page.next else { return };
            page = match state.sessions.export_page(&id, Some(next), PAGE).await {
                Ok(page) => page,
                Err(e) => {
                    tracing::warn!(session = %id, error = %e, "session export cut short");
                    let _ = tx.send(Err(std::io::Error::other(e))).await;
                    return;
                }
            };
        }
    });
    Ok(ndjson(rx))
}

/// The lines of an import body (UTF-8).
fn body_lines(body: &Bytes) -> ApiResult<Vec<String>> {
    let text = std::str::from_utf8(body)
        .map_err(|e| ApiError::invalid(format!("the body is not UTF-8: {e}")))?;
    Ok(text.lines().map(str::to_owned).collect())
}

/// Imports sessions from JSON lines (an export of this or any deployment). Every line is
/// checked before the first write (nothing is written when one is bad; the error names
/// its line); stored messages are skipped, so importing twice changes nothing.
#[utoipa::path(post, path = "/v1/sessions/import", tag = "sessions",
    request_body(content = String, content_type = "application/x-ndjson", description = "JSON lines of a session export"),
    responses(
        (status = 200, description = "What the import stored", body = SessionImport),
        (status = 400, description = "A bad line (nothing was written)", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody)))]
pub async fn import_sessions(
    Extension(state): Extension<AppState>,
    body: Bytes,
) -> ApiResult<Json<SessionImport>> {
    let lines = body_lines(&body)?;
    state
        .sessions
        .validate_import(lines.iter().cloned().map(Ok))
        .await?;
    let report = state
        .sessions
        .import_lines(lines.into_iter().map(Ok), &mut |_| {})
        .await?;
    Ok(Json(report.into()))
}

/// What a session import stored.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionImport {
    /// Message lines read.
    pub messages: u64,
    /// Messages stored now.
    pub inserted: u64,
    /// Messages that were stored already.
    pub already_present: u64,
    /// Sessions created.
    pub sessions_created: u64,
}

impl From<SessionImportReport> for SessionImport {
    fn from(r: SessionImportReport) -> Self {
        Self {
            messages: r.messages,
            inserted: r.inserted,
            already_present: r.already_present,
            sessions_created: r.sessions_created,
        }
    }
}

/// Whether a profile export carries vectors.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProfileExportParams {
    /// Follow each raw message and memory with its vector (default false).
    pub vectors: Option<bool>,
}

/// A profile as JSON lines: a header, every raw message, every memory (superseded and
/// forgotten ones too), and with `vectors=true` their vectors.
#[utoipa::path(get, path = "/v1/profiles/{profile}/export", tag = "long-term",
    params(("profile" = String, Path, description = "Profile name"), ProfileExportParams),
    responses(
        (status = 200, description = "The profile as JSON lines", content_type = "application/x-ndjson", body = String),
        (status = 404, description = "No such profile", body = ErrorBody)))]
pub async fn export_profile(
    Extension(state): Extension<AppState>,
    Path(profile): Path<String>,
    Query(params): Query<ProfileExportParams>,
) -> ApiResult<Response> {
    let vectors = params.vectors.unwrap_or(false);
    let first = state.memory.export_page(&profile, vectors, None).await?;
    let (tx, rx) = tokio::sync::mpsc::channel(BUFFERED_LINES);
    tokio::spawn(async move {
        let mut page = first;
        loop {
            for line in page.lines {
                if tx.send(Ok(line)).await.is_err() {
                    return; // the client went away
                }
            }
            let Some(next) = page.next else { return };
            page = match state
                .memory
                .export_page(&profile, vectors, Some(next))
                .await
            {
                Ok(page) => page,
                Err(e) => {
                    tracing::warn!(profile, error = %e, "profile export cut short");
                    let _ = tx.send(Err(std::io::Error::other(e))).await;
                    return;
                }
            };
        }
    });
    Ok(ndjson(rx))
}

/// What a profile import stored.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProfileImport {
    /// Raw messages stored.
    pub raw_new: u64,
    /// Raw messages already present.
    pub raw_known: u64,
    /// Memories stored.
    pub memories_new: u64,
    /// Memories already present.
    pub memories_known: u64,
    /// Current versions superseded by a newer one of the same key.
    pub superseded: u64,
    /// Vectors stored.
    pub vectors: u64,
    /// Whether the export's extraction settings became the profile's (it had none).
    pub settings: bool,
}

/// Imports a profile export into `profile` by the rules of live writes (the newest current
/// version of a key stays current). Every line is checked before the first write; known
/// ids are skipped, so importing twice changes nothing.
#[utoipa::path(post, path = "/v1/profiles/{profile}/import", tag = "long-term",
    request_body(content = String, content_type = "application/x-ndjson", description = "JSON lines of a profile export"),
    params(("profile" = String, Path, description = "Profile name")),
    responses(
        (status = 200, description = "What the import stored", body = ProfileImport),
        (status = 400, description = "A bad line (nothing was written)", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody)))]
pub async fn import_profile(
    Extension(state): Extension<AppState>,
    Path(profile): Path<String>,
    body: Bytes,
) -> ApiResult<Json<ProfileImport>> {
    let lines = body_lines(&body)?;
    let r = state.memory.import(&profile, &lines).await?;
    Ok(Json(ProfileImport {
        raw_new: r.raw_new,
        raw_known: r.raw_known,
        memories_new: r.memories_new,
        memories_known: r.memories_known,
        superseded: r.superseded,
        vectors: r.vectors,
        settings: r.settings,
    }))
}

/// The import routes: their bodies may reach [`MAX_IMPORT_BYTES`] (the router gives them a
/// longer time limit than other requests).
pub fn import_routes() -> axum::Router {
    axum::Router::new()
        .route("/v1/sessions/import", axum::routing::post(import_sessions))
        .route(
            "/v1/profiles/{profile}/import",
            axum::routing::post(import_profile),
        )
        .layer(axum::extract::DefaultBodyLimit::max(MAX_IMPORT_BYTES))
}
