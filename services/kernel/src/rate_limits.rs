//! Rate limits: a GCRA budget in Redis per principal and class of call, shared by every gateway
//! (`Kv::rate_check` runs on Redis's clock). A call spends from its class's budget only: a
//! tool's scope class (bulk, execute, admin, delete, write, read, most to least costly) or, for
//! every /v1 request, `sync` (one file per upload or download: a tier of its own, so syncing
//! a vault does not spend an agent's write budget). The tier of a class is the
//! tenant's own (`obsidian-tc tenant limits`, carried with the caller's token) or the
//! deployment's (`rate_limits.tiers`). When Redis cannot decide, `rate_limits.when_redis_down`
//! lets the call through (with a warning at most every ten seconds) or answers throttled.
//!
//! A budget far from its limit is spent locally: each gateway keeps, per budget, what Redis
//! last said (the theoretical arrival time and Redis's clock) and the calls it allowed since.
//! While its estimate leaves at least half the burst free after the call (and only for bursts
//! of [`LOCAL_MIN_BURST`] or more), it allows the call without a round trip; a task sends the
//! calls so allowed to Redis every [`FLUSH_EVERY`]. Near the limit, or when the estimate is
//! older than [`FRESH_FOR`], the call asks Redis (sending the pending calls with it), so a small
//! tier is always exact and a large one overshoots by at most half a burst per gateway per
//! flush. A refusal is repeated locally until its `retry_after` has passed: a refused call
//! spends nothing, so the answer cannot change meanwhile, and a caller that ignores
//! `retry_after` costs no Redis round trip per call.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use otc_config::{FailPolicy, RateLimitsConfig, RateTier};
use otc_errors::{ErrorCode, ToolError};
use otc_kv::{Kv, RateDecision};

use crate::Caller;

/// How long a throttled caller is told to wait when Redis cannot decide and the policy is closed.
const UNDECIDED_RETRY: Duration = Duration::from_secs(1);

/// The smallest burst spent locally (smaller ones always ask Redis).
pub const LOCAL_MIN_BURST: u32 = 10;
/// How often calls allowed locally are sent to Redis.
pub const FLUSH_EVERY: Duration = Duration::from_millis(50);
/// How long what Redis said is trusted for local decisions.
pub const FRESH_FOR: Duration = Duration::from_millis(250);
/// A budget unused this long is forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(10);

pub struct RateLimiter {
    kv: Arc<Kv>,
    config: RateLimitsConfig,
    started: Instant,
    /// When (ms after `started`) the last "could not decide" warning was logged.
    warned_at_ms: AtomicU64,
    /// What this gateway knows of each budget it spends locally.
    slots: Arc<Mutex<HashMap<String, Slot>>>,
}

/// A budget as this gateway last heard of it from Redis, and what it allowed since.
#[derive(Debug, Clone, Copy)]
struct Slot {
    tier: RateTier,
    /// The theoretical arrival time and Redis's clock in the last answer (µs).
    tat_us: i64,
    redis_now_us: i64,
    /// When that answer came (this gateway's clock).
    heard: Instant,
    /// Calls allowed locally since, not yet sent.
    pending: u32,
    used: Instant,
    /// Until when Redis's last refusal holds: a refused call spends nothing, so until then the
    /// answer cannot be other, and this gateway gives it without asking again.
    refused_until: Option<Instant>,
}

impl Slot {
    fn interval_us(&self) -> i64 {
        otc_kv::rate_interval_us(self.tier.per_minute) as i64
    }

    /// The budget left after one more call, by this gateway's estimate (µs of it, and calls).
    fn headroom_after_one(&self) -> (i64, i64) {
        let interval = self.interval_us();
        let now = self.redis_now_us + self.heard.elapsed().as_micros() as i64;
        let tat = self.tat_us.max(now) + interval * (i64::from(self.pending) + 1);
        let used = tat - now;
        (used, (interval * i64::from(self.tier.burst) - used) / interval)
    }
}

/// What one call spent: its class's tier and, when Redis decided, the budget left.
#[derive(Debug, Clone, Copy)]
pub struct Spent {
    pub class: &'static str,
    pub tier: RateTier,
    /// None when limits are off or Redis could not decide and the policy let the call through.
    pub decision: Option<RateDecision>,
}

impl RateLimiter {
    pub fn new(kv: Arc<Kv>, config: RateLimitsConfig) -> Self {
        let slots = Arc::new(Mutex::new(HashMap::new()));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(flush(kv.clone(), Arc::downgrade(&slots)));
        }
        Self { kv, config, started: Instant::now(), warned_at_ms: AtomicU64::new(0), slots }
    }

    /// One call decided without Redis: refused while Redis's last refusal on `key` still holds
    /// (how long it still does), or allowed when the budget is known, fresh and far from its
    /// limit. None: ask Redis.
    fn decide_locally(&self, key: &str, tier: RateTier) -> Option<Result<RateDecision, Duration>> {
        let mut slots = lock(&self.slots);
        let slot = slots.get_mut(key).filter(|s| s.tier == tier)?;
        let refused_for = slot.refused_until.and_then(|until| until.checked_duration_since(Instant::now()));
        if let Some(left) = refused_for.filter(|left| !left.is_zero()) {
            return Some(Err(left));
        }
        if tier.burst < LOCAL_MIN_BURST || slot.heard.elapsed() >= FRESH_FOR {
            return None;
        }
        let (used_us, left) = slot.headroom_after_one();
        if left < i64::from(tier.burst / 2) {
            return None;
        }
        slot.pending += 1;
        slot.used = Instant::now();
        Some(Ok(RateDecision {
            allowed: true,
            remaining: left.max(0) as u32,
            retry_after: Duration::ZERO,
            reset_after: Duration::from_micros(used_us.max(0) as u64),
            tat_us: 0,
            now_us: 0,
        }))
    }

    /// The calls allowed locally on `key` and not yet sent (taken: the caller sends them).
    fn take_pending(&self, key: &str) -> u32 {
        lock(&self.slots).get_mut(key).map(|s| std::mem::take(&mut s.pending)).unwrap_or(0)
    }

    fn give_back(&self, key: &str, pending: u32) {
        if let Some(slot) = lock(&self.slots).get_mut(key) {
            slot.pending += pending;
        }
    }

    fn heard(&self, key: &str, tier: RateTier, decision: &RateDecision) {
        let mut slots = lock(&self.slots);
        let now = Instant::now();
        let slot = slots.entry(key.to_string()).or_insert(Slot {
            tier,
            tat_us: 0,
            redis_now_us: 0,
            heard: now,
            pending: 0,
            used: now,
            refused_until: None,
        });
        let refused_until = (!decision.allowed).then(|| now + decision.retry_after);
        *slot = Slot {
            tier,
            tat_us: decision.tat_us,
            redis_now_us: decision.now_us,
            heard: now,
            used: now,
            refused_until,
            ..*slot
        };
    }

    pub fn config(&self) -> &RateLimitsConfig {
        &self.config
    }

    /// The tier `caller` gets for `class`: its tenant's own, else the deployment's.
    pub fn tier(&self, caller: &Caller, class: &str) -> RateTier {
        caller
            .rate_tiers
            .iter()
            .find(|t| t.class == class)
            .map(|t| RateTier { per_minute: t.per_minute, burst: t.burst })
            .or_else(|| self.config.tiers.get(class))
            .unwrap_or(self.config.tiers.read)
    }

    /// Spends one `class` call from `caller`'s budget: throttled (with how long to wait in
    /// details) when it is spent.
    pub async fn spend(&self, caller: &Caller, class: &'static str) -> Result<Spent, ToolError> {
        let spent = self.decide(caller, class).await;
        if self.config.enabled {
            otc_telemetry::metrics().rate_limit(class, spent.is_err());
        }
        spent
    }

    async fn decide(&self, caller: &Caller, class: &'static str) -> Result<Spent, ToolError> {
        let tier = self.tier(caller, class);
        if !self.config.enabled {
            return Ok(Spent { class, tier, decision: None });
        }
        let key = format!("rl:{}:{}:{class}", caller.tenant_id, caller.principal_id);
        match self.decide_locally(&key, tier) {
            Some(Ok(decision)) => return Ok(Spent { class, tier, decision: Some(decision) }),
            Some(Err(wait)) => return Err(throttled(class, tier, wait)),
            None => {}
        }
        let pending = self.take_pending(&key);
        let asked = self.kv.rate_spend(&key, tier.per_minute, tier.burst, pending, true).await;
        match &asked {
            Ok(decision) => self.heard(&key, tier, decision),
            // Not sent: they go with the next flush.
            Err(_) => self.give_back(&key, pending),
        }
        match asked {
            Ok(decision) if decision.allowed => Ok(Spent { class, tier, decision: Some(decision) }),
            Ok(decision) => Err(throttled(class, tier, decision.retry_after)),
            Err(e) => {
                self.warn_undecided(&e);
                match self.config.when_redis_down {
                    FailPolicy::Open => Ok(Spent { class, tier, decision: None }),
                    FailPolicy::Closed => Err(throttled(class, tier, UNDECIDED_RETRY).detail(
                        "reason",
                        "the rate limiter is unavailable and this server refuses calls it cannot count",
                    )),
                }
            }
        }
    }

    fn warn_undecided(&self, err: &otc_kv::KvError) {
        let now = self.started.elapsed().as_millis() as u64 + 10_000;
        let last = self.warned_at_ms.load(Ordering::Relaxed);
        if now >= last + 10_000
            && self.warned_at_ms.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            let policy = match self.config.when_redis_down {
                FailPolicy::Open => "letting calls through uncounted (rate_limits.when_redis_down = open)",
                FailPolicy::Closed => "refusing calls (rate_limits.when_redis_down = closed)",
            };
            tracing::warn!(error = ?err, "rate limiter cannot reach Redis; {policy}");
        }
    }
}

/// The slots, even after a panic elsewhere held them (their numbers stay usable).
fn lock(slots: &Mutex<HashMap<String, Slot>>) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
    slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Sends the calls allowed locally to Redis every [`FLUSH_EVERY`], refreshing what each budget
/// is known to be, and forgets budgets unused for a while; ends with the limiter.
async fn flush(kv: Arc<Kv>, slots: Weak<Mutex<HashMap<String, Slot>>>) {
    loop {
        tokio::time::sleep(FLUSH_EVERY).await;
        let Some(slots) = slots.upgrade() else { return };
        let due: Vec<(String, RateTier, u32)> = {
            let mut held = lock(&slots);
            held.retain(|_, s| s.used.elapsed() < FORGET_AFTER || s.pending > 0);
            held.iter_mut()
                .filter(|(_, s)| s.pending > 0)
                .map(|(k, s)| (k.clone(), s.tier, std::mem::take(&mut s.pending)))
                .collect()
        };
        for (key, tier, pending) in due {
            match kv.rate_spend(&key, tier.per_minute, tier.burst, pending, false).await {
                Ok(decision) => {
                    if let Some(slot) = lock(&slots).get_mut(&key) {
                        slot.tat_us = decision.tat_us;
                        slot.redis_now_us = decision.now_us;
                        slot.heard = Instant::now();
                    }
                }
                Err(e) => {
                    // Put them back for the next flush (or the next call that asks Redis).
                    if let Some(slot) = lock(&slots).get_mut(&key) {
                        slot.pending += pending;
                    }
                    tracing::debug!(error = ?e, "could not send locally allowed calls to Redis");
                }
            }
        }
    }
}

fn throttled(class: &str, tier: RateTier, wait: Duration) -> ToolError {
    ToolError::with_message(
        ErrorCode::Throttled,
        format!("{class} calls are limited to {} a minute (burst {}) per caller", tier.per_minute, tier.burst),
    )
    .detail("retry_after", wait.as_secs_f64().max(0.001))
    .detail("retry_after_ms", wait.as_millis().max(1) as u64)
    .detail("class", class)
    .detail("per_minute", tier.per_minute)
    .detail("burst", tier.burst)
}
