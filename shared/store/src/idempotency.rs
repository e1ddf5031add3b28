//! How keyed calls ended (`idempotency_records`), kept for their whole lifetime in Postgres so
//! that a Redis restart, which loses the running leases, does not lose a finished call's
//! result: the kernel's idempotency writes a record here when a call finishes and reads it when
//! Redis has none.

use chrono::{DateTime, Utc};

use crate::{Result, TenantTx};

/// Records one tenant sweeps away at most when it writes one.
const SWEEP: i64 = 100;

impl TenantTx {
    /// Stores (or replaces) the record `name` until `expires_at`, and removes a few of the
    /// tenant's expired ones.
    pub async fn put_idempotency_record(&mut self, name: &str, record: &str, expires_at: DateTime<Utc>) -> Result<()> {
        sqlx::query!(
            r#"DELETE FROM idempotency_records WHERE tenant_id = $1 AND name IN (
                   SELECT name FROM idempotency_records WHERE tenant_id = $1 AND expires_at < now() LIMIT $2)"#,
            self.tenant,
            SWEEP
        )
        .execute(&mut *self.tx)
        .await?;
        sqlx::query!(
            r#"INSERT INTO idempotency_records (tenant_id, name, record, expires_at) VALUES ($1, $2, $3, $4)
               ON CONFLICT (tenant_id, name) DO UPDATE SET record = EXCLUDED.record, expires_at = EXCLUDED.expires_at"#,
            self.tenant,
            name,
            record,
            expires_at
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// The record `name` and when it expires, unless it has.
    pub async fn idempotency_record(&mut self, name: &str) -> Result<Option<(String, DateTime<Utc>)>> {
        let row = sqlx::query!(
            "SELECT record, expires_at FROM idempotency_records WHERE tenant_id = $1 AND name = $2 AND expires_at > now()",
            self.tenant,
            name
        )
        .fetch_optional(&mut *self.tx)
        .await?;
        Ok(row.map(|r| (r.record, r.expires_at)))
    }
}
