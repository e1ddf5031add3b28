//! Heavy work shared fairly between tenants on one gateway (`[fair_share]`).
//!
//! A tool that does heavy work (`ToolSpec::heavy`: scans, graph walks, bulk changes, index
//! rebuilds, model calls, large reads) takes a turn before its handler runs: one of
//! `fair_share.per_principal` places of its principal, then one of `fair_share.per_tenant`
//! places of its tenant, for that kind of work. A tenant's heavy calls past its places wait
//! behind its own, never in front of another tenant's; a call that waits longer than
//! `fair_share.max_wait_ms` answers `throttled` with `retry_after`. The places live in this
//! gateway's memory; a tenant's that nobody holds are dropped once there are many.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use otc_catalog::Heavy;
use otc_config::FairShareConfig;
use otc_errors::{ErrorCode, ToolError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

use crate::Caller;

/// Whose places a call takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Holder {
    Tenant(Uuid),
    Principal(Uuid),
}

/// Past this many lanes, the ones nobody holds are dropped.
const PRUNE_PAST: usize = 4_096;

pub struct FairShare {
    config: FairShareConfig,
    lanes: Mutex<HashMap<(Holder, Heavy), Arc<Semaphore>>>,
}

/// A heavy call's turn: its places, given back when it ends.
pub struct Turn {
    _places: Vec<OwnedSemaphorePermit>,
}

impl FairShare {
    pub fn new(config: FairShareConfig) -> Self {
        Self { config, lanes: Mutex::default() }
    }

    fn lane(&self, holder: Holder, kind: Heavy, places: u32) -> Arc<Semaphore> {
        let mut lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        if lanes.len() >= PRUNE_PAST {
            // A lane only this map holds has every place free: nobody waits on it.
            lanes.retain(|_, lane| Arc::strong_count(lane) > 1);
        }
        lanes.entry((holder, kind)).or_insert_with(|| Arc::new(Semaphore::new(places as usize))).clone()
    }

    /// Waits for the caller's turn at `kind` of work: a place of its principal, then of its
    /// tenant. Past `fair_share.max_wait_ms`, throttled.
    pub async fn turn(&self, caller: &Caller, kind: Heavy) -> Result<Turn, ToolError> {
        let wait = Duration::from_millis(self.config.max_wait_ms);
        let deadline = tokio::time::Instant::now() + wait;
        let mut places = Vec::with_capacity(2);
        let lanes = [
            (Holder::Principal(caller.principal_id), self.config.per_principal, "fair_share.per_principal"),
            (Holder::Tenant(caller.tenant_id), self.config.per_tenant, "fair_share.per_tenant"),
        ];
        for (holder, size, limit) in lanes {
            if size == 0 {
                continue;
            }
            let lane = self.lane(holder, kind, size);
            match tokio::time::timeout_at(deadline, lane.acquire_owned()).await {
                Ok(Ok(place)) => places.push(place),
                _ => return Err(throttled(kind, size, limit, wait)),
            }
        }
        Ok(Turn { _places: places })
    }
}

fn throttled(kind: Heavy, size: u32, limit: &str, waited: Duration) -> ToolError {
    ToolError::with_message(
        ErrorCode::Throttled,
        format!(
            "this gateway runs at most {size} {} calls at once per {} ({limit}), and they stayed busy for {} ms; \
             retry after a pause, or run fewer such calls at once",
            kind.as_str(),
            if limit.ends_with("principal") { "caller" } else { "tenant" },
            waited.as_millis()
        ),
    )
    .detail("retry_after", waited.as_secs_f64().clamp(1.0, 30.0))
    .detail("retry_after_ms", waited.as_millis().clamp(1_000, 30_000) as u64)
    .detail("class", kind.as_str())
    .detail("limit", limit)
    .detail("limit_calls", size)
}
