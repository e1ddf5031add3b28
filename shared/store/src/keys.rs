//! Each tenant's secret keys (`tenant_keys`): made on first use, never shown.

use rand::RngCore;

use crate::{Result, TenantTx};

impl TenantTx {
    /// The tenant's confirmation-token key, made now if it has none.
    pub async fn confirmation_key(&mut self) -> Result<[u8; 32]> {
        let mut fresh = [0u8; 32];
        rand::rng().fill_bytes(&mut fresh);
        sqlx::query!(
            "INSERT INTO tenant_keys (tenant_id, confirmation_key) VALUES ($1, $2) ON CONFLICT (tenant_id) DO NOTHING",
            self.tenant,
            &fresh[..]
        )
        .execute(&mut *self.tx)
        .await?;
        let key = sqlx::query_scalar!("SELECT confirmation_key FROM tenant_keys WHERE tenant_id = $1", self.tenant)
            .fetch_one(&mut *self.tx)
            .await?;
        let mut out = [0u8; 32];
        out.copy_from_slice(&key);
        Ok(out)
    }
}
