//! Folder access: the tenant's ACL rules (per vault, for a person, a group or everyone), a form
//! to set one and a button to drop each, and what a chosen member can read, write and delete in
//! a vault (`admin:acl`).

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method};
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Value, json};

use super::api::{Call, Peer, query};
use super::layout::{self, Flash, Nav};
use super::session::{Form, Session};
use super::{Console, Missing, perform, signed_in};
use crate::acl_api::{AclRule, AclRules, MemberAccess};
use crate::me::MyVaults;

#[derive(Deserialize)]
pub struct AccessQuery {
    #[serde(default)]
    vault: Option<String>,
    #[serde(default)]
    principal: Option<String>,
}

pub async fn page(
    State(console): State<Console>,
    headers: HeaderMap,
    peer: Peer,
    Query(q): Query<AccessQuery>,
) -> Response {
    let session = signed_in!(console, headers, peer);
    let api = &console.api;
    let rules = match api.json::<AclRules>(&session.origin, &session.token, Call::get("/v1/acl")).await {
        Ok(r) => r.rules,
        Err(f) => return layout::failure_page(&f),
    };
    let vaults = match api.json::<MyVaults>(&session.origin, &session.token, Call::get("/v1/me/vaults")).await {
        Ok(v) => v.vaults.into_iter().map(|v| v.name).collect::<Vec<_>>(),
        Err(f) => return layout::failure_page(&f),
    };
    // What a chosen member can reach, when the page was asked about one.
    let judged = match (&q.principal, q.vault.as_ref().or(vaults.first())) {
        (Some(principal), Some(vault)) if !principal.is_empty() => {
            let path = format!("/v1/acl/access?{}", query(&[("vault", vault), ("principal", principal)]));
            Some(api.json::<MemberAccess>(&session.origin, &session.token, Call::get(path)).await)
        }
        _ => None,
    };
    let content = html! {
        h2 { "Rules" }
        @if rules.is_empty() {
            p { "No rules: everyone who can reach a vault can read, write and delete everywhere in it (their scopes permitting)." }
        } @else {
            (rules_table(&session, &rules))
        }
        h2 { "Set a rule" }
        (rule_form(&session, &vaults))
        h2 #member-access { "What a member can reach" }
        form method="get" action="/console/access#member-access" {
            div.row {
                div {
                    label for="who" { "Member (name or id)" }
                    input #who type="text" name="principal" required value=[q.principal.as_deref()];
                }
                div {
                    label for="which-vault" { "Vault" }
                    select #which-vault name="vault" {
                        @for v in &vaults {
                            option value=(v) selected[q.vault.as_deref() == Some(v.as_str())] { (v) }
                        }
                    }
                }
            }
            button type="submit" { "Show" }
        }
        @if let Some(judged) = &judged {
            @match judged {
                Ok(access) => (access_table(access)),
                Err(f) => p.flash.error role="alert" { (f.message) " (" (f.code) ")" },
            }
        }
    };
    layout::page(&session, Nav::Access, "Folder access", content)
}

fn paths(list: &Option<Vec<String>>) -> String {
    match list {
        None => "everywhere".into(),
        Some(l) if l.is_empty() => "nowhere".into(),
        Some(l) => l.join(", "),
    }
}

fn rules_table(session: &Session, rules: &[AclRule]) -> Markup {
    html! {
        div.table-wrap tabindex="0" role="region" aria-label="Table, scrolls sideways" {
            table {
                thead {
                    tr {
                        th scope="col" { "Vault" } th scope="col" { "For" } th scope="col" { "Read" }
                        th scope="col" { "Write" } th scope="col" { "Delete" } th scope="col" { "Actions" }
                    }
                }
                tbody {
                    @for r in rules {
                        @let (kind, name) = subject_of(r);
                        tr {
                            td { (r.vault) }
                            td { (r.subject) }
                            td { (paths(&r.read_paths)) }
                            td { @if r.read_only { "nowhere (read-only)" } @else { (paths(&r.write_paths)) } }
                            td { @if r.read_only { "nowhere (read-only)" } @else { (paths(&r.delete_paths)) } }
                            td { (layout::button_form(session, "/console/access/remove", "Remove", &[("vault", &r.vault), ("kind", kind), ("name", &name)], true)) }
                        }
                    }
                }
            }
        }
    }
}

/// The rule's subject as the form names it: (kind, name).
fn subject_of(r: &AclRule) -> (&'static str, String) {
    match (&r.principal_id, &r.group) {
        (Some(id), _) => ("principal", id.to_string()),
        (None, Some(g)) => ("group", g.clone()),
        _ => ("everyone", String::new()),
    }
}

fn rule_form(session: &Session, vaults: &[String]) -> Markup {
    let list = |name: &str, label: &str| {
        html! {
            fieldset {
                legend { (label) }
                label.check { input type="checkbox" name=(format!("restrict_{name}")) value="1"; "Only in these paths" }
                label for=(format!("{name}-paths")) { "Paths (one glob a line; none ticked: everywhere)" }
                textarea id=(format!("{name}-paths")) name=(format!("{name}_paths")) rows="3" {}
            }
        }
    };
    html! {
        form method="post" action="/console/access" {
            (layout::form_fields(session))
            div.row {
                div {
                    label for="rule-vault" { "Vault" }
                    select #rule-vault name="vault" required { @for v in vaults { option value=(v) { (v) } } }
                }
                div {
                    label for="rule-kind" { "For" }
                    select #rule-kind name="kind" {
                        option value="group" { "a group" }
                        option value="principal" { "a member" }
                        option value="everyone" { "everyone" }
                    }
                }
                div {
                    label for="rule-name" { "Group or member name" }
                    input #rule-name type="text" name="name" autocomplete="off";
                }
            }
            (list("read", "Read"))
            (list("write", "Write"))
            (list("delete", "Delete"))
            label.check { input type="checkbox" name="read_only" value="1"; "Read-only (no writes or deletes anywhere)" }
            button type="submit" { "Save the rule" }
        }
    }
}

fn access_table(access: &MemberAccess) -> Markup {
    let yes = |b: bool| if b { "yes" } else { "no" };
    html! {
        p {
            strong { (access.principal) } " in " strong { (access.vault) }
            @if access.groups.is_empty() { " (in no group)" } @else { " (groups: " (access.groups.join(", ")) ")" }
            @if access.unrestricted { ": no rule restricts this vault for them." }
        }
        div.table-wrap tabindex="0" role="region" aria-label="Table, scrolls sideways" {
            table {
                caption.visually-hidden { "What the member can do in each folder" }
                thead { tr { th scope="col" { "Folder" } th scope="col" { "Read" } th scope="col" { "Write" } th scope="col" { "Delete" } } }
                tbody {
                    @for f in &access.folders {
                        tr {
                            td { @if f.folder.is_empty() { "(the vault's root)" } @else { (f.folder) "/" } }
                            td { (yes(f.read)) } td { (yes(f.write)) } td { (yes(f.delete)) }
                        }
                    }
                }
            }
        }
        @if access.more_folders { p.hint { "Only the first 200 folders are shown." } }
        @if !access.rules.is_empty() {
            p.hint { "Decided by: " (access.rules.iter().map(|r| r.subject.clone()).collect::<Vec<_>>().join("; ")) }
        }
    }
}

/// The subject fields of the API's rule body and query, from a form's `kind` and `name`.
fn subject(form: &Form) -> Result<Vec<(&'static str, Value)>, Flash> {
    let name = form.get("name");
    match (form.get("kind").unwrap_or("group"), name) {
        ("everyone", _) => Ok(vec![("everyone", json!(true))]),
        ("principal", Some(n)) => Ok(vec![("principal", json!(n))]),
        ("group", Some(n)) => Ok(vec![("group", json!(n))]),
        _ => Err(Flash::error("Name the group or member the rule is for.")),
    }
}

fn path_list(form: &Form, name: &str) -> Value {
    if !form.checked(&format!("restrict_{name}")) {
        return Value::Null;
    }
    let text = form.get(&format!("{name}_paths")).unwrap_or("");
    json!(text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>())
}

pub async fn set_rule(State(console): State<Console>, headers: HeaderMap, peer: Peer, body: Bytes) -> Response {
    perform(
        &console,
        &headers,
        peer,
        &body,
        "/console/access",
        Missing::Message,
        |_, form| {
            let vault = form.get("vault").ok_or_else(|| Flash::error("Pick a vault."))?;
            let mut rule = serde_json::Map::new();
            rule.insert("vault".into(), json!(vault));
            for (k, v) in subject(form)? {
                rule.insert(k.into(), v);
            }
            for list in ["read", "write", "delete"] {
                let value = path_list(form, list);
                if !value.is_null() {
                    rule.insert(format!("{list}_paths"), value);
                }
            }
            rule.insert("read_only".into(), json!(form.checked("read_only")));
            Ok(Call::send(Method::PUT, "/v1/acl", Some(Value::Object(rule))))
        },
        |answer| Flash::ok(format!("Saved the rule for {}.", answer["rule"]["subject"].as_str().unwrap_or("them"))),
    )
    .await
}

pub async fn remove_rule(State(console): State<Console>, headers: HeaderMap, peer: Peer, body: Bytes) -> Response {
    perform(
        &console,
        &headers,
        peer,
        &body,
        "/console/access",
        Missing::Message,
        |_, form| {
            let vault = form.get("vault").ok_or_else(|| Flash::error("Pick a vault."))?.to_string();
            let mut pairs = vec![("vault".to_string(), vault)];
            for (k, v) in subject(form)? {
                pairs.push((k.to_string(), v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())));
            }
            let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            Ok(Call::send(Method::DELETE, format!("/v1/acl?{}", query(&pairs)), None))
        },
        |_| Flash::ok("Removed the rule."),
    )
    .await
}
