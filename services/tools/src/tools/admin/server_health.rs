use std::collections::BTreeMap;
use std::future::Future;

use otc_catalog::facade::{self, AutoExplanation, Listing};
use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::{CallContext, Tool};

pub struct ServerHealth;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    /// ok when every subsystem answers, degraded otherwise.
    pub status: String,
    pub version: String,
    pub uptime_seconds: u64,
    /// postgres, redis and object_store: "ok", or what is wrong.
    pub subsystems: BTreeMap<String, Subsystem>,
    pub tool_facade: FacadeReport,
    pub tools: ToolCounts,
    pub rate_limits: RateLimitReport,
    /// Your tenant's background work (your vault's, for a token bound to one): index and
    /// embedding jobs queued, dead, and the age of the oldest queued one (the lag).
    pub backlog: Vec<BacklogReport>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BacklogReport {
    /// index or embed.
    pub kind: String,
    pub queued: i64,
    pub dead: i64,
    pub lag_seconds: f64,
}

/// The caller's backlog (its tenant's, or its bound vault's), or an empty list (logged) when
/// Postgres cannot say.
pub async fn backlog(ctx: &CallContext<'_>) -> Vec<BacklogReport> {
    let read = async {
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await?;
        let rows = tx.outbox_backlog(ctx.caller.vault_id).await?;
        tx.commit().await?;
        Ok::<_, otc_store::StoreError>(rows)
    };
    let now = chrono::Utc::now();
    match read.await {
        Ok(rows) => rows
            .into_iter()
            .map(|b| BacklogReport {
                kind: b.kind,
                queued: b.queued,
                dead: b.dead,
                lag_seconds: b.oldest_queued.map_or(0.0, |t| (now - t).num_milliseconds().max(0) as f64 / 1000.0),
            })
            .collect(),
        Err(e) => {
            tracing::warn!(error = %otc_errors::error_chain(&e), "server_health: cannot read the backlog");
            Vec::new()
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RateLimitReport {
    pub enabled: bool,
    /// Whether calls are being counted now (limits on and Redis answering).
    pub counting: bool,
    /// What calls get while Redis is unreachable: open (through, uncounted) or closed (throttled).
    pub when_redis_down: String,
    /// Your tier per class of call: calls a minute and burst.
    pub tiers: BTreeMap<String, Tier>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Tier {
    pub per_minute: u32,
    pub burst: u32,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Subsystem {
    pub status: String,
    pub latency_ms: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FacadeReport {
    /// The configured tool_facade.mode.
    pub configured_mode: String,
    /// What this surface advertises to you: triad, domain or flat:<subset>.
    pub listing: String,
    pub surface: String,
    pub profile: String,
    pub advertise: String,
    pub triad_hot_path: bool,
    /// Deprecated settings in use, if any.
    pub deprecations: Vec<String>,
    /// How `auto` was resolved for you (only under mode auto).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<AutoExplanation>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ToolCounts {
    pub registered: usize,
    /// Advertised to you on this surface.
    pub advertised: usize,
    /// Hidden from every caller by the core profile.
    pub hidden_by_profile: usize,
}

async fn probe<E>(limit: std::time::Duration, check: impl Future<Output = Result<(), E>>) -> Subsystem
where
    E: std::error::Error,
{
    let started = std::time::Instant::now();
    let status = match tokio::time::timeout(limit, check).await {
        Ok(Ok(())) => "ok".to_string(),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "server_health: subsystem check failed");
            "unavailable".to_string()
        }
        Err(_) => format!("no answer within {} ms", limit.as_millis()),
    };
    Subsystem { status, latency_ms: started.elapsed().as_millis() as u64 }
}

fn listing_name(listing: Listing) -> String {
    match listing {
        Listing::Triad => "triad".into(),
        Listing::Domain => "domain".into(),
        Listing::Flat(subset) => format!("flat:{}", subset.as_str()),
    }
}

impl Tool for ServerHealth {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        essentials: true,
        response_format: Format::Fixed { why: "every field is a health signal" },
        ..ToolSpec::base(
            "server_health",
            "Server health",
            "Whether the server, database, cache and object store are healthy; version, uptime, your rate \
             limits and index backlog.",
            Domain::Admin,
        )
    };

    async fn call(ctx: &CallContext<'_>, _input: Input) -> Result<Output, ToolError> {
        let services = ctx.services();
        let limit = services.check_timeout;
        let (postgres, redis, objects) = tokio::join!(
            probe(limit, services.store.ping()),
            probe(limit, services.kv.ping()),
            probe(limit, services.blobs.check()),
        );
        let healthy = [&postgres, &redis, &objects].iter().all(|s| s.status == "ok");
        let backlog = if postgres.status == "ok" { backlog(ctx).await } else { Vec::new() };
        let settings = ctx.settings();
        let (listing, explanation) = facade::resolve(settings, ctx.surface, ctx.client_name);
        let advertised = ctx.dispatcher.list_tools(ctx.caller, ctx.surface, ctx.client_name).len();
        let hidden = ctx.dispatcher.profile_hidden(ctx.caller).len();
        let limiter = &services.limiter;
        let rate_limits = RateLimitReport {
            enabled: limiter.config().enabled,
            counting: limiter.config().enabled && redis.status == "ok",
            when_redis_down: match limiter.config().when_redis_down {
                otc_config::FailPolicy::Open => "open",
                otc_config::FailPolicy::Closed => "closed",
            }
            .into(),
            tiers: otc_config::RateTiers::CLASSES
                .into_iter()
                .map(|class| {
                    let tier = limiter.tier(ctx.caller, class);
                    (class.to_string(), Tier { per_minute: tier.per_minute, burst: tier.burst })
                })
                .collect(),
        };
        Ok(Output {
            status: if healthy { "ok" } else { "degraded" }.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            uptime_seconds: services.started.elapsed().as_secs(),
            subsystems: BTreeMap::from([
                ("postgres".to_string(), postgres),
                ("redis".to_string(), redis),
                ("object_store".to_string(), objects),
            ]),
            tool_facade: FacadeReport {
                configured_mode: settings.mode.as_str().into(),
                listing: listing_name(listing),
                surface: ctx.surface.name().into(),
                profile: settings.profile.as_str().into(),
                advertise: settings.advertise_name().into(),
                triad_hot_path: settings.triad_hot_path,
                deprecations: services.config.deprecations(),
                explanation,
            },
            tools: ToolCounts { registered: ctx.registry().len(), advertised, hidden_by_profile: hidden },
            rate_limits,
            backlog,
        })
    }
}
