//! Settings: the identity provider (with a connection test) and how its groups map onto scopes
//! and ACL groups (`admin:sso`), the organisation's email domains with their DNS challenge
//! (`admin:domains`), the confirmation and egress policies and the tenant's read-only hold
//! (`admin:confirm`), and the chat endpoint the wiki tools use (`admin:chat`). Each section is
//! shown to whoever holds its scope.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method};
use axum::response::Response;
use maud::{Markup, html};
use serde_json::{Value, json};

use super::api::{Call, Peer, segment};
use super::layout::{self, Flash, Nav};
use super::session::{self, Form, Session};
use super::{Console, Missing, perform, signed_in};
use crate::admin_chat::Chat;
use crate::admin_domains::Domains;
use crate::directory::{Idp, IdpTest};
use crate::policies::Policies;
use crate::scopes;

pub async fn page(State(console): State<Console>, headers: HeaderMap, peer: Peer) -> Response {
    let session = signed_in!(console, headers, peer);
    render(&console, &session, None).await
}

/// The page, with `test` (a connection test's result) at the top of the provider's section.
async fn render(console: &Console, session: &Session, test: Option<IdpTest>) -> Response {
    let mut sections = Vec::new();
    if session.can(scopes::SSO) {
        sections.push(match console.state.identity {
            Some(_) => idp_section(console, session, test).await,
            None => html! {
                h2 #idp { "Identity provider" }
                p { "This deployment runs no authorization server (its operator sets oauth.secret_key to turn it on), so sign-in through an identity provider is off." }
            },
        });
    }
    if session.can(scopes::DOMAINS) {
        sections.push(domains_section(console, session).await);
    }
    if session.can(scopes::CONFIRM) {
        sections.push(policies_section(console, session).await);
    }
    if session.can(scopes::CHAT) {
        sections.push(chat_section(console, session).await);
    }
    let content = html! {
        @if sections.is_empty() { p { "Nothing here is yours to change." } }
        @for s in &sections { (s) }
    };
    layout::page(session, Nav::Settings, "Settings", content)
}

fn failed(f: &super::api::Failure) -> Markup {
    html! { p.flash.error role="alert" { (f.message) " (" (f.code) ")" } }
}

/// `{"group": ["a", "b"]}` as lines `group: a, b`.
fn mapping_lines(map: &Value) -> String {
    map.as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| {
                    let list: Vec<&str> =
                        v.as_array().map(|a| a.iter().filter_map(|x| x.as_str()).collect()).unwrap_or_default();
                    format!("{k}: {}", list.join(", "))
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// Lines `group: a, b` (or `a b`) as `{"group": ["a", "b"]}`. The group ends at the first colon
/// followed by a space (a group's own name may hold colons, `github:org/team`, and so do scopes).
fn parse_mapping(text: &str, field: &str) -> Result<BTreeMap<String, Vec<String>>, Flash> {
    let mut out = BTreeMap::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (group, list) = line.split_once(": ").ok_or_else(|| {
            Flash::error(format!("{field}: each line is a group, a colon and a space, then its list ({line:?})"))
        })?;
        let items = list.split([',', ' ']).map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect();
        out.insert(group.trim().to_string(), items);
    }
    Ok(out)
}

/// A comma-separated list (of names that hold no comma: domains, scopes, hosts).
fn list(text: Option<&str>) -> Vec<String> {
    text.unwrap_or("").split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

/// One item a line (globs and client ids may hold commas).
fn lines(text: Option<&str>) -> Vec<String> {
    text.unwrap_or("").lines().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

async fn idp_section(console: &Console, session: &Session, test: Option<IdpTest>) -> Markup {
    let idp = match console.api.json::<Idp>(&session.origin, &session.token, Call::get("/v1/idp")).await {
        Ok(idp) => idp.idp,
        Err(f) => return html! { h2 #idp { "Identity provider" } (failed(&f)) },
    };
    let v = idp.as_ref();
    html! {
        h2 #idp { "Identity provider" }
        @if let Some(test) = &test {
            div.flash.(if test.ok { "ok" } else { "error" }) role="status" {
                strong { @if test.ok { "The connection test passed." } @else { "The connection test failed." } }
                ul { @for step in &test.steps { li { (step.step) ": " @if step.ok { "ok" } @else { "failed" } " — " (step.detail) } } }
            }
        }
        p.hint { "Your people sign in to the console and their AI clients through it. Register this redirect URI with it: " code { "/oauth/callback" } " on this server." }
        form method="post" action="/console/settings/idp" {
            (layout::form_fields(session))
            label for="idp-issuer" { "Issuer URL" }
            input #idp-issuer type="url" name="issuer" required value=[v.map(|i| i.issuer.as_str())];
            label for="idp-client" { "Client id" }
            input #idp-client type="text" name="client_id" required autocomplete="off" value=[v.map(|i| i.client_id.as_str())];
            label for="idp-secret" { "Client secret" }
            input #idp-secret type="password" name="client_secret" autocomplete="new-password";
            @if v.is_some_and(|i| i.has_client_secret) {
                p.hint { "A secret is stored; leave this empty to keep it." }
                label.check { input type="checkbox" name="public_client" value="1"; "Drop the stored secret (the provider knows this client as a public one)" }
            }
            label for="idp-domains" { "Email domains (comma-separated)" }
            input #idp-domains type="text" name="email_domains" value=[v.map(|i| i.email_domains.join(", "))];
            p.hint { "Sign-in by email sends these domains to this provider; prove each one under Domains first." }
            label for="idp-claim" { "Groups claim" }
            input #idp-claim type="text" name="groups_claim" value=(v.map(|i| i.groups_claim.as_str()).unwrap_or("groups"));
            label for="idp-defaults" { "Scopes everyone gets (comma-separated)" }
            input #idp-defaults type="text" name="default_scopes" value=[v.map(|i| i.default_scopes.join(", "))];
            label for="idp-group-scopes" { "Scopes per provider group (one a line: group: scope, scope)" }
            textarea #idp-group-scopes name="group_scopes" rows="4" { (v.map(|i| mapping_lines(&i.group_scopes)).unwrap_or_default()) }
            label for="idp-group-acl" { "ACL groups per provider group (one a line: group: acl-group, acl-group)" }
            textarea #idp-group-acl name="group_acl" rows="3" { (v.map(|i| mapping_lines(&i.group_acl)).unwrap_or_default()) }
            label for="idp-cimd" { "Client metadata hosts allowed (comma-separated; empty: any public host)" }
            input #idp-cimd type="text" name="cimd_hosts" value=[v.map(|i| i.cimd_hosts.join(", "))];
            button type="submit" { "Save the provider" }
        }
        @if v.is_some() {
            form method="post" action="/console/settings/idp/test" {
                (layout::form_fields(session))
                button type="submit" { "Test the connection" }
            }
        }
    }
}

async fn domains_section(console: &Console, session: &Session) -> Markup {
    let domains =
        match console.api.json::<Domains>(&session.origin, &session.token, Call::get("/v1/admin/domains")).await {
            Ok(d) => d,
            Err(f) => return html! { h2 #domains { "Domains" } (failed(&f)) },
        };
    html! {
        h2 #domains { "Domains" }
        @if domains.domains.is_empty() && domains.claims.is_empty() { p { "No domains yet." } }
        @if !domains.domains.is_empty() {
            div.table-wrap tabindex="0" role="region" aria-label="Table, scrolls sideways" {
                table {
                    thead { tr { th scope="col" { "Domain" } th scope="col" { "Proven" } th scope="col" { "Actions" } } }
                    tbody {
                        @for d in &domains.domains {
                            tr {
                                td { (d.domain) }
                                td { (layout::when(&d.added_at)) " (" (d.via) ")" }
                                td { (layout::button_form(session, &format!("/console/settings/domains/{}/remove", d.domain), &format!("Remove {}", d.domain), &[], true)) }
                            }
                        }
                    }
                }
            }
        }
        @for (i, c) in domains.claims.iter().enumerate() {
            div.card {
                h3 { (c.domain) " " span.badge.warn { "waiting for DNS" } }
                p { "Publish this TXT record in the domain's DNS, then verify:" }
                dl.facts {
                    dt { "Name" } dd { code { (c.record_name) } }
                    dt { "Value" }
                    dd.copyable {
                        pre id=(format!("txt-{i}")) { code { (c.record_value) } }
                        button type="button" data-copy=(format!("txt-{i}")) { "Copy" }
                    }
                }
                (layout::button_form(session, &format!("/console/settings/domains/{}/verify", c.domain), &format!("Verify {}", c.domain), &[], false))
                " "
                (layout::button_form(session, &format!("/console/settings/domains/{}/remove", c.domain), "Cancel", &[], true))
            }
        }
        form method="post" action="/console/settings/domains" {
            (layout::form_fields(session))
            label for="new-domain" { "Add a domain" }
            input #new-domain type="text" name="domain" required placeholder="example.com" autocomplete="off";
            button type="submit" { "Add" }
        }
    }
}

async fn policies_section(console: &Console, session: &Session) -> Markup {
    let p = match console.api.json::<Policies>(&session.origin, &session.token, Call::get("/v1/policies")).await {
        Ok(p) => p,
        Err(f) => return html! { h2 #policies { "Policies" } (failed(&f)) },
    };
    html! {
        h2 #policies { "Policies" }
        form method="post" action="/console/settings/policies" {
            (layout::form_fields(session))
            label for="confirm-clients" { "Clients whose own person may confirm destructive calls (client ids, one a line)" }
            textarea #confirm-clients name="confirm_in_client_clients" rows="3" { (p.confirm_in_client_clients.join("\n")) }
            label for="egress" { "Notes never sent to a model (globs, one a line)" }
            textarea #egress name="egress_exclude_paths" rows="3" { (p.egress_exclude_paths.join("\n")) }
            @if !p.deployment_egress_exclude_paths.is_empty() {
                p.hint { "The deployment also excludes: " (p.deployment_egress_exclude_paths.join(", ")) }
            }
            fieldset {
                legend { "Read-only hold" }
                @if let Some(hold) = &p.read_only {
                    p { "On since " (layout::when(&hold.since)) @if let Some(r) = &hold.reason { ": " (r) } " (set by " (hold.set_by) ")." }
                }
                label.check { input type="checkbox" name="read_only" value="1" checked[p.read_only.is_some()]; "Refuse every write to the organisation's vaults" }
                label for="hold-reason" { "Reason (shown to every refused writer)" }
                input #hold-reason type="text" name="read_only_reason" maxlength="500" value=[p.read_only.as_ref().and_then(|h| h.reason.as_deref())];
            }
            button type="submit" { "Save the policies" }
        }
    }
}

async fn chat_section(console: &Console, session: &Session) -> Markup {
    let chat = match console.api.json::<Chat>(&session.origin, &session.token, Call::get("/v1/admin/chat")).await {
        Ok(c) => c,
        Err(f) => return html! { h2 #chat { "Chat endpoint" } (failed(&f)) },
    };
    let c = chat.chat.as_ref();
    html! {
        h2 #chat { "Chat endpoint" }
        p.hint { "An OpenAI-compatible endpoint the wiki tools use for their model calls." }
        form method="post" action="/console/settings/chat" {
            (layout::form_fields(session))
            label for="chat-url" { "Base URL" }
            input #chat-url type="url" name="base_url" value=[c.map(|c| c.base_url.as_str())];
            label for="chat-model" { "Model" }
            input #chat-model type="text" name="model" value=[c.map(|c| c.model.as_str())];
            label for="chat-key" { "API key" }
            input #chat-key type="password" name="api_key" autocomplete="new-password";
            @if c.is_some_and(|c| c.has_api_key) { p.hint { "A key is stored; leave this empty to keep it." } }
            label for="chat-cap" { "Calls a day at most" }
            input #chat-cap type="number" name="daily_cap" min="0" value=[c.map(|c| c.daily_cap)];
            button type="submit" { "Save the endpoint" }
        }
        @if c.is_some() {
            (layout::button_form(session, "/console/settings/chat/remove", "Remove the endpoint", &[], true))
        }
    }
}

fn idp_body(form: &Form) -> Result<Value, Flash> {
    let issuer = form.get("issuer").ok_or_else(|| Flash::error("The issuer URL is needed."))?;
    let client_id = form.get("client_id").ok_or_else(|| Flash::error("The client id is needed."))?;
    let secret = form.get("client_secret");
    Ok(json!({
        "issuer": issuer,
        "client_id": client_id,
        "client_secret": secret,
        "keep_secret": secret.is_none() && !form.checked("public_client"),
        "email_domains": list(form.get("email_domains")),
        "groups_claim": form.get("groups_claim"),
        "default_scopes": list(form.get("default_scopes")),
        "group_scopes": parse_mapping(form.get("group_scopes").unwrap_or(""), "Scopes per group")?,
        "group_acl": parse_mapping(form.get("group_acl").unwrap_or(""), "ACL groups per group")?,
        "cimd_hosts": list(form.get("cimd_hosts")),
    }))
}

pub async fn set_idp(State(console): State<Console>, headers: HeaderMap, peer: Peer, body: Bytes) -> Response {
    perform(
        &console,
        &headers,
        peer,
        &body,
        "/console/settings#idp",
        Missing::Message,
        |_, form| Ok(Call::send(Method::PUT, "/v1/idp", Some(idp_body(form)?))),
        |_| Flash::ok("Saved the identity provider. Test the connection to check it."),
    )
    .await
}

/// `POST /console/settings/idp/test`: the page again, with the test's steps.
pub async fn test_idp(State(console): State<Console>, headers: HeaderMap, peer: Peer, body: Bytes) -> Response {
    let (session, _) = match session::posted(&console, &headers, peer, &body).await {
        Ok(posted) => posted,
        Err(refused) => return refused,
    };
    let call = Call::send(Method::POST, "/v1/idp/test", None);
    match console.api.json::<IdpTest>(&session.origin, &session.token, call).await {
        Ok(test) => render(&console, &session, Some(test)).await,
        Err(f) => {
            let mut response = layout::redirect("/console/settings#idp");
            session::set_flash(&mut response, &session::base(&console.state, &headers), &Flash::failed(&f));
            response
        }
    }
}

pub async fn claim_domain(State(console): State<Console>, headers: HeaderMap, peer: Peer, body: Bytes) -> Response {
    perform(
        &console,
        &headers,
        peer,
        &body,
        "/console/settings#domains",
        Missing::Message,
        |_, form| {
            let domain = form.get("domain").ok_or_else(|| Flash::error("Name the domain."))?;
            Ok(Call::send(Method::POST, "/v1/admin/domains", Some(json!({ "domain": domain }))))
        },
        |answer| {
            Flash::ok(format!(
                "Publish the TXT record shown for {}, then verify it.",
                answer["domain"].as_str().unwrap_or("the domain")
            ))
        },
    )
    .await
}

pub async fn verify_domain(
    State(console): State<Console>,
    headers: HeaderMap,
    peer: Peer,
    Path(domain): Path<String>,
    body: Bytes,
) -> Response {
    perform(
        &console,
        &headers,
        peer,
        &body,
        "/console/settings#domains",
        Missing::Page,
        |_, _| Ok(Call::send(Method::POST, format!("/v1/admin/domains/{}/verify", segment(&domain)), None)),
        |answer| {
            Flash::ok(format!(
                "Proved {}: sign-in by its addresses now comes here.",
                answer["domain"].as_str().unwrap_or("the domain")
            ))
        },
    )
    .await
}

pub async fn remove_domain(
    State(console): State<Console>,
    headers: HeaderMap,
    peer: Peer,
    Path(domain): Path<String>,
    body: Bytes,
) -> Response {
    perform(
        &console,
        &headers,
        peer,
        &body,
        "/console/settings#domains",
        Missing::Page,
        |_, _| Ok(Call::send(Method::DELETE, format!("/v1/admin/domains/{}", segment(&domain)), None)),
        |answer| Flash::ok(format!("Removed {}.", answer["domain"].as_str().unwrap_or("the domain"))),
    )
    .await
}

pub async fn set_policies(State(console): State<Console>, headers: HeaderMap, peer: Peer, body: Bytes) -> Response {
    perform(
        &console,
        &headers,
        peer,
        &body,
        "/console/settings#policies",
        Missing::Message,
        |_, form| {
            let held = form.checked("read_only");
            Ok(Call::send(
                Method::PUT,
                "/v1/policies",
                Some(json!({
                    "confirm_in_client_clients": lines(form.get("confirm_in_client_clients")),
                    "egress_exclude_paths": lines(form.get("egress_exclude_paths")),
                    "read_only": held,
                    "read_only_reason": if held { form.get("read_only_reason") } else { None },
                })),
            ))
        },
        |_| Flash::ok("Saved the policies."),
    )
    .await
}

pub async fn set_chat(State(console): State<Console>, headers: HeaderMap, peer: Peer, body: Bytes) -> Response {
    perform(
        &console,
        &headers,
        peer,
        &body,
        "/console/settings#chat",
        Missing::Message,
        |_, form| {
            let cap = match form.get("daily_cap").map(str::parse::<i32>) {
                None => None,
                Some(Ok(n)) => Some(n),
                Some(Err(_)) => return Err(Flash::error("The daily cap is a number.")),
            };
            Ok(Call::send(
                Method::PUT,
                "/v1/admin/chat",
                Some(json!({
                    "base_url": form.get("base_url"),
                    "model": form.get("model"),
                    "api_key": form.get("api_key"),
                    "daily_cap": cap,
                })),
            ))
        },
        |_| Flash::ok("Saved the chat endpoint."),
    )
    .await
}

pub async fn remove_chat(State(console): State<Console>, headers: HeaderMap, peer: Peer, body: Bytes) -> Response {
    perform(
        &console,
        &headers,
        peer,
        &body,
        "/console/settings#chat",
        Missing::Message,
        |_, _| Ok(Call::send(Method::DELETE, "/v1/admin/chat", None)),
        |_| Flash::ok("Removed the chat endpoint."),
    )
    .await
}
