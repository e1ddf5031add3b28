//! Tokens this gateway has checked recently, so that most requests skip the Postgres lookup.
//!
//! A checked token is kept with the tenant's token generation ([`Generation::Tokens`]) read
//! just *before* the Postgres check, and trusted only while that generation still reads the
//! same, for at most `server.auth_cache_ttl_ms`, and never past the token's own expiry. Whoever
//! revokes a token moves the generation on after committing ([`revoked`]), so a revocation
//! holds on every gateway from the moment it is announced: no request that starts after that
//! is let through by a cached check. (Tagged with the generation before the check, an entry can
//! only be older than its tag claims if a revocation committed in between, and that
//! revocation's bump makes the tag stale.)
//!
//! When Redis cannot be read, nothing is served from or added to the cache; a revocation
//! whose bump failed is outlived by cached checks for at most the TTL. Only successful checks
//! are kept: an unknown or revoked token always goes to Postgres.

use std::time::Duration;

use otc_auth::TokenHash;
use otc_cache::{Figures, GenerationCache};
use otc_kv::{Generation, Kv, KvError};
use otc_store::Authenticated;
use uuid::Uuid;

/// Tells every gateway that tokens of `tenant` were revoked (after the revocation committed):
/// checks they hold for the tenant stop counting. An error means Redis could not be told; the
/// gateways then keep what they checked for at most `server.auth_cache_ttl_ms`.
pub async fn revoked(kv: &Kv, tenant: Uuid) -> Result<(), KvError> {
    kv.bump_generation(Generation::Tokens(tenant)).await
}

/// [`revoked`] after a revocation that stands whatever Redis says: a failure is logged, and
/// the gateways' cached checks of the tenant lapse within `server.auth_cache_ttl_ms`.
pub async fn announce_revoked(kv: &Kv, tenant: Uuid) {
    if let Err(e) = revoked(kv, tenant).await {
        tracing::warn!(%tenant, error = %otc_errors::error_chain(&e), "revoked, but could not tell the gateways; cached checks lapse within server.auth_cache_ttl_ms");
    }
}

/// Tokens checked against Postgres, keyed by tenant and token hash.
pub struct AuthCache(GenerationCache<(Uuid, [u8; 32]), Authenticated>);

/// What a lookup found: the caller, or what to do with a fresh Postgres check.
pub enum Lookup {
    Hit(Box<Authenticated>),
    Miss(Tag),
}

/// What a fresh check is kept under.
#[derive(Debug, Clone, Copy)]
pub enum Tag {
    /// The tenant's token generation, read before the check.
    Generation(i64),
    /// The tenant has no token generation yet: it is made once a check succeeds (never for a
    /// stranger's token), and the check after that is kept.
    Missing,
    /// Redis could not be read, or the cache is off: nothing is kept.
    Nothing,
}

impl AuthCache {
    /// Checks held now.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// What the cache holds and has done.
    pub fn figures(&self) -> Figures {
        self.0.figures()
    }

    /// A cache trusting a check for at most `ttl` (zero turns it off), of at most `max_bytes`
    /// (`caches.auth_bytes`), the least recently used checks evicted first.
    pub fn new(ttl: Duration, max_bytes: u64) -> Self {
        // The caller's scopes, names and bindings: a few hundred bytes beside the struct.
        let weigh = |_: &(Uuid, [u8; 32]), _: &Authenticated| std::mem::size_of::<Authenticated>() + 512;
        Self(GenerationCache::new("auth", ttl, usize::MAX, max_bytes, weigh))
    }

    /// The caller behind a token still valid by a recent check, or what a new check is kept
    /// under.
    pub async fn lookup(&self, kv: &Kv, tenant: Uuid, hash: &TokenHash) -> Lookup {
        if !self.0.enabled() {
            return Lookup::Miss(Tag::Nothing);
        }
        match kv.existing_generation(Generation::Tokens(tenant)).await {
            Ok(Some(generation)) => {
                self.cached(tenant, hash, generation).map_or(Lookup::Miss(Tag::Generation(generation)), |c| {
                    Lookup::Hit(Box::new(Authenticated { token_generation: Some(generation), ..c }))
                })
            }
            Ok(None) => Lookup::Miss(Tag::Missing),
            Err(e) => {
                tracing::debug!(error = %e, "token generation unreadable; checking the token in Postgres");
                Lookup::Miss(Tag::Nothing)
            }
        }
    }

    /// A check kept under `generation`, unless the token has expired since.
    fn cached(&self, tenant: Uuid, hash: &TokenHash, generation: i64) -> Option<Authenticated> {
        self.0
            .get(&(tenant, hash.0), generation)
            .filter(|caller| caller.expires_at.is_none_or(|at| at > chrono::Utc::now()))
    }

    /// Keeps a successful check under `tag`.
    pub async fn keep(&self, kv: &Kv, tag: Tag, hash: &TokenHash, caller: &Authenticated) {
        match tag {
            Tag::Generation(generation) => self.0.put((caller.tenant_id, hash.0), generation, caller.clone()),
            Tag::Missing => {
                if let Err(e) = kv.generation(Generation::Tokens(caller.tenant_id)).await {
                    tracing::debug!(error = %e, "could not make the tenant's token generation");
                }
            }
            Tag::Nothing => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(tenant: Uuid, expires_at: Option<chrono::DateTime<chrono::Utc>>) -> Authenticated {
        Authenticated {
            tenant_id: tenant,
            token_id: Uuid::new_v4(),
            principal_id: Uuid::nil(),
            principal_name: "p".into(),
            scopes: vec![],
            vault_id: None,
            expires_at,
            audience: None,
            rate_tiers: vec![],
            access: Default::default(),
            confirm_in_client: false,
            token_generation: None,
        }
    }

    #[test]
    fn an_entry_counts_only_under_its_own_generation_and_tenant() {
        let cache = AuthCache::new(Duration::from_secs(60), 1 << 20);
        let (tenant, hash) = (Uuid::new_v4(), TokenHash([1; 32]));
        cache.0.put((tenant, hash.0), 7, caller(tenant, None));
        assert!(cache.cached(tenant, &hash, 7).is_some());
        assert!(cache.cached(tenant, &hash, 8).is_none(), "a revocation since the check");
        assert!(cache.cached(Uuid::new_v4(), &hash, 7).is_none(), "the tenant is part of the key");
        assert!(cache.cached(tenant, &TokenHash([2; 32]), 7).is_none());
    }

    #[test]
    fn never_past_the_ttl_or_the_token_expiry() {
        let cache = AuthCache::new(Duration::from_millis(30), 1 << 20);
        let (tenant, hash) = (Uuid::new_v4(), TokenHash([4; 32]));
        cache.0.put((tenant, hash.0), 1, caller(tenant, None));
        assert!(cache.cached(tenant, &hash, 1).is_some());
        std::thread::sleep(Duration::from_millis(40));
        assert!(cache.cached(tenant, &hash, 1).is_none());

        let cache = AuthCache::new(Duration::from_secs(60), 1 << 20);
        let expired = chrono::Utc::now() - chrono::Duration::seconds(1);
        cache.0.put((tenant, hash.0), 1, caller(tenant, Some(expired)));
        assert!(cache.cached(tenant, &hash, 1).is_none());
    }
}
