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

/// A consolidation report: the merges (survivor, absorbed memories with their evidence,
/// reason), the groups the LLM rejected, counts, degradations and usage.
#[derive(ToSchema)]
#[schema(value_type = Object)]
pub struct Consolidation(pub Value);

/// The profile block's choice: its text, the instructions shown, and the facts and open
/// tasks considered, best score first, each with its score parts and whether it is shown.
#[derive(ToSchema)]
#[schema(value_type = Object)]
pub struct BlockChoice(pub Value);

/// A digest run: the digest kept, whether this call wrote it, why, and LLM usage.
#[derive(ToSchema)]
#[schema(value_type = Object)]
pub struct DigestReport(pub Value);
