//! Idempotency keys: a mutating call (or a /v1 commit) sent with a key runs at most once. The
//! key's record lives in Redis for [`KEPT`], scoped to the principal, and holds the call's
//! fingerprint (tool and canonical arguments) and its state:
//!
//! - running: the call holds a lease its gateway renews while it runs. The same key again
//!   answers idempotency_in_flight; once the lease lapses (the gateway died mid-call) it answers
//!   indeterminate_outcome, since the effect may have landed.
//! - done: the same key and arguments answer the stored result without running again.
//! - indeterminate: the call failed in a way that does not say whether its effect landed (an
//!   internal failure, a dependency going away, a timeout, the caller hanging up mid-call)
//!   after it sent a commit; the key answers indeterminate_outcome and the call is never run
//!   again under it.
//!
//! A call that failed so before sending any commit provably changed nothing
//! ([`otc_store::CallEffects`]): its key is freed, so the retry the error invites runs. A refusal (any other error: validation, not found, conflict, elicit_required, throttled...)
//! changes nothing, so it frees the key and a retry runs. The same key with other arguments
//! answers idempotency_key_mismatch. Without Redis a keyed call is refused (retryable) rather
//! than run without the promise.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use otc_errors::{ErrorCode, ToolError};
use otc_kv::Kv;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Caller;
use otc_store::CallEffects;

/// How long a key's record (and its stored result) is kept.
pub const KEPT: Duration = Duration::from_secs(24 * 3600);
/// How long a running call's lease lasts without renewal.
const LEASE: Duration = Duration::from_secs(15);
/// How often a running call renews its lease.
const RENEW_EVERY: Duration = Duration::from_secs(5);
/// The argument every mutating tool takes (the registry adds it to their schemas).
pub const ARGUMENT: &str = otc_catalog::IDEMPOTENCY_KEY;
/// The longest key accepted.
pub const MAX_KEY_CHARS: usize = otc_catalog::IDEMPOTENCY_KEY_MAX_CHARS;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
enum Record {
    Running {
        fingerprint: String,
        /// Unix ms until which the running call's gateway vouches for it.
        lease_until_ms: u64,
        /// Which run holds the key (so only it renews, finishes or frees it).
        run: String,
    },
    Done {
        fingerprint: String,
        result: Value,
    },
    Indeterminate {
        fingerprint: String,
    },
}

impl Record {
    fn text(&self) -> String {
        serde_json::to_string(self).expect("a record serializes")
    }

    fn fingerprint(&self) -> &str {
        match self {
            Record::Running { fingerprint, .. }
            | Record::Done { fingerprint, .. }
            | Record::Indeterminate { fingerprint } => fingerprint,
        }
    }
}

/// What a keyed call may do.
pub enum Claim {
    /// Run it; report how it ended through the guard.
    Run(Guard),
    /// It ran before: this is its result.
    Replay(Value),
}

/// A running keyed call's hold on its key. Renews the lease while alive; dropped without
/// [`Guard::finish`] (the caller hung up mid-call) it marks the key indeterminate, or frees it
/// if the call had sent no commit.
pub struct Guard {
    kv: Arc<Kv>,
    store: otc_store::Store,
    tenant: uuid::Uuid,
    name: String,
    fingerprint: String,
    /// The record as last written.
    current: Arc<tokio::sync::Mutex<String>>,
    renew: Option<tokio::task::JoinHandle<()>>,
    finished: bool,
    /// The commits the call sends, counted while it runs under [`CallEffects::track`].
    effects: CallEffects,
}

/// Whether `err` leaves the call's effect unknown (it may have landed) rather than refused.
pub fn leaves_outcome_unknown(err: &ToolError) -> bool {
    matches!(
        err.code,
        ErrorCode::Internal
            | ErrorCode::InternalError
            | ErrorCode::OperationTimeout
            | ErrorCode::Aborted
            | ErrorCode::ServiceUnavailable
    )
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

fn unavailable(e: &otc_kv::KvError) -> ToolError {
    tracing::warn!(error = ?e, "idempotency records unavailable");
    ToolError::with_message(
        ErrorCode::ServiceUnavailable,
        "the idempotency record store is unavailable; the call was not run (resend it with the same key)",
    )
    .detail("dependency", "redis")
}

/// A key as sent: 1 to [`MAX_KEY_CHARS`] characters, none of them a control character.
pub fn check_key(key: &str) -> Result<(), ToolError> {
    if key.is_empty() || key.chars().count() > MAX_KEY_CHARS || key.chars().any(char::is_control) {
        return Err(ToolError::with_message(
            ErrorCode::InvalidInput,
            format!("idempotency_key must be 1 to {MAX_KEY_CHARS} characters with no control characters"),
        )
        .detail("field", "idempotency_key"));
    }
    Ok(())
}

/// The Redis record of `caller`'s `key` (a principal's keys are its own).
pub fn record_name(caller: &Caller, key: &str) -> String {
    let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(key.as_bytes()));
    format!("idem:{}:{}:{digest}", caller.tenant_id, caller.principal_id)
}

/// Claims `key` for a call with this `fingerprint` (a hash of what it does), or answers how
/// an earlier call under the key ended. The call is to run under `effects.track`, so that a
/// failure before its first commit frees the key.
pub async fn claim(
    kv: &Arc<Kv>,
    store: &otc_store::Store,
    caller: &Caller,
    key: &str,
    fingerprint: &str,
    effects: &CallEffects,
) -> Result<Claim, ToolError> {
    check_key(key)?;
    let name = record_name(caller, key);
    let running = {
        let (fingerprint, run) = (fingerprint.to_string(), uuid::Uuid::new_v4().simple().to_string());
        move |lease_until_ms| {
            let record = Record::Running { fingerprint: fingerprint.clone(), lease_until_ms, run: run.clone() };
            record.text()
        }
    };
    let first = running(now_ms() + LEASE.as_millis() as u64);
    loop {
        if kv.create_record(&name, &first, KEPT).await.map_err(|e| unavailable(&e))? {
            // Redis had nothing: a restart may have lost a finished call's record, which
            // Postgres keeps too. Found, it goes back to Redis and answers as it would have.
            let kept = match durable_record(store, caller.tenant_id, &name).await {
                Ok(kept) => kept,
                Err(e) => {
                    let _ = kv.delete_record_if(&name, &first).await;
                    return Err(e);
                }
            };
            if let Some((text, expires_at)) = kept {
                // For what is left of its day, not a fresh one.
                let left = (expires_at - chrono::Utc::now()).to_std().unwrap_or_default();
                kv.swap_record_for(&name, &first, &text, left).await.map_err(|e| unavailable(&e))?;
                continue; // Read from Redis again, like any other finished record.
            }
            let current = Arc::new(tokio::sync::Mutex::new(first));
            let renew = tokio::spawn(renew(kv.clone(), name.clone(), current.clone(), running.clone()));
            return Ok(Claim::Run(Guard {
                kv: kv.clone(),
                store: store.clone(),
                tenant: caller.tenant_id,
                name,
                fingerprint: fingerprint.into(),
                current,
                renew: Some(renew),
                finished: false,
                effects: effects.clone(),
            }));
        }
        let Some(text) = kv.get_record(&name).await.map_err(|e| unavailable(&e))? else {
            continue; // Freed (a refusal) or expired meanwhile: claim it again.
        };
        let record: Record = serde_json::from_str(&text).map_err(|e| crate::internal("idempotency", &e))?;
        if record.fingerprint() != fingerprint {
            return Err(ToolError::new(ErrorCode::IdempotencyKeyMismatch).echo("idempotency_key", key));
        }
        return match record {
            Record::Done { result, .. } => Ok(Claim::Replay(result)),
            Record::Indeterminate { .. } => Err(indeterminate(key)),
            Record::Running { lease_until_ms, .. } if lease_until_ms >= now_ms() => {
                Err(ToolError::new(ErrorCode::IdempotencyInFlight)
                    .echo("idempotency_key", key)
                    .detail("retry_after", RENEW_EVERY.as_secs()))
            }
            Record::Running { .. } => {
                // Its gateway stopped vouching for it mid-call: whether it landed is unknown.
                let lapsed = Record::Indeterminate { fingerprint: fingerprint.into() }.text();
                if !kv.swap_record(&name, &text, &lapsed).await.map_err(|e| unavailable(&e))? {
                    continue;
                }
                Err(indeterminate(key))
            }
        };
    }
}

/// A finished call's record as Postgres keeps it and when it expires, unless it has.
async fn durable_record(
    store: &otc_store::Store,
    tenant: uuid::Uuid,
    name: &str,
) -> Result<Option<(String, chrono::DateTime<chrono::Utc>)>, ToolError> {
    let mut tx = store.begin(tenant).await?;
    let record = tx.idempotency_record(name).await?;
    tx.commit().await?;
    Ok(record)
}

/// Keeps a finished call's record in Postgres for the key's lifetime (logged when it cannot).
async fn keep_durably(store: &otc_store::Store, tenant: uuid::Uuid, name: &str, text: &str) {
    let until = chrono::Utc::now() + chrono::Duration::from_std(KEPT).expect("a day fits");
    let kept = async {
        let mut tx = store.begin(tenant).await?;
        tx.put_idempotency_record(name, text, until).await?;
        tx.commit().await
    };
    if let Err(e) = kept.await {
        tracing::warn!(error = %otc_errors::error_chain(&e), "could not keep a keyed call's record in Postgres; a Redis restart would forget it");
    }
}

fn indeterminate(key: &str) -> ToolError {
    ToolError::with_message(
        ErrorCode::IndeterminateOutcome,
        "an earlier call with this idempotency key failed after it may have taken effect; it will not run again",
    )
    .echo("idempotency_key", key)
}

async fn renew(
    kv: Arc<Kv>,
    name: String,
    current: Arc<tokio::sync::Mutex<String>>,
    running: impl Fn(u64) -> String + Send + 'static,
) {
    loop {
        tokio::time::sleep(RENEW_EVERY).await;
        let mut held = current.lock().await;
        let next = running(now_ms() + LEASE.as_millis() as u64);
        match kv.swap_record(&name, &held, &next).await {
            Ok(true) => *held = next,
            Ok(false) => return,
            Err(e) => tracing::warn!(error = ?e, "could not renew an idempotency lease"),
        }
    }
}

impl Guard {
    /// Records how the call ended: a result is kept for replay, an unknown outcome after a
    /// commit was sent marks the key indeterminate, a refusal (or any failure before the first
    /// commit) frees the key.
    pub async fn finish(mut self, outcome: &Result<Value, ToolError>) {
        self.finished = true;
        // The lock first: a renewal under way finishes and records what it wrote.
        let held = self.current.lock().await.clone();
        if let Some(renew) = self.renew.take() {
            renew.abort();
        }
        let fingerprint = self.fingerprint.clone();
        let result = match outcome {
            Ok(value) => Some(Record::Done { fingerprint, result: value.clone() }),
            Err(e) if leaves_outcome_unknown(e) && self.effects.committed_any() => {
                Some(Record::Indeterminate { fingerprint })
            }
            Err(_) => None,
        };
        let written = match result {
            Some(record) => {
                let text = record.text();
                keep_durably(&self.store, self.tenant, &self.name, &text).await;
                self.kv.swap_record(&self.name, &held, &text).await
            }
            None => self.kv.delete_record_if(&self.name, &held).await,
        };
        if let Err(e) = written {
            tracing::warn!(error = ?e, "could not record how a keyed call ended; its key answers as if it were still running until the lease lapses, then as indeterminate");
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let renew = self.renew.take();
        if self.finished {
            return;
        }
        // Dropped mid-call (the caller hung up): once a commit was sent, the effect may or may
        // not have landed; before, nothing did and the key is free again.
        let (kv, name, current) = (self.kv.clone(), self.name.clone(), self.current.clone());
        let (store, tenant) = (self.store.clone(), self.tenant);
        let lapsed = self
            .effects
            .committed_any()
            .then(|| Record::Indeterminate { fingerprint: self.fingerprint.clone() }.text());
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let held = current.lock().await.clone();
                if let Some(renew) = renew {
                    renew.abort();
                }
                match lapsed {
                    Some(lapsed) => {
                        keep_durably(&store, tenant, &name, &lapsed).await;
                        let _ = kv.swap_record(&name, &held, &lapsed).await;
                    }
                    None => {
                        let _ = kv.delete_record_if(&name, &held).await;
                    }
                }
            });
        } else if let Some(renew) = renew {
            renew.abort();
        }
    }
}
