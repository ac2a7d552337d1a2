//! The OpenAPI 3.1 document, generated from the handlers and served at `/openapi.json`,
//! with an interactive page at `/docs`.

use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use utoipa::{Modify, OpenApi};

/// The OpenAPI document of the REST API, generated from the handlers.
#[derive(OpenApi)]
#[openapi(
    modifiers(&BearerKeys),
    info(title = "agent memory", description = "Memory for AI agents: sessions with branching history and search, and long-term memory profiles."),
    paths(
        crate::health::healthz,
        crate::health::readyz,
        crate::health::about,
        crate::sessions::create_session,
        crate::sessions::list_sessions,
        crate::sessions::get_session,
        crate::sessions::rename_session,
        crate::sessions::delete_session,
        crate::sessions::append_messages,
        crate::sessions::session_history,
        crate::sessions::search_messages,
        crate::sessions::update_message,
        crate::sessions::delete_message,
        crate::sessions::delete_messages,
        crate::sessions::latest_leaf,
        crate::sessions::children,
        crate::sessions::fork,
        crate::sessions::end_session,
        crate::compaction::compact,
        crate::compaction::compactions,
        crate::transfer::export_session,
        crate::transfer::import_sessions,
        crate::transfer::export_profile,
        crate::transfer::import_profile,
        crate::context::list_blocks,
        crate::context::get_block,
        crate::context::put_block,
        crate::context::append_block,
        crate::context::prompt,
        crate::context::list_tools,
        crate::context::call_tool,
        crate::profiles::remember,
        crate::profiles::list_memories,
        crate::profiles::forget,
        crate::profiles::recall,
        crate::profiles::ingest,
        crate::profiles::get_job,
        crate::profiles::list_profiles,
        crate::profiles::delete_profile,
        crate::profiles::purge,
        crate::profiles::list_jobs,
        crate::profiles::consolidate,
        crate::profiles::merged,
        crate::profiles::contradictions,
        crate::profiles::block,
        crate::profiles::digest,
        crate::profiles::refresh_digest,
        crate::settings::get_settings,
        crate::settings::put_settings,
    ),
    tags(
        (name = "health", description = "Liveness and readiness"),
        (name = "sessions", description = "Conversation sessions"),
        (name = "messages", description = "Messages, history and search"),
        (name = "context", description = "Context blocks, the frozen prompt and the tools"),
        (name = "long-term", description = "Long-term memory profiles"),
    )
)]
pub struct ApiDoc;

/// API keys as bearer tokens: required when the server runs with a keys file, absent in
/// local mode (hence the empty alternative).
struct BearerKeys;

impl Modify for BearerKeys {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
        openapi.security = Some(vec![
            SecurityRequirement::new("api_key", Vec::<String>::new()),
            SecurityRequirement::default(),
        ]);
    }
}

/// The interactive API reference (Scalar, loaded by the browser from its CDN) over the
/// generated document.
pub fn docs_page() -> utoipa_scalar::Scalar<utoipa::openapi::OpenApi> {
    use utoipa_scalar::Servable;
    utoipa_scalar::Scalar::with_url("/docs", ApiDoc::openapi())
}
