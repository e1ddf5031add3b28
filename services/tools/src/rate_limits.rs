//! Rate limits: a GCRA budget in Redis per principal and class of call, shared by every gateway
//! (`Kv::rate_check` runs on Redis's clock). A call spends from its class's budget only: a
//! tool's scope class (bulk, execute, admin, delete, write, read, most to least costly) or, for
//! every /v1 request, `sync` (one file per upload or download: a tier of its own, so syncing
//! a vault does not spend an agent's write budget). The tier of a class is the
//! tenant's own (`obsidian-tc tenant limits`, carried with the caller's token) or the
//! deployment's (`rate_limits.tiers`). When Redis cannot decide, `rate_limits.when_redis_down`
//! lets the call through (with a warning at most every ten seconds) or answers throttled.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use otc_config::{FailPolicy, RateLimitsConfig, RateTier};
use otc_errors::{ErrorCode, ToolError};
use otc_kv::{Kv, RateDecision};

use crate::Caller;

/// How long a throttled caller is told to wait when Redis cannot decide and the policy is closed.
const UNDECIDED_RETRY: Duration = Duration::from_secs(1);

pub struct RateLimiter {
    kv: Arc<Kv>,
    config: RateLimitsConfig,
    started: Instant,
    /// When (ms after `started`) the last "could not decide" warning was logged.
    warned_at_ms: AtomicU64,
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
        Self { kv, config, started: Instant::now(), warned_at_ms: AtomicU64::new(0) }
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
        let tier = self.tier(caller, class);
        if !self.config.enabled {
            return Ok(Spent { class, tier, decision: None });
        }
        let key = format!("rl:{}:{}:{class}", caller.tenant_id, caller.principal_id);
        match self.kv.rate_check(&key, tier.per_minute, tier.burst).await {
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
