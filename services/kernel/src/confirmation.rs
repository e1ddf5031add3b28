//! Confirmation tokens: how a person says yes to one destructive call. The call answers
//! elicit_required with its `args_hash`; `obsidian-tc elicit` or `POST /v1/elicit` (an admin)
//! mints a token bound to the tenant, the calling principal, the tool and that hash, signed
//! with the tenant's key (`otc_auth::confirm`; the key lives in Postgres, so a token minted
//! anywhere verifies on every gateway); the call resent with `elicit_token` proceeds once. A
//! token's id is spent in Redis on use, so a second use, on any gateway, is refused.

use std::time::Duration;

use chrono::{DateTime, Utc};
use otc_auth::confirm::{self, Claims};
use otc_errors::{ErrorCode, ToolError};
use otc_kv::Kv;
use otc_store::Store;
use uuid::Uuid;

use crate::Caller;

/// Each tenant's key, once read (keys never change): it signs confirmation tokens, and the
/// wiki's page seals are derived from it. Bounded like the vault cache (the least recently
/// used tenants' keys go; a key read again is the same key).
pub struct Keys(otc_cache::Bounded<Uuid, [u8; 32]>);

impl Keys {
    /// Keys of at most `max_bytes` (`caches.vaults_bytes`).
    pub fn new(max_bytes: u64) -> Self {
        Self(otc_cache::Bounded::new("tenant_keys", usize::MAX, max_bytes, |_, _| 48))
    }

    pub fn figures(&self) -> otc_cache::Figures {
        self.0.figures()
    }

    pub async fn get(&self, store: &Store, tenant: Uuid) -> Result<[u8; 32], otc_store::StoreError> {
        if let Some(key) = self.0.get(&tenant) {
            return Ok(key);
        }
        let key = tenant_key(store, tenant).await?;
        self.0.put(tenant, key);
        Ok(key)
    }
}

/// A key for one purpose derived from the tenant's key: HMAC-SHA256 of `label` under it. The
/// MCP gateway's request states use it (their label names a key epoch, so the keys they are
/// sealed with rotate while the tenant's key stays).
pub async fn derived_key(services: &crate::Services, tenant: Uuid, label: &[u8]) -> Result<[u8; 32], ToolError> {
    use hmac::{Hmac, Mac};
    let key = services.confirmation_keys.get(&services.store, tenant).await.map_err(|e| {
        tracing::warn!(error = ?e, "cannot read the tenant's key");
        ToolError::with_message(ErrorCode::Internal, "the tenant's key could not be read; retry shortly")
    })?;
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&key).expect("any key length");
    mac.update(label);
    Ok(mac.finalize().into_bytes().into())
}

async fn tenant_key(store: &Store, tenant: Uuid) -> Result<[u8; 32], otc_store::StoreError> {
    let mut tx = store.begin(tenant).await?;
    let key = tx.confirmation_key().await?;
    tx.commit().await?;
    Ok(key)
}

/// A token minted for one call.
#[derive(Debug, Clone)]
pub struct Minted {
    pub token: String,
    pub expires_at: DateTime<Utc>,
}

/// The longest a confirmation token lives, whatever is asked.
pub const MAX_TTL: Duration = Duration::from_secs(24 * 3600);

/// An `args_hash` as a call's elicit_required details give it: 64 hex digits.
pub fn check_args_hash(hash: &str) -> Result<(), ToolError> {
    if hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(());
    }
    Err(ToolError::with_message(ErrorCode::InvalidInput, "args_hash is the call's details.args_hash: 64 hex digits")
        .detail("field", "args_hash"))
}

/// Mints a token for `principal` of `tenant` to make the call `tool` with arguments hashing to
/// `args_hash` (on `vault`, when the token is bound to the call's vault), valid for `ttl` (from
/// a second to [`MAX_TTL`]).
pub async fn mint(
    store: &Store,
    tenant: Uuid,
    principal: Uuid,
    tool: &str,
    args_hash: &str,
    vault: Option<&str>,
    ttl: Duration,
) -> Result<Minted, otc_store::StoreError> {
    let key = tenant_key(store, tenant).await?;
    let ttl = ttl.clamp(Duration::from_secs(1), MAX_TTL);
    let expires_at = Utc::now() + chrono::Duration::from_std(ttl).expect("at most a day");
    let claims = Claims::new(tenant, principal, tool, args_hash, expires_at.timestamp()).in_vault(vault);
    Ok(Minted { token: confirm::sign(&key, &claims), expires_at })
}

fn invalid(why: &str, tool: &str, args_hash: &str) -> ToolError {
    ToolError::with_message(
        ErrorCode::ElicitInvalid,
        format!("{why}; send the call again without a token for a fresh confirmation request"),
    )
    .detail("args_hash", args_hash.to_string())
    .detail("tool", tool.to_string())
}

/// Checks `token` for `caller`'s call of `tool` with arguments hashing to `args_hash` on
/// `vault` (the call's `vault` argument), and spends it: elicit_invalid when it is malformed,
/// signed by another key, made for another caller, tool, arguments or vault, expired, or
/// already used.
#[allow(clippy::too_many_arguments)]
pub async fn redeem(
    store: &Store,
    kv: &Kv,
    keys: &Keys,
    caller: &Caller,
    tool: &str,
    args_hash: &str,
    vault: Option<&str>,
    token: &str,
) -> Result<(), ToolError> {
    let refused = |why: &str| invalid(why, tool, args_hash);
    match confirm::tenant_of(token) {
        Ok(tenant) if tenant == caller.tenant_id => {}
        _ => return Err(refused("this confirmation token was not issued for this caller")),
    }
    let key = keys.get(store, caller.tenant_id).await?;
    let claims = confirm::verify(&key, token).map_err(|e| refused(&e.to_string()))?;
    if claims.principal != caller.principal_id {
        return Err(refused("this confirmation token was issued to another principal"));
    }
    if claims.tool != tool || claims.args_hash != args_hash {
        return Err(refused("this confirmation token confirms another call (its tool or arguments differ)"));
    }
    if claims.vault.is_some() && claims.vault.as_deref() != vault {
        return Err(refused("this confirmation token confirms a call on another vault"));
    }
    let left = claims.expires - Utc::now().timestamp();
    if left <= 0 {
        return Err(refused("this confirmation token has expired"));
    }
    // Spent once, on whichever gateway sees it first; the record outlives the token.
    let spent = format!("elicit:{}:{}", caller.tenant_id, claims.id);
    let first = kv.create_record(&spent, "spent", Duration::from_secs(left as u64 + 60)).await.map_err(|e| {
        tracing::warn!(error = ?e, "cannot record a confirmation token's use");
        ToolError::with_message(
            ErrorCode::Internal,
            "the confirmation could not be checked for single use; the call was not run (send it again)",
        )
    })?;
    if !first {
        return Err(refused("this confirmation token has already been used"));
    }
    Ok(())
}
