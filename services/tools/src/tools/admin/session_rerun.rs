//! session_rerun: replays the calls a work session made against a sandbox copy of its vault, as
//! the vault stood when the session began, and reports, call by call, where the answers diverge
//! from what was recorded. The sandbox is a vault of the tenant made for the run, holding only
//! the files the caller may read (sharing their stored content with the original, so nothing is
//! copied but rows), closed by tenant rules to everyone but the caller, and erased before the
//! answer (or right after, when the call is cut short); the original vault is never written.
//!
//! What is compared is each answer with what differs between two runs left out (ids, times,
//! sequences, the vault: `otc_kernel::replay`). Calls run as the rerun's caller, with its scopes. Replayed: the tools whose effects stay in
//! their vault (notes, metadata, links, search, structured files, attachments, workspace and
//! automation); skipped, with the reason: the others (memory, sessions, goals, admin), calls
//! that need a confirmation, calls on another vault, and calls recorded without their arguments
//! (over 16 KiB, or while the recorder's budget was spent). The run stops at `timeout_ms`; calls
//! not reached are `not_run`.

use std::time::Duration;

use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, Sometimes, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::{Action, Change, Expect, NewAclRule, Provenance, RecordedCall, Subject};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use otc_kernel::{CallContext, Tool, caller_vault, replay};

pub struct SessionRerun;

/// Files a sandbox copies at most: a larger vault answers compute_budget_exceeded.
const MAX_FILES: usize = 5_000;
/// Files one sandbox commit carries.
const BATCH: usize = 500;
/// The most of a differing value a verdict shows (JSON bytes); past it, its start and its size.
const MAX_SHOWN_BYTES: usize = 1024;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub session_id: String,
    /// Default 60000.
    #[serde(default)]
    #[schemars(range(min = 1000, max = 300000))]
    pub timeout_ms: Option<u64>,
    /// Oldest first; default 100.
    #[serde(default)]
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub session_id: String,
    /// The sandbox the calls ran in (erased since) and the files it held: the vault as it stood
    /// at change `at_seq`, when the session began.
    pub sandbox: Sandbox,
    pub summary: Summary,
    /// One per call, oldest first.
    pub records: Vec<Verdict>,
    /// More calls were recorded than `limit`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Sandbox {
    pub vault: String,
    pub files: u64,
    pub at_seq: i64,
}

#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct Summary {
    pub calls: u32,
    pub same: u32,
    pub diverged: u32,
    pub skipped: u32,
    pub not_run: u32,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Verdict {
    /// 1 for the session's first call.
    pub seq: u32,
    pub tool: String,
    pub at: String,
    /// same, diverged, skipped or not_run.
    pub verdict: &'static str,
    /// ok, or the error code the call answered then.
    pub recorded: String,
    /// ok, or the error code the replay answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayed: Option<String>,
    /// Why a call was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Where a diverged answer first differs (when the recorded answer was small enough to keep).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difference: Option<Difference>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Difference {
    /// A JSON pointer into the answer.
    pub at: String,
    #[schemars(schema_with = "otc_kernel::writing::any_json")]
    pub recorded: Value,
    #[schemars(schema_with = "otc_kernel::writing::any_json")]
    pub replayed: Value,
}

fn verdict(seq: u32, call: &RecordedCall, verdict: &'static str) -> Verdict {
    Verdict {
        seq,
        tool: call.tool.clone(),
        at: call.at.to_rfc3339(),
        verdict,
        recorded: call.outcome.clone(),
        replayed: None,
        reason: None,
        difference: None,
    }
}

/// `value`, or when its JSON is longer than [`MAX_SHOWN_BYTES`] the start of it and its size.
fn shown(value: Value) -> Value {
    let json = value.to_string();
    if json.len() <= MAX_SHOWN_BYTES {
        return value;
    }
    let start = &json[..json.floor_char_boundary(MAX_SHOWN_BYTES)];
    Value::String(format!("{start}… ({} bytes in all)", json.len()))
}

/// The sandbox, erased when dropped unless it was erased already: a call cut short (cancelled,
/// past its budget) leaves nothing behind.
struct SandboxVault {
    store: otc_store::Store,
    kv: std::sync::Arc<otc_kv::Kv>,
    tenant: uuid::Uuid,
    vault: otc_store::Vault,
    erased: bool,
}

impl SandboxVault {
    async fn erase(mut self) {
        erase(&self.store, &self.kv, self.tenant, &self.vault).await;
        self.erased = true;
    }
}

impl Drop for SandboxVault {
    fn drop(&mut self) {
        if !self.erased {
            let (store, kv, tenant, vault) = (self.store.clone(), self.kv.clone(), self.tenant, self.vault.clone());
            tokio::spawn(async move { erase(&store, &kv, tenant, &vault).await });
        }
    }
}

async fn erase(
    store: &otc_store::Store,
    kv: &std::sync::Arc<otc_kv::Kv>,
    tenant: uuid::Uuid,
    sandbox: &otc_store::Vault,
) {
    if let Err(e) = otc_kernel::lifecycle::discard_vault(store, kv, tenant, sandbox.id).await {
        tracing::warn!(error = %e, sandbox = %sandbox.name, "erasing a rerun's sandbox; the erase pass finishes it");
    }
}

/// Why `tool` is not replayed, if it is not: it acts outside its vault, or needs a person's
/// confirmation.
fn not_replayed(ctx: &CallContext<'_>, tool: &str) -> Option<&'static str> {
    let Some(registered) = ctx.dispatcher.registry().get(tool) else { return Some("the tool is no longer registered") };
    let spec = &registered.spec;
    let in_vault = matches!(
        spec.domain,
        Domain::Notes
            | Domain::Metadata
            | Domain::Links
            | Domain::Search
            | Domain::Structured
            | Domain::Attachments
            | Domain::Workspace
            | Domain::Automation
    );
    if !in_vault || spec.scope_class == ScopeClass::Admin {
        return Some("its effects reach beyond the vault (memory, sessions, administration)");
    }
    if spec.hitl == Sometimes::Always || spec.declared_tags.contains(&"plugin-bridge") {
        return Some("it needs a person's confirmation or a running Obsidian");
    }
    None
}

/// `args` aimed at the sandbox: its `vault`, and note URIs of the original vault.
fn retarget(args: &Value, from: &str, to: &str) -> Value {
    let (old, new) = (otc_kernel::citations::note_uri(from, ""), otc_kernel::citations::note_uri(to, ""));
    fn walk(v: &Value, old: &str, new: &str) -> Value {
        match v {
            Value::String(s) if s.starts_with(old) => Value::String(format!("{new}{}", &s[old.len()..])),
            Value::Array(items) => Value::Array(items.iter().map(|i| walk(i, old, new)).collect()),
            Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), walk(v, old, new))).collect()),
            other => other.clone(),
        }
    }
    let mut out = walk(args, &old, &new);
    if let Some(map) = out.as_object_mut() {
        map.insert("vault".into(), Value::String(to.to_string()));
    }
    out
}

/// Closes the sandbox to everyone but the caller: tenant rules (everyone: nothing; the caller:
/// everything), then every gateway checks tokens again, before a file goes in.
async fn close_to_others(ctx: &CallContext<'_>, sandbox: &otc_store::Vault) -> Result<(), ToolError> {
    let none = Some(Vec::new());
    let mut tx = ctx.begin().await?;
    let everyone = NewAclRule {
        vault_id: sandbox.id,
        subject: Subject::Everyone,
        read_paths: none.clone(),
        write_paths: none.clone(),
        delete_paths: none,
        read_only: true,
    };
    tx.set_acl_rule(&everyone).await?;
    let caller = NewAclRule {
        vault_id: sandbox.id,
        subject: Subject::Principal(ctx.caller.principal_id),
        read_paths: None,
        write_paths: None,
        delete_paths: None,
        read_only: false,
    };
    tx.set_acl_rule(&caller).await?;
    tx.commit().await?;
    let kv = &ctx.services().kv;
    kv.bump_generation(otc_kv::Generation::Tokens(ctx.caller.tenant_id))
        .await
        .map_err(|e| otc_kernel::redis_unavailable("telling the gateways of the sandbox's rules", &e))
}

/// Fills the sandbox with `files` (content shared with the original) and waits for its index.
async fn fill(
    ctx: &CallContext<'_>,
    sandbox: &otc_store::Vault,
    files: &[otc_store::PastFile],
) -> Result<(), ToolError> {
    let services = ctx.services();
    let who = Provenance { tool: Some(ctx.tool.to_string()), ..Provenance::default() };
    let now = chrono::Utc::now();
    for batch in files.chunks(BATCH) {
        let mut tx = ctx.begin().await?;
        let mut changes = Vec::with_capacity(batch.len());
        for file in batch {
            tx.record_blob(&file.hash, file.size).await?;
            let action = Action::Put { hash: file.hash, size: file.size, mtime: now };
            changes.push(Change { path: file.path.clone(), expect: Expect::Absent, action });
        }
        let (indexer, kv) = (&services.indexer, &services.kv);
        otc_indexer::commit::commit_with_jobs(indexer, kv, tx, sandbox.id, &changes, &who, None, Vec::new())
            .await
            .map_err(|e| otc_kernel::internal(ctx.tool, &e))?
            .map_err(|_| ToolError::with_message(ErrorCode::Conflict, "the sandbox changed while it was filled"))?;
    }
    services
        .indexer
        .catch_up(ctx.caller.tenant_id, sandbox.id)
        .await
        .map_err(|e| otc_kernel::internal(ctx.tool, &e))?;
    Ok(())
}

/// Replays `calls` in the sandbox until `deadline`.
async fn replay_all(
    ctx: &CallContext<'_>,
    vault: &otc_store::Vault,
    sandbox: &otc_store::Vault,
    calls: &[RecordedCall],
    deadline: tokio::time::Instant,
) -> Vec<Verdict> {
    let mut out = Vec::with_capacity(calls.len());
    let ours = |named: &Option<String>| named.as_deref().is_none_or(|n| n == vault.name || n == vault.id.to_string());
    for (i, call) in calls.iter().enumerate() {
        let seq = i as u32 + 1;
        let skip = |why: &str| Verdict { reason: Some(why.to_string()), ..verdict(seq, call, "skipped") };
        if tokio::time::Instant::now() >= deadline {
            out.push(Verdict { reason: Some("timeout_ms ran out first".into()), ..verdict(seq, call, "not_run") });
            continue;
        }
        let Some(args) = &call.args else {
            out.push(skip("its arguments were not recorded (over 16 KiB, or the recorder's budget was spent)"));
            continue;
        };
        if !ours(&call.vault) {
            out.push(skip("it was made on another vault"));
            continue;
        }
        if let Some(why) = not_replayed(ctx, &call.tool) {
            out.push(skip(why));
            continue;
        }
        let args = retarget(args, &vault.name, &sandbox.name);
        let Value::Object(args) = args else { continue };
        let answer = tokio::time::timeout_at(deadline, ctx.call_part(&call.tool, args)).await;
        let answer = match answer {
            Err(_) => {
                out.push(Verdict {
                    reason: Some("timeout_ms ran out during it".into()),
                    ..verdict(seq, call, "not_run")
                });
                continue;
            }
            Ok(answer) => answer,
        };
        let replayed = match &answer {
            Ok(_) => "ok".to_string(),
            Err(e) => e.code.as_str().to_string(),
        };
        if replayed == "elicit_required" {
            out.push(skip("it needs a person's confirmation"));
            continue;
        }
        let mut v = Verdict { replayed: Some(replayed.clone()), ..verdict(seq, call, "same") };
        if replayed != call.outcome {
            v.verdict = "diverged";
        } else if let Ok(answer) = &answer {
            let normalized = replay::normalize(answer);
            if call.digest.as_deref() != Some(replay::digest(&normalized).as_str()) {
                v.verdict = "diverged";
                v.difference = call.excerpt.as_ref().and_then(|recorded| {
                    replay::first_difference(recorded, &normalized).map(|(at, recorded, replayed)| Difference {
                        at,
                        recorded: shown(recorded),
                        replayed: shown(replayed),
                    })
                });
            }
        }
        out.push(v);
    }
    out
}

impl Tool for SessionRerun {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Bulk),
        scopes: &["admin:rerun"],
        scope_class: ScopeClass::Admin,
        core: false,
        response_format: Format::Fixed { why: "the per-call verdicts and divergences are the report" },
        ..ToolSpec::base(
            "session_rerun",
            "Replay a work session",
            "Replays a work session's calls on a sandbox copy of its vault as of the session's start, reporting \
             divergent answers.",
            Domain::Admin,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let timeout = otc_kernel::reading::bounded(
            input.timeout_ms.map(|t| t.min(u32::MAX as u64) as u32),
            60_000,
            1_000..=300_000,
            "timeout_ms",
        )?;
        let limit = otc_kernel::reading::bounded(input.limit, 100, 1..=200, "limit")?;
        let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout as u64);
        let vault = caller_vault(ctx, &input.vault).await?;
        let session_id = uuid::Uuid::parse_str(&input.session_id).map_err(|_| {
            ToolError::with_message(ErrorCode::InvalidInput, "session_id is not a session id")
                .detail("field", "session_id")
        })?;
        let services = ctx.services();
        // The sandbox is a vault of the tenant: a hold on the tenant stops the run.
        services.read_only.check_write(&services.store, ctx.caller.tenant_id, None).await?;
        // The session's last calls may still wait in this gateway's trail queue.
        services.audit.flush(Duration::from_secs(2)).await;
        let view = ctx.view(&vault.name).await?;
        let mut tx = ctx.begin().await?;
        let session = tx.session(vault.id, session_id).await?.ok_or_else(|| {
            ToolError::with_message(ErrorCode::NotFound, "no such work session in this vault")
                .echo("session_id", &input.session_id)
        })?;
        let mut calls = tx.session_calls(session.id, limit as i64 + 1).await?;
        let at_seq = tx.seq_at(vault.id, session.started_at).await?;
        let files = tx.files_at_seq(vault.id, at_seq, "", MAX_FILES as i64 + 1).await?;
        tx.commit().await?;
        let truncated = calls.len() > limit;
        calls.truncate(limit);
        if files.len() > MAX_FILES {
            return Err(ToolError::with_message(
                ErrorCode::ComputeBudgetExceeded,
                format!("the vault held more than the {MAX_FILES} files a sandbox copies when the session began"),
            )
            .detail("limit", MAX_FILES));
        }
        // Only what the caller may read goes into the sandbox.
        let files: Vec<otc_store::PastFile> = files.into_iter().filter(|f| view.can_read(&f.path)).collect();
        let name = format!(
            "rerun-{}-{}",
            &session.id.simple().to_string()[..8],
            &uuid::Uuid::new_v4().simple().to_string()[..6]
        );
        let tenant = ctx.caller.tenant_id;
        let made = otc_kernel::lifecycle::create_vault(&services.store, tenant, &name).await.map_err(|e| match e {
            otc_store::StoreError::Quota(q) => otc_kernel::quota_exceeded(&q),
            other => other.into(),
        })?;
        let sandbox =
            SandboxVault { store: services.store.clone(), kv: services.kv.clone(), tenant, vault: made, erased: false };
        close_to_others(ctx, &sandbox.vault).await?;
        let ran = match tokio::time::timeout_at(deadline, fill(ctx, &sandbox.vault, &files)).await {
            Ok(Ok(())) => Ok(replay_all(ctx, &vault, &sandbox.vault, &calls, deadline).await),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(ToolError::with_message(
                ErrorCode::OperationTimeout,
                "timeout_ms ran out while the sandbox was filled; give a longer timeout_ms",
            )
            .detail("timeout_ms", timeout)),
        };
        let (sandbox_name, copied) = (sandbox.vault.name.clone(), files.len() as u64);
        sandbox.erase().await;
        let records = ran?;
        let mut summary = Summary { calls: records.len() as u32, ..Summary::default() };
        for r in &records {
            match r.verdict {
                "same" => summary.same += 1,
                "diverged" => summary.diverged += 1,
                "skipped" => summary.skipped += 1,
                _ => summary.not_run += 1,
            }
        }
        Ok(Output {
            vault: vault.name,
            session_id: session.id.to_string(),
            sandbox: Sandbox { vault: sandbox_name, files: copied, at_seq },
            summary,
            records,
            truncated,
        })
    }
}
