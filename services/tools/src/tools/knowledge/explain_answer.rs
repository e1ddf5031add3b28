//! explain_answer: the retrievals, citations and episodes behind an answer of a session.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::work;
use otc_kernel::format::{ResponseFormat, Verbosity};
use otc_kernel::{CallContext, Tool};

pub struct ExplainAnswer;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Default: your open session, else latest.
    #[serde(default)]
    pub session_id: Option<String>,
    /// YYYY-MM-DD or RFC 3339.
    #[serde(default)]
    pub since: Option<String>,
    #[serde(default)]
    pub until: Option<String>,
    #[serde(default)]
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub session_id: Option<String>,
    /// Oldest first: each chunk a call of the session retrieved.
    pub links: Vec<Link>,
    /// Whether any retrieval of the session was judged (record_retrieval_feedback).
    pub citation_pass: bool,
    /// What the chain cannot tell, when something: unjudged retrievals are not unused ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caveat: Option<String>,
    /// Retrievals of notes you can no longer read, left out (a count).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hidden: usize,
    /// Detailed only: counts in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Link {
    pub chunk_id: String,
    pub path: String,
    /// The chunk is still in the index (the note may have changed since).
    pub resolves: bool,
    /// useful, not_useful or unjudged.
    pub citation: String,
    /// 1, -1, or none when unjudged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citation_score: Option<i16>,
    /// The verdict (-1, 0, +1) on the task the retrieving call belonged to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation: Option<i16>,
    pub episode_id: String,
    /// Detailed only: the retrieving call, its rank and score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieval: Option<RetrievalEcho>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RetrievalEcho {
    pub tool: String,
    pub at: String,
    pub rank: i32,
    pub score: Option<f64>,
}

impl Tool for ExplainAnswer {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "explain_answer",
            "Explain an answer's sources",
            "Links your session's retrieved chunks to their record_retrieval_feedback and work_result verdicts.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let detailed = work::detailed(ctx, input.response_format, input.verbosity);
        let limit = otc_kernel::reading::bounded(input.limit, 50, 1..=500, "limit")?;
        let since = crate::tools::knowledge::memory::time_arg(input.since.as_deref(), "since")?;
        let until = crate::tools::knowledge::memory::time_arg(input.until.as_deref(), "until")?;
        let view = ctx.view(&input.vault).await?;
        let session = match &input.session_id {
            Some(id) => Some(work::own_session(ctx, id).await?),
            None => match work::open_session(ctx, ctx.tool).await? {
                Some(open) => Some(open),
                None => {
                    let store_err = work::store_err(ctx.tool);
                    let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(&store_err)?;
                    let latest =
                        tx.recent_sessions(view.vault.id, ctx.caller.principal_id, 1).await.map_err(&store_err)?;
                    tx.commit().await.map_err(&store_err)?;
                    latest.first().map(|s| s.id)
                }
            },
        };
        let Some(session) = session else {
            return Ok(Output {
                vault: view.vault.name.clone(),
                session_id: None,
                links: Vec::new(),
                citation_pass: false,
                caveat: Some("you have no session in this vault: start_session, then search, to leave a chain".into()),
                hidden: 0,
                summary: None,
            });
        };
        work::settle(ctx).await;
        let store_err = work::store_err(ctx.tool);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(&store_err)?;
        let rows = tx
            .session_retrievals(ctx.caller.principal_id, session, since, until, (limit * 4) as i64)
            .await
            .map_err(&store_err)?;
        let (vault_name, vault_id) = (view.vault.name.as_str(), view.vault.id.to_string());
        let rows: Vec<_> = rows.into_iter().filter(|r| r.vault == vault_name || r.vault == vault_id).collect();
        let hidden = rows.iter().filter(|r| !view.can_read(&r.path)).count();
        let rows: Vec<_> = rows.into_iter().filter(|r| view.can_read(&r.path)).take(limit).collect();
        let keys: Vec<(String, i32)> = rows.iter().map(|r| (r.path.clone(), r.ord)).collect();
        let live = tx.chunk_spans(view.vault.id, &keys).await.map_err(&store_err)?;
        tx.commit().await.map_err(&store_err)?;
        let judged = rows.iter().filter(|r| r.feedback.is_some()).count();
        let useful = rows.iter().filter(|r| r.feedback == Some(1)).count();
        let links: Vec<Link> = rows
            .into_iter()
            .map(|r| Link {
                chunk_id: work::chunk_id(&r.path, r.ord),
                resolves: live.iter().any(|s| s.path == r.path && s.ord == r.ord),
                citation: match r.feedback {
                    Some(1) => "useful",
                    Some(_) => "not_useful",
                    None => "unjudged",
                }
                .into(),
                citation_score: r.feedback,
                correlation: r.task_result,
                episode_id: r.episode_id.to_string(),
                retrieval: detailed.then(|| RetrievalEcho {
                    tool: r.tool.clone(),
                    at: r.ts.to_rfc3339(),
                    rank: r.rank,
                    score: r.score,
                }),
                path: r.path,
            })
            .collect();
        let caveat = match (links.len(), judged) {
            (0, _) => Some("the session retrieved nothing in this vault (in the window)".to_string()),
            (n, j) if j < n => Some(format!(
                "{} of {n} retrievals are unjudged: an unjudged chunk is not an unused one (record_retrieval_feedback \
                 judges them)",
                n - j
            )),
            _ => None,
        };
        let summary =
            detailed.then(|| format!("{} retrievals, {judged} judged ({useful} useful), {hidden} hidden", links.len()));
        Ok(Output {
            vault: view.vault.name.clone(),
            session_id: Some(session.to_string()),
            links,
            citation_pass: judged > 0,
            caveat,
            hidden,
            summary,
        })
    }
}
