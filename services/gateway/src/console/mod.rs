//! The web console at `/console`: server-rendered pages for a tenant's admins and members, on top
//! of the HTTP API. A page reads and changes nothing itself: each one calls the API in process
//! with the person's console session as the bearer credential ([`api`]), so what a page may do
//! is what the API lets that person do, and every action is scoped, audited, rate-limited and
//! idempotent as the API's own. Another tenant's ids in a URL answer as missing ones, because
//! the API answers them so.
//!
//! - [`session`]: sign-in (the tenant's identity provider, or an invitation), the session
//!   cookie, CSRF, sign-out and sign-out everywhere.
//! - [`layout`]: the page shell, navigation by scope, messages and the security headers.
//! - one file per page: [`overview`], [`vaults`], [`members`], [`access`], [`tokens`],
//!   [`audit`], [`settings`], [`connect`].

pub mod access;
pub mod api;
pub mod audit;
pub mod connect;
pub mod layout;
pub mod members;
pub mod overview;
pub mod session;
pub mod settings;
pub mod tokens;
pub mod vaults;

use std::time::Duration;

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tower_http::limit::RequestBodyLimitLayer;

use crate::AppState;

/// The console's settings.
#[derive(Debug, Clone, Copy)]
pub struct ConsoleSettings {
    /// How long a console session lasts (`console.session_hours`).
    pub session: Duration,
}

/// What every console handler reaches: the gateway's state and the API it calls.
#[derive(Clone)]
pub struct Console {
    pub state: AppState,
    pub api: api::Api,
}

/// The largest form the console takes (an identity provider's settings are the longest).
const FORM_LIMIT_BYTES: usize = 64 * 1024;

/// The console's routes, calling `api` (the router of everything else the gateway serves).
/// `open` wraps the routes a person reaches before signing in (the per-address limit).
pub fn routes(state: AppState, api: Router, open: impl FnOnce(Router<Console>) -> Router<Console>) -> Router {
    let console = Console { state, api: api::Api::new(api) };
    let before_sign_in = open(
        Router::new()
            .route("/console/sign-in", get(session::sign_in_page).post(session::sign_in))
            .route("/console/invitation", get(session::invitation_page).post(session::accept_invitation)),
    );
    Router::new()
        .route("/console", get(overview::page))
        .route("/console/assets/console.css", get(stylesheet))
        .route("/console/assets/console.js", get(script))
        .route("/console/sign-out", post(session::sign_out))
        .route("/console/sign-out-everywhere", post(session::sign_out_everywhere))
        .route("/console/vaults", get(vaults::page).post(vaults::create))
        .route("/console/vaults/{vault}/rename", post(vaults::rename))
        .route("/console/vaults/{vault}/delete", post(vaults::delete))
        .route("/console/vaults/{vault}/restore", post(vaults::restore))
        .route("/console/vaults/{vault}/export", get(vaults::export))
        .route("/console/members", get(members::page))
        .route("/console/members/{principal}", get(members::member).post(members::change_groups))
        .route("/console/access", get(access::page).post(access::set_rule))
        .route("/console/access/remove", post(access::remove_rule))
        .route("/console/tokens", get(tokens::page).post(tokens::create))
        .route("/console/tokens/{id}/revoke", post(tokens::revoke))
        .route("/console/grants/{id}/revoke", post(tokens::revoke_grant))
        .route("/console/audit", get(audit::page))
        .route("/console/audit/export", get(audit::export))
        .route("/console/settings", get(settings::page))
        .route("/console/settings/idp", post(settings::set_idp))
        .route("/console/settings/idp/test", post(settings::test_idp))
        .route("/console/settings/domains", post(settings::claim_domain))
        .route("/console/settings/domains/{domain}/verify", post(settings::verify_domain))
        .route("/console/settings/domains/{domain}/remove", post(settings::remove_domain))
        .route("/console/settings/policies", post(settings::set_policies))
        .route("/console/settings/chat", post(settings::set_chat))
        .route("/console/settings/chat/remove", post(settings::remove_chat))
        .route("/console/connect", get(connect::page))
        .route("/console/{*rest}", get(missing).post(missing))
        .merge(before_sign_in)
        .with_state(console)
        .layer(RequestBodyLimitLayer::new(FORM_LIMIT_BYTES))
}

/// Every route the console serves, for the HTTP contract (method, path).
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/console"),
    ("GET", "/console/assets/console.css"),
    ("GET", "/console/assets/console.js"),
    ("GET", "/console/sign-in"),
    ("POST", "/console/sign-in"),
    ("GET", "/console/invitation"),
    ("POST", "/console/invitation"),
    ("POST", "/console/sign-out"),
    ("POST", "/console/sign-out-everywhere"),
    ("GET", "/console/vaults"),
    ("POST", "/console/vaults"),
    ("POST", "/console/vaults/{vault}/rename"),
    ("POST", "/console/vaults/{vault}/delete"),
    ("POST", "/console/vaults/{vault}/restore"),
    ("GET", "/console/vaults/{vault}/export"),
    ("GET", "/console/members"),
    ("GET", "/console/members/{principal}"),
    ("POST", "/console/members/{principal}"),
    ("GET", "/console/access"),
    ("POST", "/console/access"),
    ("POST", "/console/access/remove"),
    ("GET", "/console/tokens"),
    ("POST", "/console/tokens"),
    ("POST", "/console/tokens/{id}/revoke"),
    ("POST", "/console/grants/{id}/revoke"),
    ("GET", "/console/audit"),
    ("GET", "/console/audit/export"),
    ("GET", "/console/settings"),
    ("POST", "/console/settings/idp"),
    ("POST", "/console/settings/idp/test"),
    ("POST", "/console/settings/domains"),
    ("POST", "/console/settings/domains/{domain}/verify"),
    ("POST", "/console/settings/domains/{domain}/remove"),
    ("POST", "/console/settings/policies"),
    ("POST", "/console/settings/chat"),
    ("POST", "/console/settings/chat/remove"),
    ("GET", "/console/connect"),
];

async fn missing() -> Response {
    layout::not_found()
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

async fn stylesheet() -> Response {
    asset("text/css; charset=utf-8", include_str!("assets/console.css"))
}

async fn script() -> Response {
    asset("text/javascript; charset=utf-8", include_str!("assets/console.js"))
}

/// What a posted form's API call means when it fails with "missing": a thing the URL named
/// (another tenant's included) answers the not-found page; one the person typed in a field is
/// said in the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    Page,
    Message,
}

/// Runs the API call a posted form asks for (`build` reads the form; an error there is said
/// without calling anything), with the form's idempotency key, then goes back to `back` with
/// what happened (`done` words a success).
pub async fn perform(
    console: &Console,
    headers: &axum::http::HeaderMap,
    peer: api::Peer,
    body: &axum::body::Bytes,
    back: &str,
    missing: Missing,
    build: impl FnOnce(&session::Session, &session::Form) -> Result<api::Call, layout::Flash>,
    done: impl FnOnce(&serde_json::Value) -> layout::Flash,
) -> Response {
    let (session, form) = match session::posted(console, headers, peer, body).await {
        Ok(posted) => posted,
        Err(refused) => return refused,
    };
    let flash = match build(&session, &form) {
        Err(flash) => flash,
        Ok(mut call) => {
            call.key = form.get("key").map(str::to_string);
            match console.api.json::<serde_json::Value>(&session.origin, &session.token, call).await {
                Ok(answer) => done(&answer),
                Err(f) if f.is_missing() && missing == Missing::Page => return layout::not_found(),
                Err(f) => layout::Flash::failed(&f),
            }
        }
    };
    let mut response = layout::redirect(back);
    session::set_flash(&mut response, &session::base(&console.state, headers), &flash);
    response
}

/// The signed-in person of a page request, or the answer that sends them to sign in.
macro_rules! signed_in {
    ($console:expr, $headers:expr, $peer:expr) => {
        match $crate::console::session::load(&$console, &$headers, $peer).await {
            Ok(session) => session,
            Err(response) => return response,
        }
    };
}
pub(crate) use signed_in;
