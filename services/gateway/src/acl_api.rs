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
use otc_tools::tools::admin::acl_rules::{self, RuleRequest, SubjectName};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::auth::require;
use crate::{ApiError, AppState, Caller};

const SCOPE: &str = "admin:acl";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    #[serde(default)]
    pub vault: Option<String>,
}

/// Whose rule: exactly one of principal, group or everyone, in a vault.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubjectFields {
    pub vault: String,
    #[serde(default)]
    pub principal: Option<String>,
    #[serde(default)]
    pub group: Option<String>,
    #[serde(default)]
    pub everyone: bool,
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

/// A rule to set: a list left out is unrestricted, `[]` allows nothing.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetRule {
    #[serde(flatten)]
    pub target: SubjectFields,
    #[serde(default)]
    pub read_paths: Option<Vec<String>>,
    #[serde(default)]
    pub write_paths: Option<Vec<String>>,
    #[serde(default)]
    pub delete_paths: Option<Vec<String>>,
    #[serde(default)]
    pub read_only: bool,
}

#[derive(Deserialize, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupChange {
    #[serde(default)]
    pub add: Vec<String>,
    #[serde(default)]
    pub remove: Vec<String>,
}

#[derive(Serialize, JsonSchema)]
pub struct AclRule {
    pub id: uuid::Uuid,
    pub vault: String,
    pub vault_id: uuid::Uuid,
    /// "principal alice", "group eng" or "everyone".
    pub subject: String,
    pub principal: Option<String>,
    pub principal_id: Option<uuid::Uuid>,
    pub group: Option<String>,
    pub read_paths: Option<Vec<String>>,
    pub write_paths: Option<Vec<String>>,
    pub delete_paths: Option<Vec<String>>,
    pub read_only: bool,
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

#[derive(Serialize, JsonSchema)]
pub struct AclRules {
    pub rules: Vec<AclRule>,
}

#[derive(Serialize, JsonSchema)]
pub struct AclRuleSet {
    pub rule: AclRule,
    /// Every gateway obeys the change before this answer.
    pub gateways_told: bool,
}

#[derive(Serialize, JsonSchema)]
pub struct AclRuleRemoved {
    pub removed: bool,
    pub gateways_told: bool,
}

#[derive(Serialize, JsonSchema)]
pub struct PrincipalGroups {
    pub principal: String,
    pub principal_id: uuid::Uuid,
    pub groups: Vec<String>,
    pub gateways_told: bool,
}

fn rule_of(r: &AclRuleRow) -> AclRule {
    AclRule {
        id: r.id,
        vault: r.vault_name.clone(),
        vault_id: r.vault_id,
        subject: r.subject_label(),
        principal: r.principal_name.clone(),
        principal_id: r.principal_id,
        group: r.group_name.clone(),
        read_paths: r.read_paths.clone(),
        write_paths: r.write_paths.clone(),
        delete_paths: r.delete_paths.clone(),
        read_only: r.read_only,
        updated_at: r.updated_at,
    }
}

pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<ListQuery>,
) -> Result<Json<AclRules>, ApiError> {
    require(&caller, SCOPE)?;
    let store = &state.dispatcher.services.store;
    let rules = acl_rules::rules(store, caller.tenant_id, query.vault.as_deref(), caller.vault_id)
        .await
        .map_err(ApiError::from_tool)?;
    Ok(Json(AclRules { rules: rules.iter().map(rule_of).collect() }))
}

pub async fn set(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    body: Result<Json<SetRule>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<AclRuleSet>, ApiError> {
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
    let changed = acl_rules::set_rule(&services.store, &services.kv, caller.tenant_id, &request)
        .await
        .map_err(ApiError::from_tool)?;
    Ok(Json(AclRuleSet { rule: rule_of(&changed.value), gateways_told: changed.gateways_told }))
}

pub async fn remove(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(target): Query<SubjectFields>,
) -> Result<Json<AclRuleRemoved>, ApiError> {
    require(&caller, SCOPE)?;
    let services = &state.dispatcher.services;
    let subject = target.subject()?;
    let changed = acl_rules::remove_rule(
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
    Ok(Json(AclRuleRemoved { removed: true, gateways_told: changed.gateways_told }))
}

pub async fn groups(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(principal): Path<String>,
) -> Result<Json<PrincipalGroups>, ApiError> {
    group_change(&state, &caller, &principal, GroupChange::default()).await
}

pub async fn change_groups(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(principal): Path<String>,
    body: Result<Json<GroupChange>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<PrincipalGroups>, ApiError> {
    require(&caller, SCOPE)?;
    let Json(change) = body.map_err(|e| crate::error::body_rejection("groups", e))?;
    group_change(&state, &caller, &principal, change).await
}

async fn group_change(
    state: &AppState,
    caller: &Caller,
    principal: &str,
    change: GroupChange,
) -> Result<Json<PrincipalGroups>, ApiError> {
    require(caller, SCOPE)?;
    if caller.vault_id.is_some() {
        return Err(ApiError::from_tool(ToolError::with_message(
            ErrorCode::Forbidden,
            "groups span the tenant: manage them with a credential not bound to one vault",
        )));
    }
    let services = &state.dispatcher.services;
    let changed = acl_rules::change_groups(
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
    Ok(Json(PrincipalGroups {
        principal: who.name,
        principal_id: who.id,
        groups,
        gateways_told: changed.gateways_told,
    }))
}
