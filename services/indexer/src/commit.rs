//! The one way a change reaches a vault: commit it (one transaction, with its `index` job in the
//! outbox), then announce it before answering: move the vault's generation on, so no gateway
//! serves a manifest row the commit replaced, and index it inline, so whatever the caller reads
//! next sees it (read-your-writes), unless that takes longer than the indexer's
//! `inline_deadline` (then the workers index it). The sync API, reconcile and every write tool go
//! through here.

use std::sync::Arc;

use otc_kv::Kv;
use otc_store::{Change, Committed, NewJob, Provenance, Stale, TenantTx};
use uuid::Uuid;

use crate::{IndexError, Indexer};

/// The `index` job a commit writes for the paths it changes.
pub fn index_job<'a>(paths: impl IntoIterator<Item = &'a str>) -> NewJob {
    let paths: Vec<&str> = paths.into_iter().collect();
    NewJob { kind: "index".into(), payload: serde_json::json!({ "paths": paths }) }
}

/// A commit that landed, and whether it was indexed before the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announced {
    pub committed: Committed,
    /// False when inline indexing failed or passed `inline_deadline`: the commit stands and its
    /// job stays queued for the workers (logged).
    pub indexed: bool,
}

/// Commits `changes` to `vault` in `tx` (refusing all of them when one path is stale, or when
/// `at_head` is given and the vault has moved past it) and announces the commit.
pub async fn commit_and_announce(
    indexer: &Indexer,
    kv: &Arc<Kv>,
    tx: TenantTx,
    vault: Uuid,
    changes: &[Change],
    who: &Provenance,
    at_head: Option<i64>,
) -> Result<Result<Announced, Stale>, IndexError> {
    commit_with_jobs(indexer, kv, tx, vault, changes, who, at_head, Vec::new()).await
}

/// [`commit_and_announce`], with `jobs` written to the outbox in the commit's transaction
/// besides its index job (work the commit asks of the workers, such as a wiki's generated
/// pages, is then queued exactly when the commit lands).
#[allow(clippy::too_many_arguments)]
pub async fn commit_with_jobs(
    indexer: &Indexer,
    kv: &Arc<Kv>,
    mut tx: TenantTx,
    vault: Uuid,
    changes: &[Change],
    who: &Provenance,
    at_head: Option<i64>,
    mut jobs: Vec<NewJob>,
) -> Result<Result<Announced, Stale>, IndexError> {
    let tenant = tx.tenant_id();
    let started = std::time::Instant::now();
    jobs.insert(0, index_job(changes.iter().map(|c| c.path.as_str())));
    let committed = match tx.commit_changes_at(vault, changes, who, &jobs, at_head).await? {
        Ok(committed) => committed,
        Err(stale) => return Ok(Err(stale)),
    };
    tx.commit().await?;
    let commit_time = started.elapsed();
    let indexed = if committed.changed > 0 { announce(indexer, kv, tenant, vault, committed.seq).await } else { true };
    tracing::debug!(
        changes = changes.len(),
        commit_ms = commit_time.as_millis() as u64,
        index_ms = (started.elapsed() - commit_time).as_millis() as u64,
        indexed,
        "committed and announced"
    );
    Ok(Ok(Announced { committed, indexed }))
}

/// After a commit to `vault` (at sequence `seq`) and before it is answered: moves the vault's
/// generation on and indexes what is queued (or waits for this process's pass that does),
/// waiting no longer than the indexer's `inline_deadline`. Returns whether indexing finished in
/// time.
///
/// Past the deadline the indexing is dropped: its transaction rolls back (releasing the vault's
/// index lock), its parsing stops, and the jobs stay queued as they were, not counted as a
/// failed attempt, for the workers. A huge note, or another indexer holding the vault, so
/// never holds a commit's answer for longer.
pub async fn announce(indexer: &Indexer, kv: &Arc<Kv>, tenant: Uuid, vault: Uuid, seq: i64) -> bool {
    otc_kv::vault_changed(kv, vault).await;
    let deadline = indexer.settings().inline_deadline;
    match tokio::time::timeout(deadline, indexer.catch_up_to(tenant, vault, seq)).await {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            tracing::warn!(%vault, error = %e.chain(), "indexing after a commit failed; left to the workers");
            false
        }
        Err(_) => {
            tracing::info!(%vault, ?deadline, "indexing after a commit passed its deadline; left to the workers");
            false
        }
    }
}
