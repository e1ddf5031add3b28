//! work_result: your verdict on the task you just finished, stamped on its episodes.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::work;
use otc_kernel::{CallContext, Tool};

pub struct WorkResult;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    #[schemars(range(min = -1, max = 1))]
    pub result: i64,
    /// YYYY-MM-DD or RFC 3339 (default now).
    #[serde(default)]
    pub as_of: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub result: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Episodes the verdict judged (every unjudged call of the open session up to as_of).
    pub updated: i64,
    /// Of those, how many a -1 held back from work_search.
    pub demoted: i64,
    /// Retrievals those calls made.
    pub retrievals_stamped: i64,
    pub as_of: String,
    /// Why nothing was judged, when nothing was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Tool for WorkResult {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:workspace"],
        scope_class: otc_catalog::ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: how many episodes were stamped or demoted" },
        ..ToolSpec::base(
            "work_result",
            "Judge the task just finished",
            "Records your verdict on the task just finished (-1 badly, 0 neutral, 1 worked) on your open \
             session's unjudged calls.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        if !(-1..=1).contains(&input.result) {
            return Err(
                ToolError::with_message(ErrorCode::InvalidInput, "result is -1, 0 or 1").detail("field", "result")
            );
        }
        let now = chrono::Utc::now();
        // A verdict cannot reach calls not made yet.
        let as_of =
            crate::tools::knowledge::memory::time_arg(input.as_of.as_deref(), "as_of")?.map_or(now, |t| t.min(now));
        work::settle(ctx).await;
        let answer = |session_id: Option<String>, s: otc_store::Stamped, reason: Option<&str>| Output {
            result: input.result,
            session_id,
            updated: s.stamped,
            demoted: s.demoted,
            retrievals_stamped: s.retrievals,
            as_of: as_of.to_rfc3339(),
            reason: reason.map(str::to_string),
        };
        let Some(session) = work::open_session(ctx, ctx.tool).await? else {
            let none = otc_store::Stamped { stamped: 0, demoted: 0, retrievals: 0 };
            return Ok(answer(
                None,
                none,
                Some("no_open_session: start_session first; calls made outside a session are not kept"),
            ));
        };
        let store_err = work::store_err(ctx.tool);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(&store_err)?;
        let stamped = tx.stamp_episodes(session, input.result as i16, as_of).await.map_err(&store_err)?;
        tx.commit().await.map_err(&store_err)?;
        let reason =
            (stamped.stamped == 0).then_some("nothing_unjudged: every call of the session up to as_of has a verdict");
        Ok(answer(Some(session.to_string()), stamped, reason))
    }
}
