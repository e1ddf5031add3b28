//! An authorization in progress, from `/authorize` to the redirect back to the client: kept in
//! Redis under an unguessable id for `flow_ttl`, so any gateway can take each step. The id
//! travels in pages and URLs (and as the `state` sent to the provider); the browser that began
//! the flow also holds a secret of its own in a cookie, whose hash the flow keeps, so nobody who
//! learns the id from a URL can continue the flow from another browser.

use std::time::Duration;

use otc_kv::Kv;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::IdentityError;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Flow {
    pub id: String,
    /// SHA-256 (hex) of the secret in the cookie of the browser that began the flow.
    pub browser_key: String,
    /// Our issuer as the client reached it.
    pub issuer: String,
    pub client_id: String,
    pub client_name: Option<String>,
    pub redirect_uri: String,
    pub state: Option<String>,
    pub code_challenge: String,
    /// The scopes asked for; None asks for whatever the user may grant.
    pub scope: Option<Vec<String>>,
    pub resource: String,
    pub tenant: Option<Uuid>,
    pub tenant_name: Option<String>,
    pub idp: Option<IdpLeg>,
    pub user: Option<SignedIn>,
}

/// The client id a console sign-in's flow carries (see the console module).
pub const CONSOLE_CLIENT_ID: &str = "obsidian-tc-console";

impl Flow {
    /// Whether this is a console sign-in (its callback ends in a console session, never a code).
    pub fn is_console(&self) -> bool {
        self.client_id == CONSOLE_CLIENT_ID
    }
}

/// What the leg to the tenant's identity provider needs back on its callback.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IdpLeg {
    pub nonce: String,
    pub pkce_verifier: String,
}

/// Who signed in, and what they may grant.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SignedIn {
    pub principal_id: Uuid,
    pub name: String,
    pub email: Option<String>,
    /// The scopes this sign-in may grant the client (asked for ∩ allowed).
    pub scopes: Vec<String>,
}

fn key(id: &str) -> String {
    format!("oauth:flow:{id}")
}

pub(crate) fn new_id() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// The hash a flow keeps of its browser's secret.
pub(crate) fn browser_key(secret: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(secret.as_bytes()))
}

pub(crate) async fn save(kv: &Kv, flow: &Flow, ttl: Duration) -> Result<(), IdentityError> {
    let text = serde_json::to_string(flow).map_err(|e| IdentityError::Internal(e.to_string()))?;
    kv.put_record(&key(&flow.id), &text, ttl).await?;
    Ok(())
}

pub(crate) async fn load(kv: &Kv, id: &str) -> Result<Option<Flow>, IdentityError> {
    if id.len() != 64 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(None);
    }
    let Some(text) = kv.get_record(&key(id)).await? else { return Ok(None) };
    Ok(serde_json::from_str(&text).ok())
}

/// Ends a flow: once its code is issued (or it was refused) it cannot be continued. Returns
/// whether this call ended it (a second consent for the same flow finds it gone).
pub(crate) async fn finish(kv: &Kv, flow: &Flow) -> Result<bool, IdentityError> {
    let Some(text) = kv.get_record(&key(&flow.id)).await? else { return Ok(false) };
    Ok(kv.delete_record_if(&key(&flow.id), &text).await?)
}
