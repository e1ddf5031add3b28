//! The authorization server's HTTP surface (`otc_identity` does the work): metadata (RFC 8414,
//! and as OpenID discovery), the JWK Set, registration, `/authorize` and the pages that follow
//! it, the token endpoint and revocation. Served only when `oauth.secret_key` is set.
//!
//! A flow is bound to the browser that began it: its id travels in pages and URLs, and that
//! browser alone holds the flow's secret in an HttpOnly, SameSite=Lax cookie; every step after
//! `/authorize` needs the two to match (a cross-site form post carries no such cookie, and an id
//! seen in a URL is of no use without the secret).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use otc_identity::authorize::{AuthorizeRequest, Refusal};
use otc_identity::flow::Flow;
use otc_identity::{Identity, OAuthError, paths};
use serde_json::Value;

use crate::browser::{flow_secret, same_origin, set_flow_secret};
use crate::{AppState, oauth, pages};

pub const METADATA: &str = "/.well-known/oauth-authorization-server";
pub const OPENID_CONFIGURATION: &str = "/.well-known/openid-configuration";

/// The authorization server, or the answer of a deployment that runs none (404).
fn identity(state: &AppState) -> Result<Arc<Identity>, Box<Response>> {
    state.identity.clone().ok_or_else(|| Box::new(crate::ApiError::not_found().into_response()))
}

/// The issuer: this server's base URL as the client reaches it.
pub fn issuer(state: &AppState, headers: &HeaderMap) -> String {
    oauth::base_url(&state.oauth, headers)
}

/// The resources a token may be bound to: the default MCP endpoint first, each surface, and
/// the server as a whole (its /v1 API).
pub fn resources(issuer: &str) -> Vec<String> {
    let mut out = vec![format!("{issuer}/mcp")];
    out.extend(crate::mcp::SURFACES.iter().map(|s| format!("{issuer}/mcp/{s}")));
    out.push(issuer.to_string());
    out
}

fn oauth_error(err: OAuthError) -> Response {
    let status = StatusCode::from_u16(err.status).unwrap_or(StatusCode::BAD_REQUEST);
    let mut response = (status, Json(err.body())).into_response();
    no_store(&mut response);
    if status == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"obsidian-tc\""));
    }
    response
}

fn no_store(response: &mut Response) {
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response.headers_mut().insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
}

fn redirect(to: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    no_store(&mut response);
    response
}

fn refusal(refusal: Refusal, client: &str) -> Response {
    match refusal {
        Refusal::Page { title, message } => pages::error(StatusCode::BAD_REQUEST, &title, &message),
        Refusal::Retry { flow, message } => pages::sign_in(paths::SIGN_IN, &flow, client, Some(&message)),
        Refusal::Redirect(url) => redirect(url.as_str()),
    }
}

/// A form body: each field once (RFC 6749 §3.2: a repeated parameter is an error).
fn form(body: &Bytes) -> Result<HashMap<String, String>, OAuthError> {
    let mut out = HashMap::new();
    for (k, v) in form_urlencoded::parse(body) {
        if k.contains('\0') || v.contains('\0') {
            return Err(OAuthError::invalid_request(format!("{k} contains a NUL character")));
        }
        if out.insert(k.to_string(), v.to_string()).is_some() {
            return Err(OAuthError::invalid_request(format!("{k} is given more than once")));
        }
    }
    Ok(out)
}

/// The client's HTTP Basic credential (RFC 6749 §2.3.1: each part form-urlencoded).
fn basic(headers: &HeaderMap) -> Result<Option<(String, String)>, OAuthError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else { return Ok(None) };
    let bad = || OAuthError::invalid_client("the Authorization header is not HTTP Basic client credentials");
    let text = value.to_str().map_err(|_| bad())?;
    let (scheme, encoded) = text.split_once(' ').ok_or_else(bad)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(bad());
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).map_err(|_| bad())?;
    let decoded = String::from_utf8(decoded).map_err(|_| bad())?;
    let (id, secret) = decoded.split_once(':').ok_or_else(bad)?;
    let decode = |s: &str| form_urlencoded::parse(format!("v={s}").as_bytes()).next().map(|(_, v)| v.to_string());
    Ok(Some((decode(id).ok_or_else(bad)?, decode(secret).ok_or_else(bad)?)))
}

/// The flow `id` names, when it is still going and this browser began it (its cookie holds the
/// flow's secret); otherwise the page that says to start again.
async fn browser_flow(identity: &Identity, headers: &HeaderMap, id: &str) -> Result<Flow, Box<Response>> {
    match identity.flow_for_browser(id, flow_secret(headers).as_deref()).await {
        Ok(Some(flow)) => Ok(flow),
        Ok(None) => Err(Box::new(other_browser())),
        Err(e) => Err(Box::new(refusal(e.into(), ""))),
    }
}

fn other_browser() -> Response {
    pages::error(
        StatusCode::BAD_REQUEST,
        "Start again in this browser",
        "This sign-in was started in another browser or has expired. Start again from the application.",
    )
}

/// `GET /.well-known/oauth-authorization-server` and `/.well-known/openid-configuration`.
pub async fn metadata(State(state): State<AppState>, headers: HeaderMap, uri: Uri) -> Response {
    let identity = match identity(&state) {
        Ok(i) => i,
        Err(r) => return *r,
    };
    let issuer = issuer(&state, &headers);
    let doc = identity.metadata(&issuer, &crate::oauth::scopes(&state), uri.path() == OPENID_CONFIGURATION);
    Json(doc).into_response()
}

/// `GET /oauth/jwks`.
pub async fn jwks(State(state): State<AppState>) -> Response {
    let identity = match identity(&state) {
        Ok(i) => i,
        Err(r) => return *r,
    };
    match identity.jwks().await {
        Ok(set) => Json(set).into_response(),
        Err(e) => oauth_error(e.into()),
    }
}

/// `POST /oauth/register` (RFC 7591).
pub async fn register(State(state): State<AppState>, body: Bytes) -> Response {
    let identity = match identity(&state) {
        Ok(i) => i,
        Err(r) => return *r,
    };
    let request: Value = match serde_json::from_slice::<Value>(&body) {
        // Postgres keeps no NUL in text or JSON.
        Ok(v) if v.to_string().contains("\\u0000") => {
            return oauth_error(OAuthError::invalid_client_metadata("the registration contains a NUL character"));
        }
        Ok(v) => v,
        Err(_) => return oauth_error(OAuthError::invalid_client_metadata("the body must be a JSON object")),
    };
    match identity.register(&request).await {
        Ok(answer) => {
            let mut response = (StatusCode::CREATED, Json(answer)).into_response();
            no_store(&mut response);
            response
        }
        Err(e) => oauth_error(e),
    }
}

/// `GET /oauth/authorize`: checks the request and sends the person to sign in (straight to
/// their identity provider when the client gave an email as `login_hint`).
pub async fn authorize(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(request): Query<AuthorizeRequest>,
) -> Response {
    let identity = match identity(&state) {
        Ok(i) => i,
        Err(r) => return *r,
    };
    let issuer = issuer(&state, &headers);
    let hint = request.login_hint.clone().filter(|h| h.contains('@'));
    let (flow, secret) = match identity.begin(&issuer, request, &resources(&issuer)).await {
        Ok(started) => started,
        Err(r) => return refusal(r, ""),
    };
    let client = flow.client_name.clone().unwrap_or_else(|| flow.client_id.clone());
    let mut response = match hint {
        Some(email) => match identity.sign_in(flow.clone(), &email).await {
            Ok(url) => redirect(url.as_str()),
            Err(Refusal::Retry { .. }) => redirect(&format!("{}?flow={}", paths::SIGN_IN, flow.id)),
            Err(r) => refusal(r, &client),
        },
        None => redirect(&format!("{}?flow={}", paths::SIGN_IN, flow.id)),
    };
    set_flow_secret(&mut response, &issuer, &secret, 600);
    response
}

#[derive(serde::Deserialize)]
pub struct FlowQuery {
    flow: String,
}

/// `GET /oauth/signin?flow=…`: the work-email form.
pub async fn sign_in_page(State(state): State<AppState>, headers: HeaderMap, Query(q): Query<FlowQuery>) -> Response {
    let identity = match identity(&state) {
        Ok(i) => i,
        Err(r) => return *r,
    };
    match browser_flow(&identity, &headers, &q.flow).await {
        Ok(flow) => {
            let client = flow.client_name.clone().unwrap_or(flow.client_id.clone());
            pages::sign_in(paths::SIGN_IN, &flow.id, &client, None)
        }
        Err(page) => *page,
    }
}

/// A form our own pages posted: its fields and the flow it continues, when the post came from
/// our origin and the browser that began the flow; otherwise the page that says to start again.
async fn posted_flow(
    state: &AppState,
    identity: &Identity,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<(HashMap<String, String>, Flow), Box<Response>> {
    let fields = form(body).map_err(|_| Box::new(other_browser()))?;
    if !same_origin(headers, &issuer(state, headers)) {
        return Err(Box::new(other_browser()));
    }
    let flow = browser_flow(identity, headers, fields.get("flow").map(String::as_str).unwrap_or("")).await?;
    Ok((fields, flow))
}

/// `POST /oauth/signin`: the email's domain picks the tenant; off to its identity provider.
pub async fn sign_in(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let identity = match identity(&state) {
        Ok(i) => i,
        Err(r) => return *r,
    };
    let (fields, flow) = match posted_flow(&state, &identity, &headers, &body).await {
        Ok(posted) => posted,
        Err(page) => return *page,
    };
    let client = flow.client_name.clone().unwrap_or_else(|| flow.client_id.clone());
    match identity.sign_in(flow, fields.get("email").map(String::as_str).unwrap_or("")).await {
        Ok(url) => redirect(url.as_str()),
        Err(r) => refusal(r, &client),
    }
}

#[derive(serde::Deserialize)]
pub struct CallbackQuery {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
}

/// `GET /oauth/callback`: back from the identity provider.
pub async fn callback(State(state): State<AppState>, headers: HeaderMap, Query(q): Query<CallbackQuery>) -> Response {
    let identity = match identity(&state) {
        Ok(i) => i,
        Err(r) => return *r,
    };
    let flow = match browser_flow(&identity, &headers, q.state.as_deref().unwrap_or("")).await {
        Ok(flow) => flow,
        Err(page) => return *page,
    };
    match identity.callback(flow, q.code.as_deref(), q.error.as_deref()).await {
        // The console is this server itself: no code, no consent; the person's session starts.
        Ok(flow) if flow.is_console() => crate::console::session::signed_in(&state, &headers, &identity, flow).await,
        Ok(flow) => redirect(&format!("{}?flow={}", paths::CONSENT, flow.id)),
        Err(r) => refusal(r, ""),
    }
}

/// `GET /oauth/consent?flow=…`: what the client asks for.
pub async fn consent_page(State(state): State<AppState>, headers: HeaderMap, Query(q): Query<FlowQuery>) -> Response {
    let identity = match identity(&state) {
        Ok(i) => i,
        Err(r) => return *r,
    };
    let flow = match browser_flow(&identity, &headers, &q.flow).await {
        Ok(flow) => flow,
        Err(page) => return *page,
    };
    let Some(user) = &flow.user else { return other_browser() };
    let host = url::Url::parse(&flow.redirect_uri).ok().and_then(|u| u.host_str().map(str::to_string));
    pages::consent(&pages::Consent {
        action: paths::CONSENT,
        flow: &flow.id,
        client_name: flow.client_name.as_deref().unwrap_or(&flow.client_id),
        client_id: &flow.client_id,
        redirect_host: host.as_deref().unwrap_or(&flow.redirect_uri),
        tenant: flow.tenant_name.as_deref().unwrap_or("your organisation"),
        person: &user.name,
        scopes: otc_identity::authorize::describe_scopes(&user.scopes),
    })
}

/// `POST /oauth/consent`: allow or deny; back to the client either way.
pub async fn consent(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let identity = match identity(&state) {
        Ok(i) => i,
        Err(r) => return *r,
    };
    let (fields, flow) = match posted_flow(&state, &identity, &headers, &body).await {
        Ok(posted) => posted,
        Err(page) => return *page,
    };
    let allow = fields.get("decision").map(String::as_str) == Some("allow");
    match identity.consent(flow, allow).await {
        Ok(url) => redirect(url.as_str()),
        Err(r) => refusal(r, ""),
    }
}

/// `POST /oauth/token`.
pub async fn token(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let identity = match identity(&state) {
        Ok(i) => i,
        Err(r) => return *r,
    };
    let issuer = issuer(&state, &headers);
    let answer = async {
        let fields = form(&body)?;
        let basic = basic(&headers)?;
        identity.token(&issuer, &resources(&issuer), &fields, basic).await
    };
    match answer.await {
        Ok(answer) => {
            let mut response = Json(answer).into_response();
            no_store(&mut response);
            response
        }
        Err(e) => oauth_error(e),
    }
}

/// `POST /oauth/revoke` (RFC 7009): 200 whether or not the token was known.
pub async fn revoke(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let identity = match identity(&state) {
        Ok(i) => i,
        Err(r) => return *r,
    };
    let answer = async {
        let fields = form(&body)?;
        let basic = basic(&headers)?;
        identity.revoke(&fields, basic).await
    };
    match answer.await {
        Ok(()) => {
            let mut response = StatusCode::OK.into_response();
            no_store(&mut response);
            response
        }
        Err(e) => oauth_error(e),
    }
}
