//! Erasing what a tenant deleted once its grace period is over (the tenant's `erase` upkeep
//! item): every row in every table that holds it (found in the catalog by `otc_erase_rows`),
//! every object under the tenant's prefix, every Redis key that names it, in bounded batches,
//! each its own transaction, so a pass that stops (deadline, crash) resumes where it was.

use otc_blobs::Blobs;
use otc_kv::Kv;
use otc_store::Store;
use uuid::Uuid;

/// What one erase pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ErasureReport {
    /// Deleted vaults erased.
    pub vaults: usize,
    /// The whole tenant erased.
    pub tenant: bool,
    pub rows: i64,
    pub objects: u64,
    pub keys: u64,
    /// False when the deadline stopped it with more left (it is due again at once).
    pub finished: bool,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Erases what is due in `tenant` now: the tenant itself, or its deleted vaults whose grace is
/// over. Stops between batches at `deadline`; then [`ErasureReport::finished`] is false.
pub async fn erase_due(
    store: &Store,
    blobs: &Blobs,
    kv: &Kv,
    tenant: Uuid,
    deadline: Option<tokio::time::Instant>,
) -> Result<ErasureReport, BoxError> {
    let mut report = ErasureReport::default();
    let mut tx = store.begin(tenant).await?;
    let due = tx.erasure_due().await?;
    // Every vault the tenant still has a row for: their keys go with the tenant's.
    let vault_ids: Vec<Uuid> = if due.tenant {
        let mut ids: Vec<Uuid> = tx.list_vaults().await?.into_iter().map(|v| v.id).collect();
        ids.extend(tx.deleted_vaults().await?.into_iter().map(|v| v.id));
        ids
    } else {
        Vec::new()
    };
    tx.commit().await?;
    let past = |deadline: Option<tokio::time::Instant>| deadline.is_some_and(|d| tokio::time::Instant::now() >= d);

    if due.tenant {
        let (rows, finished) = otc_kernel::lifecycle::erase_rows(store, tenant, None, deadline).await?;
        report.rows += rows;
        if !finished {
            return Ok(report);
        }
        report.objects += blobs.erase_tenant(tenant).await?;
        report.keys += kv.delete_naming(&tenant.to_string()).await?;
        for vault in &vault_ids {
            report.keys += kv.delete_naming(&vault.to_string()).await?;
        }
        let mut tx = store.begin(tenant).await?;
        tx.drop_deleted_tenant().await?;
        tx.commit().await?;
        report.tenant = true;
        report.finished = true;
        tracing::info!(%tenant, ?report, "tenant erased");
        return Ok(report);
    }

    for vault in due.vaults {
        if past(deadline) {
            return Ok(report);
        }
        let erased = otc_kernel::lifecycle::erase_deleted_vault(store, kv, tenant, vault, deadline).await?;
        report.rows += erased.rows;
        report.keys += erased.keys;
        if !erased.finished {
            return Ok(report);
        }
        report.vaults += 1;
        tracing::info!(%tenant, %vault, "deleted vault erased");
    }
    let mut tx = store.begin(tenant).await?;
    tx.schedule_next_erasure().await?;
    tx.commit().await?;
    report.finished = true;
    Ok(report)
}
