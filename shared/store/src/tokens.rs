use chrono::{DateTime, Utc};
use otc_auth::{Scope, TokenHash};
use uuid::Uuid;

use crate::{Result, StoreError, TenantTx};

/// What a new token is for.
#[derive(Debug, Clone)]
pub struct NewToken {
    pub principal_id: Uuid,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub vault_id: Option<Uuid>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// A token just issued: the only moment its text exists (only its hash is stored).
pub struct IssuedToken {
    pub id: Uuid,
    pub plaintext: String,
}

/// A token as listed: everything but the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    pub id: Uuid,
    pub name: String,
    pub hint: String,
    pub principal_name: String,
    pub scopes: Vec<String>,
    pub vault_name: Option<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    pub last_used_at: Option<DateTime<Utc>>,
}

/// Who a valid token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    pub tenant_id: Uuid,
    pub token_id: Uuid,
    pub principal_id: Uuid,
    pub principal_name: String,
    pub scopes: Vec<Scope>,
    /// The one vault the token may reach, when it is bound to one.
    pub vault_id: Option<Uuid>,
    /// When the token stops working, if it expires.
    pub expires_at: Option<DateTime<Utc>>,
    /// The resource an OAuth access token was issued for (RFC 8707); None for an API token.
    pub audience: Option<String>,
    /// The tenant's own rate-limit tiers (classes it left out take the deployment's).
    pub rate_tiers: Vec<crate::RateTier>,
    /// The principal's groups and the tenant's folder-ACL rules for it, per vault.
    pub access: crate::Access,
    /// Whether the tenant lets this token's OAuth client have its own person confirm a
    /// destructive call (`tenant_policies`); false for an API token.
    pub confirm_in_client: bool,
    /// The tenant's token generation the gateway read when it let this caller in (not from
    /// Postgres; None when it could not read one): what the gateway remembers for the tenant
    /// (its vaults by name) counts only under the same generation, which every revocation and
    /// deletion moves on.
    pub token_generation: Option<i64>,
}

/// How stale `last_used_at` may get before a use rewrites it (keeps auth to one read mostly).
const LAST_USED_GRANULARITY_SECS: f64 = 60.0;

impl TenantTx {
    /// Mints a token for this tenant and stores its hash.
    pub async fn issue_token(&mut self, row: NewToken) -> Result<IssuedToken> {
        let minted = otc_auth::mint(self.tenant);
        let scopes: Vec<String> = row.scopes.into_iter().map(String::from).collect();
        let id = sqlx::query_scalar!(
            r#"INSERT INTO api_tokens
                 (tenant_id, id, principal_id, name, token_hash, hint, scopes, vault_id, expires_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
               RETURNING id"#,
            self.tenant,
            Uuid::now_v7(),
            row.principal_id,
            row.name,
            &minted.hash.0[..],
            minted.hint,
            &scopes,
            row.vault_id,
            row.expires_at
        )
        .fetch_one(&mut *self.tx)
        .await?;
        Ok(IssuedToken { id, plaintext: minted.plaintext })
    }

    /// The tenant's tokens, never their secrets.
    pub async fn list_tokens(&mut self) -> Result<Vec<TokenRecord>> {
        self.tokens_listed(None).await
    }

    /// The API tokens of one principal (not those its OAuth grants minted), never their secrets.
    pub async fn tokens_of(&mut self, principal: Uuid) -> Result<Vec<TokenRecord>> {
        self.tokens_listed(Some(principal)).await
    }

    async fn tokens_listed(&mut self, principal: Option<Uuid>) -> Result<Vec<TokenRecord>> {
        Ok(sqlx::query_as!(
            TokenRecord,
            r#"SELECT t.id, t.name, t.hint, p.name AS principal_name, t.scopes,
                      v.name AS "vault_name?", t.created_at, t.expires_at, t.revoked_at, t.last_used_at
                 FROM api_tokens t
                 JOIN principals p ON p.tenant_id = t.tenant_id AND p.id = t.principal_id
                 LEFT JOIN vaults v ON v.tenant_id = t.tenant_id AND v.id = t.vault_id
                WHERE $1::uuid IS NULL OR (t.principal_id = $1 AND t.grant_id IS NULL)
                ORDER BY t.created_at, t.id"#,
            principal
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// Revokes `principal`'s own token `id`; NotFound when it is no token of theirs.
    pub async fn revoke_token_of(&mut self, id: Uuid, principal: Uuid) -> Result<()> {
        let found = sqlx::query_scalar!(
            "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now())
              WHERE id = $1 AND principal_id = $2 AND grant_id IS NULL RETURNING id",
            id,
            principal
        )
        .fetch_optional(&mut *self.tx)
        .await?;
        found.map(|_| ()).ok_or_else(|| StoreError::NotFound(format!("token {id}")))
    }

    /// Revokes a token; revoking one already revoked keeps its first revocation time.
    pub async fn revoke_token(&mut self, id: Uuid) -> Result<()> {
        let found = sqlx::query_scalar!(
            "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING id",
            id
        )
        .fetch_optional(&mut *self.tx)
        .await?;
        found.map(|_| ()).ok_or_else(|| StoreError::NotFound(format!("token {id}")))
    }

    /// The principal behind a token with this hash, if the token is live (not revoked, not
    /// expired). Records the use, at most once a minute per token.
    pub async fn authenticate(&mut self, hash: &TokenHash) -> Result<Option<Authenticated>> {
        let row = sqlx::query!(
            r#"SELECT t.id, t.principal_id, p.name AS principal_name, t.scopes, t.vault_id, t.expires_at, t.audience,
                      ARRAY(SELECT class FROM tenant_rate_limits ORDER BY class) AS "tier_classes!",
                      ARRAY(SELECT per_minute FROM tenant_rate_limits ORDER BY class) AS "tier_per_minute!",
                      ARRAY(SELECT burst FROM tenant_rate_limits ORDER BY class) AS "tier_burst!",
                      (t.last_used_at IS NULL
                        OR t.last_used_at < now() - make_interval(secs => $2)) AS "stale_use!",
                      EXISTS (SELECT 1 FROM oauth_grants g
                                JOIN tenant_policies pol ON pol.tenant_id = g.tenant_id
                               WHERE g.tenant_id = t.tenant_id AND g.id = t.grant_id
                                 AND g.client_id = ANY (pol.confirm_in_client_clients)) AS "confirm_in_client!"
                 FROM api_tokens t
                 JOIN principals p ON p.tenant_id = t.tenant_id AND p.id = t.principal_id
                WHERE t.token_hash = $1
                  AND t.revoked_at IS NULL
                  AND p.deactivated_at IS NULL
                  AND (t.expires_at IS NULL OR t.expires_at > now())
                  AND NOT EXISTS (SELECT 1 FROM tenants WHERE deleted_at IS NOT NULL)
                  AND (t.vault_id IS NULL
                       OR EXISTS (SELECT 1 FROM vaults v WHERE v.id = t.vault_id AND v.deleted_at IS NULL))"#,
            &hash.0[..],
            LAST_USED_GRANULARITY_SECS
        )
        .fetch_optional(&mut *self.tx)
        .await?;
        let Some(row) = row else { return Ok(None) };
        if row.stale_use {
            sqlx::query!("UPDATE api_tokens SET last_used_at = now() WHERE id = $1", row.id)
                .execute(&mut *self.tx)
                .await?;
        }
        let access = self.access(row.principal_id).await?;
        // Scopes were validated when the token was made; one that no longer parses grants nothing.
        let scopes = row.scopes.into_iter().filter_map(|s| Scope::try_from(s).ok()).collect();
        Ok(Some(Authenticated {
            tenant_id: self.tenant,
            token_id: row.id,
            principal_id: row.principal_id,
            principal_name: row.principal_name,
            scopes,
            vault_id: row.vault_id,
            expires_at: row.expires_at,
            audience: row.audience,
            rate_tiers: (row.tier_classes.into_iter().zip(row.tier_per_minute).zip(row.tier_burst))
                .map(|((class, per_minute), burst)| crate::RateTier {
                    class,
                    per_minute: per_minute as u32,
                    burst: burst as u32,
                })
                .collect(),
            access,
            confirm_in_client: row.confirm_in_client,
            token_generation: None,
        }))
    }

    /// Deletes tokens that were revoked or expired before `before`; returns how many.
    pub async fn purge_dead_tokens(&mut self, before: DateTime<Utc>) -> Result<u64> {
        let done = sqlx::query!("DELETE FROM api_tokens WHERE revoked_at < $1 OR expires_at < $1", before)
            .execute(&mut *self.tx)
            .await?;
        Ok(done.rows_affected())
    }
}
