//! OpenAPI names for the core's JSON shapes (their fields are documented in
//! `memory-core`; here they are objects).

use serde_json::Value;
use utoipa::ToSchema;

/// A session record: id, name, model, source, usage, times.
#[derive(ToSchema)]
#[schema(value_type = Object)]
pub struct Session(pub Value);

/// An AI SDK `UIMessage`: `id`, `role`, `parts`, and any other fields (kept as given).
#[derive(ToSchema)]
#[schema(value_type = Object)]
pub struct UiMessage(pub Value);

/// A typed long-term memory with provenance and its supersession pointer.
#[derive(ToSchema)]
#[schema(value_type = Object)]
pub struct Memory(pub Value);

/// A recall: hits with per-channel ranks, date facts, the answer when asked, degradations.
#[derive(ToSchema)]
#[schema(value_type = Object)]
pub struct Recall(pub Value);

/// An ingest job: id, status, stage, counts, errors.
#[derive(ToSchema)]
#[schema(value_type = Object)]
pub struct Job(pub Value);
