//! The tenant's email domains (`admin:domains`, a credential bound to no one vault): a domain
//! finds the tenant at sign-in (home-realm discovery) and admits its people over SCIM only once
//! proven, by a TXT record the domain's DNS publishes.
//! - `GET /v1/admin/domains`: the proven domains and the pending claims with their challenges.
//! - `POST /v1/admin/domains` `{domain}`: claims one; answers the record to publish.
//! - `POST /v1/admin/domains/{domain}/verify`: reads the record through `domains.resolver`; on a
//!   match the domain is the tenant's (409 conflict while another tenant holds it, which is not
//!   named; 409 with what was found while the record is missing).
//! - `DELETE /v1/admin/domains/{domain}`: gives up a claim or a proven domain (one an operator
//!   listed stays the operator's to remove).

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use chrono::{DateTime, Utc};
use otc_errors::{ErrorCode, ToolError};
use otc_store::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::scopes::DOMAINS as SCOPE;
use crate::{ApiError, AppState, Caller};

/// Where the challenge is published, under the domain.
const RECORD_PREFIX: &str = "_obsidian-tc-challenge";
/// What the record holds before the token.
const VALUE_PREFIX: &str = "obsidian-tc-verify=";

/// A domain the tenant holds.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProvenDomain {
    pub domain: String,
    /// `dns` (proven here) or `operator` (listed by the deployment's operator).
    pub via: String,
    pub added_at: DateTime<Utc>,
}

/// A claim waiting for its proof: publish `record_value` as a TXT record at `record_name`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DomainClaim {
    pub domain: String,
    pub record_name: String,
    pub record_value: String,
    pub claimed_at: DateTime<Utc>,
}

/// GET /v1/admin/domains
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Domains {
    pub domains: Vec<ProvenDomain>,
    pub claims: Vec<DomainClaim>,
}

/// POST /v1/admin/domains
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimDomain {
    pub domain: String,
}

/// POST /v1/admin/domains/{domain}/verify and DELETE /v1/admin/domains/{domain}
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DomainChanged {
    pub domain: String,
    /// Proven (verify), or removed (delete).
    pub done: bool,
}

fn tenant_admin(caller: &Caller) -> Result<(), ApiError> {
    crate::auth::tenant_admin(caller, SCOPE, "manage the tenant's email domains")
}

fn store_err(e: StoreError) -> ApiError {
    ApiError::from_store(&e)
}

fn invalid_domain(domain: &str) -> ApiError {
    ApiError::from_tool(
        ToolError::with_message(ErrorCode::InvalidInput, "domain: a DNS name such as example.com, in lowercase")
            .echo("domain", domain),
    )
}

fn claim_of(domain: String, token: &str, at: DateTime<Utc>) -> DomainClaim {
    DomainClaim {
        record_name: format!("{RECORD_PREFIX}.{domain}"),
        record_value: format!("{VALUE_PREFIX}{token}"),
        domain,
        claimed_at: at,
    }
}

pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<Domains>, ApiError> {
    tenant_admin(&caller)?;
    let mut tx = state.store.begin(caller.tenant_id).await.map_err(store_err)?;
    let proven = tx.tenant_domains().await.map_err(store_err)?;
    let claims = tx.domain_claims().await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    Ok(Json(Domains {
        domains: proven
            .into_iter()
            .map(|d| ProvenDomain { domain: d.domain, via: d.via, added_at: d.added_at })
            .collect(),
        claims: claims.into_iter().map(|(domain, token, at)| claim_of(domain, &token, at)).collect(),
    }))
}

pub async fn claim(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    bytes: Bytes,
) -> Result<Json<DomainClaim>, ApiError> {
    tenant_admin(&caller)?;
    let input: ClaimDomain = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::from_tool(ToolError::with_message(ErrorCode::InvalidInput, format!("the body: {e}"))))?;
    let domain = input.domain.trim().trim_end_matches('.').to_ascii_lowercase();
    let mut tx = state.store.begin(caller.tenant_id).await.map_err(store_err)?;
    let token = tx.claim_domain(&domain).await.map_err(|e| match e {
        StoreError::Invalid { .. } => invalid_domain(&domain),
        other => store_err(other),
    })?;
    tx.commit().await.map_err(store_err)?;
    Ok(Json(claim_of(domain, &token, Utc::now())))
}

pub async fn verify(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(domain): Path<String>,
) -> Result<Json<DomainChanged>, ApiError> {
    tenant_admin(&caller)?;
    let mut tx = state.store.begin(caller.tenant_id).await.map_err(store_err)?;
    let claims = tx.domain_claims().await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    let Some((_, token, at)) = claims.into_iter().find(|(d, _, _)| *d == domain) else {
        return Err(ApiError::from_tool(
            ToolError::with_message(ErrorCode::NotFound, "no claim on this domain: claim it first")
                .echo("domain", &domain),
        ));
    };
    let wanted = claim_of(domain.clone(), &token, at);
    let config = &state.dispatcher.services.config.domains;
    let unavailable = |e: otc_kernel::dns::DnsError| {
        tracing::warn!(%domain, error = %e, "domain proof: DNS lookup failed");
        ApiError::from_tool(
            ToolError::with_message(ErrorCode::ServiceUnavailable, "the DNS resolver could not be asked; try again")
                .detail("dependency", "dns"),
        )
    };
    let resolver = otc_kernel::dns::resolver(Some(&config.resolver)).map_err(unavailable)?;
    let timeout = std::time::Duration::from_millis(config.timeout_ms.max(1));
    let found = otc_kernel::dns::txt(resolver, &wanted.record_name, timeout).await.map_err(unavailable)?;
    if !found.iter().any(|t| t.trim() == wanted.record_value) {
        let mut error = ToolError::with_message(
            ErrorCode::Conflict,
            "the domain's DNS does not publish the challenge yet: add the TXT record, wait for it to spread, and verify again",
        )
        .detail("record_name", wanted.record_name.clone())
        .detail("record_value", wanted.record_value.clone());
        error = error.detail("found", found.into_iter().take(5).collect::<Vec<_>>());
        return Err(ApiError::from_tool(error));
    }
    let mut tx = state.store.begin(caller.tenant_id).await.map_err(store_err)?;
    tx.add_tenant_domain(&domain, "dns").await.map_err(|e| match e {
        StoreError::Conflict { .. } => ApiError::from_tool(
            ToolError::with_message(ErrorCode::Conflict, "another organisation holds this domain")
                .echo("domain", &domain),
        ),
        other => store_err(other),
    })?;
    tx.drop_domain_claim(&domain).await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    Ok(Json(DomainChanged { domain, done: true }))
}

pub async fn remove(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(domain): Path<String>,
) -> Result<Json<DomainChanged>, ApiError> {
    tenant_admin(&caller)?;
    let mut tx = state.store.begin(caller.tenant_id).await.map_err(store_err)?;
    let held = tx.tenant_domains().await.map_err(store_err)?;
    if held.iter().any(|d| d.domain == domain && d.via == "operator") {
        return Err(ApiError::from_tool(
            ToolError::with_message(ErrorCode::Forbidden, "the operator listed this domain; ask them to remove it")
                .echo("domain", &domain),
        ));
    }
    let proven = tx.remove_tenant_domain(&domain).await.map_err(store_err)?;
    let claimed = tx.drop_domain_claim(&domain).await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    if !proven && !claimed {
        return Err(ApiError::from_tool(
            ToolError::with_message(ErrorCode::NotFound, "the tenant holds and claims no such domain")
                .echo("domain", &domain),
        ));
    }
    Ok(Json(DomainChanged { domain, done: true }))
}
