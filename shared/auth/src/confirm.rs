//! Confirmation tokens: a person's yes to one call. A token is bound to a tenant, a principal
//! (the caller that will resend the call), a tool and the call's arguments hash, expires, and
//! carries an id its verifier spends once. It reads `otce_<claims>.<mac>`: the claims as
//! base64url JSON and an HMAC-SHA256 over them with the tenant's confirmation key. No I/O: the
//! key's storage and the spending of ids are the caller's.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, Mac};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use uuid::Uuid;

const PREFIX: &str = "otce_";

/// What a confirmation token vouches for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub tenant: Uuid,
    pub principal: Uuid,
    pub tool: String,
    pub args_hash: String,
    /// Unix seconds after which the token is refused.
    pub expires: i64,
    /// Spent on first use.
    pub id: String,
    /// The vault the confirmed call names (its `vault` argument), when the token is bound to
    /// one: a call on another vault is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vault: Option<String>,
}

impl Claims {
    /// Claims for one call, expiring at `expires`, with a fresh id.
    pub fn new(tenant: Uuid, principal: Uuid, tool: &str, args_hash: &str, expires: i64) -> Self {
        let mut id = [0u8; 16];
        rand::rng().fill_bytes(&mut id);
        Self {
            tenant,
            principal,
            tool: tool.into(),
            args_hash: args_hash.into(),
            expires,
            id: hex::encode(id),
            vault: None,
        }
    }

    /// The same claims bound to the call's vault.
    pub fn in_vault(mut self, vault: Option<&str>) -> Self {
        self.vault = vault.map(str::to_string);
        self
    }
}

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("not a confirmation token this server issued")]
    Malformed,
    #[error("the confirmation token's signature does not match")]
    Tampered,
}

fn mac(key: &[u8], claims: &str) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(claims.as_bytes());
    mac
}

/// The token for `claims`, signed with `key`.
pub fn sign(key: &[u8], claims: &Claims) -> String {
    let body = B64.encode(serde_json::to_vec(claims).expect("claims serialize"));
    let tag = B64.encode(mac(key, &body).finalize().into_bytes());
    format!("{PREFIX}{body}.{tag}")
}

/// The tenant a token names, read before its key is known (unverified).
pub fn tenant_of(token: &str) -> Result<Uuid, Refusal> {
    Ok(unverified(token)?.1.tenant)
}

fn unverified(token: &str) -> Result<(&str, Claims, Vec<u8>), Refusal> {
    let rest = token.strip_prefix(PREFIX).ok_or(Refusal::Malformed)?;
    let (body, tag) = rest.split_once('.').ok_or(Refusal::Malformed)?;
    let claims = B64.decode(body).map_err(|_| Refusal::Malformed)?;
    let claims: Claims = serde_json::from_slice(&claims).map_err(|_| Refusal::Malformed)?;
    let tag = B64.decode(tag).map_err(|_| Refusal::Malformed)?;
    Ok((body, claims, tag))
}

/// The claims of a token signed with `key` (in constant time); expiry and use are the
/// caller's to check.
pub fn verify(key: &[u8], token: &str) -> Result<Claims, Refusal> {
    let (body, claims, tag) = unverified(token)?;
    mac(key, body).verify_slice(&tag).map_err(|_| Refusal::Tampered)?;
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_token_verifies_and_any_change_is_refused() {
        let claims = Claims::new(Uuid::new_v4(), Uuid::new_v4(), "delete_note", "ab", 2_000_000_000);
        let token = sign(b"key", &claims);
        assert_eq!(verify(b"key", &token), Ok(claims.clone()));
        assert_eq!(tenant_of(&token), Ok(claims.tenant));
        assert_eq!(verify(b"other key", &token), Err(Refusal::Tampered));
        // Claims changed (another tool), signature kept.
        let forged = Claims { tool: "move_note".into(), ..claims.clone() };
        let (_, tag) = token.rsplit_once('.').unwrap();
        let body = B64.encode(serde_json::to_vec(&forged).unwrap());
        assert_eq!(verify(b"key", &format!("{PREFIX}{body}.{tag}")), Err(Refusal::Tampered));
        for bad in ["", "otce_", "otce_x.y", "otc_abc", &token[..token.len() - 2]] {
            assert!(verify(b"key", bad).is_err(), "{bad}");
        }
        assert_ne!(
            Claims::new(claims.tenant, claims.principal, "t", "h", 1).id,
            Claims::new(claims.tenant, claims.principal, "t", "h", 1).id
        );
    }
}
