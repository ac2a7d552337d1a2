//! # memory-server
//!
//! The memory layer over HTTP: a JSON REST API over the engine's services, with an OpenAPI
//! document generated from the handlers (`GET /openapi.json`). The server holds no state
//! between requests: several servers on the same backends (PostgreSQL, say) serve the same
//! sessions and profiles. Binaries compose the services ([`AppState`]) and call [`serve`];
//! `memory serve` is one.
//!
//! Errors are one JSON shape (`{"error":{"code","message"}}`) with the status of the core
//! error kind ([`error::ApiError`]); a transient backend failure is a 503 with
//! `Retry-After`.

mod compaction;
mod context;
pub mod error;
mod health;
mod limits;
pub mod mcp;
mod metrics;
pub mod openapi;
mod profiles;
pub mod schemas;
mod sessions;
mod settings;
mod state;
pub mod tenants;
mod transfer;
mod ui;

use std::net::SocketAddr;

use axum::Router;
use axum::error_handling::HandleErrorLayer;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, Request};
use axum::routing::{get, post};
pub use limits::Limits;
pub use metrics::Metrics;
pub use state::{About, AppState};
pub use tenants::{RateLimit, Tenant, Tenants};
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;
use tower::limit::GlobalConcurrencyLimitLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
pub use transfer::MAX_IMPORT_BYTES;
use utoipa::OpenApi;

/// The largest request body accepted (a batch of messages at the store's row limit would
/// not fit; batches that large belong in `import`).
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// The header carrying each request's id (generated when the client sends none, returned
/// on the response, and recorded on the request's log span).
pub const REQUEST_ID: &str = "x-request-id";

/// How long a graceful shutdown waits for open requests and streams before the server
/// returns anyway.
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// The API over each tenant's services with its limits, request ids, logs and metrics.
pub fn router(tenants: impl Into<Tenants>, limits: Limits, metrics: Metrics) -> Router {
    router_until(tenants, limits, metrics, CancellationToken::new())
}

/// [`router`], whose MCP endpoint ends its streams when `shutdown` is cancelled.
fn router_until(
    tenants: impl Into<Tenants>,
    limits: Limits,
    metrics: Metrics,
    shutdown: CancellationToken,
) -> Router {
    let tenants = tenants.into();
    let request_id = HeaderName::from_static(REQUEST_ID);
    let trace = TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
        let id = request
            .headers()
            .get(REQUEST_ID)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("-");
        tracing::info_span!("request", method = %request.method(), uri = %request.uri(), request_id = %id, tenant = tracing::field::Empty)
    });
    // One semaphore for the whole server (a layer is cloned per route, and the global limit
    // shares its permits between the clones).
    let permits = GlobalConcurrencyLimitLayer::new(limits.max_concurrent_requests.max(1));
    let limited = |timeout| {
        ServiceBuilder::new()
            .layer(HandleErrorLayer::new(limits::refused))
            .load_shed()
            .layer(permits.clone())
            .timeout(timeout)
    };
    let mcp = ServiceBuilder::new()
        .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES))
        .service(mcp::http_service(tenants.is_local(), shutdown));
    // Imports take up to 256 MiB: they get ten times the request timeout.
    let imports = transfer::import_routes().layer(limited(limits.request_timeout * 10));
    let tenant_routes = routes()
        .nest_service("/mcp", mcp)
        .layer(limited(limits.request_timeout))
        .merge(imports)
        .layer(axum::Extension(metrics.clone()))
        .layer(axum::middleware::from_fn_with_state(
            tenants.clone(),
            tenants::authorize,
        ));
    public_routes(tenants)
        .merge(tenant_routes)
        .merge(
            Router::new()
                .route("/metrics", get(metrics::expose))
                .with_state(metrics.clone()),
        )
        .layer(axum::middleware::from_fn(error::json_errors))
        .layer(axum::middleware::from_fn_with_state(
            metrics,
            metrics::record,
        ))
        .layer(
            ServiceBuilder::new()
                .layer(SetRequestIdLayer::new(request_id.clone(), MakeRequestUuid))
                .layer(trace)
                .layer(PropagateRequestIdLayer::new(request_id)),
        )
}

/// The routes anyone may call: health, readiness and the API's description.
fn public_routes(tenants: Tenants) -> Router {
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/openapi.json", get(openapi_json))
        .merge(openapi::docs_page())
        .merge(ui::routes())
        .with_state(tenants)
}

/// The routes of a tenant's sessions and profiles (the services come from the request's
/// extensions, placed there by [`tenants::authorize`]).
fn routes() -> Router {
    Router::new()
        .route(
            "/v1/sessions",
            post(sessions::create_session).get(sessions::list_sessions),
        )
        .route(
            "/v1/sessions/{id}",
            get(sessions::get_session)
                .patch(sessions::rename_session)
                .delete(sessions::delete_session),
        )
        .route(
            "/v1/sessions/{id}/messages",
            post(sessions::append_messages).delete(sessions::delete_messages),
        )
        .route("/v1/sessions/{id}/latest-leaf", get(sessions::latest_leaf))
        .route(
            "/v1/sessions/{id}/messages/{message_id}",
            axum::routing::put(sessions::update_message).delete(sessions::delete_message),
        )
        .route(
            "/v1/sessions/{id}/messages/{message_id}/children",
            get(sessions::children),
        )
        .route("/v1/sessions/{id}/fork", post(sessions::fork))
        .route("/v1/sessions/{id}/end", post(sessions::end_session))
        .route("/v1/sessions/{id}/compact", post(compaction::compact))
        .route(
            "/v1/sessions/{id}/compactions",
            get(compaction::compactions),
        )
        .route("/v1/sessions/{id}/export", get(transfer::export_session))
        .route(
            "/v1/profiles/{profile}/export",
            get(transfer::export_profile),
        )
        .route("/v1/sessions/{id}/context", get(context::list_blocks))
        .route(
            "/v1/sessions/{id}/context/{label}",
            get(context::get_block).put(context::put_block),
        )
        .route(
            "/v1/sessions/{id}/context/{label}/append",
            post(context::append_block),
        )
        .route("/v1/sessions/{id}/prompt", get(context::prompt))
        .route("/v1/sessions/{id}/tools", get(context::list_tools))
        .route("/v1/sessions/{id}/tools/{name}", post(context::call_tool))
        .route("/v1/sessions/{id}/history", get(sessions::session_history))
        .route("/v1/search", get(sessions::search_messages))
        .route("/v1/about", get(health::about))
        .route("/v1/profiles", get(profiles::list_profiles))
        .route(
            "/v1/profiles/{profile}",
            axum::routing::delete(profiles::delete_profile),
        )
        .route(
            "/v1/profiles/{profile}/memories/{id}/purge",
            post(profiles::purge),
        )
        .route("/v1/profiles/{profile}/jobs", get(profiles::list_jobs))
        .route(
            "/v1/profiles/{profile}/consolidate",
            post(profiles::consolidate),
        )
        .route("/v1/profiles/{profile}/block", get(profiles::block))
        .route(
            "/v1/profiles/{profile}/digest",
            get(profiles::digest).post(profiles::refresh_digest),
        )
        .route(
            "/v1/profiles/{profile}/contradictions",
            get(profiles::contradictions),
        )
        .route(
            "/v1/profiles/{profile}/memories/{id}/merged",
            get(profiles::merged),
        )
        .route(
            "/v1/profiles/{profile}/memories",
            post(profiles::remember).get(profiles::list_memories),
        )
        .route(
            "/v1/profiles/{profile}/memories/{id}",
            axum::routing::delete(profiles::forget),
        )
        .route(
            "/v1/profiles/{profile}/settings",
            get(settings::get_settings).put(settings::put_settings),
        )
        .route("/v1/profiles/{profile}/recall", post(profiles::recall))
        .route("/v1/profiles/{profile}/ingest", post(profiles::ingest))
        .route("/v1/profiles/{profile}/jobs/{id}", get(profiles::get_job))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
}

async fn openapi_json() -> axum::Json<utoipa::openapi::OpenApi> {
    axum::Json(openapi::ApiDoc::openapi())
}

/// Why the server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address is not loopback, and there are no API keys to protect it.
    #[error("{0} is not a loopback address: without API keys the server binds to loopback only")]
    NotLoopback(SocketAddr),
    /// The metrics registry could not be built.
    #[error("metrics: {0}")]
    Metrics(#[source] prometheus::Error),
    /// Binding or serving failed.
    #[error("serving on {address}: {source}")]
    Io {
        /// The address.
        address: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// Serves the API on `address` with `limits` until `shutdown` completes; calls `on_bound`
/// with the bound address (useful with port 0). In local mode (no API keys) the address
/// must be loopback.
pub async fn serve(
    tenants: impl Into<Tenants>,
    limits: Limits,
    address: SocketAddr,
    on_bound: impl FnOnce(SocketAddr),
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let tenants = tenants.into();
    if tenants.is_local() && !address.ip().is_loopback() {
        return Err(ServeError::NotLoopback(address));
    }
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|source| ServeError::Io { address, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| ServeError::Io { address, source })?;
    if tenants.is_local() {
        tracing::info!(%bound, "serving the memory API (local mode: no API keys, loopback only)");
    } else {
        tracing::info!(%bound, "serving the memory API (API keys required)");
    }
    on_bound(bound);
    let metrics = Metrics::new().map_err(ServeError::Metrics)?;
    let cancel = CancellationToken::new();
    let app = router_until(tenants.clone(), limits, metrics, cancel.clone());
    let (signalled_tx, signalled_rx) = tokio::sync::oneshot::channel::<()>();
    let signal = async move {
        shutdown.await;
        // Streams end, background jobs stop claiming and give theirs back at the next stage.
        cancel.cancel();
        for state in tenants.services() {
            state.memory.stop_jobs();
        }
        let _ = signalled_tx.send(());
    };
    let server = axum::serve(listener, app).with_graceful_shutdown(signal);
    let deadline = async {
        if signalled_rx.await.is_ok() {
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        result = server => result.map_err(|source| ServeError::Io { address: bound, source }),
        () = deadline => {
            tracing::warn!(grace = ?SHUTDOWN_GRACE, "open requests outlived the shutdown grace; stopping anyway");
            Ok(())
        }
    }
}
