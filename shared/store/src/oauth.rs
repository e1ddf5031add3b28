//! The authorization server's rows: registered clients and signing keys (deployment data, read in
//! a transaction with no tenant), each tenant's identity provider, and the grants, codes and
//! refresh tokens a sign-in makes (tenant data).

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use crate::{Result, Store, TenantTx};

/// A client that registered (RFC 7591) or whose metadata document was fetched.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthClient {
    pub client_id: String,
    /// "dcr" or "cimd".
    pub kind: String,
    pub client_name: Option<String>,
    pub redirect_uris: Vec<String>,
    pub token_endpoint_auth_method: String,
    pub secret_hash: Option<Vec<u8>>,
    pub metadata: Value,
    pub created_at: DateTime<Utc>,
    pub fetched_at: Option<DateTime<Utc>>,
}

/// A token-signing key as stored: its private half sealed.
#[derive(Debug, Clone)]
pub struct SigningKeyRow {
    pub kid: String,
    pub sealed_key: Vec<u8>,
    pub public_jwk: Value,
    pub created_at: DateTime<Utc>,
    pub retire_at: DateTime<Utc>,
    pub drop_at: DateTime<Utc>,
}

/// A tenant's identity provider.
#[derive(Debug, Clone, PartialEq)]
pub struct IdpConfig {
    pub issuer: String,
    pub client_id: String,
    pub sealed_secret: Option<Vec<u8>>,
    pub email_domains: Vec<String>,
    pub groups_claim: String,
    pub default_scopes: Vec<String>,
    /// `{"idp-group": ["scope", ..]}`.
    pub group_scopes: Value,
    /// `{"idp-group": ["acl-group", ..]}`.
    pub group_acl: Value,
    pub cimd_hosts: Vec<String>,
}

/// A person as the tenant knows them after their provider vouched for them.
#[derive(Debug, Clone, PartialEq)]
pub struct FederatedPrincipal {
    pub id: Uuid,
    /// False once the tenant's directory deprovisioned them.
    pub active: bool,
    /// Their provider groups as last reported.
    pub idp_groups: Vec<String>,
}

/// What a person allowed a client.
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    pub id: Uuid,
    pub principal_id: Uuid,
    pub principal_name: String,
    pub principal_active: bool,
    pub client_id: String,
    pub client_name: Option<String>,
    pub scopes: Vec<String>,
    pub resource: String,
    pub via: String,
    pub created_at: DateTime<Utc>,
    pub last_used_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
    pub revoked_reason: Option<String>,
}

#[derive(Debug, Clone)]
pub struct NewGrant<'a> {
    pub principal_id: Uuid,
    pub client_id: &'a str,
    pub client_name: Option<&'a str>,
    pub scopes: &'a [String],
    pub resource: &'a str,
    /// "authorization_code" or "jwt_bearer".
    pub via: &'a str,
}

/// A code or refresh token presented for redemption.
#[derive(Debug, Clone, PartialEq)]
pub enum Redemption<T> {
    /// Unknown (or another tenant's: the same thing under row-level security).
    Missing,
    Expired,
    /// Used (a code) or rotated (a refresh token) before: a replay. The grant has been revoked.
    Replayed {
        grant_id: Uuid,
    },
    /// Its grant was revoked, or its principal deprovisioned.
    Revoked,
    Fresh(T),
}

/// A code's binding, checked by the token endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeBinding {
    pub grant: Grant,
    pub redirect_uri: String,
    pub code_challenge: String,
}

/// An access token's row in `api_tokens`.
#[derive(Debug, Clone)]
pub struct NewAccessToken<'a> {
    pub hash: &'a [u8; 32],
    pub hint: &'a str,
    pub grant: &'a Grant,
    pub audience: &'a str,
    pub expires_at: DateTime<Utc>,
}

const GRANT_COLUMNS: &str = "g.id, g.principal_id, p.name AS principal_name, (p.deactivated_at IS NULL) AS principal_active, \
     g.client_id, g.client_name, g.scopes, g.resource, g.via, g.created_at, g.last_used_at, g.revoked_at, g.revoked_reason";

#[derive(sqlx::FromRow)]
struct GrantRow {
    id: Uuid,
    principal_id: Uuid,
    principal_name: String,
    principal_active: bool,
    client_id: String,
    client_name: Option<String>,
    scopes: Vec<String>,
    resource: String,
    via: String,
    created_at: DateTime<Utc>,
    last_used_at: DateTime<Utc>,
    revoked_at: Option<DateTime<Utc>>,
    revoked_reason: Option<String>,
}

impl From<GrantRow> for Grant {
    fn from(r: GrantRow) -> Grant {
        Grant {
            id: r.id,
            principal_id: r.principal_id,
            principal_name: r.principal_name,
            principal_active: r.principal_active,
            client_id: r.client_id,
            client_name: r.client_name,
            scopes: r.scopes,
            resource: r.resource,
            via: r.via,
            created_at: r.created_at,
            last_used_at: r.last_used_at,
            revoked_at: r.revoked_at,
            revoked_reason: r.revoked_reason,
        }
    }
}

impl Store {
    /// A registered client, or the cached document of a metadata-document client.
    pub async fn oauth_client(&self, client_id: &str) -> Result<Option<OAuthClient>> {
        let mut tx = self.begin_untenanted().await?;
        let client = sqlx::query_as!(
            OAuthClient,
            r#"SELECT client_id, kind, client_name, redirect_uris, token_endpoint_auth_method, secret_hash,
                      metadata, created_at, fetched_at
                 FROM oauth_clients WHERE client_id = $1"#,
            client_id
        )
        .fetch_optional(&mut *tx)
        .await?;
        crate::call_effects::commit(tx).await?;
        Ok(client)
    }

    /// Stores a client: a new registration, or a metadata document fetched again (which
    /// replaces the cached one).
    pub async fn put_oauth_client(&self, client: &OAuthClient) -> Result<()> {
        let mut tx = self.begin_untenanted().await?;
        sqlx::query!(
            r#"INSERT INTO oauth_clients (client_id, kind, client_name, redirect_uris, token_endpoint_auth_method,
                                          secret_hash, metadata, fetched_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
               ON CONFLICT (client_id) DO UPDATE
                  SET client_name = EXCLUDED.client_name, redirect_uris = EXCLUDED.redirect_uris,
                      token_endpoint_auth_method = EXCLUDED.token_endpoint_auth_method,
                      metadata = EXCLUDED.metadata, fetched_at = EXCLUDED.fetched_at
                WHERE oauth_clients.kind = 'cimd' AND EXCLUDED.kind = 'cimd'"#,
            client.client_id,
            client.kind,
            client.client_name,
            &client.redirect_uris,
            client.token_endpoint_auth_method,
            client.secret_hash,
            client.metadata,
            client.fetched_at
        )
        .execute(&mut *tx)
        .await?;
        crate::call_effects::commit(tx).await?;
        Ok(())
    }

    /// Notes that a token request named this client (at most once an hour a client).
    pub async fn touch_oauth_client(&self, client_id: &str) -> Result<()> {
        let mut tx = self.begin_untenanted().await?;
        sqlx::query!(
            "UPDATE oauth_clients SET last_used_at = now() WHERE client_id = $1 AND last_used_at < now() - interval '1 hour'",
            client_id
        )
        .execute(&mut *tx)
        .await?;
        crate::call_effects::commit(tx).await?;
        Ok(())
    }

    /// Deletes the clients no token request named since `before` (a metadata-document client
    /// is fetched again when it comes back; a registered one registers again); returns how many.
    pub async fn purge_unused_oauth_clients(&self, before: DateTime<Utc>) -> Result<u64> {
        let mut tx = self.begin_untenanted().await?;
        let done = sqlx::query!("DELETE FROM oauth_clients WHERE last_used_at < $1", before).execute(&mut *tx).await?;
        crate::call_effects::commit(tx).await?;
        Ok(done.rows_affected())
    }

    /// The signing keys still published (not yet past `drop_at`), newest first.
    pub async fn signing_keys(&self) -> Result<Vec<SigningKeyRow>> {
        let mut tx = self.begin_untenanted().await?;
        let keys = sqlx::query_as!(
            SigningKeyRow,
            r#"SELECT kid, sealed_key, public_jwk, created_at, retire_at, drop_at
                 FROM oauth_signing_keys WHERE drop_at > now() ORDER BY created_at DESC"#
        )
        .fetch_all(&mut *tx)
        .await?;
        crate::call_effects::commit(tx).await?;
        Ok(keys)
    }

    /// Adds a signing key unless another gateway added one that is still signing since `after`
    /// (so two gateways rotating at once make one key); drops keys past their `drop_at`.
    /// Returns whether this key was added.
    pub async fn add_signing_key(&self, key: &SigningKeyRow, after: DateTime<Utc>) -> Result<bool> {
        let mut tx = self.begin_untenanted().await?;
        // One rotation at a time across the deployment.
        sqlx::query!("SELECT pg_advisory_xact_lock(hashtext('otc.oauth_signing_keys'))").execute(&mut *tx).await?;
        let fresh = sqlx::query_scalar!(
            r#"SELECT count(*) AS "n!" FROM oauth_signing_keys WHERE created_at > $1 AND retire_at > now()"#,
            after
        )
        .fetch_one(&mut *tx)
        .await?;
        let added = fresh == 0;
        if added {
            sqlx::query!(
                r#"INSERT INTO oauth_signing_keys (kid, alg, sealed_key, public_jwk, retire_at, drop_at)
                   VALUES ($1, 'ES256', $2, $3, $4, $5)"#,
                key.kid,
                key.sealed_key,
                key.public_jwk,
                key.retire_at,
                key.drop_at
            )
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query!("DELETE FROM oauth_signing_keys WHERE drop_at <= now()").execute(&mut *tx).await?;
        crate::call_effects::commit(tx).await?;
        Ok(added)
    }

    /// The tenant whose identity provider signs in `domain`.
    pub async fn tenant_by_email_domain(&self, domain: &str) -> Result<Option<Uuid>> {
        let mut tx = self.begin_untenanted().await?;
        let id = sqlx::query_scalar!("SELECT otc_tenant_id_by_email_domain($1) AS \"id\"", domain)
            .fetch_one(&mut *tx)
            .await?;
        crate::call_effects::commit(tx).await?;
        Ok(id)
    }

    /// The tenants whose identity provider is `issuer` (several share one issuer at a provider
    /// such as Google).
    pub async fn tenants_by_idp_issuer(&self, issuer: &str) -> Result<Vec<Uuid>> {
        let mut tx = self.begin_untenanted().await?;
        let ids = sqlx::query_scalar!("SELECT id AS \"id!\" FROM otc_tenant_ids_by_idp_issuer($1) AS id", issuer)
            .fetch_all(&mut *tx)
            .await?;
        crate::call_effects::commit(tx).await?;
        Ok(ids)
    }
}

impl TenantTx {
    /// The tenant's identity provider, if it configured one.
    pub async fn idp(&mut self) -> Result<Option<IdpConfig>> {
        Ok(sqlx::query_as!(
            IdpConfig,
            r#"SELECT issuer, client_id, sealed_secret, email_domains, groups_claim, default_scopes,
                      group_scopes, group_acl, cimd_hosts
                 FROM tenant_idps"#
        )
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    /// Sets the tenant's identity provider and the email domains routed to it. A domain another
    /// tenant holds answers [`crate::StoreError::Conflict`] on `idp_domains_pkey`.
    pub async fn set_idp(&mut self, idp: &IdpConfig) -> Result<()> {
        sqlx::query!(
            r#"INSERT INTO tenant_idps (tenant_id, issuer, client_id, sealed_secret, email_domains, groups_claim,
                                        default_scopes, group_scopes, group_acl, cimd_hosts)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
               ON CONFLICT (tenant_id) DO UPDATE
                  SET issuer = EXCLUDED.issuer, client_id = EXCLUDED.client_id, sealed_secret = EXCLUDED.sealed_secret,
                      email_domains = EXCLUDED.email_domains, groups_claim = EXCLUDED.groups_claim,
                      default_scopes = EXCLUDED.default_scopes, group_scopes = EXCLUDED.group_scopes,
                      group_acl = EXCLUDED.group_acl, cimd_hosts = EXCLUDED.cimd_hosts, updated_at = now()"#,
            self.tenant,
            idp.issuer,
            idp.client_id,
            idp.sealed_secret,
            &idp.email_domains,
            idp.groups_claim,
            &idp.default_scopes,
            idp.group_scopes,
            idp.group_acl,
            &idp.cimd_hosts
        )
        .execute(&mut *self.tx)
        .await?;
        sqlx::query!("DELETE FROM idp_domains WHERE NOT (domain = ANY($1))", &idp.email_domains)
            .execute(&mut *self.tx)
            .await?;
        sqlx::query!(
            r#"INSERT INTO idp_domains (domain, tenant_id) SELECT d, $1 FROM unnest($2::text[]) AS d
               ON CONFLICT (domain) DO UPDATE SET tenant_id = EXCLUDED.tenant_id WHERE idp_domains.tenant_id = EXCLUDED.tenant_id"#,
            self.tenant,
            &idp.email_domains
        )
        .execute(&mut *self.tx)
        .await?;
        // A domain held by another tenant is invisible here and the upsert above skipped it.
        let held = sqlx::query_scalar!(r#"SELECT count(*) AS "n!" FROM idp_domains"#).fetch_one(&mut *self.tx).await?;
        if held as usize != idp.email_domains.len() {
            return Err(crate::StoreError::Conflict { constraint: "idp_domains_pkey".into() });
        }
        Ok(())
    }

    /// Removes the tenant's identity provider; returns whether it had one.
    pub async fn remove_idp(&mut self) -> Result<bool> {
        sqlx::query!("DELETE FROM idp_domains").execute(&mut *self.tx).await?;
        Ok(sqlx::query!("DELETE FROM tenant_idps").execute(&mut *self.tx).await?.rows_affected() > 0)
    }

    /// The user principal the identity provider knows as `subject`. On first sign-in: the
    /// person the tenant's directory provisioned with this name or email (case aside), else a
    /// new principal; never a principal made otherwise (with `token create`), whose name a
    /// provider's user could otherwise claim: a taken name gets the subject beside it. Its email
    /// (and, when the provider named them, its provider groups) follow the provider's.
    pub async fn federated_principal(
        &mut self,
        subject: &str,
        name: &str,
        email: Option<&str>,
        groups: Option<&[String]>,
    ) -> Result<FederatedPrincipal> {
        let found = sqlx::query!(
            r#"UPDATE principals SET email = coalesce($2, email), idp_groups = coalesce($3, idp_groups)
                WHERE external_subject = $1 RETURNING id, (deactivated_at IS NULL) AS "active!", idp_groups"#,
            subject,
            email,
            groups
        )
        .fetch_optional(&mut *self.tx)
        .await?;
        if let Some(row) = found {
            return Ok(FederatedPrincipal { id: row.id, active: row.active, idp_groups: row.idp_groups });
        }
        let groups = groups.unwrap_or_default();
        let provisioned = sqlx::query!(
            r#"UPDATE principals
                  SET external_subject = $1, email = coalesce($3, email), idp_groups = $4
                WHERE id = (SELECT id FROM principals
                             WHERE kind = 'user' AND directory IS NOT NULL AND external_subject IS NULL
                               AND (lower(name) = lower($2) OR lower(email) = lower($3))
                             ORDER BY created_at LIMIT 1)
               RETURNING id, (deactivated_at IS NULL) AS "active!""#,
            subject,
            name,
            email,
            groups
        )
        .fetch_optional(&mut *self.tx)
        .await?;
        if let Some(row) = provisioned {
            return Ok(FederatedPrincipal { id: row.id, active: row.active, idp_groups: groups.to_vec() });
        }
        for candidate in [name.to_string(), format!("{name} ({subject})")] {
            let candidate: String = candidate.chars().take(200).collect();
            let id = sqlx::query_scalar!(
                r#"INSERT INTO principals (tenant_id, id, kind, name, external_subject, email, idp_groups)
                   VALUES ($1, $2, 'user', $3, $4, $5, $6)
                   ON CONFLICT (tenant_id, kind, name) DO NOTHING RETURNING id"#,
                self.tenant,
                Uuid::now_v7(),
                candidate,
                subject,
                email,
                groups
            )
            .fetch_optional(&mut *self.tx)
            .await?;
            if let Some(id) = id {
                return Ok(FederatedPrincipal { id, active: true, idp_groups: groups.to_vec() });
            }
        }
        Err(crate::StoreError::Conflict { constraint: "principals_tenant_id_kind_name_key".into() })
    }

    /// A principal's provider groups as last reported.
    pub async fn principal_idp_groups(&mut self, principal: Uuid) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar!("SELECT idp_groups FROM principals WHERE id = $1", principal)
            .fetch_optional(&mut *self.tx)
            .await?
            .unwrap_or_default())
    }

    pub async fn create_grant(&mut self, grant: NewGrant<'_>) -> Result<Grant> {
        let id = Uuid::now_v7();
        sqlx::query!(
            r#"INSERT INTO oauth_grants (tenant_id, id, principal_id, client_id, client_name, scopes, resource, via)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"#,
            self.tenant,
            id,
            grant.principal_id,
            grant.client_id,
            grant.client_name,
            grant.scopes,
            grant.resource,
            grant.via
        )
        .execute(&mut *self.tx)
        .await?;
        self.grant(id).await?.ok_or_else(|| crate::StoreError::NotFound(format!("grant {id}")))
    }

    pub async fn grant(&mut self, id: Uuid) -> Result<Option<Grant>> {
        let sql = format!(
            "SELECT {GRANT_COLUMNS} FROM oauth_grants g JOIN principals p ON p.tenant_id = g.tenant_id AND p.id = g.principal_id WHERE g.id = $1"
        );
        let row: Option<GrantRow> = sqlx::query_as(&sql).bind(id).fetch_optional(&mut *self.tx).await?;
        Ok(row.map(Grant::from))
    }

    /// The tenant's grants, newest first: every one, or one principal's; live ones only unless
    /// `include_revoked`.
    pub async fn grants(&mut self, principal: Option<Uuid>, include_revoked: bool) -> Result<Vec<Grant>> {
        let sql = format!(
            "SELECT {GRANT_COLUMNS} FROM oauth_grants g JOIN principals p ON p.tenant_id = g.tenant_id AND p.id = g.principal_id \
              WHERE ($1::uuid IS NULL OR g.principal_id = $1) AND ($2 OR g.revoked_at IS NULL) ORDER BY g.created_at DESC"
        );
        let rows: Vec<GrantRow> =
            sqlx::query_as(&sql).bind(principal).bind(include_revoked).fetch_all(&mut *self.tx).await?;
        Ok(rows.into_iter().map(Grant::from).collect())
    }

    /// Revokes a grant and every access token it issued; returns whether it was live.
    pub async fn revoke_grant(&mut self, id: Uuid, reason: &str) -> Result<bool> {
        let done = sqlx::query!(
            "UPDATE oauth_grants SET revoked_at = now(), revoked_reason = $2 WHERE id = $1 AND revoked_at IS NULL",
            id,
            reason
        )
        .execute(&mut *self.tx)
        .await?;
        sqlx::query!("UPDATE api_tokens SET revoked_at = now() WHERE grant_id = $1 AND revoked_at IS NULL", id)
            .execute(&mut *self.tx)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    pub async fn store_code(
        &mut self,
        hash: &[u8; 32],
        grant: Uuid,
        redirect_uri: &str,
        challenge: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<()> {
        sqlx::query!(
            r#"INSERT INTO oauth_codes (tenant_id, code_hash, grant_id, redirect_uri, code_challenge, expires_at)
               VALUES ($1, $2, $3, $4, $5, $6)"#,
            self.tenant,
            &hash[..],
            grant,
            redirect_uri,
            challenge,
            expires_at
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Redeems a code once. A second redemption revokes the grant (RFC 9700 §4.5: the tokens
    /// the first one got are as suspect as the code).
    pub async fn redeem_code(&mut self, hash: &[u8; 32]) -> Result<Redemption<CodeBinding>> {
        let row = sqlx::query!(
            r#"SELECT grant_id, redirect_uri, code_challenge, (expires_at <= now()) AS "expired!", used_at
                 FROM oauth_codes WHERE code_hash = $1 FOR UPDATE"#,
            &hash[..]
        )
        .fetch_optional(&mut *self.tx)
        .await?;
        let Some(row) = row else { return Ok(Redemption::Missing) };
        if row.used_at.is_some() {
            self.revoke_grant(row.grant_id, "authorization code reused").await?;
            return Ok(Redemption::Replayed { grant_id: row.grant_id });
        }
        sqlx::query!("UPDATE oauth_codes SET used_at = now() WHERE code_hash = $1", &hash[..])
            .execute(&mut *self.tx)
            .await?;
        if row.expired {
            return Ok(Redemption::Expired);
        }
        match self.grant(row.grant_id).await? {
            Some(grant) if grant.revoked_at.is_none() && grant.principal_active => Ok(Redemption::Fresh(CodeBinding {
                grant,
                redirect_uri: row.redirect_uri,
                code_challenge: row.code_challenge,
            })),
            _ => Ok(Redemption::Revoked),
        }
    }

    pub async fn store_refresh_token(&mut self, hash: &[u8; 32], grant: Uuid, expires_at: DateTime<Utc>) -> Result<()> {
        sqlx::query!(
            r#"INSERT INTO oauth_refresh_tokens (tenant_id, token_hash, grant_id, expires_at) VALUES ($1, $2, $3, $4)"#,
            self.tenant,
            &hash[..],
            grant,
            expires_at
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Takes a refresh token for its successor: it is marked rotated, and presenting it again
    /// revokes the whole grant (OAuth 2.1 §4.3.1: refresh-token reuse means theft).
    pub async fn rotate_refresh_token(&mut self, hash: &[u8; 32]) -> Result<Redemption<Grant>> {
        let row = sqlx::query!(
            r#"SELECT grant_id, (expires_at <= now()) AS "expired!", rotated_at
                 FROM oauth_refresh_tokens WHERE token_hash = $1 FOR UPDATE"#,
            &hash[..]
        )
        .fetch_optional(&mut *self.tx)
        .await?;
        let Some(row) = row else { return Ok(Redemption::Missing) };
        if row.rotated_at.is_some() {
            self.revoke_grant(row.grant_id, "refresh token reused after rotation").await?;
            return Ok(Redemption::Replayed { grant_id: row.grant_id });
        }
        if row.expired {
            return Ok(Redemption::Expired);
        }
        sqlx::query!("UPDATE oauth_refresh_tokens SET rotated_at = now() WHERE token_hash = $1", &hash[..])
            .execute(&mut *self.tx)
            .await?;
        match self.grant(row.grant_id).await? {
            Some(grant) if grant.revoked_at.is_none() && grant.principal_active => {
                sqlx::query!("UPDATE oauth_grants SET last_used_at = now() WHERE id = $1", grant.id)
                    .execute(&mut *self.tx)
                    .await?;
                Ok(Redemption::Fresh(grant))
            }
            _ => Ok(Redemption::Revoked),
        }
    }

    /// The grant a refresh token belongs to (for revocation), whatever its state.
    pub async fn refresh_token_grant(&mut self, hash: &[u8; 32]) -> Result<Option<Uuid>> {
        Ok(sqlx::query_scalar!("SELECT grant_id FROM oauth_refresh_tokens WHERE token_hash = $1", &hash[..])
            .fetch_optional(&mut *self.tx)
            .await?)
    }

    /// The grant an access token belongs to, by the token's hash.
    pub async fn access_token_grant(&mut self, hash: &[u8; 32]) -> Result<Option<Uuid>> {
        Ok(sqlx::query_scalar!("SELECT grant_id FROM api_tokens WHERE token_hash = $1", &hash[..])
            .fetch_optional(&mut *self.tx)
            .await?
            .flatten())
    }

    /// Records an access token, so every gateway checks it as it checks API tokens.
    pub async fn record_access_token(&mut self, token: NewAccessToken<'_>) -> Result<()> {
        let name: String = format!("oauth: {}", token.grant.client_name.as_deref().unwrap_or(&token.grant.client_id))
            .chars()
            .take(200)
            .collect();
        sqlx::query!(
            r#"INSERT INTO api_tokens (tenant_id, id, principal_id, name, token_hash, hint, scopes, expires_at, grant_id, audience)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"#,
            self.tenant,
            Uuid::now_v7(),
            token.grant.principal_id,
            name,
            &token.hash[..],
            token.hint,
            &token.grant.scopes,
            token.expires_at,
            token.grant.id,
            token.audience
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Records an identity assertion's jti until it expires; false if it was seen before.
    pub async fn record_assertion_jti(&mut self, jti: &str, expires_at: DateTime<Utc>) -> Result<bool> {
        sqlx::query!("DELETE FROM oauth_assertion_jtis WHERE expires_at < now()").execute(&mut *self.tx).await?;
        let done = sqlx::query!(
            "INSERT INTO oauth_assertion_jtis (tenant_id, jti, expires_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            self.tenant,
            jti,
            expires_at
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Deletes the codes and refresh tokens that expired before `before` (no longer usable,
    /// nor needed to recognise a replay), and the assertion ids past their assertion's expiry;
    /// returns how many.
    pub async fn purge_dead_oauth_secrets(&mut self, before: DateTime<Utc>) -> Result<u64> {
        let codes =
            sqlx::query!("DELETE FROM oauth_codes WHERE expires_at < $1", before).execute(&mut *self.tx).await?;
        let refresh = sqlx::query!("DELETE FROM oauth_refresh_tokens WHERE expires_at < $1", before)
            .execute(&mut *self.tx)
            .await?;
        let jtis =
            sqlx::query!("DELETE FROM oauth_assertion_jtis WHERE expires_at < now()").execute(&mut *self.tx).await?;
        Ok(codes.rows_affected() + refresh.rows_affected() + jtis.rows_affected())
    }
}
