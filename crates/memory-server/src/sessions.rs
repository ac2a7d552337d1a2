//! Sessions, their messages, history and search.

use axum::Extension;
use axum::Json;
use axum::extract::{Path, Query};
use axum::http::StatusCode;
use memory_core::{
    AppendOutcome, NewSession, Parent, SearchHit, SearchMode, SearchQuery, SessionId, SessionInfo,
    UiMessage,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::schemas;
use crate::state::AppState;

pub(crate) fn session_id(raw: &str) -> ApiResult<SessionId> {
    Ok(SessionId::new(raw)?)
}

/// A session to create; every field is optional (an id is generated when none is given).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSession {
    /// The id (1 to 256 bytes, no control characters); generated when absent.
    pub id: Option<String>,
    /// Display name.
    pub name: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Where it came from.
    pub source: Option<String>,
    /// The session it was forked from.
    pub parent_session_id: Option<String>,
    /// The long-term profile to bind it to (the deployment's `[sessions] profile` when
    /// absent): compaction and the end of the session ship its history there, and its tools
    /// include `recall` and `remember`.
    pub profile: Option<String>,
}

/// Creates a session.
#[utoipa::path(post, path = "/v1/sessions", tag = "sessions", request_body = CreateSession,
    responses(
        (status = 201, description = "Created", body = schemas::Session),
        (status = 400, description = "Invalid input", body = ErrorBody),
        (status = 409, description = "The id is taken", body = ErrorBody)))]
pub async fn create_session(
    Extension(state): Extension<AppState>,
    Json(body): Json<CreateSession>,
) -> ApiResult<(StatusCode, Json<SessionInfo>)> {
    let spec = NewSession {
        id: body.id.as_deref().map(SessionId::new).transpose()?,
        name: body.name,
        parent_session_id: body
            .parent_session_id
            .as_deref()
            .map(SessionId::new)
            .transpose()?,
        model: body.model,
        source: body.source,
        profile: body.profile,
    };
    Ok((
        StatusCode::CREATED,
        Json(state.sessions.create(spec).await?),
    ))
}

/// A page of sessions.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Page {
    /// At most this many (default 50, at most 1,000).
    pub limit: Option<usize>,
    /// Skip this many.
    pub offset: Option<usize>,
}

/// Sessions, most recently updated first.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionList {
    /// The sessions.
    #[schema(value_type = Vec<Object>)]
    pub sessions: Vec<SessionInfo>,
}

/// The largest page any list returns.
pub const MAX_PAGE: usize = 1_000;

/// A page size: 50 by default, refused over [`MAX_PAGE`].
pub(crate) fn page_limit(limit: Option<usize>) -> ApiResult<usize> {
    let limit = limit.unwrap_or(50);
    if limit > MAX_PAGE {
        return Err(ApiError::invalid(format!(
            "limit {limit} is over the maximum of {MAX_PAGE}"
        )));
    }
    Ok(limit)
}

/// Lists sessions, most recently updated first.
#[utoipa::path(get, path = "/v1/sessions", tag = "sessions", params(Page),
    responses((status = 200, description = "A page", body = SessionList)))]
pub async fn list_sessions(
    Extension(state): Extension<AppState>,
    Query(page): Query<Page>,
) -> ApiResult<Json<SessionList>> {
    let limit = page_limit(page.limit)?;
    let sessions = state.sessions.list(limit, page.offset.unwrap_or(0)).await?;
    Ok(Json(SessionList { sessions }))
}

/// One session.
#[utoipa::path(get, path = "/v1/sessions/{id}", tag = "sessions",
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "The session", body = schemas::Session),
        (status = 404, description = "No such session", body = ErrorBody)))]
pub async fn get_session(
    Extension(state): Extension<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<SessionInfo>> {
    let id = session_id(&id)?;
    match state.sessions.get(&id).await? {
        Some(info) => Ok(Json(info)),
        None => Err(memory_core::MemoryError::not_found("session", id.as_str()).into()),
    }
}

/// A change of a session's metadata: a new name, and/or a new profile binding
/// (`"profile": "name"` binds, `"profile": null` unbinds, no `profile` leaves it).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Rename {
    /// The new name.
    pub name: Option<String>,
    /// The profile to bind to, or `null` to unbind.
    #[serde(default, deserialize_with = "memory_core::binding_change")]
    #[schema(value_type = Option<String>)]
    pub profile: Option<Option<String>>,
}

/// Renames a session and/or changes its profile binding.
#[utoipa::path(patch, path = "/v1/sessions/{id}", tag = "sessions", request_body = Rename,
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "Changed", body = schemas::Session),
        (status = 400, description = "Nothing to change, or an invalid profile name", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody)))]
pub async fn rename_session(
    Extension(state): Extension<AppState>,
    Path(id): Path<String>,
    Json(body): Json<Rename>,
) -> ApiResult<Json<SessionInfo>> {
    let id = session_id(&id)?;
    if body.name.is_none() && body.profile.is_none() {
        return Err(ApiError::invalid(
            "give `name`, `profile` (null unbinds), or both",
        ));
    }
    let mut info = None;
    if let Some(profile) = &body.profile {
        info = Some(state.sessions.bind(&id, profile.as_deref()).await?);
    }
    if let Some(name) = &body.name {
        info = Some(state.sessions.rename(&id, name).await?);
    }
    match info {
        Some(info) => Ok(Json(info)),
        None => Err(ApiError::invalid("nothing to change")),
    }
}

/// How a session ends.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EndSession {
    /// Why it ended (`ended` when absent).
    pub reason: Option<String>,
}

/// An ended session and what it shipped to its profile.
#[derive(Debug, Serialize, ToSchema)]
pub struct Ended {
    /// The session record.
    #[schema(value_type = Object)]
    pub session: SessionInfo,
    /// What was shipped to the bound profile (`null` for an unbound session): counts and
    /// the ingest job (`null` when nothing new was left to ship).
    #[schema(value_type = Option<Object>)]
    pub shipped: Option<memory_engine::profile_link::ShipReport>,
}

/// Ends a session: sets its end reason and, when it is bound to a profile, ships what was
/// not shipped yet of its current branch there as an ingest job.
#[utoipa::path(post, path = "/v1/sessions/{id}/end", tag = "sessions", request_body = EndSession,
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "Ended", body = Ended),
        (status = 404, description = "No such session", body = ErrorBody)))]
pub async fn end_session(
    Extension(state): Extension<AppState>,
    Path(id): Path<String>,
    body: Option<Json<EndSession>>,
) -> ApiResult<Json<Ended>> {
    let body = body.map(|Json(b)| b).unwrap_or_default();
    let (session, shipped) = state
        .sessions
        .end(&session_id(&id)?, body.reason.as_deref())
        .await?;
    Ok(Json(Ended { session, shipped }))
}

/// Deletes a session with its messages, overlays and index entries.
#[utoipa::path(delete, path = "/v1/sessions/{id}", tag = "sessions",
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such session", body = ErrorBody)))]
pub async fn delete_session(
    Extension(state): Extension<AppState>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    state.sessions.delete(&session_id(&id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Messages to append: one (`message`) or a chain (`messages`), attached to `parent` (the
/// latest leaf by default: `{"kind":"latest_leaf"}`, `{"kind":"root"}` or
/// `{"kind":"message","id":"..."}`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Append {
    /// One AI SDK UIMessage.
    #[schema(value_type = Option<Object>)]
    pub message: Option<Value>,
    /// A chain of UIMessages, each the parent of the next.
    #[schema(value_type = Option<Vec<Object>>)]
    pub messages: Option<Vec<Value>>,
    /// Where the first message attaches.
    #[schema(value_type = Option<Object>)]
    pub parent: Option<Value>,
}

/// One outcome per message, in order.
#[derive(Debug, Serialize, ToSchema)]
pub struct Appended {
    /// `{"outcome":"inserted","parent_id":...}` or `{"outcome":"already_exists"}`.
    #[schema(value_type = Vec<Object>)]
    pub outcomes: Vec<AppendOutcome>,
}

/// The largest batch one append takes.
pub const MAX_BATCH: usize = 1_000;

/// Refuses a message larger than the store's declared row limit with 413 (the library
/// would fit it by truncating; over HTTP the caller is told instead).
fn check_size(state: &AppState, message: &Value) -> ApiResult<()> {
    let Some(max) = state.sessions.store().capabilities().max_message_bytes else {
        return Ok(());
    };
    let size = serde_json::to_vec(message).map_or(0, |bytes| bytes.len());
    if size as u64 > max {
        return Err(ApiError::too_large(format!(
            "the message is {size} bytes; this deployment's store holds at most {max} per message"
        )));
    }
    Ok(())
}

fn decode<T: serde::de::DeserializeOwned>(what: &str, value: Value) -> ApiResult<T> {
    serde_json::from_value(value).map_err(|e| ApiError::invalid(format!("{what}: {e}")))
}

/// Appends messages (insert-if-absent: re-sending a stored id changes nothing).
#[utoipa::path(post, path = "/v1/sessions/{id}/messages", tag = "messages", request_body = Append,
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "One outcome per message", body = Appended),
        (status = 400, description = "Invalid message or parent", body = ErrorBody),
        (status = 404, description = "No such session or parent", body = ErrorBody),
        (status = 413, description = "Body, batch or a message too large", body = ErrorBody)))]
pub async fn append_messages(
    Extension(state): Extension<AppState>,
    Path(id): Path<String>,
    Json(body): Json<Append>,
) -> ApiResult<Json<Appended>> {
    let id = session_id(&id)?;
    let parent: Parent = match body.parent {
        Some(parent) => decode("parent", parent)?,
        None => Parent::LatestLeaf,
    };
    let raw = match (body.message, body.messages) {
        (Some(one), None) => vec![one],
        (None, Some(many)) => many,
        _ => {
            return Err(ApiError::invalid(
                "give exactly one of `message` and `messages`",
            ));
        }
    };
    if raw.is_empty() {
        return Err(ApiError::invalid("the batch is empty"));
    }
    if raw.len() > MAX_BATCH {
        return Err(ApiError::too_large(format!(
            "a batch holds at most {MAX_BATCH} messages, not {}",
            raw.len()
        )));
    }
    for message in &raw {
        check_size(&state, message)?;
    }
    let messages = raw
        .into_iter()
        .map(|m| decode::<UiMessage>("message", m))
        .collect::<ApiResult<Vec<_>>>()?;
    let outcomes = if messages.len() == 1 {
        let message = messages
            .into_iter()
            .next()
            .ok_or_else(|| ApiError::invalid("empty"))?;
        vec![state.sessions.append(&id, message, parent).await?.outcome]
    } else {
        state.sessions.append_all(&id, messages, parent).await?
    };
    Ok(Json(Appended { outcomes }))
}

/// Message ids to delete at once.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteMessages {
    /// The ids (at most 1,000); ids the session does not hold are skipped.
    pub ids: Vec<String>,
}

/// How many messages a deletion removed.
#[derive(Debug, Serialize, ToSchema)]
pub struct Deleted {
    /// Messages removed (ids the session did not hold are not counted).
    pub deleted: u64,
}

/// Deletes messages by id; each one's children re-link to its parent, and its search
/// entries go with it.
#[utoipa::path(delete, path = "/v1/sessions/{id}/messages", tag = "messages",
    request_body = DeleteMessages,
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "How many were deleted", body = Deleted),
        (status = 400, description = "No ids", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 413, description = "Too many ids", body = ErrorBody)))]
pub async fn delete_messages(
    Extension(state): Extension<AppState>,
    Path(id): Path<String>,
    Json(body): Json<DeleteMessages>,
) -> ApiResult<Json<Deleted>> {
    if body.ids.is_empty() {
        return Err(ApiError::invalid("give at least one id in `ids`"));
    }
    if body.ids.len() > MAX_BATCH {
        return Err(ApiError::too_large(format!(
            "one deletion takes at most {MAX_BATCH} ids, not {}",
            body.ids.len()
        )));
    }
    let id = session_id(&id)?;
    // A missing session is a 404, not "0 deleted" (its record is enough to know).
    if state.sessions.get(&id).await?.is_none() {
        return Err(memory_core::MemoryError::not_found("session", id.as_str()).into());
    }
    let deleted = state.sessions.delete_messages(&id, &body.ids).await?;
    Ok(Json(Deleted { deleted }))
}

/// The most recent message with no children.
#[derive(Debug, Serialize, ToSchema)]
pub struct LatestLeaf {
    /// The message, or `null` for an empty session.
    #[schema(value_type = Option<Object>)]
    pub message: Option<UiMessage>,
}

/// Whose latest leaf.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LatestLeafParams {
    /// Only the subtree under this message (itself when it has no children): where a view
    /// switching to that branch lands, in one request whatever the branch's depth.
    pub under: Option<String>,
}

/// The session's latest leaf: the most recently added message that has no children (where
/// an append without a parent attaches), or with `under` the latest leaf of that subtree.
#[utoipa::path(get, path = "/v1/sessions/{id}/latest-leaf", tag = "messages",
    params(("id" = String, Path, description = "Session id"), LatestLeafParams),
    responses(
        (status = 200, description = "The leaf, or `null` for an empty session", body = LatestLeaf),
        (status = 404, description = "No such session, or no such message `under`", body = ErrorBody)))]
pub async fn latest_leaf(
    Extension(state): Extension<AppState>,
    Path(id): Path<String>,
    Query(params): Query<LatestLeafParams>,
) -> ApiResult<Json<LatestLeaf>> {
    let session = state.sessions.session(&session_id(&id)?).await?;
    let leaf = match &params.under {
        Some(under) => Some(session.latest_leaf_under(under).await?),
        None => session.latest_leaf().await?,
    };
    let message = match leaf {
        Some(leaf) => session.get(&leaf).await?,
        None => None,
    };
    Ok(Json(LatestLeaf { message }))
}

/// Which leaf's history.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryParams {
    /// The leaf (the latest leaf by default).
    pub leaf: Option<String>,
    /// The stored messages as they are, without compaction overlays (default false).
    pub raw: Option<bool>,
    /// Only the last this many entries of the path (`total` still counts them all), read
    /// from the leaf upward: the cost follows the limit, not the session's length.
    pub limit: Option<usize>,
    /// Also name, for each returned message with more than one child, its children's ids
    /// in insertion order (`branches`): where the conversation forks.
    pub branches: Option<bool>,
}

/// A root-to-leaf history.
#[derive(Debug, Serialize, ToSchema)]
pub struct History {
    /// Root first, compaction overlays applied.
    #[schema(value_type = Vec<Object>)]
    pub messages: Vec<UiMessage>,
    /// How many stored messages the whole path holds (more than `messages` with a `limit`;
    /// an overlay in `messages` stands in for several).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<usize>,
    /// True when a `limit` left out entries before the first of `messages`.
    pub truncated: bool,
    /// With `branches=true`: message id → its children's ids, for the returned messages
    /// with more than one child.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branches: Option<std::collections::BTreeMap<String, Vec<String>>>,
}

/// The history of a leaf, root first, with compaction overlays applied (or, with `raw`,
/// the stored messages the overlays stand in for).
#[utoipa::path(get, path = "/v1/sessions/{id}/history", tag = "messages",
    params(("id" = String, Path, description = "Session id"), HistoryParams),
    responses(
        (status = 200, description = "The history", body = History),
        (status = 404, description = "No such session or leaf", body = ErrorBody)))]
pub async fn session_history(
    Extension(state): Extension<AppState>,
    Path(id): Path<String>,
    Query(params): Query<HistoryParams>,
) -> ApiResult<Json<History>> {
    let session = state.sessions.session(&session_id(&id)?).await?;
    let raw = params.raw.unwrap_or(false);
    let (messages, total, truncated) = match params.limit {
        // The tail only: read from the leaf upward, and just the shown messages.
        Some(limit) => {
            let tail = session
                .history_tail(params.leaf.as_deref(), limit, raw)
                .await?;
            (tail.messages, tail.total, tail.truncated)
        }
        None => {
            if raw {
                let messages = session.raw_history(params.leaf.as_deref()).await?;
                let total = messages.len();
                (messages, total, false)
            } else {
                // One leaf for both reads, so `total` counts the path `messages` shows.
                let leaf = match params.leaf.clone() {
                    Some(leaf) => Some(leaf),
                    None => session.latest_leaf().await?,
                };
                let messages = session.history(leaf.as_deref()).await?;
                let total = session.path_length(leaf.as_deref()).await?;
                (messages, total, false)
            }
        }
    };
    let branches = if params.branches.unwrap_or(false) {
        let ids: Vec<String> = messages
            .iter()
            .filter(|message| !message.id.starts_with(memory_core::COMPACTION_PREFIX))
            .map(|message| message.id.clone())
            .collect();
        Some(session.forks(&ids).await?)
    } else {
        None
    };
    Ok(Json(History {
        messages,
        total: Some(total),
        truncated,
        branches,
    }))
}

/// A search.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchParams {
    /// The words (never query syntax).
    pub q: String,
    /// Only this session.
    pub session: Option<String>,
    /// `all_words` (default), `any_words` or `phrase`.
    pub mode: Option<String>,
    /// At most this many hits (default 20, at most 1,000).
    pub limit: Option<usize>,
}

/// Search hits, best first.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResults {
    /// The hits.
    #[schema(value_type = Vec<Object>)]
    pub hits: Vec<SearchHit>,
}

/// Full-text search over every session's messages, or one session's.
#[utoipa::path(get, path = "/v1/search", tag = "messages", params(SearchParams),
    responses(
        (status = 200, description = "Hits", body = SearchResults),
        (status = 400, description = "Invalid query", body = ErrorBody)))]
pub async fn search_messages(
    Extension(state): Extension<AppState>,
    Query(params): Query<SearchParams>,
) -> ApiResult<Json<SearchResults>> {
    let mut query = SearchQuery::new(params.q);
    query.session = params.session.as_deref().map(SessionId::new).transpose()?;
    query.limit = params.limit;
    if let Some(mode) = params.mode {
        query.mode = decode::<SearchMode>("mode", Value::String(mode))?;
    }
    Ok(Json(SearchResults {
        hits: state.sessions.search(&query).await?,
    }))
}

/// Replaces a stored message's content (its parent and role stay).
#[utoipa::path(put, path = "/v1/sessions/{id}/messages/{message_id}", tag = "messages",
    request_body(content = schemas::UiMessage, description = "The message, with the same id"),
    params(("id" = String, Path, description = "Session id"),
           ("message_id" = String, Path, description = "Message id")),
    responses(
        (status = 204, description = "Updated"),
        (status = 400, description = "Invalid message, or its id is not the path's", body = ErrorBody),
        (status = 404, description = "No such session or message", body = ErrorBody)))]
pub async fn update_message(
    Extension(state): Extension<AppState>,
    Path((id, message_id)): Path<(String, String)>,
    Json(body): Json<Value>,
) -> ApiResult<StatusCode> {
    check_size(&state, &body)?;
    let message: UiMessage = decode("message", body)?;
    if message.id != message_id {
        return Err(ApiError::invalid(format!(
            "the body's id {:?} is not the path's {message_id:?}",
            message.id
        )));
    }
    state.sessions.update(&session_id(&id)?, message).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deletes a message; its children re-link to its parent.
#[utoipa::path(delete, path = "/v1/sessions/{id}/messages/{message_id}", tag = "messages",
    params(("id" = String, Path, description = "Session id"),
           ("message_id" = String, Path, description = "Message id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such session or message", body = ErrorBody)))]
pub async fn delete_message(
    Extension(state): Extension<AppState>,
    Path((id, message_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let deleted = state
        .sessions
        .delete_messages(&session_id(&id)?, std::slice::from_ref(&message_id))
        .await?;
    if deleted == 0 {
        return Err(memory_core::MemoryError::not_found("message", message_id).into());
    }
    Ok(StatusCode::NO_CONTENT)
}

/// The children of a message (its branches), in insertion order.
#[utoipa::path(get, path = "/v1/sessions/{id}/messages/{message_id}/children", tag = "messages",
    params(("id" = String, Path, description = "Session id"),
           ("message_id" = String, Path, description = "Message id")),
    responses(
        (status = 200, description = "The children", body = History),
        (status = 404, description = "No such session or message", body = ErrorBody)))]
pub async fn children(
    Extension(state): Extension<AppState>,
    Path((id, message_id)): Path<(String, String)>,
) -> ApiResult<Json<History>> {
    let session = state.sessions.session(&session_id(&id)?).await?;
    Ok(Json(History {
        messages: session.branches(&message_id).await?,
        total: None,
        truncated: false,
        branches: None,
    }))
}

/// Where to fork.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Fork {
    /// The message the new session's history ends at.
    pub at: String,
    /// The new session's name (the source's by default).
    pub name: Option<String>,
}

/// Forks a session at a message into a new linked session holding the path up to it.
#[utoipa::path(post, path = "/v1/sessions/{id}/fork", tag = "sessions", request_body = Fork,
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 201, description = "The new session", body = schemas::Session),
        (status = 404, description = "No such session or message", body = ErrorBody)))]
pub async fn fork(
    Extension(state): Extension<AppState>,
    Path(id): Path<String>,
    Json(body): Json<Fork>,
) -> ApiResult<(StatusCode, Json<SessionInfo>)> {
    let info = state
        .sessions
        .fork(&session_id(&id)?, &body.at, body.name)
        .await?;
    Ok((StatusCode::CREATED, Json(info)))
}
