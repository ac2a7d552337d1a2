//! A session's context: its blocks, the frozen system prompt, and the tools generated from
//! the blocks (listed in a model provider's format, and executed).

use axum::Extension;
use axum::Json;
use axum::extract::{Path, Query};
use memory_core::ContextBlock;
use memory_engine::context::{ToolFormat, is_tool_error};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiResult, ErrorBody};
use crate::sessions::session_id;
use crate::state::AppState;

/// A session's context blocks.
#[derive(Debug, Serialize, ToSchema)]
pub struct Blocks {
    /// Label, kind, scope, content and token counts of every block, in prompt order.
    #[schema(value_type = Vec<Object>)]
    pub blocks: Vec<ContextBlock>,
    /// The skills the session has loaded (`load_context`), as `label/key`.
    pub loaded_skills: Vec<String>,
}

/// The session's context blocks, in prompt order.
#[utoipa::path(get, path = "/v1/sessions/{id}/context", tag = "context",
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "The blocks", body = Blocks),
        (status = 404, description = "No such session", body = ErrorBody)))]
pub async fn list_blocks(
    Extension(state): Extension<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<Blocks>> {
    let session = state.sessions.session(&session_id(&id)?).await?;
    Ok(Json(Blocks {
        blocks: session.context().blocks().await?,
        loaded_skills: session.context().loaded_skills().await?,
    }))
}

/// One block of the session, with its content and token count.
#[utoipa::path(get, path = "/v1/sessions/{id}/context/{label}", tag = "context",
    params(("id" = String, Path, description = "Session id"),
           ("label" = String, Path, description = "Block label")),
    responses(
        (status = 200, description = "The block", body = Object),
        (status = 404, description = "No such session or block", body = ErrorBody)))]
pub async fn get_block(
    Extension(state): Extension<AppState>,
    Path((id, label)): Path<(String, String)>,
) -> ApiResult<Json<ContextBlock>> {
    let session = state.sessions.session(&session_id(&id)?).await?;
    Ok(Json(session.context().get(&label).await?))
}

/// A block's new content.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BlockWrite {
    /// The whole new content.
    pub content: String,
}

/// Replaces a writable block's content, through the same checks as the model's
/// `set_context` (a read-only block or content over the block's token budget is a 422 and
/// changes nothing). The frozen prompt is unchanged until refreshed.
#[utoipa::path(put, path = "/v1/sessions/{id}/context/{label}", tag = "context",
    request_body = BlockWrite,
    params(("id" = String, Path, description = "Session id"),
           ("label" = String, Path, description = "Block label")),
    responses(
        (status = 200, description = "The block as written", body = Object),
        (status = 404, description = "No such session or block", body = ErrorBody),
        (status = 422, description = "Read-only, or over the block's budget", body = ErrorBody)))]
pub async fn put_block(
    Extension(state): Extension<AppState>,
    Path((id, label)): Path<(String, String)>,
    Json(body): Json<BlockWrite>,
) -> ApiResult<Json<ContextBlock>> {
    let session = state.sessions.session(&session_id(&id)?).await?;
    session.context().require_declared(&label)?;
    Ok(Json(
        session.context().replace(&label, &body.content).await?,
    ))
}

/// Appends to a writable block (a newline between the old content and the new when the
/// old is not empty), within its token budget.
#[utoipa::path(post, path = "/v1/sessions/{id}/context/{label}/append", tag = "context",
    request_body = BlockWrite,
    params(("id" = String, Path, description = "Session id"),
           ("label" = String, Path, description = "Block label")),
    responses(
        (status = 200, description = "The block as written", body = Object),
        (status = 404, description = "No such session or block", body = ErrorBody),
        (status = 422, description = "Read-only, or over the block's budget", body = ErrorBody)))]
pub async fn append_block(
    Extension(state): Extension<AppState>,
    Path((id, label)): Path<(String, String)>,
    Json(body): Json<BlockWrite>,
) -> ApiResult<Json<ContextBlock>> {
    let session = state.sessions.session(&session_id(&id)?).await?;
    session.context().require_declared(&label)?;
    Ok(Json(session.context().append(&label, &body.content).await?))
}

/// Whether to re-render the prompt.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PromptParams {
    /// Re-render from the blocks' current values (else the frozen prompt is returned).
    pub refresh: Option<bool>,
    /// Also say whether a refresh would change the prompt (`stale`); it reads every block's
    /// provider again, so agents leave it off.
    pub check_stale: Option<bool>,
}

/// A system prompt.
#[derive(Debug, Serialize, ToSchema)]
pub struct Prompt {
    /// The rendered prompt.
    pub prompt: String,
    /// With `check_stale=true`: whether a refresh would change the frozen prompt (the
    /// blocks were written since it was frozen).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale: Option<bool>,
}

/// The session's frozen system prompt (rendered and frozen on first use; `refresh=true`
/// re-renders it).
#[utoipa::path(get, path = "/v1/sessions/{id}/prompt", tag = "context",
    params(("id" = String, Path, description = "Session id"), PromptParams),
    responses(
        (status = 200, description = "The prompt", body = Prompt),
        (status = 404, description = "No such session", body = ErrorBody)))]
pub async fn prompt(
    Extension(state): Extension<AppState>,
    Path(id): Path<String>,
    Query(params): Query<PromptParams>,
) -> ApiResult<Json<Prompt>> {
    let session = state.sessions.session(&session_id(&id)?).await?;
    let prompt = if params.refresh.unwrap_or(false) {
        session.refresh_system_prompt().await?
    } else {
        session.freeze_system_prompt().await?
    };
    let stale = if params.check_stale.unwrap_or(false) {
        Some(session.context().render_current().await? != prompt)
    } else {
        None
    };
    Ok(Json(Prompt { prompt, stale }))
}

/// Which provider's tool format.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ToolsParams {
    /// `openai` (default), `anthropic` or `mcp`.
    pub format: Option<String>,
}

/// The session's tools (context blocks and session search) in a provider's format.
#[utoipa::path(get, path = "/v1/sessions/{id}/tools", tag = "context",
    params(("id" = String, Path, description = "Session id"), ToolsParams),
    responses(
        (status = 200, description = "Tool definitions", body = Object),
        (status = 400, description = "Unknown format", body = ErrorBody)))]
pub async fn list_tools(
    Extension(state): Extension<AppState>,
    Path(id): Path<String>,
    Query(params): Query<ToolsParams>,
) -> ApiResult<Json<Value>> {
    let format = ToolFormat::parse(params.format.as_deref().unwrap_or("openai"))?;
    let session = state.sessions.session(&session_id(&id)?).await?;
    let mut definitions = session.tools().await?;
    definitions.extend(state.sessions.tools());
    Ok(Json(format.export(&definitions)))
}

/// What a tool call returned: the text the model reads, and whether it is an error.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolResult {
    /// The result text (an error result starts with `Error: `).
    pub result: String,
    /// True when the tool refused or failed (the model reads why in `result`).
    pub is_error: bool,
}

/// Executes one of the session's tools with JSON arguments, as a model's tool call would.
#[utoipa::path(post, path = "/v1/sessions/{id}/tools/{name}", tag = "context",
    request_body(content = Object, description = "The tool's arguments"),
    params(("id" = String, Path, description = "Session id"),
           ("name" = String, Path, description = "Tool name")),
    responses(
        (status = 200, description = "The result (a refusal is a result the model reads)", body = ToolResult),
        (status = 404, description = "No such session", body = ErrorBody)))]
pub async fn call_tool(
    Extension(state): Extension<AppState>,
    Path((id, name)): Path<(String, String)>,
    Json(arguments): Json<Value>,
) -> ApiResult<Json<ToolResult>> {
    let session = state.sessions.session(&session_id(&id)?).await?;
    let result = match state.sessions.execute_tool(&name, &arguments).await {
        Some(result) => result,
        None => session.execute_tool(&name, &arguments).await?,
    };
    Ok(Json(ToolResult {
        is_error: is_tool_error(&result),
        result,
    }))
}
