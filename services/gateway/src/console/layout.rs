//! The console's page shell and the pieces every page shares: the header and navigation (only
//! what the person's scopes let them use), one message left by the last action, forms that carry
//! their CSRF token and idempotency key, and the headers every page is answered with (a strict
//! Content-Security-Policy: no inline script or style, nothing from elsewhere, no framing).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};
use serde::{Deserialize, Serialize};

use super::api::Failure;
use super::session::Session;
use crate::scopes;

/// What the last action left to say, shown once on the next page.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Flash {
    pub ok: bool,
    pub text: String,
    /// A deleted vault the message offers to restore (an Undo button). Only the id travels in
    /// the cookie; the form's action is made here, so a planted cookie cannot point it anywhere.
    #[serde(default)]
    pub undo_delete: Option<uuid::Uuid>,
}

impl Flash {
    pub fn ok(text: impl Into<String>) -> Self {
        Flash { ok: true, text: text.into(), undo_delete: None }
    }

    pub fn error(text: impl Into<String>) -> Self {
        Flash { ok: false, text: text.into(), undo_delete: None }
    }

    /// What an API refusal says, with its code.
    pub fn failed(failure: &Failure) -> Self {
        Flash::error(format!("{} ({})", failure.message, failure.code))
    }
}

/// The pages of the navigation, each shown to whoever holds one of its scopes (None: everyone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    Overview,
    Vaults,
    Members,
    Access,
    Tokens,
    Audit,
    Settings,
    Connect,
}

impl Nav {
    const ALL: [Nav; 8] =
        [Nav::Overview, Nav::Vaults, Nav::Members, Nav::Access, Nav::Tokens, Nav::Audit, Nav::Settings, Nav::Connect];

    fn label(self) -> &'static str {
        match self {
            Nav::Overview => "Overview",
            Nav::Vaults => "Vaults",
            Nav::Members => "Members",
            Nav::Access => "Folder access",
            Nav::Tokens => "Tokens",
            Nav::Audit => "Audit trail",
            Nav::Settings => "Settings",
            Nav::Connect => "Connect a client",
        }
    }

    fn href(self) -> &'static str {
        match self {
            Nav::Overview => "/console",
            Nav::Vaults => "/console/vaults",
            Nav::Members => "/console/members",
            Nav::Access => "/console/access",
            Nav::Tokens => "/console/tokens",
            Nav::Audit => "/console/audit",
            Nav::Settings => "/console/settings",
            Nav::Connect => "/console/connect",
        }
    }

    /// The scopes that open the page (any one of them); empty: every signed-in person.
    pub fn scopes(self) -> &'static [&'static str] {
        match self {
            Nav::Overview | Nav::Tokens | Nav::Connect => &[],
            Nav::Vaults => &[scopes::VAULTS],
            Nav::Members => &[scopes::MEMBERS],
            Nav::Access => &["admin:acl"],
            Nav::Audit => &[scopes::AUDIT],
            Nav::Settings => &[scopes::SSO, scopes::DOMAINS, scopes::CONFIRM, scopes::CHAT],
        }
    }

    pub fn open_to(self, session: &Session) -> bool {
        let scopes = self.scopes();
        scopes.is_empty() || scopes.iter().any(|s| session.can(s))
    }
}

/// The headers every console answer carries.
fn secured(mut response: Response, leave_for_idp: bool) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // Nothing to another site (an invitation's code is in its URL); our own origin to ours, or a
    // browser's form post would say `Origin: null` and be refused as another origin's.
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // The sign-in form's answer goes on to the organisation's identity provider, which a
    // strict form-action would stop in the browsers that apply it to redirects.
    let csp = if leave_for_idp {
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self' http: https:; frame-ancestors 'none'; base-uri 'none'"
    } else {
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    };
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(csp));
    response
}

fn document(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · obsidian-tc" }
                link rel="stylesheet" href="/console/assets/console.css";
                script src="/console/assets/console.js" defer {}
            }
            body { (body) }
        }
    }
}

fn answer(status: StatusCode, markup: Markup, leave_for_idp: bool) -> Response {
    let mut response = (status, markup.into_string()).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    secured(response, leave_for_idp)
}

/// A 303 to `to`.
pub fn redirect(to: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    secured(response, false)
}

fn flash_box(session: &Session) -> Markup {
    html! {
        @if let Some(f) = &session.flash {
            @if f.ok {
                div.flash.ok role="status" {
                    (f.text)
                    @if let Some(vault) = f.undo_delete {
                        " " (button_form(session, &format!("/console/vaults/{vault}/restore"), "Undo", &[], false))
                    }
                }
            } @else {
                div.flash.error role="alert" { (f.text) }
            }
        }
    }
}

/// A signed-in page: header, navigation, the message the last action left, then `content`.
pub fn page(session: &Session, active: Nav, title: &str, content: Markup) -> Response {
    page_with_status(StatusCode::OK, session, active, title, content)
}

pub fn page_with_status(status: StatusCode, session: &Session, active: Nav, title: &str, content: Markup) -> Response {
    let body = html! {
        a.skip href="#main" { "Skip to content" }
        header.top {
            div.brand {
                span.product { "obsidian-tc" }
                span.tenant { (session.me.tenant.name) }
            }
            div.who {
                span { "Signed in as " strong { (session.me.principal.name) } }
                form method="post" action="/console/sign-out" {
                    (csrf(session))
                    button.link type="submit" { "Sign out" }
                }
                form method="post" action="/console/sign-out-everywhere" {
                    (csrf(session))
                    button.link type="submit" { "Sign out everywhere" }
                }
            }
        }
        nav.main aria-label="Console" {
            ul {
                @for item in Nav::ALL {
                    @if item.open_to(session) {
                        li {
                            @if item == active {
                                a href=(item.href()) aria-current="page" { (item.label()) }
                            } @else {
                                a href=(item.href()) { (item.label()) }
                            }
                        }
                    }
                }
            }
        }
        main #main {
            h1 { (title) }
            (flash_box(session))
            (content)
        }
    };
    let mut response = answer(status, document(title, body), false);
    if session.flash.is_some() {
        super::session::clear_flash(&mut response, &session.base);
    }
    response
}

/// The hidden field every signed-in form carries.
pub fn csrf(session: &Session) -> Markup {
    html! { input type="hidden" name="csrf" value=(session.csrf); }
}

/// The hidden fields of a form that changes something: its CSRF token and an idempotency key,
/// fresh for each page shown, so sending the same form twice acts once.
pub fn form_fields(session: &Session) -> Markup {
    html! {
        (csrf(session))
        input type="hidden" name="key" value=(uuid::Uuid::new_v4().to_string());
    }
}

/// A one-button form posting to `action` (hidden `fields` besides the CSRF token and key).
pub fn button_form(session: &Session, action: &str, label: &str, fields: &[(&str, &str)], danger: bool) -> Markup {
    html! {
        form.inline method="post" action=(action) {
            (form_fields(session))
            @for (name, value) in fields { input type="hidden" name=(name) value=(value); }
            @if danger { button.danger type="submit" { (label) } } @else { button type="submit" { (label) } }
        }
    }
}

/// A page for a person not signed in (sign-in, invitation, refusals).
fn bare(status: StatusCode, title: &str, content: Markup, leave_for_idp: bool) -> Response {
    let body = html! {
        header.top { div.brand { span.product { "obsidian-tc" } } }
        main #main.narrow { h1 { (title) } (content) }
    };
    answer(status, document(title, body), leave_for_idp)
}

/// The sign-in page: the work email picks the organisation and its identity provider.
pub fn sign_in(message: Option<&Flash>, email: Option<&str>, sso: bool) -> Response {
    let content = html! {
        @if let Some(m) = message {
            @if m.ok { p.flash.ok role="status" { (m.text) } } @else { p.flash.error role="alert" { (m.text) } }
        }
        @if sso {
            form method="post" action="/console/sign-in" {
                label for="email" { "Work email" }
                input #email type="email" name="email" autocomplete="email" required value=[email];
                p.hint { "Or your organisation's id, if your address is on a shared domain." }
                button type="submit" { "Continue" }
            }
        }
        p { "First admin of a new organisation? " a href="/console/invitation" { "Accept your invitation" } "." }
    };
    bare(StatusCode::OK, "Sign in", content, true)
}

/// The invitation page: the code (from the link) and a button to accept it.
pub fn invitation(code: Option<&str>, message: Option<&str>) -> Response {
    let content = html! {
        @if let Some(m) = message { p.flash.error role="alert" { (m) } }
        p { "Your operator sent you an invitation to set up your organisation. Accepting it makes you its first administrator." }
        form method="post" action="/console/invitation" {
            label for="code" { "Invitation code" }
            input #code type="text" name="code" autocomplete="off" spellcheck="false" required value=[code];
            button type="submit" { "Accept the invitation" }
        }
    };
    bare(
        if message.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK },
        "Accept your invitation",
        content,
        false,
    )
}

/// After an invitation: the admin API token (shown this once) and what to do next.
pub fn welcome(tenant: &str, token: &str, next: &[String]) -> Response {
    let content = html! {
        p { "You are the administrator of " strong { (tenant) } ". Your console session has started." }
        h2 { "Your admin API token" }
        p { "For scripts and the command line. It is shown this once: copy it now and keep it in a password manager." }
        div.copyable {
            pre #admin-token { code { (token) } }
            button type="button" data-copy="admin-token" { "Copy" }
        }
        h2 { "Next steps" }
        ol { @for step in next { li { (step) } } }
        p { a.button href="/console/settings" { "Set up your identity provider" } " " a href="/console" { "Go to the overview" } }
    };
    bare(StatusCode::OK, "Welcome", content, false)
}

/// A page saying why something cannot be done.
pub fn refusal_page(status: StatusCode, title: &str, message: &str) -> Response {
    bare(status, title, html! { p { (message) } p { a href="/console" { "Back to the console" } } }, false)
}

/// An API failure as a page: a missing thing (another tenant's included) as not found.
pub fn failure_page(failure: &Failure) -> Response {
    if failure.is_missing() {
        return not_found();
    }
    let title = match failure.status {
        StatusCode::FORBIDDEN => "Not allowed",
        StatusCode::TOO_MANY_REQUESTS => "Too many requests",
        s if s.is_server_error() => "Something went wrong",
        _ => "That did not work",
    };
    let status = if failure.status.is_client_error() || failure.status.is_server_error() {
        failure.status
    } else {
        StatusCode::BAD_GATEWAY
    };
    bare(
        status,
        title,
        html! { p { (failure.message) " (" code { (failure.code) } ")" } p { a href="/console" { "Back to the console" } } },
        false,
    )
}

/// Not found: what a missing page, vault, member or token answers (and another tenant's).
pub fn not_found() -> Response {
    refusal_page(StatusCode::NOT_FOUND, "Not found", "There is nothing here, or it is not yours to see.")
}

/// A count with its noun, pluralised the plain English way.
pub fn count(n: i64, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// A byte count for people.
pub fn bytes(n: i64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 { format!("{n} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}

/// A time as people read it in a table (UTC).
pub fn when(t: &chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}
