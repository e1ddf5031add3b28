//! record_retrieval_feedback: which retrieved chunks were actually useful.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::work;
use otc_kernel::{CallContext, Tool};

pub struct RecordRetrievalFeedback;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Feedback {
    Useful,
    NotUseful,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// `path#n` from a search, or a note path (all its chunks).
    #[serde(default)]
    pub chunk_id: Option<String>,
    #[serde(default)]
    pub feedback: Option<Feedback>,
    #[serde(default)]
    pub session_id: Option<String>,
    /// Latest retrievals to mark (default 1).
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub last_n: Option<u32>,
    /// Instead of chunk_id and feedback.
    #[serde(default)]
    #[schemars(length(min = 1, max = 50))]
    pub verdicts: Option<Vec<Verdict>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Verdict {
    pub chunk_id: String,
    pub feedback: Feedback,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The single form: the chunk, and how many retrievals were marked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_id: Option<String>,
    pub updated: i64,
    /// Why nothing was marked, when nothing was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The batch form: one result per verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<Marked>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Marked {
    pub chunk_id: String,
    pub updated: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

const NOT_RETRIEVED: &str = "not_retrieved: no call of the session retrieved this chunk";

impl Tool for RecordRetrievalFeedback {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:workspace"],
        scope_class: otc_catalog::ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: how many retrievals were marked" },
        essentials: true,
        ..ToolSpec::base(
            "record_retrieval_feedback",
            "Mark retrieved chunks useful",
            "Marks chunks a search returned in your session as useful or not_useful.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let batch = input.verdicts.is_some();
        let single = match (input.chunk_id, input.feedback, &input.verdicts) {
            (Some(chunk), Some(feedback), None) => Some(Verdict { chunk_id: chunk, feedback }),
            (None, None, Some(list)) if (1..=50).contains(&list.len()) => None,
            (None, None, Some(_)) => {
                return Err(ToolError::with_message(ErrorCode::InvalidInput, "verdicts holds 1 to 50 items")
                    .detail("field", "verdicts"));
            }
            (_, _, Some(_)) => {
                return Err(ToolError::with_message(
                    ErrorCode::InvalidInput,
                    "give chunk_id and feedback, or verdicts, not both",
                )
                .detail("field", "verdicts"));
            }
            (chunk, _, None) => {
                let field = if chunk.is_none() { "chunk_id" } else { "feedback" };
                return Err(ToolError::with_message(ErrorCode::InvalidInput, format!("{field} is required"))
                    .detail("field", field));
            }
        };
        let verdicts = match single {
            Some(v) => vec![v],
            None => input.verdicts.unwrap_or_default(),
        };
        let parsed = verdicts
            .iter()
            .map(|v| work::parse_chunk_id(&v.chunk_id, "chunk_id").map(|c| (v, c)))
            .collect::<Result<Vec<_>, _>>()?;
        let last_n = otc_kernel::reading::bounded(input.last_n, 1, 1..=50, "last_n")? as i64;
        let session = match &input.session_id {
            Some(id) => Some(work::own_session(ctx, id).await?),
            None => work::open_session(ctx, ctx.tool).await?,
        };
        let Some(session) = session else {
            let reason = Some("no_open_session: start_session first, or name a session_id".to_string());
            return Ok(Output {
                session_id: None,
                chunk_id: (!batch).then(|| verdicts[0].chunk_id.clone()),
                updated: 0,
                reason: reason.clone(),
                results: if batch {
                    verdicts
                        .iter()
                        .map(|v| Marked { chunk_id: v.chunk_id.clone(), updated: 0, reason: reason.clone() })
                        .collect()
                } else {
                    Vec::new()
                },
            });
        };
        work::settle(ctx).await;
        let store_err = work::store_err(ctx.tool);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(&store_err)?;
        let mut results = Vec::with_capacity(parsed.len());
        for (verdict, (path, ord)) in parsed {
            let value = match verdict.feedback {
                Feedback::Useful => 1,
                Feedback::NotUseful => -1,
            };
            let updated = tx
                .retrieval_feedback(ctx.caller.principal_id, session, &path, ord, value, last_n)
                .await
                .map_err(&store_err)?;
            results.push(Marked {
                chunk_id: verdict.chunk_id.clone(),
                updated,
                reason: (updated == 0).then(|| NOT_RETRIEVED.to_string()),
            });
        }
        tx.commit().await.map_err(&store_err)?;
        let updated = results.iter().map(|m| m.updated).sum();
        Ok(if batch {
            Output { session_id: Some(session.to_string()), chunk_id: None, updated, reason: None, results }
        } else {
            let only = results.remove(0);
            Output {
                session_id: Some(session.to_string()),
                chunk_id: Some(only.chunk_id),
                updated: only.updated,
                reason: only.reason,
                results: Vec::new(),
            }
        })
    }
}
