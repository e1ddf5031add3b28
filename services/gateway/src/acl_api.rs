//! The admin API for a tenant's folder ACL (needs admin:acl), as `obsidian-tc acl` offers it:
//! - `GET /v1/acl[?vault=V]`: the rules.
//! - `PUT /v1/acl`: `{vault, principal | group | everyone: true, read_paths?, write_paths?,
//!   delete_paths?, read_only?}` sets the rule for that vault and subject (a list left out is
//!   unrestricted, `[]` allows nothing).
//! - `DELETE /v1/acl?vault=V&principal=P | group=G | everyone=true`: drops it.
//! - `GET /v1/acl/access?vault=V&principal=P`: what P can read, write and delete in V (the
//!   rules that apply to them, judged on the root and each top-level folder).
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

#[derive(Serialize, Deserialize, JsonSchema)]
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

#[derive(Serialize, Deserialize, JsonSchema)]
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

#[derive(Serialize, Deserialize, JsonSchema)]
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

/// GET /v1/acl/access?vault=V&principal=P
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AccessQuery {
    /// The vault's name or id.
    pub vault: String,
    /// The principal's name or id.
    pub principal: String,
}

/// What a principal may do in one folder (a file directly in it stands for the folder).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FolderAccess {
    /// The folder, `""` for the vault's root.
    pub folder: String,
    pub read: bool,
    pub write: bool,
    pub delete: bool,
}

/// What one principal can reach in one vault through the tools: the rules that apply to them
/// (their own, their groups', everyone's, under the deployment's floor) judged on the vault's
/// root and each top-level folder.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct MemberAccess {
    pub vault: String,
    pub principal: String,
    pub principal_id: uuid::Uuid,
    pub groups: Vec<String>,
    /// No rule restricts this vault for them.
    pub unrestricted: bool,
    /// The tenant's rules of this vault that apply to them.
    pub rules: Vec<AclRule>,
    /// The root, then the top-level folders (at most 200, by name).
    pub folders: Vec<FolderAccess>,
    /// Whether the vault has more top-level folders than are listed.
    pub more_folders: bool,
}

/// Top-level folders judged at most.
const MAX_FOLDERS: usize = 200;

/// `GET /v1/acl/access?vault=V&principal=P` (admin:acl): what P can read, write and delete in V.
pub async fn access(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<AccessQuery>,
) -> Result<Json<MemberAccess>, ApiError> {
    use otc_vault::acl::{Audience, Op, Verdict};
    require(&caller, SCOPE)?;
    let services = &state.dispatcher.services;
    let store_err = |e: otc_store::StoreError| ApiError::from_store(&e);
    let mut tx = services.store.begin(caller.tenant_id).await.map_err(store_err)?;
    // A credential bound to one vault asks about that vault only; another answers as missing.
    let vault = tx
        .vault_by_name_or_id(&query.vault)
        .await
        .map_err(store_err)?
        .filter(|v| caller.vault_id.is_none_or(|bound| bound == v.id))
        .ok_or_else(|| ApiError::from_tool(ToolError::new(ErrorCode::VaultNotFound).echo("vault", &query.vault)))?;
    let who = tx.find_principal(&query.principal).await.map_err(store_err)?.ok_or_else(|| {
        ApiError::from_tool(
            ToolError::with_message(ErrorCode::NotFound, "no principal of that name or id in your tenant")
                .echo("principal", &query.principal),
        )
    })?;
    let mut subject = caller.clone();
    subject.access = tx.access(who.id).await.map_err(store_err)?;
    subject.principal_id = who.id;
    subject.principal_name = who.name.clone();
    subject.scopes = Vec::new();
    subject.vault_id = None;
    let view = otc_kernel::reading::View::for_caller(services, &subject, vault.clone(), Audience::Tools, &mut tx)
        .await
        .map_err(store_err)?;
    let mut folders = tx.top_folders(vault.id, MAX_FOLDERS as i64 + 1).await.map_err(store_err)?;
    let rows = tx.acl_rules(Some(vault.id)).await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    let more_folders = folders.len() > MAX_FOLDERS;
    folders.truncate(MAX_FOLDERS);
    let groups = subject.access.groups.clone();
    let applies = |r: &&AclRuleRow| match r.subject_kind.as_str() {
        "principal" => r.principal_id == Some(who.id),
        "group" => r.group_name.as_ref().is_some_and(|g| groups.contains(g)),
        _ => true,
    };
    let acl = view.acl();
    // A file directly in a folder stands for what the folder's rules allow there.
    let judge = |folder: String| {
        let probe = if folder.is_empty() { "note.md".to_string() } else { format!("{folder}/note.md") };
        FolderAccess {
            read: acl.can_read(&probe),
            write: acl.can_write(&probe),
            delete: acl.can_delete(&probe),
            folder,
        }
    };
    Ok(Json(MemberAccess {
        unrestricted: matches!(acl.explain(Op::Read, "note.md"), Verdict::Unrestricted),
        rules: rows.iter().filter(applies).map(rule_of).collect(),
        folders: std::iter::once(String::new()).chain(folders).map(judge).collect(),
        more_folders,
        vault: vault.name,
        principal: who.name,
        principal_id: who.id,
        groups,
    }))
}
