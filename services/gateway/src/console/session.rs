//! Console sessions: who a console request is for, and how a person gets in and out.
//!
//! - A session is an API token of the person's (`console_session`, expiring after
//!   `console.session_hours`) kept in an HttpOnly, SameSite=Lax cookie scoped to `/console`
//!   (Secure whenever the console is served over HTTPS). Every page sends it as the bearer
//!   credential of its calls to the API, so revoking it (sign-out, "sign out everywhere", an
//!   admin revoking the token, the directory deactivating the person) ends the session on every
//!   gateway at once.
//! - Sign-in goes through the tenant's identity provider exactly as an MCP client's does (the
//!   work email picks the tenant), or through an invitation (a tenant's first admin, before any
//!   provider is set up).
//! - Every form carries a CSRF token derived from the session's token (a page on another site
//!   can neither read the cookie nor compute it) and is refused when the browser says it came
//!   from another origin.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use base64::Engine;
use otc_identity::authorize::Refusal;
use otc_identity::flow::Flow;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::api::{Call, Failure, Origin, Peer};
use super::{Console, layout};
use crate::AppState;
use crate::browser::same_origin;
use crate::whoami::WhoAmI;

/// A signed-in console request: the person, their token and what every form must carry.
pub struct Session {
    pub token: String,
    pub csrf: String,
    pub me: WhoAmI,
    pub origin: Origin,
    /// A message the last action left for this page (shown once: the page clears it).
    pub flash: Option<layout::Flash>,
    /// The console's base URL as the browser reached it.
    pub base: String,
}

impl Session {
    /// Whether the person holds `scope` (the pages offer only what the API would let them do).
    pub fn can(&self, scope: &str) -> bool {
        let Ok(wanted) = scope.parse::<otc_auth::Scope>() else { return false };
        self.me.vault.is_none()
            && self
                .me
                .scopes
                .iter()
                .filter_map(|s| s.parse::<otc_auth::Scope>().ok())
                .any(|s| s.grants(wanted.as_str()))
    }
}

/// The form's CSRF token for a session token: a digest only the cookie's holder can compute.
pub fn csrf_of(token: &str) -> String {
    let digest = Sha256::digest(format!("obsidian-tc console csrf\0{token}").as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
}

/// One of the console's cookies: over https a `__Host-` name on `/`, Secure (no other host,
/// subdomain or path can set or shadow it); over plain http (a developer's loopback) a plain
/// name on `/console`.
struct Cookie(&'static str);

const SESSION: Cookie = Cookie("otc_console");
const FLASH: Cookie = Cookie("otc_console_flash");

impl Cookie {
    fn name(&self, base: &str) -> String {
        if base.starts_with("https://") { format!("__Host-{}", self.0) } else { self.0.to_string() }
    }

    fn read(&self, headers: &HeaderMap, base: &str) -> Option<String> {
        crate::browser::cookie(headers, &self.name(base))
    }

    /// Sets it to `value` for `max_age_secs` (0 clears it).
    fn set(&self, response: &mut Response, base: &str, value: &str, max_age_secs: u64) {
        let scope = if base.starts_with("https://") { "Path=/; Secure" } else { "Path=/console" };
        let text = format!("{}={value}; {scope}; HttpOnly; SameSite=Lax; Max-Age={max_age_secs}", self.name(base));
        if let Ok(value) = HeaderValue::from_str(&text) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
}

/// Leaves `flash` for the next page the browser shows (a minute at most).
pub fn set_flash(response: &mut Response, base: &str, flash: &layout::Flash) {
    let text = serde_json::to_vec(flash).expect("a flash serializes");
    FLASH.set(response, base, &base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text), 60);
}

/// Clears the message once a page has shown it.
pub fn clear_flash(response: &mut Response, base: &str) {
    FLASH.set(response, base, "", 0);
}

fn take_flash(headers: &HeaderMap, base: &str) -> Option<layout::Flash> {
    let text = FLASH.read(headers, base)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The console's own URL base (what the browser reached).
pub fn base(state: &AppState, headers: &HeaderMap) -> String {
    crate::oauth::base_url(&state.oauth, headers)
}

/// The signed-in person behind a request, or the answer that sends them to sign in.
pub async fn load(console: &Console, headers: &HeaderMap, peer: Peer) -> Result<Session, Response> {
    let base = base(&console.state, headers);
    let Some(token) = SESSION.read(headers, &base) else { return Err(to_sign_in(&base, None)) };
    let origin = Origin::of(headers, peer);
    match console.api.json::<WhoAmI>(&origin, &token, Call::get("/v1/whoami")).await {
        Ok(me) => {
            let csrf = csrf_of(&token);
            let flash = take_flash(headers, &base);
            Ok(Session { token, csrf, me, origin, flash, base })
        }
        Err(f) if f.status == StatusCode::UNAUTHORIZED => {
            let mut response = to_sign_in(&base, Some("Your session has ended. Sign in again."));
            SESSION.set(&mut response, &base, "", 0);
            Err(response)
        }
        Err(f) => Err(layout::failure_page(&f)),
    }
}

fn to_sign_in(base: &str, message: Option<&str>) -> Response {
    let mut response = layout::redirect("/console/sign-in");
    if let Some(message) = message {
        set_flash(&mut response, base, &layout::Flash::error(message));
    }
    response
}

/// A form's fields (each name may repeat: checkboxes). A NUL anywhere refuses the form.
pub struct Form(HashMap<String, Vec<String>>);

impl Form {
    pub fn parse(body: &Bytes) -> Option<Form> {
        let mut fields: HashMap<String, Vec<String>> = HashMap::new();
        for (k, v) in form_urlencoded::parse(body) {
            if k.contains('\0') || v.contains('\0') {
                return None;
            }
            fields.entry(k.into_owned()).or_default().push(v.into_owned());
        }
        Some(Form(fields))
    }

    /// The field's value, trimmed; None when missing or empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(|v| v.first()).map(|v| v.trim()).filter(|v| !v.is_empty())
    }

    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .get(name)
            .map(|v| v.iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
            .unwrap_or_default()
    }

    pub fn checked(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

/// A posted form of a signed-in person: their session and its fields, when it came from our
/// own pages (this origin, and the session's CSRF token); otherwise the refusal.
pub async fn posted(
    console: &Console,
    headers: &HeaderMap,
    peer: Peer,
    body: &Bytes,
) -> Result<(Session, Form), Response> {
    let session = load(console, headers, peer).await?;
    let refused = || {
        layout::refusal_page(
            StatusCode::FORBIDDEN,
            "This form cannot be accepted",
            "It did not come from this console's own page, or the page is out of date. Go back, reload the page and try again.",
        )
    };
    if !same_origin(headers, &base(&console.state, headers)) {
        return Err(refused());
    }
    let form = Form::parse(body).ok_or_else(refused)?;
    let sent = form.get("csrf").unwrap_or("");
    if !constant_time_eq(sent.as_bytes(), session.csrf.as_bytes()) {
        return Err(refused());
    }
    Ok((session, form))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[derive(Deserialize)]
pub struct SignInQuery {
    #[serde(default)]
    error: Option<String>,
}

/// What an error the authorization server sent back to the console means to a person: fixed
/// texts by code (a link anyone can craft carries the description, so it is not shown).
fn sign_in_error(code: &str) -> &'static str {
    match code {
        "access_denied" => {
            "Your organisation did not let you in: your account may lack the groups the console needs, or the sign-in was refused. Ask your administrator."
        }
        "temporarily_unavailable" | "server_error" => "The sign-in could not finish. Try again in a moment.",
        _ => "The sign-in did not finish. Try again.",
    }
}

/// `GET /console/sign-in`: the work-email form (and where a failed sign-in comes back to).
pub async fn sign_in_page(
    State(console): State<Console>,
    headers: HeaderMap,
    Query(q): Query<SignInQuery>,
) -> Response {
    let flash = take_flash(&headers, &base(&console.state, &headers));
    let message = q.error.as_deref().map(|code| layout::Flash::error(sign_in_error(code))).or_else(|| flash.clone());
    let mut page = layout::sign_in(message.as_ref(), None, console.state.identity.is_some());
    if flash.is_some() {
        clear_flash(&mut page, &base(&console.state, &headers));
    }
    page
}

/// `POST /console/sign-in` `{email}`: off to the person's identity provider.
pub async fn sign_in(State(console): State<Console>, headers: HeaderMap, body: Bytes) -> Response {
    let state = &console.state;
    let Some(identity) = state.identity.clone() else {
        return layout::sign_in(
            Some(&layout::Flash::error(
                "Sign-in through an identity provider is not set up on this server. Use your invitation.",
            )),
            None,
            false,
        );
    };
    let base = base(state, &headers);
    let Some(form) = Form::parse(&body).filter(|_| same_origin(&headers, &base)) else {
        return layout::sign_in(Some(&layout::Flash::error("Start again from this page.")), None, true);
    };
    let email = form.get("email").unwrap_or("").to_string();
    let scopes = crate::oauth::scopes(state);
    let (flow, secret) = match identity.begin_console(&base, scopes).await {
        Ok(started) => started,
        Err(e) => {
            tracing::error!(error = %otc_errors::error_chain(&e), "could not start a console sign-in");
            return layout::sign_in(
                Some(&layout::Flash::error("The sign-in could not start. Try again in a moment.")),
                Some(&email),
                true,
            );
        }
    };
    let mut response = match identity.sign_in(flow, &email).await {
        Ok(url) => layout::redirect(url.as_str()),
        Err(Refusal::Retry { message, .. }) => {
            return layout::sign_in(Some(&layout::Flash::error(message)), Some(&email), true);
        }
        Err(Refusal::Page { title, message }) => {
            return layout::refusal_page(StatusCode::BAD_REQUEST, &title, &message);
        }
        Err(Refusal::Redirect(url)) => return layout::redirect(url.as_str()),
    };
    crate::browser::set_flow_secret(&mut response, &base, &secret, 600);
    response
}

/// The provider vouched for the person of a console flow (`/oauth/callback` hands it here):
/// their session starts, with the scopes their groups allow.
pub async fn signed_in(
    state: &AppState,
    headers: &HeaderMap,
    identity: &otc_identity::Identity,
    flow: Flow,
) -> Response {
    let who = match identity.finish_console(flow).await {
        Ok(who) => who,
        Err(Refusal::Page { title, message }) => {
            return layout::refusal_page(StatusCode::BAD_REQUEST, &title, &message);
        }
        Err(Refusal::Retry { message, .. }) => {
            return layout::sign_in(Some(&layout::Flash::error(message)), None, true);
        }
        Err(Refusal::Redirect(url)) => return layout::redirect(url.as_str()),
    };
    let scopes: Vec<otc_auth::Scope> = who.scopes.iter().filter_map(|s| s.parse().ok()).collect();
    start(state, headers, (who.tenant, who.principal, &who.name), scopes, layout::redirect("/console")).await
}

/// Starts a session for `principal` with `scopes` and answers `then` with its cookie.
pub async fn start(
    state: &AppState,
    headers: &HeaderMap,
    (tenant, principal, name): (uuid::Uuid, uuid::Uuid, &str),
    scopes: Vec<otc_auth::Scope>,
    mut then: Response,
) -> Response {
    let ttl = state.console.session;
    let expires = chrono::Utc::now() + chrono::Duration::from_std(ttl).unwrap_or_else(|_| chrono::Duration::hours(8));
    let issued = async {
        let mut tx = state.store.begin(tenant).await?;
        let issued = tx.issue_console_session(principal, scopes, expires).await?;
        tx.commit().await?;
        Ok::<_, otc_store::StoreError>(issued)
    };
    match issued.await {
        Ok(issued) => {
            crate::v1_audit::record_console(state, tenant, principal, name, "console sign-in");
            SESSION.set(&mut then, &base(state, headers), &issued.plaintext, ttl.as_secs());
            then
        }
        Err(e) => {
            tracing::error!(error = %otc_errors::error_chain(&e), "could not start a console session");
            layout::failure_page(&Failure {
                status: StatusCode::SERVICE_UNAVAILABLE,
                code: "service_unavailable".into(),
                message: "The session could not be started. Try again in a moment.".into(),
            })
        }
    }
}

/// `POST /console/sign-out`: ends this session (its token is revoked on every gateway).
pub async fn sign_out(State(console): State<Console>, headers: HeaderMap, peer: Peer, body: Bytes) -> Response {
    end(&console, &headers, peer, &body, false).await
}

/// `POST /console/sign-out-everywhere`: ends every console session of the person.
pub async fn sign_out_everywhere(
    State(console): State<Console>,
    headers: HeaderMap,
    peer: Peer,
    body: Bytes,
) -> Response {
    end(&console, &headers, peer, &body, true).await
}

async fn end(console: &Console, headers: &HeaderMap, peer: Peer, body: &Bytes, everywhere: bool) -> Response {
    let (session, _) = match posted(console, headers, peer, body).await {
        Ok(posted) => posted,
        Err(refused) => return refused,
    };
    let state = &console.state;
    let (tenant, principal, token) = (session.me.tenant.id, session.me.principal.id, session.me.token_id);
    let ended = async {
        let mut tx = state.store.begin(tenant).await?;
        let count = if everywhere {
            tx.end_console_sessions(principal).await?
        } else {
            u64::from(tx.is_console_session(token).await?)
        };
        tx.commit().await?;
        Ok::<_, otc_store::StoreError>(count)
    };
    let ended = match ended.await {
        // One session: revoked through the API (`DELETE /v1/me/tokens/{id}`, audited there).
        Ok(1) if !everywhere => {
            let call = Call::send(Method::DELETE, format!("/v1/me/tokens/{token}"), None);
            match console.api.json::<serde_json::Value>(&session.origin, &session.token, call).await {
                Ok(_) => Ok(1),
                Err(f) => return layout::failure_page(&f),
            }
        }
        Ok(count) => {
            if everywhere {
                let name = &session.me.principal.name;
                crate::v1_audit::record_console(state, tenant, principal, name, "console sign-out everywhere");
            }
            Ok(count)
        }
        Err(e) => Err(e),
    };
    let base = base(state, headers);
    match ended {
        Ok(count) => {
            crate::auth_cache::announce_revoked(&state.kv, tenant).await;
            let text = if everywhere {
                format!("Signed out of {count} console session{} on every device.", if count == 1 { "" } else { "s" })
            } else {
                "Signed out.".to_string()
            };
            let mut response = layout::redirect("/console/sign-in");
            SESSION.set(&mut response, &base, "", 0);
            set_flash(&mut response, &base, &layout::Flash::ok(text));
            response
        }
        Err(e) => {
            tracing::error!(error = %otc_errors::error_chain(&e), "could not end a console session");
            layout::failure_page(&Failure {
                status: StatusCode::SERVICE_UNAVAILABLE,
                code: "service_unavailable".into(),
                message: "Signing out did not finish. Try again in a moment.".into(),
            })
        }
    }
}

#[derive(Deserialize)]
pub struct InvitationQuery {
    #[serde(default)]
    code: Option<String>,
}

/// `GET /console/invitation[?code=...]`: the page a tenant's first admin opens from their
/// invitation: the code (filled in from the link) and a button to accept it.
pub async fn invitation_page(Query(q): Query<InvitationQuery>) -> Response {
    layout::invitation(q.code.as_deref(), None)
}

/// The answer of `POST /v1/invitations/accept`.
#[derive(Deserialize)]
struct Accepted {
    tenant: String,
    token: String,
    scopes: Vec<String>,
    next: Vec<String>,
}

/// `POST /console/invitation` `{code}`: the API accepts the invitation (making the admin's API
/// token, shown once on the answer page), and the person's console session starts.
pub async fn accept_invitation(
    State(console): State<Console>,
    headers: HeaderMap,
    peer: Peer,
    body: Bytes,
) -> Response {
    let state = &console.state;
    let base = base(state, &headers);
    let Some(form) = Form::parse(&body).filter(|_| same_origin(&headers, &base)) else {
        return layout::invitation(None, Some("Start again from this page."));
    };
    let code = form.get("code").unwrap_or("").to_string();
    let origin = Origin::of(&headers, peer);
    let call = Call::send(Method::POST, "/v1/invitations/accept", Some(serde_json::json!({"code": code})));
    let accepted: Accepted = match console.api.json_open(&origin, call).await {
        Ok(accepted) => accepted,
        Err(f) => return layout::invitation(Some(&code), Some(&f.message)),
    };
    // Who the new token speaks for: the session is theirs, with the invitation's scopes.
    let me: WhoAmI = match console.api.json(&origin, &accepted.token, Call::get("/v1/whoami")).await {
        Ok(me) => me,
        Err(f) => return layout::failure_page(&f),
    };
    let scopes = accepted.scopes.iter().filter_map(|s| s.parse().ok()).collect();
    let welcome = layout::welcome(&accepted.tenant, &accepted.token, &accepted.next);
    start(state, &headers, (me.tenant.id, me.principal.id, &me.principal.name), scopes, welcome).await
}
