//! Members and groups: the tenant's people and service principals with their groups (set here
//! by an admin, from their identity provider at sign-in, from the directory), a page per member
//! to change the groups an admin sets, and how the provider's groups map onto scopes and ACL
//! groups (`admin:members`; changing groups needs `admin:acl`, the mapping `admin:sso`).

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method};
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::json;

use super::api::{Call, Peer, query, segment};
use super::layout::{self, Flash, Nav};
use super::session::Session;
use super::{Console, Missing, perform, signed_in};
use crate::acl_api::PrincipalGroups;
use crate::admin_members::{AdminMember, AdminMembers};
use crate::directory::Idp;
use crate::scopes;

/// Members shown a page.
const PAGE: &str = "100";

#[derive(Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    after: Option<String>,
}

pub async fn page(
    State(console): State<Console>,
    headers: HeaderMap,
    peer: Peer,
    Query(q): Query<ListQuery>,
) -> Response {
    let session = signed_in!(console, headers, peer);
    let mut pairs = vec![("limit", PAGE)];
    if let Some(after) = q.after.as_deref() {
        pairs.push(("after", after));
    }
    let path = format!("/v1/admin/members?{}", query(&pairs));
    let members = match console.api.json::<AdminMembers>(&session.origin, &session.token, Call::get(path)).await {
        Ok(m) => m,
        Err(f) => return layout::failure_page(&f),
    };
    let mapping = idp_mapping(&console, &session).await;
    let edit_groups = session.can("admin:acl");
    let content = html! {
        div.table-wrap tabindex="0" role="region" aria-label="Table, scrolls sideways" {
            table {
                thead {
                    tr {
                        th scope="col" { "Name" }
                        th scope="col" { "Email" }
                        th scope="col" { "From" }
                        th scope="col" { "Groups" }
                        th scope="col" { "Provider groups" }
                        th scope="col" { "Status" }
                    }
                }
                tbody {
                    @for m in &members.members {
                        tr {
                            td {
                                // The member's page changes groups: an admin:acl matter.
                                @if edit_groups { a href=(format!("/console/members/{}", m.id)) { (m.name) } } @else { (m.name) }
                                @if m.kind != "user" { " " span.badge { (m.kind) } }
                            }
                            td { (m.email.as_deref().unwrap_or("")) }
                            td { (m.source) }
                            td { (groups_of(m).join(", ")) }
                            td { (m.idp_groups.join(", ")) }
                            td { @if m.active { "active" } @else { span.badge.bad { "deactivated" } } }
                        }
                    }
                }
            }
        }
        @if let Some(next) = members.next {
            p { a href=(format!("/console/members?after={next}")) { "Next page" } }
        }
        (mapping)
    };
    layout::page(&session, Nav::Members, "Members and groups", content)
}

/// Every group the member is in, whoever set it.
fn groups_of(m: &AdminMember) -> Vec<String> {
    let mut all: Vec<String> =
        m.groups.admin.iter().chain(&m.groups.sign_in).chain(&m.groups.directory).cloned().collect();
    all.sort();
    all.dedup();
    all
}

/// How the identity provider's groups map onto scopes and ACL groups (shown to who may read it).
async fn idp_mapping(console: &Console, session: &Session) -> Markup {
    if !session.can(scopes::SSO) || console.state.identity.is_none() {
        return html! {};
    }
    let idp = match console.api.json::<Idp>(&session.origin, &session.token, Call::get("/v1/idp")).await {
        Ok(idp) => idp.idp,
        Err(f) => return html! { p.flash.error { (f.message) } },
    };
    let Some(idp) = idp else {
        return html! { h2 { "Provider groups" } p { "No identity provider yet. " a href="/console/settings" { "Set one up" } "." } };
    };
    let rows = |map: &serde_json::Value| -> Vec<(String, String)> {
        map.as_object()
            .map(|o| {
                o.iter()
                    .map(|(k, v)| {
                        let list: Vec<&str> =
                            v.as_array().map(|a| a.iter().filter_map(|x| x.as_str()).collect()).unwrap_or_default();
                        (k.clone(), list.join(", "))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let scopes = rows(&idp.group_scopes);
    let acl = rows(&idp.group_acl);
    html! {
        h2 { "Provider groups" }
        p.hint {
            "Everyone signing in gets " strong { (if idp.default_scopes.is_empty() { "no scope".to_string() } else { idp.default_scopes.join(", ") }) }
            ". A provider group not listed under ACL groups becomes the ACL group of the same name. "
            a href="/console/settings#idp" { "Change the mapping" }
        }
        div.table-wrap tabindex="0" role="region" aria-label="Table, scrolls sideways" {
            table {
                thead { tr { th scope="col" { "Provider group" } th scope="col" { "Grants scopes" } } }
                tbody {
                    @if scopes.is_empty() { tr { td colspan="2" { "None" } } }
                    @for (group, list) in &scopes { tr { td { (group) } td { (list) } } }
                }
            }
        }
        div.table-wrap tabindex="0" role="region" aria-label="Table, scrolls sideways" {
            table {
                thead { tr { th scope="col" { "Provider group" } th scope="col" { "Becomes ACL groups" } } }
                tbody {
                    @if acl.is_empty() { tr { td colspan="2" { "None (each keeps its own name)" } } }
                    @for (group, list) in &acl { tr { td { (group) } td { (list) } } }
                }
            }
        }
    }
}

/// `GET /console/members/{principal}`: one member, and the form for the groups an admin sets.
pub async fn member(
    State(console): State<Console>,
    headers: HeaderMap,
    peer: Peer,
    Path(principal): Path<String>,
) -> Response {
    let session = signed_in!(console, headers, peer);
    let path = format!("/v1/principals/{}/groups", segment(&principal));
    let groups = match console.api.json::<PrincipalGroups>(&session.origin, &session.token, Call::get(path)).await {
        Ok(g) => g,
        Err(f) => return layout::failure_page(&f),
    };
    let id = groups.principal_id.to_string();
    let content = html! {
        dl.facts {
            dt { "Name" } dd { (groups.principal) }
            dt { "Id" } dd { code { (id) } }
            dt { "Groups set here" } dd { @if groups.groups.is_empty() { "none" } @else { (groups.groups.join(", ")) } }
        }
        h2 { "Change groups" }
        form method="post" action=(format!("/console/members/{id}")) {
            (layout::form_fields(&session))
            label for="add" { "Add to groups" }
            input #add type="text" name="add" autocomplete="off" placeholder="engineering, legal";
            p.hint { "Group names separated by commas." }
            @if !groups.groups.is_empty() {
                fieldset {
                    legend { "Remove from groups" }
                    @for g in &groups.groups {
                        label.check { input type="checkbox" name="remove" value=(g); (g) }
                    }
                }
            }
            button type="submit" { "Save groups" }
        }
        p { a href=(format!("/console/access?principal={id}")) { "See what this member can read" } }
        p { a href="/console/members" { "All members" } }
    };
    layout::page(&session, Nav::Members, &format!("Member: {}", groups.principal), content)
}

/// `POST /console/members/{principal}`: groups added and removed (`POST /v1/principals/{p}/groups`).
pub async fn change_groups(
    State(console): State<Console>,
    headers: HeaderMap,
    peer: Peer,
    Path(principal): Path<String>,
    body: Bytes,
) -> Response {
    let back = format!("/console/members/{}", segment(&principal));
    perform(
        &console,
        &headers,
        peer,
        &body,
        &back,
        Missing::Page,
        |_, form| {
            let add: Vec<String> = form
                .get("add")
                .map(|text| text.split(',').map(|g| g.trim().to_string()).filter(|g| !g.is_empty()).collect())
                .unwrap_or_default();
            let remove = form.all("remove");
            if add.is_empty() && remove.is_empty() {
                return Err(Flash::error("Name a group to add or tick one to remove."));
            }
            let path = format!("/v1/principals/{}/groups", segment(&principal));
            Ok(Call::send(Method::POST, path, Some(json!({ "add": add, "remove": remove }))))
        },
        |answer| {
            let groups: Vec<&str> =
                answer["groups"].as_array().map(|a| a.iter().filter_map(|g| g.as_str()).collect()).unwrap_or_default();
            Flash::ok(format!(
                "Saved. Groups now: {}.",
                if groups.is_empty() { "none".into() } else { groups.join(", ") }
            ))
        },
    )
    .await
}
