//! `Idempotency-Key` on the /v1 mutations (the sync API's commit, the admin API): with the
//! header, the first request with a key runs and its answer is kept (24 h, per principal);
//! a retry with the same key and body gets that answer without running again, and one with the
//! same key and another body is refused (`otc_kernel::idempotency`).

use std::future::Future;

use axum::http::HeaderMap;
use otc_errors::{ErrorCode, ToolError};
use serde_json::Value;

use crate::{ApiError, AppState, Caller};

/// Runs `run` on `input` once per `Idempotency-Key` (when the request has one): the key's
/// fingerprint is `operation` (with what the path names) and `input` (the body).
pub(crate) async fn keyed<Fut>(
    state: &AppState,
    caller: &Caller,
    headers: &HeaderMap,
    operation: &str,
    input: Value,
    run: impl FnOnce(Value) -> Fut,
) -> Result<Value, ApiError>
where
    Fut: Future<Output = Result<Value, ApiError>>,
{
    keyed_keeping(state, caller, headers, operation, input, Value::clone, run).await
}

/// [`keyed`], keeping for a retry only what `keep` makes of the answer (a secret the answer
/// shows once is not kept).
pub(crate) async fn keyed_keeping<Fut>(
    state: &AppState,
    caller: &Caller,
    headers: &HeaderMap,
    operation: &str,
    input: Value,
    keep: impl FnOnce(&Value) -> Value,
    run: impl FnOnce(Value) -> Fut,
) -> Result<Value, ApiError>
where
    Fut: Future<Output = Result<Value, ApiError>>,
{
    let Some(key) = headers.get("idempotency-key") else { return run(input).await };
    let key = key.to_str().map_err(|_| {
        ApiError::from_tool(ToolError::with_message(
            ErrorCode::InvalidInput,
            "Idempotency-Key must be 1 to 255 printable ASCII characters",
        ))
    })?;
    let fingerprint = otc_kernel::writing::args_hash(operation, &input);
    let services = &state.dispatcher.services;
    let effects = otc_store::CallEffects::new();
    let guard = match otc_kernel::idempotency::claim(&services.kv, &services.store, caller, key, &fingerprint, &effects)
        .await
    {
        Ok(otc_kernel::idempotency::Claim::Replay(result)) => return Ok(result),
        Ok(otc_kernel::idempotency::Claim::Run(guard)) => guard,
        Err(e) => return Err(ApiError::from_tool(e)),
    };
    let outcome = effects.track(run(input)).await;
    let as_tool = match &outcome {
        Ok(result) => Ok(keep(result)),
        Err(e) => Err(ToolError::new(ErrorCode::parse(e.code).unwrap_or(ErrorCode::Internal))),
    };
    guard.finish(&as_tool).await;
    outcome
}
