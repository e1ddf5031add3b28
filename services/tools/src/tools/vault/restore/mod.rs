//! Vault restore: puts a whole vault, or one folder, back to its state at an earlier point of
//! the change log (a sequence, or the last change at or before a time), as one new commit. The
//! log is never rewritten: the restore is itself a change, so it can be undone the same way.
//!
//! The plan compares, path by path, the state after the chosen sequence (the last record of
//! each path at or before it) with the manifest now. Content whose blob has since been
//! collected cannot come back; such a restore is refused and names the paths. The trash
//! (`.trash/`) is left as it is, so nothing deleted since becomes unrecoverable.

pub mod restore_vault;

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use otc_errors::{ErrorCode, ToolError};
use otc_indexer::Indexer;
use otc_kv::Kv;
use otc_store::{Action, Change, Expect, Hash, Provenance, Store, StoreError};
use uuid::Uuid;

/// Where to restore to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestoreAt {
    Seq(i64),
    Time(DateTime<Utc>),
}

impl RestoreAt {
    /// A sequence number, or an RFC 3339 time.
    pub fn parse(text: &str) -> Option<RestoreAt> {
        let text = text.trim();
        if let Ok(seq) = text.parse::<i64>() {
            return (seq >= 0).then_some(RestoreAt::Seq(seq));
        }
        DateTime::parse_from_rfc3339(text).ok().map(|t| RestoreAt::Time(t.with_timezone(&Utc)))
    }
}

/// What a restore does.
#[derive(Debug, Clone, Default)]
pub struct RestorePlan {
    /// The sequence restored to.
    pub seq: i64,
    /// The vault's sequence when planned.
    pub head: i64,
    /// Paths that get earlier content back (or come back).
    pub restored: Vec<String>,
    /// Paths that did not exist then and are deleted.
    pub deleted: Vec<String>,
    pub unchanged: usize,
    pub changes: Vec<Change>,
}

#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("{0}")]
    Refused(ToolError),
    #[error("store")]
    Store(#[from] StoreError),
    #[error("index")]
    Index(#[from] otc_indexer::IndexError),
}

/// Plans the restore of `vault` (under `folder`, "" or "Folder/", when given) to `at`, over the
/// paths `in_scope` admits (a tool caller's readable paths; every path for the operator's CLI):
/// the rest are neither changed, counted nor named.
pub async fn plan(
    store: &Store,
    tenant: Uuid,
    vault: Uuid,
    at: RestoreAt,
    folder: &str,
    in_scope: &(dyn Fn(&str) -> bool + Sync),
) -> Result<RestorePlan, RestoreError> {
    let mut tx = store.begin(tenant).await?;
    let head = tx.head_seq(vault).await?;
    let seq = match at {
        RestoreAt::Seq(seq) if seq > head => {
            return Err(RestoreError::Refused(
                ToolError::with_message(ErrorCode::InvalidInput, format!("the vault's log ends at sequence {head}"))
                    .detail("field", "at")
                    .detail("head", head),
            ));
        }
        RestoreAt::Seq(seq) => seq,
        RestoreAt::Time(time) => tx.seq_at(vault, time).await?,
    };
    let kept = |p: &str| !p.starts_with(".trash/") && in_scope(p);
    let past: BTreeMap<String, (Hash, i64)> = tx
        .files_at_seq(vault, seq, folder, i64::MAX)
        .await?
        .into_iter()
        .filter(|f| kept(&f.path))
        .map(|f| (f.path, (f.hash, f.size)))
        .collect();
    let now: BTreeMap<String, Hash> =
        tx.files_under(vault, folder).await?.into_iter().filter(|f| kept(&f.path)).map(|f| (f.path, f.hash)).collect();
    let wanted: Vec<Hash> = past.iter().filter(|(p, (h, _))| now.get(*p) != Some(h)).map(|(_, (h, _))| *h).collect();
    let available = tx.blob_sizes(&wanted).await?;
    tx.commit().await?;

    let mut plan = RestorePlan { seq, head, ..RestorePlan::default() };
    let mut gone = Vec::new();
    for (path, (hash, size)) in &past {
        let expect = match now.get(path) {
            Some(h) if h == hash => {
                plan.unchanged += 1;
                continue;
            }
            Some(h) => Expect::Hash(*h),
            None => Expect::Absent,
        };
        if !available.contains_key(hash) {
            gone.push(path.clone());
            continue;
        }
        plan.restored.push(path.clone());
        plan.changes.push(Change {
            path: path.clone(),
            expect,
            action: Action::Put { hash: *hash, size: *size, mtime: Utc::now() },
        });
    }
    for (path, hash) in &now {
        if !past.contains_key(path) {
            plan.deleted.push(path.clone());
            plan.changes.push(Change { path: path.clone(), expect: Expect::Hash(*hash), action: Action::Delete });
        }
    }
    if !gone.is_empty() {
        let shown: Vec<String> = gone.iter().take(20).cloned().collect();
        return Err(RestoreError::Refused(
            ToolError::with_message(
                ErrorCode::Conflict,
                format!(
                    "{} file(s) held content at sequence {seq} that is no longer kept (collected after its snapshots \
                     aged out); nothing was restored",
                    gone.len()
                ),
            )
            .detail("paths", shown)
            .detail("count", gone.len()),
        ));
    }
    Ok(plan)
}

/// Commits a plan as one change; refused as concurrent_modification when the vault changed
/// since it was planned.
pub async fn apply(
    store: &Store,
    kv: &Arc<Kv>,
    indexer: &Indexer,
    tenant: Uuid,
    vault: Uuid,
    plan: &RestorePlan,
    who: &Provenance,
) -> Result<i64, RestoreError> {
    if plan.changes.is_empty() {
        return Ok(plan.head);
    }
    let tx = store.begin(tenant).await?;
    match otc_indexer::commit::commit_and_announce(indexer, kv, tx, vault, &plan.changes, who, Some(plan.head)).await? {
        Ok(done) => Ok(done.committed.seq),
        Err(stale) => Err(RestoreError::Refused(
            ToolError::with_message(
                ErrorCode::ConcurrentModification,
                "the vault changed while the restore was planned; nothing was restored",
            )
            .detail("stale", stale.paths.into_iter().take(20).collect::<Vec<_>>()),
        )),
    }
}

impl RestoreError {
    /// The error a caller sees: the refusal, or internal_error with the chain logged.
    pub fn into_tool(self, tool: &str) -> ToolError {
        match self {
            RestoreError::Refused(e) => e,
            RestoreError::Store(StoreError::Quota(q))
            | RestoreError::Index(otc_indexer::IndexError::Store(StoreError::Quota(q))) => {
                otc_kernel::quota_exceeded(&q)
            }
            other => otc_kernel::internal(tool, &other),
        }
    }
}

/// A refusal for an argument.
pub fn bad_at() -> ToolError {
    ToolError::with_message(ErrorCode::InvalidInput, "at is a change-log sequence number or an RFC 3339 time")
        .detail("field", "at")
}
