//! Long-term memory profiles: ingest (answered at once with a job), job status, remember,
//! recall, list and forget.

use axum::Extension;
use axum::Json;
use axum::extract::{Path, Query};
use axum::http::StatusCode;
use memory_core::ports::{MemoryFilter, MemoryKind, MemoryPage, MemoryRecord};
use memory_core::{SessionId, Timestamp};
use memory_engine::long_term::{
    IngestJob, IngestMessage, RecallRequest, RecallResponse, RememberRequest,
};
use memory_engine::profile_link::ShipSelection;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::metrics::Metrics;
use crate::schemas;
use crate::state::AppState;

/// A memory to remember.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Remember {
    /// The memory text.
    pub content: String,
    /// `fact`, `event`, `instruction` or `task` (a fact unless given).
    pub kind: Option<String>,
    /// Topic key: a new memory with the same kind and key supersedes the current one.
    pub key: Option<String>,
    /// The session it came from.
    pub session_id: Option<String>,
    /// Your own metadata: a flat object of strings, numbers, booleans and lists of strings
    /// (at most 32 keys, 8 KiB as JSON).
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
    /// When it stops being current (RFC 3339, or milliseconds since the epoch; in the
    /// future): from then on it is hidden from recall and lists like a forgotten memory.
    /// Default: its kind's lifetime in `[memory.lifetimes]`, if any.
    #[schema(value_type = Option<String>)]
    pub expires_at: Option<serde_json::Value>,
}

/// An expiry as given (RFC 3339 or epoch milliseconds), read.
pub(crate) fn expiry(raw: serde_json::Value) -> Result<Timestamp, String> {
    memory_engine::long_term::parse_message_time(&raw).ok_or_else(|| {
        format!("expires_at {raw} is neither an RFC 3339 time nor epoch milliseconds")
    })
}

/// The metadata of a request body, checked (none when absent).
pub(crate) fn metadata(
    raw: Option<serde_json::Map<String, serde_json::Value>>,
) -> ApiResult<memory_core::Metadata> {
    Ok(raw
        .map(memory_core::Metadata::from_json)
        .transpose()?
        .unwrap_or_default())
}

fn kind(raw: Option<String>) -> ApiResult<Option<MemoryKind>> {
    raw.map(|k| {
        MemoryKind::parse(&k).ok_or_else(|| ApiError::invalid(format!("unknown memory kind {k:?}")))
    })
    .transpose()
}

/// Stores a memory now (no LLM in the path), superseding the current one of its key.
#[utoipa::path(post, path = "/v1/profiles/{profile}/memories", tag = "long-term",
    request_body = Remember,
    params(("profile" = String, Path, description = "Profile name")),
    responses(
        (status = 201, description = "Stored", body = schemas::Memory),
        (status = 400, description = "Invalid input", body = ErrorBody)))]
pub async fn remember(
    Extension(state): Extension<AppState>,
    Path(profile): Path<String>,
    Json(body): Json<Remember>,
) -> ApiResult<(StatusCode, Json<MemoryRecord>)> {
    let request = RememberRequest {
        content: body.content,
        session_id: body.session_id,
        kind: kind(body.kind)?,
        key: body.key,
        metadata: metadata(body.metadata)?,
        expires_at: body
            .expires_at
            .map(expiry)
            .transpose()
            .map_err(ApiError::invalid)?,
    };
    Ok((
        StatusCode::CREATED,
        Json(state.memory.remember(&profile, request).await?),
    ))
}

/// Filters and a page of memories.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Only this kind.
    pub kind: Option<String>,
    /// Only this key.
    pub key: Option<String>,
    /// Only this session.
    pub session: Option<String>,
    /// Include superseded and forgotten memories.
    pub all: Option<bool>,
    /// Only memories recorded at or after this time (milliseconds since the epoch).
    pub since: Option<i64>,
    /// Only memories recorded before this time (milliseconds since the epoch).
    pub until: Option<i64>,
    /// Only memories whose metadata satisfies this filter, as JSON: `{"project": "atlas",
    /// "priority": {"$gte": 2}}` (operators `$eq`, `$in`, `$gt`, `$gte`, `$lt`, `$lte`,
    /// `$exists`, combined with `$and`, `$or`, `$not`).
    pub metadata: Option<String>,
    /// The cursor of the previous page.
    pub cursor: Option<String>,
    /// At most this many (default 50, at most 1,000).
    pub limit: Option<usize>,
}

/// Memories in the order they were recorded, a page at a time.
#[utoipa::path(get, path = "/v1/profiles/{profile}/memories", tag = "long-term",
    params(("profile" = String, Path, description = "Profile name"), ListParams),
    responses(
        (status = 200, description = "A page: `memories` and `next_cursor`", body = Object),
        (status = 404, description = "No such profile", body = ErrorBody)))]
pub async fn list_memories(
    Extension(state): Extension<AppState>,
    Path(profile): Path<String>,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<MemoryPage>> {
    let all = params.all.unwrap_or(false);
    let filter = MemoryFilter {
        kind: kind(params.kind)?,
        key: params.key,
        session_id: params.session,
        from: params.since.map(memory_core::Timestamp),
        to: params.until.map(memory_core::Timestamp),
        include_superseded: all,
        include_forgotten: all,
        metadata: params
            .metadata
            .as_deref()
            .map(memory_core::MetadataFilter::parse)
            .transpose()?,
        current_at: None,
    };
    let limit = crate::sessions::page_limit(params.limit)?;
    Ok(Json(
        state
            .memory
            .list(&profile, &filter, params.cursor, limit)
            .await?,
    ))
}

/// Why a memory is forgotten.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ForgetParams {
    /// The reason, kept for audit.
    pub reason: Option<String>,
}

/// Forgets a memory: it leaves recall and lists, and is kept for audit (purge erases).
#[utoipa::path(delete, path = "/v1/profiles/{profile}/memories/{id}", tag = "long-term",
    params(("profile" = String, Path, description = "Profile name"),
           ("id" = String, Path, description = "Memory id"), ForgetParams),
    responses(
        (status = 204, description = "Forgotten"),
        (status = 404, description = "No such profile or memory", body = ErrorBody)))]
pub async fn forget(
    Extension(state): Extension<AppState>,
    Path((profile, id)): Path<(String, String)>,
    Query(params): Query<ForgetParams>,
) -> ApiResult<StatusCode> {
    let reason = params
        .reason
        .unwrap_or_else(|| "forgotten over the API".into());
    state.memory.forget(&profile, &id, &reason).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A recall.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Recall {
    /// The question or topic.
    pub query: String,
    /// At most this many items (default 10).
    pub limit: Option<usize>,
    /// Also synthesize a cited answer (needs an LLM).
    pub answer: Option<bool>,
    /// Also say why: each hit's rank and score in every channel, the query's terms, date
    /// facts, the date window the question names and the analysis (default false: hits,
    /// answer and degradations only).
    pub explain: Option<bool>,
    /// Only memories whose metadata satisfies this filter, applied inside every channel:
    /// `{"project": "atlas", "priority": {"$gte": 2}}` (the grammar of the list's
    /// `metadata` parameter). Raw messages, which carry no metadata, come only when the
    /// filter admits an empty object.
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Recalls memories and raw messages over every channel, fused by reciprocal rank.
#[utoipa::path(post, path = "/v1/profiles/{profile}/recall", tag = "long-term",
    request_body = Recall,
    params(("profile" = String, Path, description = "Profile name")),
    responses(
        (status = 200, description = "Hits with their channel ranks", body = schemas::Recall),
        (status = 404, description = "No such profile", body = ErrorBody)))]
pub async fn recall(
    Extension(state): Extension<AppState>,
    Extension(metrics): Extension<Metrics>,
    Path(profile): Path<String>,
    Json(body): Json<Recall>,
) -> ApiResult<Json<RecallResponse>> {
    let mut request = RecallRequest::new(body.query, body.limit.unwrap_or(10));
    if body.answer.unwrap_or(false) {
        request = request.with_answer();
    }
    if let Some(object) = body.metadata {
        let filter = memory_core::MetadataFilter::from_json(&serde_json::Value::Object(object))?;
        request = request.filtered(filter);
    }
    let mut response = state.memory.recall(&profile, request).await?;
    metrics.record_usage(&response.usage);
    if !body.explain.unwrap_or(false) {
        for hit in &mut response.hits {
            hit.ranks.clear();
        }
        response.terms.clear();
        response.temporal_facts.clear();
        response.date_window = None;
        response.analysis = None;
    }
    Ok(Json(response))
}

/// One message of a conversation to ingest.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IngestLine {
    /// `user`, `assistant` or `system`.
    pub role: String,
    /// Text.
    pub content: String,
    /// When it was said (Unix milliseconds); now when absent.
    pub created_at: Option<i64>,
    /// This message's own metadata (its keys win over the request's `metadata`).
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A conversation to ingest: its messages, or none to take them from the stored session
/// `session` (the path to `leaf`, the latest by default, cut to `from`..`to` when given),
/// skipping what was shipped before.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Ingest {
    /// The conversation's id.
    pub session: String,
    /// Its messages, in order; absent to ingest the stored session without re-sending it.
    pub messages: Option<Vec<IngestLine>>,
    /// With a stored session: the leaf whose path to take.
    pub leaf: Option<String>,
    /// With a stored session: the first message of the range.
    pub from: Option<String>,
    /// With a stored session: the last message of the range.
    pub to: Option<String>,
    /// Your own metadata for every message sent (a flat object, as `remember` takes):
    /// stored with each raw message, and carried by each memory extracted from them.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
}

/// An accepted ingest: the job and where to follow it.
#[derive(Debug, Serialize, ToSchema)]
pub struct Accepted {
    /// The job as queued (`null` when a stored session had nothing new to ship).
    #[schema(value_type = Option<Object>)]
    pub job: Option<IngestJob>,
    /// `GET` this for the job's status (`null` without a job).
    pub status_url: Option<String>,
    /// Messages this ingest took from the stored session (only for an ingest by session).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shipped: Option<usize>,
    /// Messages of the stored session the profile had already (only for an ingest by
    /// session).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub already_shipped: Option<usize>,
}

/// Queues a conversation for ingest (raw messages stored now, extraction in the
/// background: in this process, or in `memory worker` processes) and answers at once with
/// the job. Without `messages`, the stored session's messages are taken (those not
/// shipped before), and the answer adds `shipped` and `already_shipped`: 202 when a job was
/// queued, 200 when none was (`job: null` when nothing was new, or the job an identical
/// earlier request queued).
#[utoipa::path(post, path = "/v1/profiles/{profile}/ingest", tag = "long-term",
    request_body = Ingest,
    params(("profile" = String, Path, description = "Profile name")),
    responses(
        (status = 202, description = "Queued", body = Accepted),
        (status = 200, description = "Nothing new to ship from the stored session", body = Accepted),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 400, description = "Invalid input", body = ErrorBody)))]
pub async fn ingest(
    Extension(state): Extension<AppState>,
    Extension(metrics): Extension<Metrics>,
    Path(profile): Path<String>,
    Json(body): Json<Ingest>,
) -> ApiResult<(StatusCode, Json<Accepted>)> {
    let Some(messages) = body.messages else {
        if body.metadata.is_some() {
            return Err(ApiError::invalid(
                "`metadata` is given to the `messages` sent; a stored session is shipped as it is",
            ));
        }
        let selection = ShipSelection {
            leaf: body.leaf,
            from: body.from,
            to: body.to,
        };
        let report = state
            .sessions
            .ship(&profile, &SessionId::new(body.session)?, &selection)
            .await?;
        let status = if report.queued {
            StatusCode::ACCEPTED
        } else {
            StatusCode::OK
        };
        let status_url = report
            .job
            .as_ref()
            .map(|job| format!("/v1/profiles/{profile}/jobs/{}", job.id));
        return Ok((
            status,
            Json(Accepted {
                job: report.job,
                status_url,
                shipped: Some(report.shipped),
                already_shipped: Some(report.already_shipped),
            }),
        ));
    };
    if body.leaf.is_some() || body.from.is_some() || body.to.is_some() {
        return Err(ApiError::invalid(
            "`leaf`, `from` and `to` select messages of a stored session; leave them out when sending `messages`",
        ));
    }
    let shared = body.metadata.unwrap_or_default();
    let messages = messages
        .into_iter()
        .map(|m| {
            let mut own = shared.clone();
            own.extend(m.metadata.unwrap_or_default());
            Ok(IngestMessage {
                role: m.role,
                content: m.content,
                created_at: m.created_at.map(Timestamp),
                metadata: metadata(Some(own))?,
            })
        })
        .collect::<ApiResult<Vec<_>>>()?;
    let job = state
        .memory
        .enqueue_ingest(&profile, &body.session, messages)
        .await?;
    if state.run_jobs {
        let (memory, worker_profile, id) = (state.memory.clone(), profile.clone(), job.id.clone());
        state.jobs.spawn(async move {
            match memory.run_job(&worker_profile, &id).await {
                Ok(job) => metrics.record_usage(&job.usage),
                // Another runner (the background poll, a worker) claimed it first.
                Err(memory_core::MemoryError::Conflict { .. }) => {
                    tracing::debug!(profile = %worker_profile, job = %id, "ingest job is run elsewhere");
                }
                Err(e) => {
                    tracing::warn!(profile = %worker_profile, job = %id, error = %e, "ingest job failed");
                }
            }
        });
    }
    let status_url = format!("/v1/profiles/{profile}/jobs/{}", job.id);
    Ok((
        StatusCode::ACCEPTED,
        Json(Accepted {
            job: Some(job),
            status_url: Some(status_url),
            shipped: None,
            already_shipped: None,
        }),
    ))
}

/// An ingest job's status.
#[utoipa::path(get, path = "/v1/profiles/{profile}/jobs/{id}", tag = "long-term",
    params(("profile" = String, Path, description = "Profile name"),
           ("id" = String, Path, description = "Job id")),
    responses(
        (status = 200, description = "The job", body = schemas::Job),
        (status = 404, description = "No such job", body = ErrorBody)))]
pub async fn get_job(
    Extension(state): Extension<AppState>,
    Path((profile, id)): Path<(String, String)>,
) -> ApiResult<Json<IngestJob>> {
    Ok(Json(state.memory.job(&profile, &id).await?))
}

/// Profile names given at most per page unless `limit` says otherwise.
const PROFILE_PAGE: usize = 1_000;

/// The most profile names one page gives.
const MOST_PROFILES_PER_PAGE: usize = 10_000;

/// Which page of profile names.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProfilesParams {
    /// The names after this one (the `next` of the previous page); from the first without it.
    pub after: Option<String>,
    /// At most this many names (default 1,000; at most 10,000).
    pub limit: Option<usize>,
}

/// One page of profile names.
#[derive(Debug, Serialize, ToSchema)]
pub struct Profiles {
    /// Sorted.
    pub profiles: Vec<String>,
    /// Pass as `after` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// The profiles' names, a page at a time (sorted; follow `next`).
#[utoipa::path(get, path = "/v1/profiles", tag = "long-term",
    params(ProfilesParams),
    responses((status = 200, description = "A page of profiles", body = Profiles)))]
pub async fn list_profiles(
    Extension(state): Extension<AppState>,
    Query(params): Query<ProfilesParams>,
) -> ApiResult<Json<Profiles>> {
    let limit = params
        .limit
        .unwrap_or(PROFILE_PAGE)
        .clamp(1, MOST_PROFILES_PER_PAGE);
    let (profiles, next) = state
        .memory
        .list_profiles_page(params.after.as_deref(), limit)
        .await?;
    Ok(Json(Profiles { profiles, next }))
}

/// Deletes a profile and every trace of it (records, text index, vectors, jobs).
#[utoipa::path(delete, path = "/v1/profiles/{profile}", tag = "long-term",
    params(("profile" = String, Path, description = "Profile name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such profile", body = ErrorBody)))]
pub async fn delete_profile(
    Extension(state): Extension<AppState>,
    Path(profile): Path<String>,
) -> ApiResult<StatusCode> {
    if !state.memory.delete_profile(&profile).await? {
        return Err(memory_core::MemoryError::not_found("profile", profile).into());
    }
    Ok(StatusCode::NO_CONTENT)
}

/// Whether a purge also erases the memory's source messages.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PurgeParams {
    /// Also erase the raw messages it was extracted from.
    pub with_sources: Option<bool>,
}

/// What a purge erased.
#[derive(Debug, Serialize, ToSchema)]
pub struct Purged {
    /// The memory existed and is gone.
    pub memory: bool,
    /// Vectors removed.
    pub vectors: u64,
    /// Source raw messages erased.
    pub raw_messages: u64,
    /// Memories consolidation had merged into it, erased with it.
    pub absorbed: u64,
}

/// Erases a memory (right to erasure): its row, index entries and vectors; the chain it
/// was part of is relinked.
#[utoipa::path(post, path = "/v1/profiles/{profile}/memories/{id}/purge", tag = "long-term",
    params(("profile" = String, Path, description = "Profile name"),
           ("id" = String, Path, description = "Memory id"), PurgeParams),
    responses(
        (status = 200, description = "What was erased", body = Purged),
        (status = 404, description = "No such profile or memory", body = ErrorBody)))]
pub async fn purge(
    Extension(state): Extension<AppState>,
    Path((profile, id)): Path<(String, String)>,
    Query(params): Query<PurgeParams>,
) -> ApiResult<Json<Purged>> {
    let report = state
        .memory
        .purge(&profile, &id, params.with_sources.unwrap_or(false))
        .await?;
    if !report.memory {
        return Err(memory_core::MemoryError::not_found("memory", id).into());
    }
    Ok(Json(Purged {
        memory: report.memory,
        vectors: report.vectors,
        raw_messages: report.raw_messages,
        absorbed: report.absorbed,
    }))
}

/// What `POST /v1/profiles/{profile}/consolidate` does.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct ConsolidateBody {
    /// Only plan: list the merges, write nothing (default false).
    #[serde(default)]
    pub dry_run: bool,
}

/// Merges the profile's memories that say the same thing: each group into one survivor
/// that keeps the union of their sources; the others are superseded by it with the reason,
/// nothing is deleted. Planned LLM-free, confirmed by the LLM when one is configured.
#[utoipa::path(post, path = "/v1/profiles/{profile}/consolidate", tag = "long-term",
    params(("profile" = String, Path, description = "Profile name")),
    request_body(content = ConsolidateBody, description = "`{\"dry_run\": true}` only plans"),
    responses(
        (status = 200, description = "The merges written (or planned), with their reasons", body = crate::schemas::Consolidation),
        (status = 404, description = "No such profile", body = ErrorBody)))]
pub async fn consolidate(
    Extension(state): Extension<AppState>,
    Path(profile): Path<String>,
    body: Option<Json<ConsolidateBody>>,
) -> ApiResult<Json<memory_engine::long_term::ConsolidationReport>> {
    let dry_run = body.map(|Json(b)| b.dry_run).unwrap_or(false);
    Ok(Json(state.memory.consolidate(&profile, dry_run).await?))
}

/// The memories consolidation merged into one.
#[derive(Debug, Serialize, ToSchema)]
pub struct Merged {
    /// Oldest first, each with its `merged` note (reason and time).
    #[schema(value_type = Vec<Object>)]
    pub memories: Vec<memory_core::ports::MemoryRecord>,
}

/// What consolidation merged into a memory, and why.
#[utoipa::path(get, path = "/v1/profiles/{profile}/memories/{id}/merged", tag = "long-term",
    params(("profile" = String, Path, description = "Profile name"),
           ("id" = String, Path, description = "Memory id")),
    responses(
        (status = 200, description = "The memories merged into it", body = Merged),
        (status = 404, description = "No such profile", body = ErrorBody)))]
pub async fn merged(
    Extension(state): Extension<AppState>,
    Path((profile, id)): Path<(String, String)>,
) -> ApiResult<Json<Merged>> {
    Ok(Json(Merged {
        memories: state.memory.merged_into(&profile, &id).await?,
    }))
}

/// The profile's flagged contradictions.
#[derive(Debug, Serialize, ToSchema)]
pub struct Contradictions {
    /// Newest first: pairs of current memories (`first` the older, `second` the newer, each
    /// `{id, content}`) the verification model said cannot both be true, with its `reason`
    /// and `flagged_at`.
    #[schema(value_type = Vec<Object>)]
    pub contradictions: Vec<memory_engine::long_term::Contradiction>,
}

/// Pairs of current memories that contradict each other, flagged by the verification model
/// during consolidation runs; a pair leaves when either memory stops being current.
#[utoipa::path(get, path = "/v1/profiles/{profile}/contradictions", tag = "long-term",
    params(("profile" = String, Path, description = "Profile name")),
    responses(
        (status = 200, description = "The flagged contradictions, newest first", body = Contradictions),
        (status = 404, description = "No such profile", body = ErrorBody)))]
pub async fn contradictions(
    Extension(state): Extension<AppState>,
    Path(profile): Path<String>,
) -> ApiResult<Json<Contradictions>> {
    Ok(Json(Contradictions {
        contradictions: state.memory.contradictions(&profile).await?,
    }))
}

/// `GET /v1/profiles/{profile}/block`'s query.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BlockParams {
    /// The budget in tokens (default: the profile block's, 1,000).
    pub tokens: Option<usize>,
    /// How many of the considered facts and tasks to return with their scores (default 50).
    pub top: Option<usize>,
}

/// What the profile block of a bound session's prompt shows, and why: the text, the
/// instructions, and the best-scored facts and open tasks with their scores and whether
/// each is shown.
#[utoipa::path(get, path = "/v1/profiles/{profile}/block", tag = "long-term",
    params(("profile" = String, Path, description = "Profile name"), BlockParams),
    responses(
        (status = 200, description = "The block and its choice", body = crate::schemas::BlockChoice),
        (status = 404, description = "No such profile", body = ErrorBody)))]
pub async fn block(
    Extension(state): Extension<AppState>,
    Path(profile): Path<String>,
    Query(params): Query<BlockParams>,
) -> ApiResult<Json<memory_engine::profile_link::BlockChoice>> {
    let Some(link) = state.sessions.long_term() else {
        return Err(memory_core::MemoryError::NotSupported {
            operation: "the profile block",
            backend: "a deployment without long-term memory",
        }
        .into());
    };
    let mut choice = link.block_choice(&profile, params.tokens).await?;
    choice.candidates.truncate(params.top.unwrap_or(50));
    Ok(Json(choice))
}

/// A profile's ingest jobs.
#[derive(Debug, Serialize, ToSchema)]
pub struct Jobs {
    /// Oldest first.
    #[schema(value_type = Vec<Object>)]
    pub jobs: Vec<IngestJob>,
}

/// Every ingest job of a profile, oldest first.
#[utoipa::path(get, path = "/v1/profiles/{profile}/jobs", tag = "long-term",
    params(("profile" = String, Path, description = "Profile name")),
    responses((status = 200, description = "The jobs", body = Jobs)))]
pub async fn list_jobs(
    Extension(state): Extension<AppState>,
    Path(profile): Path<String>,
) -> ApiResult<Json<Jobs>> {
    Ok(Json(Jobs {
        jobs: state.memory.jobs(&profile).await?,
    }))
}

/// The profile's digest, if one is kept.
#[derive(Debug, Serialize, ToSchema)]
pub struct Digest {
    /// The digest: its text, the memories it draws on (`sources`), when it was written and
    /// from how many memories (`null` when none is kept).
    #[schema(value_type = Option<Object>)]
    pub digest: Option<memory_engine::long_term::ProfileDigest>,
}

/// The profile's digest: a short summary the LLM wrote from its memories, with the
/// memories it draws on. The profile block shows it when the memories do not fit.
#[utoipa::path(get, path = "/v1/profiles/{profile}/digest", tag = "long-term",
    params(("profile" = String, Path, description = "Profile name")),
    responses(
        (status = 200, description = "The digest (`null` when none is kept)", body = Digest),
        (status = 404, description = "No such profile", body = ErrorBody)))]
pub async fn digest(
    Extension(state): Extension<AppState>,
    Path(profile): Path<String>,
) -> ApiResult<Json<Digest>> {
    if !state.memory.profiles().exists(&profile).await? {
        return Err(memory_core::MemoryError::not_found("profile", profile).into());
    }
    Ok(Json(Digest {
        digest: state.memory.digest(&profile).await?,
    }))
}

/// What `POST /v1/profiles/{profile}/digest` does.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct RefreshDigestBody {
    /// Write it even when it is current (default false: only when enough changed).
    #[serde(default)]
    pub force: bool,
}

/// Writes the profile's digest again when enough has changed (or always, with `force`),
/// as a job; needs an `[llm]` (without one, the report says so).
#[utoipa::path(post, path = "/v1/profiles/{profile}/digest", tag = "long-term",
    params(("profile" = String, Path, description = "Profile name")),
    request_body(content = RefreshDigestBody, description = "`{\"force\": true}` writes it now"),
    responses(
        (status = 200, description = "The digest, whether this call wrote it, and why", body = crate::schemas::DigestReport),
        (status = 404, description = "No such profile", body = ErrorBody)))]
pub async fn refresh_digest(
    Extension(state): Extension<AppState>,
    Path(profile): Path<String>,
    body: Option<Json<RefreshDigestBody>>,
) -> ApiResult<Json<memory_engine::long_term::DigestReport>> {
    let force = body.map(|Json(b)| b.force).unwrap_or(false);
    Ok(Json(state.memory.refresh_digest(&profile, force).await?))
}
