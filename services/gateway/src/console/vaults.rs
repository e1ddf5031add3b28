//! Vaults: the tenant's live vaults (rename, delete, export), the deleted ones not erased yet
//! (restore: the undo of a delete), and a form to create one. `admin:vaults`; the export needs
//! `admin:export`.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::response::Response;
use maud::html;
use serde_json::json;

use super::api::{Call, Peer, segment};
use super::layout::{self, Flash, Nav};
use super::{Console, Missing, perform, signed_in};
use crate::admin_vaults::AdminVaults;
use crate::scopes;

pub async fn page(State(console): State<Console>, headers: HeaderMap, peer: Peer) -> Response {
    let session = signed_in!(console, headers, peer);
    let vaults =
        match console.api.json::<AdminVaults>(&session.origin, &session.token, Call::get("/v1/admin/vaults")).await {
            Ok(v) => v,
            Err(f) => return layout::failure_page(&f),
        };
    let export = session.can(scopes::EXPORT);
    let content = html! {
        h2 { "Create a vault" }
        form method="post" action="/console/vaults" {
            (layout::form_fields(&session))
            label for="new-vault" { "Name" }
            input #new-vault type="text" name="name" required maxlength="100" autocomplete="off";
            p.hint { "Letters, digits, spaces, dots, dashes and underscores." }
            button type="submit" { "Create" }
        }
        h2 { "Live vaults" }
        @if vaults.vaults.is_empty() {
            p { "No vaults yet." }
        } @else {
            div.table-wrap tabindex="0" role="region" aria-label="Table, scrolls sideways" {
                table {
                    thead { tr { th scope="col" { "Name" } th scope="col" { "Created" } th scope="col" { "Rename" } th scope="col" { "Actions" } } }
                    tbody {
                        @for v in &vaults.vaults {
                            @let id = v.id.to_string();
                            tr {
                                td {
                                    (v.name)
                                    @if let Some(hold) = &v.read_only { " " span.badge.warn { "read-only" } @if let Some(r) = &hold.reason { span.hint { " " (r) } } }
                                }
                                td { (v.created_at.as_ref().map(layout::when).unwrap_or_default()) }
                                td {
                                    form.inline method="post" action=(format!("/console/vaults/{id}/rename")) {
                                        (layout::form_fields(&session))
                                        label.visually-hidden for=(format!("rename-{id}")) { "New name for " (v.name) }
                                        input id=(format!("rename-{id}")) type="text" name="name" required maxlength="100" value=(v.name);
                                        " "
                                        button.small type="submit" { "Rename" }
                                    }
                                }
                                td {
                                    @if export {
                                        a href=(format!("/console/vaults/{id}/export")) download { "Export" }
                                        " "
                                    }
                                    (layout::button_form(&session, &format!("/console/vaults/{id}/delete"), &format!("Delete {}", v.name), &[], true))
                                }
                            }
                        }
                    }
                }
            }
        }
        @if !vaults.deleted.is_empty() {
            h2 { "Deleted vaults" }
            p.hint { "A deleted vault is kept until it is erased: restore it before then to get it back as it was." }
            div.table-wrap tabindex="0" role="region" aria-label="Table, scrolls sideways" {
                table {
                    thead { tr { th scope="col" { "Name" } th scope="col" { "Deleted" } th scope="col" { "Erased after" } th scope="col" { "Actions" } } }
                    tbody {
                        @for v in &vaults.deleted {
                            tr {
                                td { (v.name) }
                                td { (v.deleted_at.as_ref().map(layout::when).unwrap_or_default()) }
                                td { (v.purge_after.as_ref().map(layout::when).unwrap_or_default()) }
                                td { (layout::button_form(&session, &format!("/console/vaults/{}/restore", v.id), &format!("Restore {}", v.name), &[], false)) }
                            }
                        }
                    }
                }
            }
        }
    };
    layout::page(&session, Nav::Vaults, "Vaults", content)
}

fn name_of(answer: &serde_json::Value) -> String {
    answer["name"].as_str().unwrap_or("the vault").to_string()
}

pub async fn create(State(console): State<Console>, headers: HeaderMap, peer: Peer, body: Bytes) -> Response {
    perform(
        &console,
        &headers,
        peer,
        &body,
        "/console/vaults",
        Missing::Message,
        |_, form| {
            let name = form.get("name").ok_or_else(|| Flash::error("Give the vault a name."))?;
            Ok(Call::send(Method::POST, "/v1/admin/vaults", Some(json!({ "name": name }))))
        },
        |answer| Flash::ok(format!("Created the vault {}.", name_of(answer))),
    )
    .await
}

pub async fn rename(
    State(console): State<Console>,
    headers: HeaderMap,
    peer: Peer,
    Path(vault): Path<String>,
    body: Bytes,
) -> Response {
    perform(
        &console,
        &headers,
        peer,
        &body,
        "/console/vaults",
        Missing::Page,
        |_, form| {
            let name = form.get("name").ok_or_else(|| Flash::error("Give the vault a name."))?;
            Ok(Call::send(
                Method::PATCH,
                format!("/v1/admin/vaults/{}", segment(&vault)),
                Some(json!({ "name": name })),
            ))
        },
        |answer| Flash::ok(format!("Renamed the vault to {}.", name_of(answer))),
    )
    .await
}

pub async fn delete(
    State(console): State<Console>,
    headers: HeaderMap,
    peer: Peer,
    Path(vault): Path<String>,
    body: Bytes,
) -> Response {
    perform(
        &console,
        &headers,
        peer,
        &body,
        "/console/vaults",
        Missing::Page,
        |_, _| Ok(Call::send(Method::DELETE, format!("/v1/admin/vaults/{}", segment(&vault)), None)),
        |answer| {
            let when = answer["purge_after"].as_str().unwrap_or("its erasure").to_string();
            let mut flash =
                Flash::ok(format!("Deleted the vault {}. It can be restored until {when}.", name_of(answer)));
            flash.undo_delete = answer["id"].as_str().and_then(|id| id.parse().ok());
            flash
        },
    )
    .await
}

pub async fn restore(
    State(console): State<Console>,
    headers: HeaderMap,
    peer: Peer,
    Path(vault): Path<String>,
    body: Bytes,
) -> Response {
    perform(
        &console,
        &headers,
        peer,
        &body,
        "/console/vaults",
        Missing::Page,
        |_, _| Ok(Call::send(Method::POST, format!("/v1/admin/vaults/{}/restore", segment(&vault)), None)),
        |answer| Flash::ok(format!("Restored the vault {}.", name_of(answer))),
    )
    .await
}

/// `GET /console/vaults/{vault}/export`: the API's tar archive, streamed on as a download.
pub async fn export(
    State(console): State<Console>,
    headers: HeaderMap,
    peer: Peer,
    Path(vault): Path<String>,
) -> Response {
    let session = signed_in!(console, headers, peer);
    let call = Call::get(format!("/v1/admin/vaults/{}/export", segment(&vault)));
    let response = console.api.raw(&session.origin, Some(&session.token), call).await;
    if !response.status().is_success() {
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 64 * 1024).await.unwrap_or_default();
        return layout::failure_page(&super::api::failure(status, &bytes));
    }
    let (mut parts, body) = response.into_parts();
    let file = format!("attachment; filename=\"vault-{}.tar\"", segment(&vault));
    if let Ok(value) = HeaderValue::from_str(&file) {
        parts.headers.insert(header::CONTENT_DISPOSITION, value);
    }
    parts.headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Response::from_parts(parts, body)
}
