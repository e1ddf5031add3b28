//! Tokens and grants: everyone sees and revokes their own API tokens and the OAuth grants they
//! gave clients; an admin also sees the tenant's (`admin:tokens`, `admin:grants`) and makes API
//! tokens (shown once, on the answer to the form).

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use maud::{Markup, html};
use serde_json::json;

use super::api::{Call, Peer, segment};
use super::layout::{self, Flash, Nav};
use super::session::{self, Session};
use super::{Console, Missing, perform, signed_in};
use crate::admin_tokens::{AdminToken, AdminTokens, IssuedAdminToken};
use crate::directory::Grants;
use crate::me::{MyGrants, MyTokens};
use crate::scopes;

pub async fn page(State(console): State<Console>, headers: HeaderMap, peer: Peer) -> Response {
    let session = signed_in!(console, headers, peer);
    let api = &console.api;
    let (origin, token) = (&session.origin, &session.token);
    let mine = match api.json::<MyTokens>(origin, token, Call::get("/v1/me/tokens")).await {
        Ok(t) => t.tokens,
        Err(f) => return layout::failure_page(&f),
    };
    // Grants exist where the deployment runs its authorization server.
    let oauth = console.state.identity.is_some();
    let my_grants = match api.json::<MyGrants>(origin, token, Call::get("/v1/me/grants")).await {
        Ok(g) => g.grants,
        Err(f) => return layout::failure_page(&f),
    };
    let all = if session.can(scopes::TOKENS) {
        match api.json::<AdminTokens>(origin, token, Call::get("/v1/admin/tokens")).await {
            Ok(t) => Some(t.tokens),
            Err(f) => return layout::failure_page(&f),
        }
    } else {
        None
    };
    let grants = if oauth && session.can(scopes::GRANTS) {
        match api.json::<Grants>(origin, token, Call::get("/v1/oauth/grants")).await {
            Ok(g) => Some(g.grants),
            Err(f) => return layout::failure_page(&f),
        }
    } else {
        None
    };
    let live = |t: &&AdminToken| t.revoked_at.is_none() && t.expires_at.is_none_or(|e| e > chrono::Utc::now());
    let content = html! {
        h2 { "Your API tokens" }
        (token_table(&session, &mine.iter().filter(live).cloned().collect::<Vec<_>>(), true))
        h2 { "Clients you connected" }
        @if my_grants.is_empty() {
            p { "None. " a href="/console/connect" { "Connect a client" } "." }
        } @else {
            div.table-wrap tabindex="0" role="region" aria-label="Table, scrolls sideways" {
                table {
                    thead { tr { th scope="col" { "Client" } th scope="col" { "Scopes" } th scope="col" { "Last used" } th scope="col" { "Actions" } } }
                    tbody {
                        @for g in &my_grants {
                            tr {
                                td { (g.client_name.as_deref().unwrap_or(&g.client_id)) }
                                td { (g.scopes.join(" ")) }
                                td { (layout::when(&g.last_used_at)) }
                                td { (layout::button_form(&session, &format!("/console/grants/{}/revoke", g.id), "Disconnect", &[("mine", "1")], true)) }
                            }
                        }
                    }
                }
            }
        }
        @if let Some(all) = &all {
            h2 { "Create an API token" }
            (create_form(&session, &console))
            h2 { "Every token of the organisation" }
            (token_table(&session, &all.iter().filter(live).cloned().collect::<Vec<_>>(), false))
        }
        @if let Some(grants) = &grants {
            h2 { "Every client connection" }
            div.table-wrap tabindex="0" role="region" aria-label="Table, scrolls sideways" {
                table {
                    thead { tr { th scope="col" { "Person" } th scope="col" { "Client" } th scope="col" { "Scopes" } th scope="col" { "Last used" } th scope="col" { "Actions" } } }
                    tbody {
                        @for g in grants.iter().filter(|g| g.revoked_at.is_none()) {
                            tr {
                                td { (g.principal.name) }
                                td { (g.client_name.as_deref().unwrap_or(&g.client_id)) }
                                td { (g.scopes.join(" ")) }
                                td { (layout::when(&g.last_used_at)) }
                                td { (layout::button_form(&session, &format!("/console/grants/{}/revoke", g.id), "Revoke", &[], true)) }
                            }
                        }
                    }
                }
            }
        }
    };
    layout::page(&session, Nav::Tokens, "Tokens", content)
}

fn token_table(session: &Session, tokens: &[AdminToken], mine: bool) -> Markup {
    html! {
        @if tokens.is_empty() {
            p { "None." }
        } @else {
            div.table-wrap tabindex="0" role="region" aria-label="Table, scrolls sideways" {
                table {
                    thead {
                        tr {
                            th scope="col" { "Name" }
                            @if !mine { th scope="col" { "Whose" } }
                            th scope="col" { "Scopes" } th scope="col" { "Vault" } th scope="col" { "Expires" }
                            th scope="col" { "Last used" } th scope="col" { "Actions" }
                        }
                    }
                    tbody {
                        @for t in tokens {
                            tr {
                                td { (t.name) " " span.hint { "…" (t.hint) } }
                                @if !mine { td { (t.principal) } }
                                td { (t.scopes.join(" ")) }
                                td { (t.vault.as_deref().unwrap_or("all")) }
                                td { (t.expires_at.as_ref().map(layout::when).unwrap_or_else(|| "never".into())) }
                                td { (t.last_used_at.as_ref().map(layout::when).unwrap_or_else(|| "never".into())) }
                                td {
                                    @if t.id == session.me.token_id {
                                        span.hint { "this session" }
                                    } @else {
                                        (layout::button_form(session, &format!("/console/tokens/{}/revoke", t.id), &format!("Revoke {}", t.name), if mine { &[("mine", "1")] } else { &[] }, true))
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn create_form(session: &Session, console: &Console) -> Markup {
    let scopes = crate::oauth::scopes(&console.state);
    html! {
        form method="post" action="/console/tokens" {
            (layout::form_fields(session))
            div.row {
                div { label for="token-name" { "Name" } input #token-name type="text" name="name" required maxlength="100" autocomplete="off"; }
                div { label for="token-vault" { "Only this vault (name; empty: all)" } input #token-vault type="text" name="vault" autocomplete="off"; }
                div { label for="token-days" { "Expires in days (empty: never)" } input #token-days type="number" name="expires_in_days" min="1" max="3650"; }
                div { label for="token-principal" { "For (a service principal's name; empty: you)" } input #token-principal type="text" name="principal" autocomplete="off"; }
            }
            fieldset {
                legend { "Scopes" }
                @for s in &scopes {
                    label.check { input type="checkbox" name="scopes" value=(s) checked[s == "read:notes"]; (s) }
                }
            }
            button type="submit" { "Create the token" }
        }
    }
}

/// `POST /console/tokens`: the new token is shown on the answer itself, once.
pub async fn create(State(console): State<Console>, headers: HeaderMap, peer: Peer, body: Bytes) -> Response {
    let (session, form) = match session::posted(&console, &headers, peer, &body).await {
        Ok(posted) => posted,
        Err(refused) => return refused,
    };
    let back = |flash: Flash| {
        let mut response = layout::redirect("/console/tokens");
        session::set_flash(&mut response, &session::base(&console.state, &headers), &flash);
        response
    };
    let Some(name) = form.get("name") else { return back(Flash::error("Give the token a name.")) };
    let scopes = form.all("scopes");
    if scopes.is_empty() {
        return back(Flash::error("Tick at least one scope."));
    }
    let days = match form.get("expires_in_days").map(str::parse::<u32>) {
        None => None,
        Some(Ok(d)) => Some(d),
        Some(Err(_)) => return back(Flash::error("The expiry is a number of days.")),
    };
    let request = json!({
        "name": name,
        "scopes": scopes,
        "vault": form.get("vault"),
        "principal": form.get("principal"),
        "expires_in_days": days,
    });
    let mut call = Call::send(Method::POST, "/v1/admin/tokens", Some(request));
    call.key = form.get("key").map(str::to_string);
    let issued = match console.api.json::<IssuedAdminToken>(&session.origin, &session.token, call).await {
        Ok(issued) => issued,
        Err(f) => return back(Flash::failed(&f)),
    };
    let content = html! {
        @match &issued.token {
            Some(text) => {
                p { "Copy the token now: it is shown this once." }
                div.copyable {
                    pre #new-token { code { (text) } }
                    button type="button" data-copy="new-token" { "Copy" }
                }
            }
            None => p { "The token was made by the same form before; its text was shown then and is not kept." },
        }
        dl.facts {
            dt { "Name" } dd { (issued.name) }
            dt { "Scopes" } dd { (issued.scopes.join(" ")) }
            dt { "Vault" } dd { (issued.vault.as_deref().unwrap_or("all")) }
            dt { "Expires" } dd { (issued.expires_at.as_ref().map(layout::when).unwrap_or_else(|| "never".into())) }
        }
        p { a href="/console/tokens" { "Back to tokens" } }
    };
    layout::page_with_status(StatusCode::CREATED, &session, Nav::Tokens, "Token created", content)
}

/// What a revocation form ends: the person's own (`mine` ticked) or, for an admin, anyone's.
struct Revocation {
    mine: &'static str,
    anyones: &'static str,
    done: &'static str,
}

const TOKEN: Revocation = Revocation {
    mine: "/v1/me/tokens",
    anyones: "/v1/admin/tokens",
    done: "Revoked the token: it stops working on every gateway now.",
};

const GRANT: Revocation = Revocation {
    mine: "/v1/me/grants",
    anyones: "/v1/oauth/grants",
    done: "Revoked: the client's tokens stop working now, and it must be connected again.",
};

async fn revoke_one(
    console: &Console,
    headers: &HeaderMap,
    peer: Peer,
    id: &str,
    body: &Bytes,
    what: Revocation,
) -> Response {
    perform(
        console,
        headers,
        peer,
        body,
        "/console/tokens",
        Missing::Page,
        |_, form| {
            let path = if form.checked("mine") { what.mine } else { what.anyones };
            Ok(Call::send(Method::DELETE, format!("{path}/{}", segment(id)), None))
        },
        |_| Flash::ok(what.done),
    )
    .await
}

pub async fn revoke(
    State(console): State<Console>,
    headers: HeaderMap,
    peer: Peer,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    revoke_one(&console, &headers, peer, &id, &body, TOKEN).await
}

pub async fn revoke_grant(
    State(console): State<Console>,
    headers: HeaderMap,
    peer: Peer,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    revoke_one(&console, &headers, peer, &id, &body, GRANT).await
}
