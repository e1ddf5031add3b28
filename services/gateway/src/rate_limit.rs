//! Rate limits at the HTTP edge. The /v1 API spends from the caller's `sync` budget per request
//! (MCP tool calls spend per call in the dispatcher, from their tool's class) and answers with
//! the RateLimit headers; a throttled request gets 429, the
//! catalogue's `throttled` body and Retry-After. The routes that need no credential are limited
//! per client address in each gateway's memory (tower-governor), since there is no principal.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use otc_errors::{ErrorCode, ToolError};
use otc_kernel::rate_limits::Spent;
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::{GovernorError, GovernorLayer};

use crate::{ApiError, AppState, Caller};

/// The rate-limit class every /v1 request spends from, and is metered under.
pub(crate) const V1_CLASS: &str = "sync";

/// Spends one call of the /v1 caller's budget; MCP requests pass (their tool calls spend).
pub async fn v1(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if !request.uri().path().starts_with("/v1/") {
        return next.run(request).await;
    }
    let Some(caller) = request.extensions().get::<Caller>().cloned() else {
        return next.run(request).await;
    };
    let class = V1_CLASS;
    match state.dispatcher.services.limiter.spend(&caller, class).await {
        Ok(spent) => {
            let mut response = next.run(request).await;
            headers(response.headers_mut(), &spent);
            response
        }
        Err(err) => {
            let wait = err.details.get("retry_after").and_then(|v| v.as_f64()).unwrap_or(1.0);
            let tier = state.dispatcher.services.limiter.tier(&caller, class);
            let mut response = ApiError::from_tool(err).into_response();
            let h = response.headers_mut();
            h.insert("retry-after", number(wait.ceil() as u64));
            h.insert("ratelimit-limit", number(tier.burst.into()));
            h.insert("ratelimit-remaining", number(0));
            h.insert("ratelimit-reset", number(wait.ceil() as u64));
            h.insert("ratelimit-policy", policy(class, tier.per_minute));
            crate::error::refuse(request, response).await
        }
    }
}

fn headers(h: &mut HeaderMap, spent: &Spent) {
    let Some(decision) = spent.decision else { return };
    h.insert("ratelimit-limit", number(spent.tier.burst.into()));
    h.insert("ratelimit-remaining", number(decision.remaining.into()));
    h.insert("ratelimit-reset", number(ceil_secs(decision.reset_after)));
    h.insert("ratelimit-policy", policy(spent.class, spent.tier.per_minute));
}

fn ceil_secs(d: Duration) -> u64 {
    d.as_micros().div_ceil(1_000_000) as u64
}

fn number(n: u64) -> HeaderValue {
    HeaderValue::from(n)
}

/// `<burst>;w=60;q=<per minute>`-style policy, naming the class.
fn policy(class: &str, per_minute: u32) -> HeaderValue {
    HeaderValue::from_str(&format!("\"{class}\";q={per_minute};w=60")).expect("ascii")
}

/// The per-address limit of the routes that need no credential, answering like any throttled
/// request (the catalogue's body, Retry-After).
pub fn per_ip<S: Clone + Send + Sync + 'static>(router: Router<S>, per_minute: u32, burst: u32) -> Router<S> {
    let what = format!("this address may make {per_minute} requests a minute (burst {burst}) without a credential");
    per_ip_every(router, 60_000 / u64::from(per_minute.max(1)), burst, "unauthenticated", what)
}

/// Dynamic client registrations per address: `per_hour`, a tenth of them at once (at least one).
pub fn registrations(router: Router<AppState>, per_hour: u32) -> Router<AppState> {
    let burst = (per_hour / 10).max(1);
    let what =
        format!("this address may register {per_hour} clients an hour (burst {burst}); reuse a registered client_id");
    per_ip_every(router, 3_600_000 / u64::from(per_hour.max(1)), burst, "registration", what)
}

/// A per-address budget: one request every `period_ms`, `burst` at once.
fn per_ip_every<S: Clone + Send + Sync + 'static>(
    router: Router<S>,
    period_ms: u64,
    burst: u32,
    class: &'static str,
    what: String,
) -> Router<S> {
    let per_ms = period_ms.max(1);
    let config = GovernorConfigBuilder::default()
        .per_millisecond(per_ms)
        .burst_size(burst.max(1))
        .finish()
        .expect("a non-zero period and burst");
    let layer = GovernorLayer::new(Arc::new(config)).error_handler(move |error| match error {
        GovernorError::TooManyRequests { wait_time, .. } => {
            let err = ToolError::with_message(ErrorCode::Throttled, what.clone())
                .detail("retry_after", wait_time.max(1))
                .detail("class", class);
            let mut response = ApiError::from_tool(err).into_response();
            response.headers_mut().insert("retry-after", number(wait_time.max(1)));
            response
        }
        // No peer address (a server not started with connect info): nothing to count by.
        GovernorError::UnableToExtractKey | GovernorError::Other { .. } => {
            tracing::error!(?error, "per-address rate limit could not key the request");
            ApiError::internal().into_response()
        }
    });
    router.layer(layer)
}
