//! Read-only holds (maintenance, legal holds): the deployment's (`server_read_only`, no
//! tenant's data), a tenant's (`tenant_policies.read_only_*`) and a vault's
//! (`vaults.read_only_*`). A hold is on while its `since` is set.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{Result, Store, StoreError, TenantTx};

/// The longest reason a hold carries (the columns' check).
pub const MAX_REASON_CHARS: usize = 500;

/// One hold that is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    pub reason: Option<String>,
    pub since: DateTime<Utc>,
    /// Who put it on: `operator` or `tenant` (the deployment's is always the operator's).
    pub by: String,
}

/// Who changes a tenant's or a vault's hold: a hold the operator put on is lifted, or changed,
/// only by the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldBy {
    Operator,
    Tenant,
}

impl HoldBy {
    fn as_str(self) -> &'static str {
        match self {
            HoldBy::Operator => "operator",
            HoldBy::Tenant => "tenant",
        }
    }
}

/// What a change of a tenant's or vault's hold did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldChange {
    Done,
    /// The tenant tried to change a hold the operator put on: nothing changed.
    OperatorHold,
    /// No such live vault.
    NoVault,
}

/// A tenant's holds: its own and its held (live) vaults'.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TenantHolds {
    pub tenant: Option<Hold>,
    /// Held vaults: id, name and hold, by name.
    pub vaults: Vec<(Uuid, String, Hold)>,
}

fn checked(reason: Option<&str>) -> Result<Option<&str>> {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) if r.chars().count() > MAX_REASON_CHARS || r.chars().any(char::is_control) => {
            Err(StoreError::Invalid { constraint: format!("a reason of at most {MAX_REASON_CHARS} characters") })
        }
        other => Ok(other),
    }
}

impl Store {
    /// The deployment's hold, if the operator put one on.
    pub async fn server_read_only(&self) -> Result<Option<Hold>> {
        let mut tx = self.begin_untenanted().await?;
        let hold = sqlx::query_as!(Hold, r#"SELECT reason, since, 'operator' AS "by!" FROM server_read_only"#)
            .fetch_optional(&mut *tx)
            .await?;
        crate::call_effects::commit(tx).await?;
        Ok(hold)
    }

    /// Puts the deployment's hold on (with `reason`; the first `since` kept) or, with `None`, off.
    pub async fn set_server_read_only(&self, on: Option<Option<&str>>) -> Result<()> {
        let mut tx = self.begin_untenanted().await?;
        match on {
            Some(reason) => {
                sqlx::query!(
                    r#"INSERT INTO server_read_only (reason) VALUES ($1)
                       ON CONFLICT (singleton) DO UPDATE SET reason = EXCLUDED.reason"#,
                    checked(reason)?
                )
                .execute(&mut *tx)
                .await?;
            }
            None => {
                sqlx::query!("DELETE FROM server_read_only").execute(&mut *tx).await?;
            }
        }
        crate::call_effects::commit(tx).await?;
        Ok(())
    }
}

impl TenantTx {
    /// The tenant's hold and its held vaults'.
    pub async fn read_only_holds(&mut self) -> Result<TenantHolds> {
        let tenant = sqlx::query!(
            r#"SELECT read_only_reason, read_only_since AS "since!", read_only_by AS "by!" FROM tenant_policies
                WHERE tenant_id = $1 AND read_only_since IS NOT NULL"#,
            self.tenant
        )
        .fetch_optional(&mut *self.tx)
        .await?
        .map(|r| Hold { reason: r.read_only_reason, since: r.since, by: r.by });
        let vaults = sqlx::query!(
            r#"SELECT id, name, read_only_reason, read_only_since AS "since!", read_only_by AS "by!" FROM vaults
                WHERE tenant_id = $1 AND read_only_since IS NOT NULL AND deleted_at IS NULL
                ORDER BY name"#,
            self.tenant
        )
        .fetch_all(&mut *self.tx)
        .await?
        .into_iter()
        .map(|r| (r.id, r.name, Hold { reason: r.read_only_reason, since: r.since, by: r.by }))
        .collect();
        Ok(TenantHolds { tenant, vaults })
    }

    /// Puts the tenant's hold on (`Some(reason)`; the first `since` kept) or off (`None`), as
    /// `by`: the tenant changes none the operator put on.
    pub async fn set_tenant_read_only(&mut self, on: Option<Option<&str>>, by: HoldBy) -> Result<HoldChange> {
        let (held, reason) = match on {
            Some(reason) => (true, checked(reason)?),
            None => (false, None),
        };
        let done = sqlx::query_scalar!(
            r#"INSERT INTO tenant_policies (tenant_id, read_only_since, read_only_reason, read_only_by)
               VALUES ($1, CASE WHEN $2 THEN now() END, $3, CASE WHEN $2 THEN $4 END)
               ON CONFLICT (tenant_id) DO UPDATE
                 SET read_only_since = CASE WHEN $2 THEN coalesce(tenant_policies.read_only_since, now()) END,
                     read_only_reason = $3, read_only_by = CASE WHEN $2 THEN $4 END, updated_at = now()
                 WHERE NOT ($4 = 'tenant' AND tenant_policies.read_only_by IS NOT DISTINCT FROM 'operator')
               RETURNING 1 AS "done!""#,
            self.tenant,
            held,
            reason,
            by.as_str()
        )
        .fetch_optional(&mut *self.tx)
        .await?;
        Ok(if done.is_some() { HoldChange::Done } else { HoldChange::OperatorHold })
    }

    /// Puts a live vault's hold on or off, as [`TenantTx::set_tenant_read_only`].
    pub async fn set_vault_read_only(
        &mut self,
        vault: Uuid,
        on: Option<Option<&str>>,
        by: HoldBy,
    ) -> Result<HoldChange> {
        let (held, reason) = match on {
            Some(reason) => (true, checked(reason)?),
            None => (false, None),
        };
        let row = sqlx::query!(
            r#"WITH target AS (SELECT id, read_only_by FROM vaults
                                WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL),
                    done AS (
                   UPDATE vaults SET read_only_since = CASE WHEN $3 THEN coalesce(read_only_since, now()) END,
                                     read_only_reason = $4, read_only_by = CASE WHEN $3 THEN $5 END
                    WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL
                      AND NOT ($5 = 'tenant' AND read_only_by IS NOT DISTINCT FROM 'operator')
                   RETURNING 1)
               SELECT EXISTS (SELECT 1 FROM target) AS "found!", EXISTS (SELECT 1 FROM done) AS "done!""#,
            self.tenant,
            vault,
            held,
            reason,
            by.as_str()
        )
        .fetch_one(&mut *self.tx)
        .await?;
        Ok(match (row.found, row.done) {
            (false, _) => HoldChange::NoVault,
            (true, true) => HoldChange::Done,
            (true, false) => HoldChange::OperatorHold,
        })
    }
}
