use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;

use otc_blobs::Blobs;
use otc_kv::Kv;
use otc_store::Store;

use crate::{AdminState, AppState, error_chain};

/// Liveness: the process is up and serving.
pub async fn healthz() -> &'static str {
    "ok\n"
}

#[derive(Serialize)]
pub struct Readiness {
    status: &'static str,
    /// Each dependency: "ok", or what went wrong in a few words.
    checks: BTreeMap<&'static str, String>,
    /// The dependencies that failed, by name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    failed: Vec<&'static str>,
}

/// Readiness: Postgres, Redis and the object store each answer. 503 names any that does not.
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Readiness>) {
    readiness(&state.store, &state.kv, &state.blobs, state.check_timeout).await
}

/// [`readyz`] on the operators' listener.
pub async fn admin_readyz(State(state): State<AdminState>) -> (StatusCode, Json<Readiness>) {
    readiness(&state.store, &state.kv, &state.blobs, state.check_timeout).await
}

/// Every metric, as Prometheus text.
pub async fn metrics() -> ([(axum::http::HeaderName, &'static str); 1], String) {
    let text = otc_telemetry::metrics().prometheus_text();
    ([(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text)
}

async fn readiness(store: &Store, kv: &Kv, blobs: &Blobs, limit: Duration) -> (StatusCode, Json<Readiness>) {
    let (postgres, redis, objects) = tokio::join!(
        check("postgres", limit, store.ping()),
        check("redis", limit, kv.ping()),
        check("object_store", limit, blobs.check()),
    );
    let mut checks = BTreeMap::new();
    let mut failed = Vec::new();
    for (name, outcome) in [postgres, redis, objects] {
        match outcome {
            Ok(()) => {
                checks.insert(name, "ok".to_string());
            }
            Err(problem) => {
                checks.insert(name, problem);
                failed.push(name);
            }
        }
    }
    let status = if failed.is_empty() { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let word = if failed.is_empty() { "ready" } else { "unavailable" };
    (status, Json(Readiness { status: word, checks, failed }))
}

async fn check<E: std::error::Error + 'static>(
    name: &'static str,
    limit: Duration,
    probe: impl Future<Output = Result<(), E>>,
) -> (&'static str, Result<(), String>) {
    let outcome = match tokio::time::timeout(limit, probe).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => {
            tracing::warn!(dependency = name, error = %error_chain(&e), "readiness check failed");
            Err("unavailable".to_string())
        }
        Err(_) => {
            tracing::warn!(dependency = name, limit_ms = limit.as_millis() as u64, "readiness check timed out");
            Err(format!("no answer within {} ms", limit.as_millis()))
        }
    };
    (name, outcome)
}
