//! What a tenant's admin and the operator decide for one tenant: the OAuth clients whose own
//! person may confirm a destructive call and the notes whose text never leaves for a model
//! (`tenant_policies`), and the email domains its people may have (`tenant_domains`).

use chrono::{DateTime, Utc};

use crate::{Result, StoreError, TenantTx};

/// One of a tenant's email domains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantDomain {
    pub domain: String,
    /// `operator` (listed by the deployment's operator) or `dns` (proven by the tenant).
    pub via: String,
    pub added_at: DateTime<Utc>,
}

impl TenantTx {
    /// The OAuth clients (client_id) whose person may confirm a destructive call in the client.
    pub async fn confirm_in_client_clients(&mut self) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar!(
            "SELECT confirm_in_client_clients FROM tenant_policies WHERE tenant_id = $1",
            self.tenant
        )
        .fetch_optional(&mut *self.tx)
        .await?
        .unwrap_or_default())
    }

    /// Replaces the clients whose person may confirm in the client: `Invalid` unless at most
    /// 50 client ids of 1 to 2000 bytes, none blank.
    pub async fn set_confirm_in_client_clients(&mut self, clients: &[String]) -> Result<()> {
        if clients.len() > 50 || clients.iter().any(|c| c.trim().is_empty() || c.len() > 2000) {
            return Err(StoreError::Invalid { constraint: "at most 50 client ids of 1 to 2000 bytes".into() });
        }
        sqlx::query!(
            r#"INSERT INTO tenant_policies (tenant_id, confirm_in_client_clients) VALUES ($1, $2)
               ON CONFLICT (tenant_id) DO UPDATE
                 SET confirm_in_client_clients = EXCLUDED.confirm_in_client_clients, updated_at = now()"#,
            self.tenant,
            clients
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// The tenant's globs of notes whose text is never sent to a model.
    pub async fn egress_exclude_paths(&mut self) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar!("SELECT egress_exclude_paths FROM tenant_policies WHERE tenant_id = $1", self.tenant)
            .fetch_optional(&mut *self.tx)
            .await?
            .unwrap_or_default())
    }

    /// Replaces the tenant's egress exclusion: `Invalid` unless at most 100 globs of 1 to 1000
    /// bytes, none blank or holding a control character.
    pub async fn set_egress_exclude_paths(&mut self, globs: &[String]) -> Result<()> {
        if globs.len() > 100
            || globs.iter().any(|g| g.trim().is_empty() || g.len() > 1000 || g.chars().any(char::is_control))
        {
            return Err(StoreError::Invalid { constraint: "at most 100 globs of 1 to 1000 bytes".into() });
        }
        sqlx::query!(
            r#"INSERT INTO tenant_policies (tenant_id, egress_exclude_paths) VALUES ($1, $2)
               ON CONFLICT (tenant_id) DO UPDATE
                 SET egress_exclude_paths = EXCLUDED.egress_exclude_paths, updated_at = now()"#,
            self.tenant,
            globs
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// The tenant's email domains, by name.
    pub async fn tenant_domains(&mut self) -> Result<Vec<TenantDomain>> {
        Ok(sqlx::query_as!(
            TenantDomain,
            "SELECT domain, via, added_at FROM tenant_domains WHERE tenant_id = $1 ORDER BY domain",
            self.tenant
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// Adds a domain (lowercase); `Conflict` when another tenant holds it.
    pub async fn add_tenant_domain(&mut self, domain: &str, via: &str) -> Result<()> {
        sqlx::query!(
            "INSERT INTO tenant_domains (tenant_id, domain, via) VALUES ($1, $2, $3) ON CONFLICT (tenant_id, domain) DO NOTHING",
            self.tenant,
            domain,
            via
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Claims `domain` (lowercase) for proof by DNS: the challenge token, the same one until the
    /// claim is proven or dropped. Invalid when the name is no domain.
    pub async fn claim_domain(&mut self, domain: &str) -> Result<String> {
        let token = uuid::Uuid::new_v4().simple().to_string();
        Ok(sqlx::query_scalar!(
            r#"INSERT INTO domain_claims (tenant_id, domain, token) VALUES ($1, $2, $3)
               ON CONFLICT (tenant_id, domain) DO UPDATE SET token = domain_claims.token
               RETURNING token"#,
            self.tenant,
            domain,
            token
        )
        .fetch_one(&mut *self.tx)
        .await?)
    }

    /// The tenant's unproven claims: (domain, token, since), by domain.
    pub async fn domain_claims(&mut self) -> Result<Vec<(String, String, DateTime<Utc>)>> {
        let rows = sqlx::query!("SELECT domain, token, created_at FROM domain_claims ORDER BY domain")
            .fetch_all(&mut *self.tx)
            .await?;
        Ok(rows.into_iter().map(|r| (r.domain, r.token, r.created_at)).collect())
    }

    /// Drops the claim on `domain` (proven, or given up); whether there was one.
    pub async fn drop_domain_claim(&mut self, domain: &str) -> Result<bool> {
        Ok(sqlx::query!("DELETE FROM domain_claims WHERE domain = $1", domain)
            .execute(&mut *self.tx)
            .await?
            .rows_affected()
            > 0)
    }

    /// Removes a domain; whether it was there.
    pub async fn remove_tenant_domain(&mut self, domain: &str) -> Result<bool> {
        Ok(sqlx::query!("DELETE FROM tenant_domains WHERE tenant_id = $1 AND domain = $2", self.tenant, domain)
            .execute(&mut *self.tx)
            .await?
            .rows_affected()
            > 0)
    }
}
