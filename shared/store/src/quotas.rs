//! Quotas per tenant (`tenant_quotas`, else the deployment's defaults) and what is used against
//! them (`tenant_usage.storage_bytes`, `vault_heads.notes`), kept as the changes happen:
//! storage when the blob inventory gains or loses a content, notes in each commit.

use crate::{Result, StoreError, TenantTx};

/// Limits on what a tenant keeps and uploads (None: no limit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quotas {
    pub storage_bytes: Option<i64>,
    pub notes: Option<i64>,
    pub concurrent_uploads: Option<i64>,
    pub upload_bytes_in_flight: Option<i64>,
}

impl Quotas {
    /// `self` where set, else `defaults`.
    pub fn or(self, defaults: Quotas) -> Quotas {
        Quotas {
            storage_bytes: self.storage_bytes.or(defaults.storage_bytes),
            notes: self.notes.or(defaults.notes),
            concurrent_uploads: self.concurrent_uploads.or(defaults.concurrent_uploads),
            upload_bytes_in_flight: self.upload_bytes_in_flight.or(defaults.upload_bytes_in_flight),
        }
    }
}

/// A change that would take a tenant past one of its quotas.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{quota} quota of {limit} exceeded ({used} used, {requested} more asked)")]
pub struct QuotaExceeded {
    /// storage_bytes or notes.
    pub quota: &'static str,
    pub limit: i64,
    pub used: i64,
    pub requested: i64,
}

/// What a tenant uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub storage_bytes: i64,
    pub notes: i64,
}

impl TenantTx {
    /// The tenant's own quotas (None where it takes the deployment's).
    pub async fn own_quotas(&mut self) -> Result<Quotas> {
        let row =
            sqlx::query!("SELECT storage_bytes, notes, concurrent_uploads, upload_bytes_in_flight FROM tenant_quotas")
                .fetch_optional(&mut *self.tx)
                .await?;
        Ok(row.map_or_else(Quotas::default, |r| Quotas {
            storage_bytes: r.storage_bytes,
            notes: r.notes,
            concurrent_uploads: r.concurrent_uploads,
            upload_bytes_in_flight: r.upload_bytes_in_flight,
        }))
    }

    /// The tenant's quotas in force: its own, else the deployment's.
    pub async fn quotas(&mut self) -> Result<Quotas> {
        Ok(self.own_quotas().await?.or(self.defaults))
    }

    /// Replaces the tenant's own quotas (None: the deployment's).
    pub async fn set_quotas(&mut self, quotas: &Quotas) -> Result<()> {
        sqlx::query!(
            r#"INSERT INTO tenant_quotas (tenant_id, storage_bytes, notes, concurrent_uploads, upload_bytes_in_flight)
               VALUES ($1, $2, $3, $4, $5)
               ON CONFLICT (tenant_id) DO UPDATE
                  SET storage_bytes = EXCLUDED.storage_bytes, notes = EXCLUDED.notes,
                      concurrent_uploads = EXCLUDED.concurrent_uploads,
                      upload_bytes_in_flight = EXCLUDED.upload_bytes_in_flight"#,
            self.tenant,
            quotas.storage_bytes,
            quotas.notes,
            quotas.concurrent_uploads,
            quotas.upload_bytes_in_flight
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// What the tenant uses now.
    pub async fn usage(&mut self) -> Result<Usage> {
        let row = sqlx::query!(
            r#"SELECT coalesce((SELECT storage_bytes FROM tenant_usage), 0) AS "storage_bytes!",
                      coalesce((SELECT sum(notes) FROM vault_heads), 0)::bigint AS "notes!""#
        )
        .fetch_one(&mut *self.tx)
        .await?;
        Ok(Usage { storage_bytes: row.storage_bytes, notes: row.notes })
    }

    /// Counts `bytes` of new content against the storage quota: refused (the transaction must
    /// then roll back) when the total would pass it. A negative amount gives storage back.
    pub(crate) async fn add_storage(&mut self, bytes: i64) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        let row = sqlx::query!(
            r#"INSERT INTO tenant_usage (tenant_id, storage_bytes) VALUES ($1, greatest($2::bigint, 0))
               ON CONFLICT (tenant_id) DO UPDATE SET storage_bytes = greatest(tenant_usage.storage_bytes + $2::bigint, 0)
               RETURNING storage_bytes, (SELECT storage_bytes FROM tenant_quotas) AS "own?""#,
            self.tenant,
            bytes
        )
        .fetch_one(&mut *self.tx)
        .await?;
        if let Some(limit) = row.own.or(self.defaults.storage_bytes)
            && bytes > 0
            && row.storage_bytes > limit
        {
            return Err(StoreError::Quota(QuotaExceeded {
                quota: "storage_bytes",
                limit,
                used: row.storage_bytes - bytes,
                requested: bytes,
            }));
        }
        Ok(())
    }

    /// Refuses a commit that would add `more` notes past the tenant's note quota.
    pub(crate) async fn check_notes(&mut self, more: i64) -> Result<()> {
        if more <= 0 {
            return Ok(());
        }
        let row = sqlx::query!(
            r#"SELECT coalesce(sum(notes), 0)::bigint AS "used!", (SELECT notes FROM tenant_quotas) AS "own?"
                 FROM vault_heads"#
        )
        .fetch_one(&mut *self.tx)
        .await?;
        match row.own.or(self.defaults.notes) {
            Some(limit) if row.used + more > limit => {
                Err(StoreError::Quota(QuotaExceeded { quota: "notes", limit, used: row.used, requested: more }))
            }
            _ => Ok(()),
        }
    }
}
