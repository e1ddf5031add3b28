//! The `requestState` of MCP 2026-07-28's multi round-trip requests. A call that needs a
//! person's confirmation answers an input-required result carrying a state; the client asks its
//! person and sends the same call again with the answer and the state, to whichever gateway the
//! balancer picks. Nothing is kept between the two requests but the state itself:
//!
//! - it is sealed (HMAC-SHA256, rmcp's `RequestStateCodec`) with a key derived from the tenant's
//!   key and the current key epoch, so any gateway can check it and another tenant's cannot;
//!   keys change every [`EPOCH_SECS`] and the previous epoch's key still opens a state, so a
//!   rotation never breaks a request in flight (a state lives at most an hour);
//! - it is bound to the tenant, the principal, the tool and the hash of the call's arguments
//!   (the seal's associated data), so it answers only the call that asked, and it names the
//!   confirmation gate that asked (the gate's tool and arguments as it saw them), so an answer
//!   is taken only by that gate;
//! - it expires (`mcp.request_state_ttl_secs`) and is spent in Redis when its gate takes the
//!   answer, so a replay, on any gateway, is refused;
//! - what comes back is bounded ([`MAX_STATE_BYTES`]) before any work is done on it.

use std::time::Duration;

use chrono::Utc;
use otc_kernel::{Caller, Services};
use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// How long one key seals new states.
pub const EPOCH_SECS: i64 = 24 * 3600;
/// The largest state a client may send back.
pub const MAX_STATE_BYTES: usize = 4096;
/// How long a spent state's record is kept: longer than any state lives
/// (`mcp.request_state_ttl_secs` is at most an hour), whatever a gateway's own setting.
const SPENT_FOR: Duration = Duration::from_secs(3600 + 300);

/// What a state says beyond its binding: the gate that asked, and the nonce spent on use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Opened {
    nonce: String,
    /// The tool whose confirmation gate asked (the call's own, or the one a facade routed to).
    pub gate_tool: String,
    /// The hash of the arguments that gate confirms.
    pub gate_hash: String,
}

/// Why a state was refused. The client hears one sentence; the log hears which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Longer than [`MAX_STATE_BYTES`].
    TooLarge,
    /// Past its lifetime.
    Expired,
    /// Not sealed by this tenant's key for this principal, tool and arguments: tampered,
    /// forged, another caller's or another call's.
    Invalid,
    /// Already used once.
    Replayed,
    /// Redis or the tenant's key could not be read.
    Unavailable,
}

impl Refusal {
    pub fn message(&self) -> &'static str {
        match self {
            Refusal::TooLarge => "requestState is larger than this server issues",
            Refusal::Expired => "requestState has expired; send the call again without it for a fresh request",
            Refusal::Invalid => {
                "requestState is not valid for this call (altered, or issued for another caller, tool or arguments)"
            }
            Refusal::Replayed => "requestState has already been used; send the call again without it",
            Refusal::Unavailable => "requestState could not be checked right now; retry shortly",
        }
    }
}

fn epoch_at(unix: i64) -> i64 {
    unix.div_euclid(EPOCH_SECS)
}

/// The keys of `epoch` and the one before it, derived from the tenant's key.
async fn keys(services: &Services, tenant: Uuid, epoch: i64) -> Result<[(i64, [u8; 32]); 2], Refusal> {
    let mut keys = [(epoch, [0; 32]), (epoch - 1, [0; 32])];
    for (e, key) in &mut keys {
        let label = format!("obsidian-tc mcp request state v1\0{e}");
        *key = otc_kernel::confirmation::derived_key(services, tenant, label.as_bytes())
            .await
            .map_err(|_| Refusal::Unavailable)?;
    }
    Ok(keys)
}

/// A codec that seals with the first key and opens with either.
fn codec(keys: &[(i64, [u8; 32]); 2]) -> RequestStateCodec {
    let ring = keys.iter().map(|(e, key)| (format!("e{e}"), key.to_vec()));
    RequestStateCodec::new_with_keyring(format!("e{}", keys[0].0), ring).expect("two distinct 32-byte keys")
}

fn seal(keys: &[(i64, [u8; 32]); 2], ad: &[u8], gate: (&str, &str), ttl: Duration) -> Result<String, Refusal> {
    let payload =
        Opened { nonce: Uuid::new_v4().simple().to_string(), gate_tool: gate.0.into(), gate_hash: gate.1.into() };
    codec(keys)
        .seal_json_with(&payload, &SealOptions::new().associated_data(ad).ttl(ttl))
        .map_err(|_| Refusal::Unavailable)
}

fn unseal(keys: &[(i64, [u8; 32]); 2], ad: &[u8], state: &str) -> Result<Opened, Refusal> {
    if state.len() > MAX_STATE_BYTES {
        return Err(Refusal::TooLarge);
    }
    codec(keys).open_json_with(state, ad).map_err(|e| match e {
        RequestStateError::Expired => Refusal::Expired,
        _ => Refusal::Invalid,
    })
}

/// The associated data a state is sealed under: who, which tool, which arguments.
fn binding(tenant: Uuid, principal: Uuid, tool: &str, args_hash: &str) -> Vec<u8> {
    format!("{tenant}\0{principal}\0{tool}\0{args_hash}").into_bytes()
}

/// A fresh state for `caller`'s call of `tool` with arguments hashing to `args_hash`, asked by
/// the confirmation gate `gate` (its tool and arguments' hash).
pub async fn issue(
    services: &Services,
    caller: &Caller,
    tool: &str,
    args_hash: &str,
    gate: (&str, &str),
    ttl: Duration,
) -> Result<String, Refusal> {
    let keys = keys(services, caller.tenant_id, epoch_at(Utc::now().timestamp())).await?;
    seal(&keys, &binding(caller.tenant_id, caller.principal_id, tool, args_hash), gate, ttl)
}

/// Checks `state` for `caller`'s call of `tool` with arguments hashing to `args_hash`: sealed by
/// this tenant's key for them, unexpired, not spent. Nothing is spent yet: [`spend`] does that
/// when the gate takes the answer (and settles a race between two uses at once).
pub async fn open(
    services: &Services,
    caller: &Caller,
    tool: &str,
    args_hash: &str,
    state: &str,
) -> Result<Opened, Refusal> {
    let keys = keys(services, caller.tenant_id, epoch_at(Utc::now().timestamp())).await?;
    let opened = unseal(&keys, &binding(caller.tenant_id, caller.principal_id, tool, args_hash), state)?;
    match services.kv.get_record(&spent_key(caller, &opened)).await {
        Ok(None) => Ok(opened),
        Ok(Some(_)) => Err(Refusal::Replayed),
        Err(e) => {
            tracing::warn!(error = ?e, "cannot check a request state's use");
            Err(Refusal::Unavailable)
        }
    }
}

fn spent_key(caller: &Caller, opened: &Opened) -> String {
    format!("mrtr:{}:{}", caller.tenant_id, opened.nonce)
}

/// Spends an opened state: the first use, on any gateway, succeeds; any later one is a replay.
pub async fn spend(services: &Services, caller: &Caller, opened: &Opened) -> Result<(), Refusal> {
    match services.kv.create_record(&spent_key(caller, opened), "spent", SPENT_FOR).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(Refusal::Replayed),
        Err(e) => {
            tracing::warn!(error = ?e, "cannot record a request state's use");
            Err(Refusal::Unavailable)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(epoch: i64) -> [(i64, [u8; 32]); 2] {
        // Stands in for the derivation: one distinct key per epoch.
        let key = |e: i64| {
            let mut k = [7u8; 32];
            k[..8].copy_from_slice(&e.to_le_bytes());
            k
        };
        [(epoch, key(epoch)), (epoch - 1, key(epoch - 1))]
    }

    fn ad(principal: u128, args: &str) -> Vec<u8> {
        binding(Uuid::from_u128(1), Uuid::from_u128(principal), "delete_note", args)
    }

    #[test]
    fn epochs_split_time_into_days() {
        assert_eq!(epoch_at(0), 0);
        assert_eq!(epoch_at(EPOCH_SECS - 1), 0);
        assert_eq!(epoch_at(EPOCH_SECS), 1);
        assert_eq!(epoch_at(-1), -1);
    }

    #[test]
    fn the_binding_names_tenant_principal_tool_and_arguments() {
        let (t, p) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let base = binding(t, p, "delete_note", "h");
        assert_ne!(base, binding(Uuid::from_u128(9), p, "delete_note", "h"), "tenant");
        assert_ne!(base, binding(t, Uuid::from_u128(9), "delete_note", "h"), "principal");
        assert_ne!(base, binding(t, p, "move_note", "h"), "tool");
        assert_ne!(base, binding(t, p, "delete_note", "h2"), "arguments");
    }

    #[test]
    fn a_state_opens_for_its_own_call_and_epoch_or_the_next() {
        let ttl = Duration::from_secs(60);
        let state = seal(&ring(10), &ad(2, "h1"), ("delete_note", "g1"), ttl).unwrap();
        let opened = unseal(&ring(10), &ad(2, "h1"), &state).unwrap();
        assert_eq!((opened.gate_tool.as_str(), opened.gate_hash.as_str()), ("delete_note", "g1"));
        // Sealed just before a rotation, opened just after it.
        assert_eq!(unseal(&ring(11), &ad(2, "h1"), &state), Ok(opened));
        // Two rotations later the key is gone.
        assert_eq!(unseal(&ring(12), &ad(2, "h1"), &state).err(), Some(Refusal::Invalid));
        // Another principal or arguments.
        assert_eq!(unseal(&ring(10), &ad(3, "h1"), &state).err(), Some(Refusal::Invalid));
        assert_eq!(unseal(&ring(10), &ad(2, "h2"), &state).err(), Some(Refusal::Invalid));
        // Tampered, in any byte or by extension.
        let mut bytes = state.clone().into_bytes();
        let last = bytes.len() - 1;
        bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(bytes).unwrap();
        assert_eq!(unseal(&ring(10), &ad(2, "h1"), &flipped).err(), Some(Refusal::Invalid));
        let longer = format!("{state}-TAMPERED");
        assert_eq!(unseal(&ring(10), &ad(2, "h1"), &longer).err(), Some(Refusal::Invalid));
        assert_eq!(unseal(&ring(10), &ad(2, "h1"), &"x".repeat(MAX_STATE_BYTES + 1)).err(), Some(Refusal::TooLarge));
    }

    #[test]
    fn a_state_expires() {
        let state = seal(&ring(3), b"a", ("t", "g"), Duration::from_secs(1)).unwrap();
        std::thread::sleep(Duration::from_millis(2100));
        assert_eq!(unseal(&ring(3), b"a", &state).err(), Some(Refusal::Expired));
    }
}
