//! end_session: ends a work session, with what it leaves for the next.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::AuditFilter;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tools::knowledge::memory;
use otc_kernel::reading::View;
use otc_kernel::{CallContext, Tool};

pub struct EndSession;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub session_id: String,
    /// Outcome and open questions for the next session.
    #[serde(default)]
    pub end_metadata: Option<Map<String, Value>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub session_id: String,
    pub started_at: String,
    pub ended_at: String,
    pub duration_ms: i64,
    /// Calls the caller made in the vault during the session.
    pub events: usize,
}

/// The session `id` of this caller in the vault.
pub async fn own_session(ctx: &CallContext<'_>, view: &View, id: &str) -> Result<otc_store::WorkSession, ToolError> {
    let id = memory::entity_id(id, "session_id")?;
    let mut tx = ctx.begin().await?;
    let session = tx.session(view.vault.id, id).await?;
    tx.commit().await?;
    session.filter(|s| s.principal_id == ctx.caller.principal_id).ok_or_else(|| {
        ToolError::with_message(ErrorCode::NotFound, "no such session of yours in this vault")
            .detail("session_id", id.to_string())
    })
}

/// The caller's audit records in the vault over a window, newest first, at most `limit`.
pub async fn traces(
    ctx: &CallContext<'_>,
    view: &View,
    since: chrono::DateTime<chrono::Utc>,
    until: Option<chrono::DateTime<chrono::Utc>>,
    before: Option<uuid::Uuid>,
    limit: i64,
) -> Result<Vec<otc_store::AuditRecord>, ToolError> {
    // What this gateway has not written yet goes first.
    ctx.services().audit.flush(std::time::Duration::from_secs(2)).await;
    let mut tx = ctx.begin().await?;
    let filter = AuditFilter {
        since: Some(since),
        until,
        principal: Some(ctx.caller.principal_id.to_string()),
        before,
        limit,
        without_forgotten: true,
        ..AuditFilter::default()
    };
    let records = tx.audit(&filter).await?;
    tx.commit().await?;
    // A call names its vault by name or id, or not at all (filled in for a caller with one).
    let (name, id) = (view.vault.name.as_str(), view.vault.id.to_string());
    Ok(records.into_iter().filter(|r| r.vault.as_deref().is_none_or(|v| v == name || v == id)).collect())
}

impl Tool for EndSession {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:workspace"],
        scope_class: otc_catalog::ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: the session's span and event count" },
        ..ToolSpec::base(
            "end_session",
            "End a work session",
            "Ends one of your work sessions, keeping end_metadata for the next session_bootstrap; returns its \
             duration and call count.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let session = own_session(ctx, &view, &input.session_id).await?;
        let end = Value::Object(input.end_metadata.unwrap_or_default());
        if end.to_string().len() > 16 * 1024 {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "end_metadata is larger than 16 KiB")
                .detail("field", "end_metadata"));
        }
        // The calls made just before are written (their episodes found the session open) first.
        crate::tools::knowledge::work::settle(ctx).await;
        let mut tx = ctx.begin().await?;
        let ended = tx.end_session(view.vault.id, session.id, &end).await?;
        let after = tx.session(view.vault.id, session.id).await?.unwrap_or(session);
        tx.commit().await?;
        if !ended {
            return Err(ToolError::with_message(ErrorCode::Conflict, "the session has ended already")
                .detail("ended_at", after.ended_at.map(|t| t.to_rfc3339()).unwrap_or_default()));
        }
        let ended_at = after.ended_at.unwrap_or_else(chrono::Utc::now);
        let events = traces(ctx, &view, after.started_at, Some(ended_at), None, 10_000).await?.len();
        Ok(Output {
            vault: view.vault.name.clone(),
            session_id: after.id.to_string(),
            started_at: after.started_at.to_rfc3339(),
            ended_at: ended_at.to_rfc3339(),
            duration_ms: (ended_at - after.started_at).num_milliseconds(),
            events,
        })
    }
}
