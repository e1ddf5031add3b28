//! The HTTP gateway: health, authentication, MCP (streamable HTTP) and the sync API.
//!
//! Stateless: everything a request needs is in Postgres, Redis or the object store, so any
//! replica answers any request.

pub mod acl_api;
pub mod admin_chat;
pub mod admin_domains;
pub mod admin_members;
pub mod admin_tokens;
pub mod admin_usage;
pub mod admin_vaults;
mod auth;
pub mod auth_cache;
pub mod authorization;
mod browser;
pub mod console;
pub mod directory;
pub mod elicit;
mod error;
mod health;
pub mod http_api;
mod idempotent;
pub mod invitations;
mod jsonrpc;
pub mod mcp;
pub mod me;
mod native_tasks;
pub mod oauth;
mod observe;
mod origin;
mod pages;
pub mod policies;
mod rate_limit;
mod request_state;
mod scopes;
pub mod signup;
pub mod sync_api;
mod tool_results;
mod v1_audit;
pub mod whoami;
pub mod wire;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use otc_blobs::Blobs;
use otc_catalog::facade::{Subset, Surface};
use otc_identity::paths;
use otc_kernel::Dispatcher;
use otc_kv::Kv;
use otc_store::Store;
use tokio::net::TcpListener;
use tower_http::limit::RequestBodyLimitLayer;

pub use auth::Caller;
pub use error::ApiError;

/// What every request handler can reach: shared, so the clone each middleware layer and handler
/// takes is one reference count (it was every field, settings lists included, several times a
/// request).
#[derive(Clone)]
pub struct AppState(Arc<AppParts>);

impl AppState {
    pub fn new(parts: AppParts) -> Self {
        Self(Arc::new(parts))
    }
}

impl std::ops::Deref for AppState {
    type Target = AppParts;

    fn deref(&self) -> &AppParts {
        &self.0
    }
}

/// The parts of [`AppState`].
pub struct AppParts {
    pub store: Store,
    pub kv: Arc<Kv>,
    pub blobs: Blobs,
    /// Upper bound for each dependency check in `/readyz`.
    pub check_timeout: Duration,
    pub dispatcher: Arc<Dispatcher>,
    /// Tokens checked recently, valid while their tenant's token generation holds.
    pub auth_cache: Arc<auth_cache::AuthCache>,
    pub mcp: mcp::McpHttpSettings,
    pub sync: SyncSettings,
    pub oauth: oauth::OAuthSettings,
    /// The authorization server, when `oauth.secret_key` is set.
    pub identity: Option<Arc<otc_identity::Identity>>,
    pub console: console::ConsoleSettings,
}

/// Limits of the sync API.
#[derive(Debug, Clone, Copy)]
pub struct SyncSettings {
    pub max_blob_bytes: usize,
    pub max_commit_changes: usize,
}

/// Limits of the HTTP surface.
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    pub body_limit_bytes: usize,
    /// Requests a minute, and burst, one client address may make to the routes that need no
    /// credential.
    pub per_ip_per_minute: u32,
    pub per_ip_burst: u32,
    /// Dynamic client registrations one address may make per hour.
    pub registrations_per_hour: u32,
}

/// The whole HTTP surface. Health routes are open; every other route, unknown ones included,
/// requires a bearer token.
pub fn router(state: AppState, limits: HttpLimits) -> Router {
    let surface = |surface| mcp::http_service(state.dispatcher.clone(), surface, &state.mcp);
    // Uploads carry whole files: they have their own limit (sync.max_blob_bytes), enforced by
    // the handler with a JSON answer, instead of the general body limit.
    let uploads = Router::new()
        .route("/v1/vaults/{vault}/blobs/{hash}", get(sync_api::download_blob).put(sync_api::upload_blob))
        // An import's archive is bounded by the tenant's storage quota and the file limit.
        .route("/v1/admin/imports", post(admin_vaults::import));
    let limited = Router::new()
        .route("/v1/whoami", get(whoami::whoami))
        .route("/v1/elicit", post(elicit::mint))
        .route("/v1/audit", get(v1_audit::export))
        .route("/v1/admin/vaults", get(admin_vaults::list).post(admin_vaults::create))
        .route("/v1/admin/vaults/{vault}", axum::routing::patch(admin_vaults::rename).delete(admin_vaults::delete))
        .route("/v1/admin/vaults/{vault}/restore", post(admin_vaults::restore))
        .route("/v1/admin/vaults/{vault}/purge", post(admin_vaults::purge))
        .route("/v1/admin/vaults/{vault}/read-only", axum::routing::put(admin_vaults::hold).delete(admin_vaults::lift))
        .route("/v1/admin/vaults/{vault}/export", get(admin_vaults::export))
        .route("/v1/admin/health", get(admin_vaults::health))
        .route("/v1/admin/tokens", get(admin_tokens::list).post(admin_tokens::create))
        .route("/v1/admin/tokens/{id}", axum::routing::delete(admin_tokens::revoke))
        .route("/v1/admin/usage", get(admin_usage::get))
        .route("/v1/admin/members", get(admin_members::list))
        .route("/v1/admin/chat", get(admin_chat::get).put(admin_chat::set).delete(admin_chat::remove))
        .route("/v1/admin/domains", get(admin_domains::list).post(admin_domains::claim))
        .route("/v1/admin/domains/{domain}", axum::routing::delete(admin_domains::remove))
        .route("/v1/admin/domains/{domain}/verify", post(admin_domains::verify))
        .route("/v1/me/vaults", get(me::vaults))
        .route("/v1/me/tokens", get(me::tokens))
        .route("/v1/me/tokens/{id}", axum::routing::delete(me::revoke_token))
        .route("/v1/me/grants", get(me::grants))
        .route("/v1/me/grants/{id}", axum::routing::delete(me::revoke_grant))
        .route("/v1/me/clients", get(me::clients))
        .route("/v1/acl", get(acl_api::list).put(acl_api::set).delete(acl_api::remove))
        .route("/v1/acl/access", get(acl_api::access))
        .route("/v1/principals/{principal}/groups", get(acl_api::groups).post(acl_api::change_groups))
        .route("/v1/oauth/grants", get(directory::grants))
        .route("/v1/oauth/grants/{id}", axum::routing::delete(directory::revoke_grant))
        .route("/v1/idp", get(directory::idp).put(directory::set_idp).delete(directory::remove_idp))
        .route("/v1/idp/test", post(directory::test_idp))
        .route("/v1/policies", get(policies::get).put(policies::set))
        .route("/scim/v2/ServiceProviderConfig", get(directory::service_provider_config))
        .route("/scim/v2/ResourceTypes", get(directory::resource_types))
        .route("/scim/v2/{resource}", get(directory::list).post(directory::create))
        .route(
            "/scim/v2/{resource}/{id}",
            get(directory::get).put(directory::replace).patch(directory::patch).delete(directory::delete),
        )
        .route("/v1/vaults", get(sync_api::list_vaults))
        .route("/v1/vaults/{vault}/files", get(sync_api::list_files))
        .route("/v1/vaults/{vault}/file", get(sync_api::download_file))
        .route("/v1/vaults/{vault}/changes", get(sync_api::changes))
        .route("/v1/vaults/{vault}/commit", post(sync_api::commit))
        .merge(
            // A malformed message gets JSON-RPC's own error before the transport sees it.
            Router::new()
                .route_service("/mcp", surface(Surface::Default))
                .route_service("/mcp/triad", surface(Surface::Triad))
                .route_service("/mcp/domain", surface(Surface::Domain))
                .route_service("/mcp/essentials", surface(Surface::Subset(Subset::Essentials)))
                .route_service("/mcp/core", surface(Surface::Subset(Subset::Core)))
                .route_service("/mcp/full", surface(Surface::Subset(Subset::Full)))
                .route_service("/mcp/compat/obsidian", surface(Surface::CompatObsidian))
                .layer(axum::middleware::from_fn(jsonrpc::guard)),
        )
        .layer(RequestBodyLimitLayer::new(limits.body_limit_bytes))
        .layer(axum::extract::DefaultBodyLimit::max(limits.body_limit_bytes));
    let allowed = Arc::new(origin::Allowed::new(&state.mcp.allowed_hosts, &state.mcp.allowed_origins));
    let authenticated = limited
        .merge(uploads)
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), rate_limit::v1))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), v1_audit::v1))
        .fallback(error::not_found)
        .layer(axum::middleware::from_fn_with_state(state.clone(), auth::require_token))
        .layer(axum::middleware::from_fn_with_state(allowed.clone(), origin::guard));
    // What names this server's issuer and resources from the Host: only for a Host it answers
    // to. Forms and registrations are small.
    let authorization_server = Router::new()
        .route(oauth::WELL_KNOWN, get(oauth::metadata))
        .route(&format!("{}/{{*resource}}", oauth::WELL_KNOWN), get(oauth::metadata))
        .route(authorization::METADATA, get(authorization::metadata))
        .route(authorization::OPENID_CONFIGURATION, get(authorization::metadata))
        .route(paths::JWKS, get(authorization::jwks))
        .merge(rate_limit::registrations(
            Router::new().route(paths::REGISTER, post(authorization::register)),
            limits.registrations_per_hour,
        ))
        .merge(rate_limit::registrations(
            Router::new().route("/v1/invitations/accept", post(invitations::accept)),
            limits.registrations_per_hour,
        ))
        .merge(rate_limit::registrations(
            Router::new().route("/v1/signup", post(signup::sign_up)),
            limits.registrations_per_hour,
        ))
        .route(paths::AUTHORIZE, get(authorization::authorize))
        .route(paths::SIGN_IN, get(authorization::sign_in_page).post(authorization::sign_in))
        .route(paths::CALLBACK, get(authorization::callback))
        .route(paths::CONSENT, get(authorization::consent_page).post(authorization::consent))
        .route(paths::TOKEN, post(authorization::token))
        .route(paths::REVOKE, post(authorization::revoke))
        .layer(RequestBodyLimitLayer::new(64 * 1024))
        .layer(axum::middleware::from_fn_with_state(allowed.clone(), origin::host_guard));
    let allowed_console = allowed;
    let open = Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .merge(authorization_server);
    let open = rate_limit::per_ip(open, limits.per_ip_per_minute, limits.per_ip_burst);
    let api = Router::new()
        .merge(open)
        .merge(authenticated)
        .layer(axum::middleware::map_response(error::json_errors))
        .with_state(state.clone());
    // The console calls `api` in process; its own pages are HTML, not the API's JSON errors.
    let (per_minute, burst) = (limits.per_ip_per_minute, limits.per_ip_burst);
    let console = console::routes(state, api.clone(), move |r| rate_limit::per_ip(r, per_minute, burst))
        .layer(axum::middleware::from_fn_with_state(allowed_console, origin::host_guard));
    api.merge(console)
        // Request spans at INFO so the default filter keeps them for trace export.
        .layer(axum::middleware::from_fn(observe::requests))
}

/// What the operators' listener checks and reports.
#[derive(Clone)]
pub struct AdminState {
    pub store: Store,
    pub kv: Arc<Kv>,
    pub blobs: Blobs,
    /// Upper bound for each dependency check in `/readyz`.
    pub check_timeout: Duration,
}

/// The operators' listener (`server.admin_listen`): `/healthz`, `/readyz` and `/metrics`.
pub fn admin_router(state: AdminState) -> Router {
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::admin_readyz))
        .route("/metrics", get(health::metrics))
        .with_state(state)
}

/// The limits every listener holds a connection to, so a client that sends slowly or not at all
/// cannot keep a connection, a worker or an upload slot.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// How long a client may take to send a request's headers, and how long a kept-alive
    /// connection may wait idle for the next request.
    pub header_timeout: Duration,
    /// The longest pause in a request body; past it the body fails, the handler answers and
    /// what it held (an upload's slot) is given back.
    pub body_idle_timeout: Duration,
}

impl ConnectionLimits {
    pub fn from_config(server: &otc_config::ServerConfig) -> Self {
        Self {
            header_timeout: Duration::from_millis(server.header_timeout_ms),
            body_idle_timeout: Duration::from_millis(server.body_idle_timeout_ms),
        }
    }
}

/// Serves `app` on `listener` under `limits` until `shutdown` resolves, then stops accepting,
/// lets in-flight requests finish for up to `grace`, and returns.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
    limits: ConnectionLimits,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    use hyper_util::server::conn::auto::Builder;
    use hyper_util::service::TowerToHyperService;
    use tower::Service;

    // The peer address is what the per-address limit of the open routes counts by.
    let mut make = app.into_make_service_with_connect_info::<std::net::SocketAddr>();
    let mut builder = Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
    builder.http2().timer(TokioTimer::new());
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors or a connection reset before it was taken: wait, go on.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Without TCP_NODELAY small responses wait on Nagle's algorithm (~40 ms a call).
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::warn!(error = %e, "could not set TCP_NODELAY");
        }
        let Ok(service) = make.call(peer).await;
        let service = tower_http::timeout::RequestBodyTimeout::new(service, limits.body_idle_timeout);
        let connection = builder.serve_connection_with_upgrades(TokioIo::new(tcp), TowerToHyperService::new(service));
        let connection = graceful.watch(connection.into_owned());
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    tracing::info!("shutting down: no new connections; draining in-flight requests");
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(grace) => {
            tracing::warn!(grace_secs = grace.as_secs(), "requests still running after the shutdown grace period; exiting anyway");
        }
    }
    Ok(())
}

pub use otc_errors::error_chain;
