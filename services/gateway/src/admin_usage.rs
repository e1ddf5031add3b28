//! `GET /v1/admin/usage?days=N` (`admin:usage`, a credential bound to no one vault): what the
//! tenant holds now against its quotas, its own rate tiers (the operator sets both), and its
//! usage per day (UTC) over the last N days (30 when left out, at most 366): calls by rate-limit
//! class and outcome, throttled calls, uploads, embedded texts and their tokens, model tokens and
//! cost.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Extension, Query, State};
use chrono::NaiveDate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::scopes::USAGE as SCOPE;
use crate::{ApiError, AppState, Caller};

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UsageQuery {
    /// Days back, today included: 1 to 366 (30 when left out).
    #[serde(default)]
    pub days: Option<u32>,
}

/// A quota in force (null: none) and what is used of it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Held {
    pub used: i64,
    pub quota: Option<i64>,
}

/// One of the tenant's own rate tiers (a class it has none for takes the deployment's).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Tier {
    pub class: String,
    pub per_minute: u32,
    pub burst: u32,
}

/// One day of usage.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Day {
    pub day: NaiveDate,
    /// Calls by rate-limit class (read, write, ..., sync for /v1), then by outcome.
    pub calls: BTreeMap<String, BTreeMap<String, i64>>,
    pub throttled: i64,
    pub uploads: i64,
    pub embedding_texts: i64,
    pub embedding_tokens: i64,
    pub model_tokens: i64,
    pub model_cost_usd: f64,
}

/// GET /v1/admin/usage
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    pub storage_bytes: Held,
    pub notes: Held,
    pub concurrent_uploads: Option<i64>,
    pub upload_bytes_in_flight: Option<i64>,
    pub rate_tiers: Vec<Tier>,
    /// Oldest first; a day with nothing is left out.
    pub days: Vec<Day>,
}

pub async fn get(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<UsageQuery>,
) -> Result<Json<Usage>, ApiError> {
    crate::auth::tenant_admin(&caller, SCOPE, "read the tenant's usage")?;
    let days = query.days.unwrap_or(30);
    if !(1..=366).contains(&days) {
        return Err(ApiError::from_tool(
            otc_errors::ToolError::with_message(otc_errors::ErrorCode::InvalidInput, "days: 1 to 366")
                .detail("field", "days"),
        ));
    }
    // Every call this gateway answered before this one is counted in the answer.
    state.dispatcher.services.audit.flush(std::time::Duration::from_secs(2)).await;
    let store = &state.dispatcher.services.store;
    let err = |e: otc_store::StoreError| ApiError::from_store(&e);
    let mut tx = store.begin(caller.tenant_id).await.map_err(err)?;
    let report = tx.usage_report(days).await.map_err(err)?;
    let quotas = tx.quotas().await.map_err(err)?;
    let tiers = tx.rate_tiers().await.map_err(err)?;
    tx.commit().await.map_err(err)?;
    Ok(Json(Usage {
        storage_bytes: Held { used: report.storage_bytes, quota: quotas.storage_bytes },
        notes: Held { used: report.notes, quota: quotas.notes },
        concurrent_uploads: quotas.concurrent_uploads,
        upload_bytes_in_flight: quotas.upload_bytes_in_flight,
        rate_tiers: tiers
            .into_iter()
            .map(|t| Tier { class: t.class, per_minute: t.per_minute, burst: t.burst })
            .collect(),
        days: report
            .days
            .into_iter()
            .map(|d| Day {
                day: d.day,
                calls: d.calls,
                throttled: d.throttled,
                uploads: d.uploads,
                embedding_texts: d.embedding_texts,
                embedding_tokens: d.embedding_tokens,
                model_tokens: d.model_tokens,
                model_cost_usd: d.model_cost_usd,
            })
            .collect(),
    }))
}
