//! Managing a tenant's folder-ACL rules and groups, for `obsidian-tc acl` and the admin /v1
//! endpoints alike: the request checked (globs compile, names are well formed), the change made
//! in one transaction, then the tenant's token generation moved. Rules travel with each checked
//! token, so once the generation moves every gateway checks tokens again and obeys the change
//! before the answer goes back.

use otc_errors::{ErrorCode, ToolError};
use otc_kv::{Generation, Kv};
use otc_store::{AclRuleRow, NewAclRule, Store, Subject};
use otc_vault::acl::{Layer, Rule};
use uuid::Uuid;

/// Most globs one list may hold, and the longest glob.
pub const MAX_GLOBS: usize = 100;
pub const MAX_GLOB_BYTES: usize = 512;

/// Whom a rule is for, as an admin names it.
#[derive(Debug, Clone)]
pub enum SubjectName {
    /// A principal's name or id.
    Principal(String),
    Group(String),
    Everyone,
}

/// A rule as an admin asks for it.
#[derive(Debug, Clone)]
pub struct RuleRequest {
    /// The vault's name or id.
    pub vault: String,
    /// The one vault the admin's credential is bound to, if it is.
    pub bound: Option<Uuid>,
    pub subject: SubjectName,
    pub read_paths: Option<Vec<String>>,
    pub write_paths: Option<Vec<String>>,
    pub delete_paths: Option<Vec<String>>,
    pub read_only: bool,
}

/// What a change did, and whether every gateway was told at once (else they apply it within
/// `server.auth_cache_ttl_ms`).
pub struct Changed<T> {
    pub value: T,
    pub gateways_told: bool,
}

fn invalid(field: &str, message: impl Into<String>) -> ToolError {
    ToolError::with_message(ErrorCode::InvalidInput, message).detail("field", field.to_string())
}

fn internal(err: &(dyn std::error::Error + 'static)) -> ToolError {
    otc_kernel::internal("acl", err)
}

/// A group name ([`otc_vault::acl::is_group_name`]), said before the database says it.
pub fn check_group(name: &str) -> Result<(), ToolError> {
    if otc_vault::acl::is_group_name(name) {
        Ok(())
    } else {
        Err(invalid("group", "a group name is 1-100 letters, digits, spaces or ._@:- starting with a letter or digit")
            .echo("group", name))
    }
}

fn check_globs(field: &str, list: &Option<Vec<String>>) -> Result<(), ToolError> {
    let Some(list) = list else { return Ok(()) };
    if list.len() > MAX_GLOBS {
        return Err(invalid(field, format!("at most {MAX_GLOBS} globs")).detail("count", list.len()));
    }
    for glob in list {
        if glob.is_empty() || glob.len() > MAX_GLOB_BYTES || glob.contains('\0') {
            return Err(invalid(field, format!("a glob is 1-{MAX_GLOB_BYTES} bytes without NUL")).echo("glob", glob));
        }
    }
    Ok(())
}

/// The vault `name` names (by name, then id), which a caller bound to one vault (`bound`) must
/// name: any other answers vault_not_found, as everywhere else.
async fn vault_id(
    tx: &mut otc_store::TenantTx,
    name: &str,
    bound: Option<Uuid>,
) -> Result<otc_store::Vault, ToolError> {
    tx.vault_by_name_or_id(name)
        .await
        .map_err(|e| internal(&e))?
        .filter(|v| bound.is_none_or(|b| b == v.id))
        .ok_or_else(|| ToolError::new(ErrorCode::VaultNotFound).echo("vault", name))
}

async fn principal_id(tx: &mut otc_store::TenantTx, name: &str) -> Result<otc_store::Principal, ToolError> {
    tx.find_principal(name).await.map_err(|e| internal(&e))?.ok_or_else(|| {
        ToolError::with_message(ErrorCode::NotFound, "no principal of that name or id in this tenant")
            .echo("principal", name)
    })
}

async fn subject(tx: &mut otc_store::TenantTx, name: &SubjectName) -> Result<Subject, ToolError> {
    Ok(match name {
        SubjectName::Principal(p) => Subject::Principal(principal_id(tx, p).await?.id),
        SubjectName::Group(g) => {
            check_group(g)?;
            Subject::Group(g.clone())
        }
        SubjectName::Everyone => Subject::Everyone,
    })
}

async fn tell_gateways(kv: &Kv, tenant: Uuid) -> bool {
    match kv.bump_generation(Generation::Tokens(tenant)).await {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!(error = %e, %tenant, "ACL changed but Redis could not tell the gateways");
            false
        }
    }
}

/// Sets (or replaces) the rule for one vault and subject.
pub async fn set_rule(
    store: &Store,
    kv: &Kv,
    tenant: Uuid,
    request: &RuleRequest,
) -> Result<Changed<AclRuleRow>, ToolError> {
    check_globs("read_paths", &request.read_paths)?;
    check_globs("write_paths", &request.write_paths)?;
    check_globs("delete_paths", &request.delete_paths)?;
    Rule::new(
        Layer::Tenant,
        "new rule",
        request.read_paths.as_deref(),
        request.write_paths.as_deref(),
        request.delete_paths.as_deref(),
        request.read_only,
    )
    .map_err(|e| invalid("paths", format!("a glob does not compile: {}", otc_errors::echo(&e))))?;
    let mut tx = store.begin(tenant).await.map_err(|e| internal(&e))?;
    let vault = vault_id(&mut tx, &request.vault, request.bound).await?;
    let subject = subject(&mut tx, &request.subject).await?;
    let row = tx
        .set_acl_rule(&NewAclRule {
            vault_id: vault.id,
            subject,
            read_paths: request.read_paths.clone(),
            write_paths: request.write_paths.clone(),
            delete_paths: request.delete_paths.clone(),
            read_only: request.read_only,
        })
        .await
        .map_err(|e| internal(&e))?;
    tx.commit().await.map_err(|e| internal(&e))?;
    Ok(Changed { value: row, gateways_told: tell_gateways(kv, tenant).await })
}

/// Drops the rule for one vault and subject; whether there was one.
pub async fn remove_rule(
    store: &Store,
    kv: &Kv,
    tenant: Uuid,
    vault: &str,
    bound: Option<Uuid>,
    name: &SubjectName,
) -> Result<Changed<bool>, ToolError> {
    let mut tx = store.begin(tenant).await.map_err(|e| internal(&e))?;
    let vault = vault_id(&mut tx, vault, bound).await?;
    let subject = subject(&mut tx, name).await?;
    let removed = tx.remove_acl_rule(vault.id, &subject).await.map_err(|e| internal(&e))?;
    tx.commit().await.map_err(|e| internal(&e))?;
    let gateways_told = !removed || tell_gateways(kv, tenant).await;
    Ok(Changed { value: removed, gateways_told })
}

/// The tenant's rules, of one vault or all (all: of the one vault `bound` names, if any).
pub async fn rules(
    store: &Store,
    tenant: Uuid,
    vault: Option<&str>,
    bound: Option<Uuid>,
) -> Result<Vec<AclRuleRow>, ToolError> {
    let mut tx = store.begin(tenant).await.map_err(|e| internal(&e))?;
    let vault = match vault {
        Some(v) => Some(vault_id(&mut tx, v, bound).await?.id),
        None => bound,
    };
    let rows = tx.acl_rules(vault).await.map_err(|e| internal(&e))?;
    tx.commit().await.map_err(|e| internal(&e))?;
    Ok(rows)
}

/// A principal's groups after adding `add` and dropping `remove` (either may be empty, to
/// read them).
pub async fn change_groups(
    store: &Store,
    kv: &Kv,
    tenant: Uuid,
    principal: &str,
    add: &[String],
    remove: &[String],
) -> Result<Changed<(otc_store::Principal, Vec<String>)>, ToolError> {
    for g in add.iter().chain(remove) {
        check_group(g)?;
    }
    let mut tx = store.begin(tenant).await.map_err(|e| internal(&e))?;
    let found = principal_id(&mut tx, principal).await?;
    let before = tx.groups(found.id).await.map_err(|e| internal(&e))?;
    let mut after: Vec<String> = before.iter().filter(|g| !remove.contains(g)).cloned().collect();
    for g in add {
        if !after.contains(g) {
            after.push(g.clone());
        }
    }
    after.sort();
    let changed = after != before;
    if changed {
        tx.set_groups(found.id, &after).await.map_err(|e| internal(&e))?;
    }
    tx.commit().await.map_err(|e| internal(&e))?;
    let gateways_told = !changed || tell_gateways(kv, tenant).await;
    Ok(Changed { value: (found, after), gateways_told })
}
