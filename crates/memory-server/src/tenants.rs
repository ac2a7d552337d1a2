//! Who is asking: the API key a request carries, the tenant it opens, and that tenant's
//! services. This is the one place tenant isolation is enforced. Each tenant's services are
//! composed over the tenant's own slice of every backend (its own files, schema and key
//! prefixes: `memory_config::StorageConfig::for_tenant`), and a handler only ever receives
//! the services of the tenant whose key the request carries. A handler cannot reach another
//! tenant's rows because it holds no service that can.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::Clock;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use memory_config::ApiKeyEntry;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::ApiError;
use crate::state::AppState;

/// The header that may carry an API key instead of `Authorization: Bearer`.
pub const API_KEY_HEADER: &str = "x-api-key";

/// The tenant a request is served for, placed in the request's extensions beside its
/// [`AppState`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    /// The tenant's name (`local` in local mode).
    pub name: String,
    /// The label of the key used (`local` in local mode).
    pub key_label: String,
}

/// The sustained rate and burst of a key that names none (`--rate-per-key`).
#[derive(Debug, Clone, Copy)]
pub struct RateLimit {
    /// Requests per second, sustained.
    pub per_second: NonZeroU32,
    /// Requests at once above the sustained rate.
    pub burst: NonZeroU32,
}

impl Default for RateLimit {
    /// 100 requests per second with bursts of 200.
    fn default() -> Self {
        Self {
            per_second: NonZeroU32::MIN.saturating_add(99),
            burst: NonZeroU32::MIN.saturating_add(199),
        }
    }
}

/// Why a set of tenants cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum TenantsError {
    /// A key opens a tenant that has no services.
    #[error("key {label:?} opens tenant {tenant:?}, which has no services")]
    NoServices {
        /// The key's label.
        label: String,
        /// The tenant.
        tenant: String,
    },
    /// No keys were given for keyed mode.
    #[error("keyed mode needs at least one API key")]
    NoKeys,
}

struct Key {
    sha256: [u8; 32],
    tenant: Tenant,
    services: AppState,
    limiter: DefaultDirectRateLimiter,
}

enum Access {
    Local(AppState),
    Keyed(Vec<Key>),
}

/// Every tenant a server serves and the keys that open them.
#[derive(Clone)]
pub struct Tenants {
    access: Arc<Access>,
}

impl From<AppState> for Tenants {
    fn from(state: AppState) -> Self {
        Self::local(state)
    }
}

impl Tenants {
    /// Local mode: no keys, one tenant (`local`); the server binds to loopback only.
    pub fn local(state: AppState) -> Self {
        Self {
            access: Arc::new(Access::Local(state)),
        }
    }

    /// Keyed mode: each key opens the services of its tenant (`services` by tenant name),
    /// at its own rate (or `default_rate`).
    pub fn keyed(
        keys: Vec<ApiKeyEntry>,
        services: &HashMap<String, AppState>,
        default_rate: RateLimit,
    ) -> Result<Self, TenantsError> {
        if keys.is_empty() {
            return Err(TenantsError::NoKeys);
        }
        let mut out = Vec::with_capacity(keys.len());
        for entry in keys {
            let tenant = entry.tenant.to_string();
            let Some(state) = services.get(&tenant) else {
                return Err(TenantsError::NoServices {
                    label: entry.label,
                    tenant,
                });
            };
            let per_second = entry
                .requests_per_second
                .and_then(NonZeroU32::new)
                .unwrap_or(default_rate.per_second);
            let burst = entry
                .burst
                .and_then(NonZeroU32::new)
                .or(entry.requests_per_second.and_then(NonZeroU32::new))
                .unwrap_or(default_rate.burst);
            out.push(Key {
                sha256: entry.sha256,
                tenant: Tenant {
                    name: tenant,
                    key_label: entry.label,
                },
                services: state.clone(),
                limiter: RateLimiter::direct(Quota::per_second(per_second).allow_burst(burst)),
            });
        }
        Ok(Self {
            access: Arc::new(Access::Keyed(out)),
        })
    }

    /// True in local mode (no keys).
    pub fn is_local(&self) -> bool {
        matches!(*self.access, Access::Local(_))
    }

    /// The services of every tenant, each once (readiness checks them all).
    pub fn services(&self) -> Vec<AppState> {
        match &*self.access {
            Access::Local(state) => vec![state.clone()],
            Access::Keyed(keys) => {
                let mut seen = std::collections::HashSet::new();
                keys.iter()
                    .filter(|k| seen.insert(k.tenant.name.clone()))
                    .map(|k| k.services.clone())
                    .collect()
            }
        }
    }

    /// The key of `presented`, compared with every stored digest in constant time (every
    /// digest is compared, whichever matches).
    fn find(keys: &[Key], presented: &str) -> Option<usize> {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let mut found = None;
        for (i, key) in keys.iter().enumerate() {
            if bool::from(digest.ct_eq(&key.sha256)) {
                found = Some(i);
            }
        }
        found
    }
}

/// The key a request presents: `Authorization: Bearer <key>` or `x-api-key: <key>`.
fn presented_key(headers: &HeaderMap) -> Option<&str> {
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        let value = value.to_str().ok()?;
        let (scheme, key) = value.split_once(' ')?;
        return scheme.eq_ignore_ascii_case("bearer").then(|| key.trim());
    }
    headers.get(API_KEY_HEADER)?.to_str().ok().map(str::trim)
}

/// Middleware: resolves the request's tenant and places its [`AppState`] and [`Tenant`] in
/// the request's extensions; refuses a missing or unknown key (401) and a key past its rate
/// (429 with `Retry-After`).
pub async fn authorize(
    State(tenants): State<Tenants>,
    mut request: Request,
    next: Next,
) -> Response {
    let (services, tenant) = match &*tenants.access {
        Access::Local(state) => (
            state.clone(),
            Tenant {
                name: "local".into(),
                key_label: "local".into(),
            },
        ),
        Access::Keyed(keys) => {
            let Some(presented) = presented_key(request.headers()) else {
                return ApiError::unauthorized(
                    "an API key is required: send `Authorization: Bearer <key>`",
                )
                .into_response();
            };
            let Some(index) = Tenants::find(keys, presented) else {
                return ApiError::unauthorized("the API key is not valid").into_response();
            };
            let key = &keys[index];
            if let Err(not_until) = key.limiter.check() {
                let wait = not_until.wait_time_from(key.limiter.clock().now());
                tracing::info!(key = %key.tenant.key_label, "rate limited");
                return ApiError::rate_limited(wait).into_response();
            }
            (key.services.clone(), key.tenant.clone())
        }
    };
    tracing::Span::current().record("tenant", tenant.name.as_str());
    request.extensions_mut().insert(services);
    request.extensions_mut().insert(tenant);
    next.run(request).await
}

/// A new API key and the SHA-256 digest (hex) to put in the keys file. The key holds 244
/// bits from the operating system's random source (two UUIDv4s).
pub fn new_api_key() -> (String, String) {
    let key = format!(
        "mk_{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let digest = Sha256::digest(key.as_bytes());
    let hex = digest.iter().map(|b| format!("{b:02x}")).collect();
    (key, hex)
}
