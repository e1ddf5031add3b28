//! What session_rerun needs of a call, recorded with its work-memory episode: the arguments as
//! sent and a digest of the answer with what differs between two runs of the same call on the
//! same notes left out, so a replay in a sandbox vault compares equal when it behaves the same.
//! Left out: ids (`id` and every `*_id`, made anew), times (`*_at`, `at`, `ts`, `mtime`,
//! `modified`, `created`), change-log sequences (`seq`, `*_seq`), durations (`*_ms`), cursors and
//! the `vault` a call answers with (the sandbox has another name); a note URI's vault reads as
//! `<vault>` (`obsidian-tc://<vault>/path`). Nothing depends on how the call named its vault
//! (by name, by id, or left out for a tenant's only one).

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The largest arguments (and answer excerpt) kept, as JSON bytes: a larger call is recorded
/// without them and a rerun skips it.
pub const MAX_RECORDED_BYTES: usize = 16 * 1024;

/// What the records waiting for the audit writer may hold of arguments and answers, per
/// process: past it a call is recorded without them (a rerun says so) until the writer catches
/// up, so the queue's memory stays bounded however many calls wait.
pub const MAX_HELD_BYTES: usize = 32 * 1024 * 1024;

static HELD: AtomicUsize = AtomicUsize::new(0);

/// Takes `bytes` from the budget, or refuses when they do not fit.
fn hold(bytes: usize) -> bool {
    HELD.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
        (held + bytes <= MAX_HELD_BYTES).then_some(held + bytes)
    })
    .is_ok()
}

/// Gives back what a record held, once it is written or dropped.
pub fn release(record: &otc_store::AuditRecord) {
    if let Some(bytes) = record.episode.as_ref().and_then(|e| e.replay.as_ref()).map(|r| r.held_bytes) {
        HELD.fetch_sub(bytes, Ordering::AcqRel);
    }
}

/// Whether a key's value differs between two runs of the same call.
fn volatile(key: &str) -> bool {
    matches!(
        key,
        "id" | "at"
            | "ts"
            | "seq"
            | "mtime"
            | "modified"
            | "created"
            | "next_cursor"
            | "cursor"
            | "elicit_token"
            | "vault"
    ) || key.ends_with("_id")
        || key.ends_with("_at")
        || key.ends_with("_seq")
        || key.ends_with("_ms")
}

/// `value` with what differs between runs left out.
pub fn normalize(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !volatile(k))
                .map(|(k, v)| (k.clone(), normalize(v)))
                .collect::<Map<String, Value>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
        Value::String(s) => match s.strip_prefix(crate::citations::SCHEME).and_then(|rest| rest.split_once('/')) {
            Some((_, path)) => Value::String(format!("{}<vault>/{path}", crate::citations::SCHEME)),
            None => Value::String(s.clone()),
        },
        other => other.clone(),
    }
}

/// The hex SHA-256 of a normalized answer's JSON (serde_json writes object keys in order).
pub fn digest(normalized: &Value) -> String {
    hex::encode(Sha256::digest(serde_json::to_vec(normalized).unwrap_or_default()))
}

/// What is recorded of a call that answered `outcome`, for a replay: None when its arguments
/// are larger than [`MAX_RECORDED_BYTES`].
pub fn facts(args: &Map<String, Value>, outcome: Result<&Value, ()>) -> Option<otc_store::ReplayFacts> {
    // A confirmation token is spent by the call, and a key would replay the first answer.
    let mut args = args.clone();
    args.remove("elicit_token");
    args.remove(otc_catalog::IDEMPOTENCY_KEY);
    let args = Value::Object(args);
    // Postgres' jsonb holds no NUL character: such a call is recorded without its arguments.
    let json = serde_json::to_string(&args).unwrap_or_default();
    if json.len() > MAX_RECORDED_BYTES || json.contains("\\u0000") {
        return None;
    }
    let args_bytes = json.len();
    let (digest, excerpt, excerpt_bytes) = match outcome {
        Ok(answer) => {
            let normalized = normalize(answer);
            let json = serde_json::to_string(&normalized).unwrap_or_default();
            let (bytes, small) = (json.len(), json.len() <= MAX_RECORDED_BYTES && !json.contains("\\u0000"));
            (Some(digest(&normalized)), small.then_some(normalized), if small { bytes } else { 0 })
        }
        Err(()) => (None, None, 0),
    };
    // Twice the JSON size: what the values take in memory, roughly.
    let held_bytes = 2 * (args_bytes + excerpt_bytes) + 128;
    if !hold(held_bytes) {
        return None;
    }
    Some(otc_store::ReplayFacts { args, digest, excerpt, held_bytes })
}

/// Where two normalized answers first differ: a JSON pointer, with both values there.
pub fn first_difference(recorded: &Value, replayed: &Value) -> Option<(String, Value, Value)> {
    fn walk(a: &Value, b: &Value, at: &str) -> Option<(String, Value, Value)> {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                keys.into_iter().find_map(|k| {
                    let path = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                    match (x.get(k), y.get(k)) {
                        (Some(p), Some(q)) => walk(p, q, &path),
                        (p, q) => Some((path, p.cloned().unwrap_or(Value::Null), q.cloned().unwrap_or(Value::Null))),
                    }
                })
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                x.iter().zip(y).enumerate().find_map(|(i, (p, q))| walk(p, q, &format!("{at}/{i}")))
            }
            _ if a == b => None,
            _ => Some((if at.is_empty() { "/".into() } else { at.to_string() }, a.clone(), b.clone())),
        }
    }
    walk(recorded, replayed, "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_differs_between_runs_is_left_out() {
        let a = json!({"vault": "Notes", "id": "obsidian-tc://Notes/a.md", "snapshot_id": "x", "modified_at": "t",
                        "head_seq": 4, "hits": [{"path": "a.md", "uri": "obsidian-tc://Notes/a.md", "score": 1.0}]});
        let b = json!({"vault": "rerun-1", "id": "obsidian-tc://rerun-1/a.md", "snapshot_id": "y", "modified_at": "u",
                        "head_seq": 9, "hits": [{"path": "a.md", "uri": "obsidian-tc://rerun-1/a.md", "score": 1.0}]});
        assert_eq!(normalize(&a), normalize(&b));
        assert_eq!(digest(&normalize(&a)), digest(&normalize(&b)));
        let c =
            json!({"vault": "rerun-1", "hits": [{"path": "b.md", "uri": "obsidian-tc://rerun-1/b.md", "score": 1.0}]});
        let (at, was, now) = first_difference(&normalize(&a), &normalize(&c)).unwrap();
        assert_eq!((at.as_str(), was, now), ("/hits/0/path", json!("a.md"), json!("b.md")));
    }

    #[test]
    fn large_arguments_are_not_kept_and_the_budget_is_given_back() {
        let small = json!({"vault": "V", "path": "a.md"});
        let kept = facts(small.as_object().unwrap(), Err(())).unwrap();
        assert!(kept.held_bytes > 0);
        assert!(!hold(MAX_HELD_BYTES + 1), "more than the budget is refused");
        let big = json!({"vault": "V", "content": "x".repeat(MAX_RECORDED_BYTES)});
        assert!(facts(big.as_object().unwrap(), Ok(&json!({}))).is_none());
        let nul = json!({"vault": "V\u{0}", "path": "a.md"});
        assert!(facts(nul.as_object().unwrap(), Err(())).is_none(), "jsonb holds no NUL");
        let answer = json!({"text": "a\u{0}b"});
        let kept = facts(small.as_object().unwrap(), Ok(&answer)).unwrap();
        assert!(kept.digest.is_some() && kept.excerpt.is_none());
    }
}
