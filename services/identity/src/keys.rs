//! The deployment's token-signing keys: an ES256 key signs for `key_rotation`, then stays
//! published in the JWK Set until every token it signed has expired. Any gateway that finds the
//! newest key too old makes the next one (one wins: [`Store::add_signing_key`] serialises
//! rotations). Private halves are sealed at rest with the deployment's secret key.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::Utc;
use otc_auth::jwt::SigningKey;
use otc_auth::seal::Sealer;
use otc_store::{SigningKeyRow, Store};
use serde_json::Value;

use crate::IdentityError;

/// How long a gateway trusts its copy of the key set before reading it again.
const RELOAD_AFTER: Duration = Duration::from_secs(60);
/// The least time between two reads caused by a token signed with a key not yet seen.
const UNKNOWN_KID_RELOAD: Duration = Duration::from_secs(5);

struct Loaded {
    at: Instant,
    /// Newest first.
    rows: Vec<SigningKeyRow>,
}

pub(crate) struct KeyRing {
    loaded: Mutex<Option<Loaded>>,
    rotation: Duration,
    /// How long a retired key stays published: the access tokens' lifetime and a margin.
    publish_after_retiring: Duration,
}

fn aad(kid: &str) -> String {
    format!("oauth-signing-key:{kid}")
}

impl KeyRing {
    pub(crate) fn new(rotation: Duration, token_ttl: Duration) -> Self {
        KeyRing { loaded: Mutex::new(None), rotation, publish_after_retiring: token_ttl + Duration::from_secs(300) }
    }

    async fn rows(&self, store: &Store, force: bool) -> Result<Vec<SigningKeyRow>, IdentityError> {
        {
            let loaded = self.loaded.lock().expect("key ring lock");
            if let Some(l) = loaded.as_ref() {
                let age = l.at.elapsed();
                if age < RELOAD_AFTER && !(force && age >= UNKNOWN_KID_RELOAD) {
                    return Ok(l.rows.clone());
                }
            }
        }
        let rows = store.signing_keys().await?;
        *self.loaded.lock().expect("key ring lock") = Some(Loaded { at: Instant::now(), rows: rows.clone() });
        Ok(rows)
    }

    /// The key to sign with now, made when there is none young enough.
    pub(crate) async fn signing_key(&self, store: &Store, sealer: &Sealer) -> Result<SigningKey, IdentityError> {
        let now = Utc::now();
        let rotation = chrono::Duration::from_std(self.rotation).unwrap_or(chrono::Duration::days(30));
        let current =
            |rows: &[SigningKeyRow]| rows.iter().find(|r| r.retire_at > now && r.created_at > now - rotation).cloned();
        let mut rows = self.rows(store, false).await?;
        if current(&rows).is_none() {
            let (pkcs8, key) = SigningKey::generate().map_err(|e| IdentityError::Internal(e.to_string()))?;
            let retire_at = now + rotation;
            let row = SigningKeyRow {
                kid: key.kid.clone(),
                sealed_key: sealer.seal(&pkcs8, &aad(&key.kid)),
                public_jwk: key.public_jwk(),
                created_at: now,
                retire_at,
                drop_at: retire_at + chrono::Duration::from_std(self.publish_after_retiring).unwrap_or_default(),
            };
            if store.add_signing_key(&row, now - rotation).await? {
                tracing::info!(kid = %row.kid, "made a new token-signing key");
            }
            *self.loaded.lock().expect("key ring lock") = None;
            rows = self.rows(store, true).await?;
        }
        let row = current(&rows).ok_or_else(|| IdentityError::Internal("no signing key after rotation".into()))?;
        let pkcs8 = sealer
            .open(&row.sealed_key, &aad(&row.kid))
            .map_err(|_| IdentityError::Internal("a signing key does not open with oauth.secret_key".into()))?;
        SigningKey::from_pkcs8(&row.kid, &pkcs8).map_err(|e| IdentityError::Internal(e.to_string()))
    }

    /// The published public keys (the JWK Set's `keys`). `kid` names a key a token was signed
    /// with: when it is not among them, the set is read again (at most every few seconds).
    pub(crate) async fn public_keys(&self, store: &Store, kid: Option<&str>) -> Result<Vec<Value>, IdentityError> {
        let rows = self.rows(store, false).await?;
        let rows = match kid {
            Some(kid) if !rows.iter().any(|r| r.kid == kid) => self.rows(store, true).await?,
            _ => rows,
        };
        Ok(rows.into_iter().map(|r| r.public_jwk).collect())
    }
}
