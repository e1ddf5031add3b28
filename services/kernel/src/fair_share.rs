//! Heavy work shared fairly between tenants on one gateway (`[fair_share]`).
//!
//! A tool that does heavy work (`ToolSpec::heavy`: scans, graph walks, bulk changes, index
//! rebuilds, model calls, large reads) takes a turn before its handler runs: one of
//! `fair_share.per_principal` places of its principal, then one of `fair_share.per_tenant`
//! places of its tenant, for that kind of work, then one of the gateway's
//! `fair_share.per_gateway` places for heavy work of any kind (by default one core fewer than
//! the process has, so light calls always find a core). The gateway's places go to waiting
//! tenants in turn, one each round, however many calls a tenant has waiting: a tenant's heavy
//! calls past its places wait behind its own, never in front of another tenant's. A call that
//! waits longer than `fair_share.max_wait_ms` answers `throttled` with `retry_after`. The places
//! live in this gateway's memory; a tenant's that nobody holds are dropped once there are many.

use std::collections::{HashMap, VecDeque};
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
    gateway: Arc<Gate>,
    /// `fair_share.per_gateway` as resolved at start-up (the cores are read once).
    gateway_places: u32,
}

/// A heavy call's turn: its places, given back when it ends.
pub struct Turn {
    _places: Vec<OwnedSemaphorePermit>,
    _gateway: Option<GatePlace>,
}

/// The gateway's places for heavy work, handed to waiting tenants round-robin.
struct Gate {
    state: Mutex<GateState>,
}

#[derive(Default)]
struct GateState {
    free: usize,
    /// Tenants with calls waiting, in the order they are served; each appears once.
    turns: VecDeque<Uuid>,
    /// Each waiting tenant's calls, first come first served within the tenant.
    waiting: HashMap<Uuid, VecDeque<tokio::sync::oneshot::Sender<GatePlace>>>,
}

/// One of the gateway's places; dropped (the call ended, or it was handed to a waiter that had
/// given up), it goes to the next tenant in turn.
struct GatePlace {
    gate: Option<Arc<Gate>>,
}

impl Gate {
    fn new(places: usize) -> Arc<Self> {
        Arc::new(Gate { state: Mutex::new(GateState { free: places, ..GateState::default() }) })
    }

    /// A place for `tenant` at once, or a receiver for the one it will be handed in its turn.
    fn enter(self: &Arc<Self>, tenant: Uuid) -> Result<GatePlace, tokio::sync::oneshot::Receiver<GatePlace>> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.free > 0 && state.turns.is_empty() {
            state.free -= 1;
            return Ok(GatePlace { gate: Some(self.clone()) });
        }
        let (send, receive) = tokio::sync::oneshot::channel();
        let queue = state.waiting.entry(tenant).or_default();
        if queue.is_empty() {
            state.turns.push_back(tenant);
        }
        state.waiting.get_mut(&tenant).expect("just made").push_back(send);
        Err(receive)
    }

    /// A place came free: to the first waiting call of the next tenant in turn (that tenant
    /// then goes to the back of the round), else back to the free places.
    fn hand_on(self: &Arc<Self>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while let Some(tenant) = state.turns.pop_front() {
            let Some(queue) = state.waiting.get_mut(&tenant) else { continue };
            let next = queue.pop_front();
            if queue.is_empty() {
                state.waiting.remove(&tenant);
            } else {
                state.turns.push_back(tenant);
            }
            let Some(next) = next else { continue };
            // A waiter that gave up dropped its receiver: the place goes back (unsent), or,
            // sent just as it gave up, comes back through GatePlace's drop, outside this lock.
            match next.send(GatePlace { gate: Some(self.clone()) }) {
                Ok(()) => return,
                Err(mut unsent) => unsent.gate = None,
            }
        }
        state.free += 1;
    }
}

impl Drop for GatePlace {
    fn drop(&mut self) {
        if let Some(gate) = self.gate.take() {
            gate.hand_on();
        }
    }
}

impl FairShare {
    pub fn new(config: FairShareConfig) -> Self {
        let gateway_places = config.gateway_places();
        let gateway = Gate::new(gateway_places);
        Self { config, lanes: Mutex::default(), gateway, gateway_places: gateway_places as u32 }
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
    /// tenant, then (`with_gateway`, unless the call holds one already) of the gateway. Past
    /// `fair_share.max_wait_ms`, throttled.
    pub async fn turn(&self, caller: &Caller, kind: Heavy, with_gateway: bool) -> Result<Turn, ToolError> {
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
        let gateway = match with_gateway {
            false => None,
            true => match self.gateway.enter(caller.tenant_id) {
                Ok(place) => Some(place),
                Err(turn) => match tokio::time::timeout_at(deadline, turn).await {
                    Ok(Ok(place)) => Some(place),
                    _ => return Err(throttled(kind, self.gateway_places, "fair_share.per_gateway", wait)),
                },
            },
        };
        Ok(Turn { _places: places, _gateway: gateway })
    }
}

fn throttled(kind: Heavy, size: u32, limit: &str, waited: Duration) -> ToolError {
    ToolError::with_message(
        ErrorCode::Throttled,
        format!(
            "this gateway runs at most {size} {} calls at once per {} ({limit}), and they stayed busy for {} ms; \
             retry after a pause, or run fewer such calls at once",
            kind.as_str(),
            match limit {
                "fair_share.per_principal" => "caller",
                "fair_share.per_tenant" => "tenant",
                _ => "gateway, shared by every tenant in turn",
            },
            waited.as_millis()
        ),
    )
    .detail("retry_after", waited.as_secs_f64().clamp(1.0, 30.0))
    .detail("retry_after_ms", waited.as_millis().clamp(1_000, 30_000) as u64)
    .detail("class", kind.as_str())
    .detail("limit", limit)
    .detail("limit_calls", size)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One place, held by tenant A; A queues three more calls, then B one. The place goes to
    /// A's first (it waited first), then to B's, then back to A: one each round, whatever A
    /// has queued.
    #[tokio::test]
    async fn the_gateways_places_go_to_waiting_tenants_in_turn() {
        let gate = Gate::new(1);
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let held = gate.enter(a).ok().expect("a free place");
        let mut a_waits: Vec<_> = (0..3).map(|_| gate.enter(a).err().expect("waits")).collect();
        let mut b_waits = gate.enter(b).err().expect("waits");
        drop(held);
        let first_a = a_waits[0].try_recv().expect("A waited first");
        drop(first_a);
        let b_place = b_waits.try_recv().expect("then B, before A's other calls");
        assert!(a_waits[1..].iter_mut().all(|w| w.try_recv().is_err()), "no second A call before B's");
        // A waiter that gave up passes its turn on; the place is not lost.
        drop(a_waits.remove(1));
        drop(b_place);
        let next_a = a_waits[1].try_recv().expect("the next A call that still waits");
        drop(next_a);
        assert!(gate.enter(b).is_ok(), "with nobody waiting the place is free again");
    }
}
