//! list_capture_queue: the captures waiting for review (or those committed), newest first.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use otc_store::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::memory::CaptureOut;
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{decode_cursor, encode_cursor};
use otc_kernel::{CallContext, Tool, internal};

pub struct ListCaptureQueue;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Committed captures instead of waiting ones.
    #[serde(default)]
    pub committed: Option<bool>,
    #[serde(default)]
    pub source: Option<String>,
    /// Default 50.
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub captures: Vec<CaptureOut>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl Tool for ListCaptureQueue {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:capture"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "list_capture_queue",
            "List the capture inbox",
            "Lists the capture inbox (or committed captures), newest first, with poison_assessment and \
             redactions.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let limit = otc_kernel::reading::bounded(input.limit, 50, 1..=100, "limit")?;
        let before: Option<(chrono::DateTime<chrono::Utc>, uuid::Uuid)> =
            input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?;
        let store_err = |e: StoreError| internal(ctx.tool, &e);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let mut rows = tx
            .captures(
                view.vault.id,
                input.committed.unwrap_or(false),
                input.source.as_deref(),
                before,
                limit as i64 + 1,
            )
            .await
            .map_err(store_err)?;
        tx.commit().await.map_err(store_err)?;
        let more = rows.len() > limit;
        rows.truncate(limit);
        let next_cursor = more.then(|| rows.last().map(|r| encode_cursor(ctx.tool, &(r.created_at, r.id)))).flatten();
        // A committed capture is listed only to a caller who may read the note it became.
        rows.retain(|row| row.committed_path.as_deref().is_none_or(|p| view.can_read(p)));
        Ok(Output {
            vault: view.vault.name.clone(),
            captures: rows.iter().map(|c| CaptureOut::of(c, detailed)).collect(),
            next_cursor,
        })
    }
}
