//! What a tenant admin manages: the tenant's identity provider (the client secret sealed before
//! it is stored, the email domains claimed for sign-in routing) and the grants its people gave
//! clients (listed, and revoked at once on every gateway).

use std::collections::BTreeMap;

use otc_store::{Grant, IdpConfig};
use serde::{Deserialize, Serialize};
use serde_json::json;
use uuid::Uuid;

use crate::{Identity, IdentityError};

/// The sealing context of a tenant's client secret: a sealed secret copied to another tenant's
/// row does not open.
pub fn secret_aad(tenant: Uuid) -> String {
    format!("idp-client-secret:{tenant}")
}

/// A tenant's identity provider as an admin sets it.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdpInput {
    pub issuer: String,
    pub client_id: String,
    /// Left out: a public client, or (with `keep_secret`) the secret already stored.
    #[serde(default)]
    pub client_secret: Option<String>,
    #[serde(default)]
    pub keep_secret: bool,
    #[serde(default)]
    pub email_domains: Vec<String>,
    #[serde(default)]
    pub groups_claim: Option<String>,
    #[serde(default)]
    pub default_scopes: Vec<String>,
    #[serde(default)]
    pub group_scopes: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub group_acl: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub cimd_hosts: Vec<String>,
    /// The issuer may be one another tenant uses too (a shared provider such as Google, where
    /// each tenant's email domains tell its people apart). Only the deployment's operator may
    /// say so.
    #[serde(default)]
    pub shared_issuer: bool,
}

/// Who changes a tenant's provider. The operator (the command line) is trusted with what spans
/// tenants: the email domains that route sign-in, and an issuer several tenants share. A
/// tenant's admin (the API) changes the rest, and grants no scope it does not hold itself.
#[derive(Debug, Clone)]
pub enum Changer {
    Operator,
    TenantAdmin { scopes: Vec<otc_auth::Scope> },
}

/// A tenant's identity provider as shown: never the secret, only whether there is one.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
pub struct IdpView {
    pub issuer: String,
    pub client_id: String,
    pub has_client_secret: bool,
    pub email_domains: Vec<String>,
    pub groups_claim: String,
    pub default_scopes: Vec<String>,
    pub group_scopes: serde_json::Value,
    pub group_acl: serde_json::Value,
    pub cimd_hosts: Vec<String>,
}

impl From<IdpConfig> for IdpView {
    fn from(c: IdpConfig) -> Self {
        IdpView {
            issuer: c.issuer,
            client_id: c.client_id,
            has_client_secret: c.sealed_secret.is_some(),
            email_domains: c.email_domains,
            groups_claim: c.groups_claim,
            default_scopes: c.default_scopes,
            group_scopes: c.group_scopes,
            group_acl: c.group_acl,
            cimd_hosts: c.cimd_hosts,
        }
    }
}

/// Why an admin change was refused.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("{field}: {message}")]
    Invalid { field: &'static str, message: String },
    #[error("{0} not found")]
    NotFound(String),
    #[error("the email domain is already claimed by another organisation")]
    DomainTaken,
    #[error("{0}")]
    Forbidden(String),
    #[error(transparent)]
    Internal(#[from] IdentityError),
}

impl From<otc_store::StoreError> for AdminError {
    fn from(err: otc_store::StoreError) -> Self {
        AdminError::Internal(IdentityError::Store(err))
    }
}

fn invalid(field: &'static str, message: impl Into<String>) -> AdminError {
    AdminError::Invalid { field, message: message.into() }
}

fn check_scopes(field: &'static str, scopes: &[String]) -> Result<(), AdminError> {
    for s in scopes {
        s.parse::<otc_auth::Scope>().map_err(|e| invalid(field, e.to_string()))?;
    }
    Ok(())
}

impl Identity {
    pub async fn idp(&self, tenant: Uuid) -> Result<Option<IdpView>, AdminError> {
        let mut tx = self.store.begin(tenant).await?;
        let idp = tx.idp().await?;
        tx.commit().await?;
        Ok(idp.map(IdpView::from))
    }

    /// Sets the tenant's identity provider, checked: the issuer an https URL (or an exempt
    /// host), domains lower-case names, scopes and group names valid.
    pub async fn set_idp(&self, tenant: Uuid, input: IdpInput, by: Changer) -> Result<IdpView, AdminError> {
        let issuer = input.issuer.trim_end_matches('/').to_string();
        let url = url::Url::parse(&issuer).map_err(|_| invalid("issuer", "must be an absolute URL"))?;
        self.outbound.check(&url).map_err(|e| invalid("issuer", e.to_string()))?;
        if input.client_id.is_empty() || input.client_id.len() > 1024 {
            return Err(invalid("client_id", "must be 1 to 1024 characters"));
        }
        let texts = std::iter::once(&input.client_id)
            .chain(&input.groups_claim)
            .chain(&input.cimd_hosts)
            .chain(input.group_scopes.keys())
            .chain(input.group_acl.keys())
            .chain(input.client_secret.iter());
        for text in texts {
            if text.chars().any(char::is_control) {
                return Err(invalid("idp", "no value may contain control characters"));
            }
        }
        let mut domains = Vec::new();
        for d in &input.email_domains {
            let d = d.trim().trim_start_matches('@').to_ascii_lowercase();
            let ok = !d.is_empty()
                && d.len() <= 253
                && d.contains('.')
                && d.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
                && !d.starts_with(['.', '-'])
                && !d.ends_with(['.', '-']);
            if !ok {
                return Err(invalid("email_domains", format!("{d:?} is not a domain name")));
            }
            if !domains.contains(&d) {
                domains.push(d);
            }
        }
        let groups_claim = input.groups_claim.unwrap_or_else(|| "groups".into());
        if groups_claim.is_empty() || groups_claim.len() > 200 {
            return Err(invalid("groups_claim", "must be 1 to 200 characters"));
        }
        check_scopes("default_scopes", &input.default_scopes)?;
        for scopes in input.group_scopes.values() {
            check_scopes("group_scopes", scopes)?;
        }
        for names in input.group_acl.values() {
            if let Some(bad) = names.iter().find(|n| !otc_vault::acl::is_group_name(n)) {
                return Err(invalid("group_acl", format!("{bad:?} is not a group name")));
            }
        }
        let mut tx = self.store.begin(tenant).await?;
        let current = tx.idp().await?;
        if let Changer::TenantAdmin { scopes } = &by {
            // Email domains route sign-in across organisations: an admin may name only domains
            // the tenant holds (proven by DNS, or listed by the operator), or keep those it has.
            let had: Vec<String> = current.as_ref().map(|c| c.email_domains.clone()).unwrap_or_default();
            let holds: Vec<String> = tx.tenant_domains().await?.into_iter().map(|d| d.domain).collect();
            if let Some(unproven) = domains.iter().find(|d| !had.contains(d) && !holds.contains(d)) {
                return Err(AdminError::Forbidden(format!(
                    "email domains route sign-in across organisations: prove {unproven} first (POST /v1/admin/domains) or ask the deployment's operator (obsidian-tc idp set)"
                )));
            }
            if input.shared_issuer {
                return Err(AdminError::Forbidden("only the deployment's operator may share an issuer".into()));
            }
            let granted = input.default_scopes.iter().chain(input.group_scopes.values().flatten());
            if let Some(beyond) = granted.into_iter().find(|s| !scopes.iter().any(|held| held.grants(s))) {
                return Err(AdminError::Forbidden(format!("{beyond} is beyond this credential's own scopes")));
            }
        }
        let others: Vec<Uuid> =
            self.store.tenants_by_idp_issuer(&issuer).await?.into_iter().filter(|t| *t != tenant).collect();
        if !others.is_empty() && !input.shared_issuer {
            return Err(AdminError::Forbidden(
                "another organisation signs in with this issuer; the operator may allow a shared one (--shared-issuer)"
                    .into(),
            ));
        }
        let sealed_secret = match (&input.client_secret, input.keep_secret) {
            (Some(secret), _) if !secret.is_empty() => Some(self.sealer.seal(secret.as_bytes(), &secret_aad(tenant))),
            (_, true) => current.and_then(|old| old.sealed_secret),
            _ => None,
        };
        let config = IdpConfig {
            issuer,
            client_id: input.client_id,
            sealed_secret,
            email_domains: domains,
            groups_claim,
            default_scopes: input.default_scopes,
            group_scopes: json!(input.group_scopes),
            group_acl: json!(input.group_acl),
            cimd_hosts: input
                .cimd_hosts
                .iter()
                .map(|h| h.trim().to_ascii_lowercase())
                .filter(|h| !h.is_empty())
                .collect(),
        };
        match tx.set_idp(&config).await {
            Ok(()) => {}
            Err(otc_store::StoreError::Conflict { .. }) => return Err(AdminError::DomainTaken),
            Err(e) => return Err(e.into()),
        }
        // Sign-in is routed by a domain only while the tenant holds it (`tenant_domains`): the
        // operator's word makes a domain it names the tenant's, as `tenant domains --add` does.
        if matches!(by, Changer::Operator) {
            for domain in &config.email_domains {
                match tx.add_tenant_domain(domain, "operator").await {
                    Ok(()) => {}
                    Err(otc_store::StoreError::Conflict { .. }) => return Err(AdminError::DomainTaken),
                    Err(e) => return Err(e.into()),
                }
            }
        }
        tx.commit().await?;
        Ok(config.into())
    }

    pub async fn remove_idp(&self, tenant: Uuid) -> Result<bool, AdminError> {
        let mut tx = self.store.begin(tenant).await?;
        let removed = tx.remove_idp().await?;
        tx.commit().await?;
        Ok(removed)
    }

    /// The tenant's grants (one principal's, by id or name, when given).
    pub async fn grants(
        &self,
        tenant: Uuid,
        principal: Option<&str>,
        include_revoked: bool,
    ) -> Result<Vec<Grant>, AdminError> {
        let mut tx = self.store.begin(tenant).await?;
        let principal = match principal {
            Some(p) => {
                Some(tx.find_principal(p).await?.ok_or_else(|| AdminError::NotFound(format!("principal {p}")))?.id)
            }
            None => None,
        };
        let grants = tx.grants(principal, include_revoked).await?;
        tx.commit().await?;
        Ok(grants)
    }

    /// Revokes a grant: its refresh tokens and access tokens stop working on every gateway
    /// before this returns.
    pub async fn revoke_grant(&self, tenant: Uuid, grant: Uuid) -> Result<bool, AdminError> {
        let mut tx = self.store.begin(tenant).await?;
        if tx.grant(grant).await?.is_none() {
            return Err(AdminError::NotFound(format!("grant {grant}")));
        }
        let revoked = tx.revoke_grant(grant, "revoked by an administrator").await?;
        tx.commit().await?;
        self.tokens_changed(tenant).await;
        Ok(revoked)
    }
}
