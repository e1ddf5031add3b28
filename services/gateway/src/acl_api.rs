//! The admin API for a tenant's folder ACL (needs admin:acl), as `obsidian-tc acl` offers it:
//! - `GET /v1/acl[?vault=V]`: the rules.
//! - `PUT /v1/acl`: `{vault, principal | group | everyone: true, read_paths?, write_paths?,
//!   delete_paths?, read_only?}` sets the rule for that vault and subject (a list left out is
//!   unrestricted, `[]` allows nothing).
//! - `DELETE /v1/acl?vault=V&principal=P | group=G | everyone=true`: drops it.
//! - `GET|POST /v1/principals/{principal}/groups`: a principal's groups; POST `{add?, remove?}`.
//!
//! Every gateway obeys a change before the answer (`gateways_told: true`). A credential bound to
//! one vault manages that vault's rules only, and no groups (they span the tenant).

use axum::Json;
use axum::extract::{Extension, Path, Query, State};
use otc_errors::{ErrorCode, ToolError};
use otc_store::AclRuleRow;
use otc_tools::acl_admin::{self, RuleRequest, SubjectName};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::auth::require;
use crate::{ApiError, AppState, Caller};

const SCOPE: &str = "admin:acl";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    #[serde(default)]
    vault: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubjectFields {
    vault: String,
    #[serde(default)]
    principal: Option<String>,
    #[serde(default)]
    group: Option<String>,
    #[serde(default)]
    everyone: bool,
}

impl SubjectFields {
    fn subject(&self) -> Result<SubjectName, ApiError> {
        match (&self.principal, &self.group, self.everyone) {
            (Some(p), None, false) => Ok(SubjectName::Principal(p.clone())),
            (None, Some(g), false) => Ok(SubjectName::Group(g.clone())),
            (None, None, true) => Ok(SubjectName::Everyone),
            _ => Err(ApiError::from_tool(
                ToolError::with_message(ErrorCode::InvalidInput, "name exactly one of principal, group or everyone")
                    .detail("field", "subject"),
            )),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetRule {
    #[serde(flatten)]
    target: SubjectFields,
    #[serde(default)]
    read_paths: Option<Vec<String>>,
    #[serde(default)]
    write_paths: Option<Vec<String>>,
    #[serde(default)]
    delete_paths: Option<Vec<String>>,
    #[serde(default)]
    read_only: bool,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct GroupChange {
    #[serde(default)]
    add: Vec<String>,
    #[serde(default)]
    remove: Vec<String>,
}

fn rule_json(r: &AclRuleRow) -> Value {
    json!({
        "id": r.id,
        "vault": r.vault_name,
        "vault_id": r.vault_id,
        "subject": r.subject_label(),
        "principal": r.principal_name,
        "principal_id": r.principal_id,
        "group": r.group_name,
        "read_paths": r.read_paths,
        "write_paths": r.write_paths,
        "delete_paths": r.delete_paths,
        "read_only": r.read_only,
        "updated_at": r.updated_at,
    })
}

pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    require(&caller, SCOPE)?;
    let store = &state.dispatcher.services.store;
    let rules = acl_admin::rules(store, caller.tenant_id, query.vault.as_deref(), caller.vault_id)
        .await
        .map_err(ApiError::from_tool)?;
    Ok(Json(json!({ "rules": rules.iter().map(rule_json).collect::<Vec<_>>() })))
}

pub async fn set(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    body: Result<Json<SetRule>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    require(&caller, SCOPE)?;
    let Json(body) = body.map_err(|e| crate::error::body_rejection("acl", e))?;
    let request = RuleRequest {
        subject: body.target.subject()?,
        vault: body.target.vault,
        bound: caller.vault_id,
        read_paths: body.read_paths,
        write_paths: body.write_paths,
        delete_paths: body.delete_paths,
        read_only: body.read_only,
    };
    let services = &state.dispatcher.services;
    let changed = acl_admin::set_rule(&services.store, &services.kv, caller.tenant_id, &request)
        .await
        .map_err(ApiError::from_tool)?;
    Ok(Json(json!({ "rule": rule_json(&changed.value), "gateways_told": changed.gateways_told })))
}

pub async fn remove(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(target): Query<SubjectFields>,
) -> Result<Json<Value>, ApiError> {
    require(&caller, SCOPE)?;
    let services = &state.dispatcher.services;
    let subject = target.subject()?;
    let changed = acl_admin::remove_rule(
        &services.store,
        &services.kv,
        caller.tenant_id,
        &target.vault,
        caller.vault_id,
        &subject,
    )
    .await
    .map_err(ApiError::from_tool)?;
    if !changed.value {
        return Err(ApiError::from_tool(ToolError::with_message(
            ErrorCode::NotFound,
            "no rule for that vault and subject",
        )));
    }
    Ok(Json(json!({ "removed": true, "gateways_told": changed.gateways_told })))
}

pub async fn groups(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(principal): Path<String>,
) -> Result<Json<Value>, ApiError> {
    group_change(&state, &caller, &principal, GroupChange::default()).await
}

pub async fn change_groups(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(principal): Path<String>,
    body: Result<Json<GroupChange>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    require(&caller, SCOPE)?;
    let Json(change) = body.map_err(|e| crate::error::body_rejection("groups", e))?;
    group_change(&state, &caller, &principal, change).await
}

async fn group_change(
    state: &AppState,
    caller: &Caller,
    principal: &str,
    change: GroupChange,
) -> Result<Json<Value>, ApiError> {
    require(caller, SCOPE)?;
    if caller.vault_id.is_some() {
        return Err(ApiError::from_tool(ToolError::with_message(
            ErrorCode::Forbidden,
            "groups span the tenant: manage them with a credential not bound to one vault",
        )));
    }
    let services = &state.dispatcher.services;
    let changed = acl_admin::change_groups(
        &services.store,
        &services.kv,
        caller.tenant_id,
        principal,
        &change.add,
        &change.remove,
    )
    .await
    .map_err(ApiError::from_tool)?;
    let (who, groups) = changed.value;
    Ok(Json(json!({
        "principal": who.name,
        "principal_id": who.id,
        "groups": groups,
        "gateways_told": changed.gateways_told,
    })))
}
