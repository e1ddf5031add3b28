//! Work memory: what the dispatcher keeps of each call a principal makes while one of its work
//! sessions is open (an episode: tool, outcome, a short summary of its targets, the chunks it
//! retrieved), and what the work_* tools share to read it back.
//!
//! The reader contract: an episode is quarantined (`pending`) until a task verdict judges it;
//! work_search returns only `eligible` episodes at or above a trust floor unless asked for the
//! pending ones; failed calls and -1 verdicts are `held`; a summary that reads as prompt
//! injection is `blocked` and shown to no reader unless asked, and then without its text.
//! Each caller reads its own episodes; `any_caller` needs `admin:workspace`.

pub mod episode_stats;
pub mod record_retrieval_feedback;
pub mod work_episode_chain;
pub mod work_episodes;
pub mod work_forget;
pub mod work_result;
pub mod work_search;

use otc_errors::{ErrorCode, ToolError};
use otc_store::{Episode, StoreError};
use schemars::JsonSchema;
use serde::Serialize;
use uuid::Uuid;

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::{CallContext, internal};

/// The scope that lets a reader see every caller's episodes.
pub const ANY_CALLER_SCOPE: &str = "admin:workspace";
/// The text a blocked episode shows instead of its summary.
const WITHHELD: &str = "[withheld: the summary reads as prompt injection]";
/// The text another caller's episode shows when it names notes the reader may not read.
const HIDDEN: &str = "[withheld: it names notes you cannot read]";

/// The chunk id work memory and the knowledge tools answer: `path#ordinal`.
pub fn chunk_id(path: &str, ord: i32) -> String {
    format!("{path}#{ord}")
}

/// A chunk id's path and ordinal; a bare path names every chunk of the note.
pub fn parse_chunk_id(id: &str, field: &str) -> Result<(String, Option<i32>), ToolError> {
    let id = id.trim();
    if id.is_empty() {
        return Err(
            ToolError::with_message(ErrorCode::InvalidInput, format!("{field} is empty")).detail("field", field)
        );
    }
    Ok(match id.rsplit_once('#') {
        Some((path, ord)) if !path.is_empty() && !ord.is_empty() && ord.bytes().all(|b| b.is_ascii_digit()) => {
            let ord = ord.parse().map_err(|_| {
                ToolError::with_message(ErrorCode::InvalidInput, format!("{field}'s chunk ordinal is too large"))
                    .detail("field", field)
            })?;
            (path.to_string(), Some(ord))
        }
        _ => (id.to_string(), None),
    })
}

/// Whose episodes the caller reads: its own, or (with `any_caller` and the scope) everyone's.
pub fn whose(ctx: &CallContext<'_>, any_caller: bool) -> Result<Option<Uuid>, ToolError> {
    if !any_caller {
        return Ok(Some(ctx.caller.principal_id));
    }
    if ctx.caller.scopes.iter().any(|s| s.grants(ANY_CALLER_SCOPE)) {
        return Ok(None);
    }
    Err(ToolError::with_message(ErrorCode::Forbidden, format!("any_caller needs scope {ANY_CALLER_SCOPE}"))
        .detail("required", vec![ANY_CALLER_SCOPE])
        .detail("field", "any_caller"))
}

/// Waits for this gateway's queued audit records (and so episodes) to be written: a reader sees
/// the calls made just before it.
pub async fn settle(ctx: &CallContext<'_>) {
    ctx.services().audit.flush(std::time::Duration::from_secs(2)).await;
}

/// A session id argument, which must be one of the caller's sessions.
pub async fn own_session(ctx: &CallContext<'_>, id: &str) -> Result<Uuid, ToolError> {
    let tool = ctx.tool;
    let id = crate::tools::knowledge::memory::entity_id(id, "session_id")?;
    let store_err = |e: StoreError| internal(tool, &e);
    let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
    let owns = tx.owns_session(ctx.caller.principal_id, id).await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    if owns {
        Ok(id)
    } else {
        Err(ToolError::with_message(ErrorCode::NotFound, "no such session of yours")
            .detail("session_id", id.to_string()))
    }
}

/// The caller's open work session, if any.
pub async fn open_session(ctx: &CallContext<'_>, tool: &str) -> Result<Option<Uuid>, ToolError> {
    let store_err = |e: StoreError| internal(tool, &e);
    let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
    let open = tx.open_session_of(ctx.caller.principal_id).await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    Ok(open)
}

/// Whether a call answers in detail.
pub fn detailed(ctx: &CallContext<'_>, format: Option<ResponseFormat>, verbosity: Option<Verbosity>) -> bool {
    format::resolve(format, verbosity, ctx.default_format()) == ResponseFormat::Detailed
}

/// One episode as the work tools answer it. Concise keeps id, time, session, tool, status, error
/// code, summary, trust, eligibility, a true blocked and the amendment link; detailed adds the
/// rest.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EpisodeOut {
    pub id: String,
    pub ts: String,
    pub session_id: String,
    pub tool: String,
    /// ok or error.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    pub summary: String,
    /// 0 to 1: 0.5 for an unjudged call, 0.9 after a +1 verdict, 0.6 after 0, 0.1 after -1, at
    /// most 0.2 for a failed call.
    pub trust: f64,
    /// pending (quarantined until a verdict), eligible, held or blocked.
    pub eligibility: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eligibility_reason: Option<String>,
    /// True when the summary read as prompt injection (its text is withheld).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blocked: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suspects: Vec<String>,
    /// The earlier failed call this one retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amends: Option<String>,
    /// -1, 0 or +1 once a verdict judged it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_result: Option<i16>,
    /// Detailed only from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vault: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// tool_call or verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub episode_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// How many chunks the call retrieved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_size: Option<i64>,
    /// work_search only: how well it matched (cosine similarity in semantic mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
}

impl EpisodeOut {
    pub fn of(e: Episode, detailed: bool) -> Self {
        Self {
            id: e.id.to_string(),
            ts: e.ts.to_rfc3339(),
            session_id: e.session_id.to_string(),
            summary: if e.blocked { WITHHELD.to_string() } else { e.summary },
            tool: e.tool,
            status: e.status,
            error_code: e.error_code,
            trust: (e.trust as f64 * 100.0).round() / 100.0,
            eligibility: e.eligibility,
            eligibility_reason: if detailed { e.eligibility_reason } else { None },
            blocked: e.blocked,
            suspects: e.suspects,
            amends: e.amends.map(|a| a.to_string()),
            task_result: e.task_result,
            verdict_at: e.verdict_at.filter(|_| detailed).map(|t| t.to_rfc3339()),
            vault: e.vault.filter(|_| detailed),
            caller: detailed.then(|| e.principal_id.to_string()),
            channel: detailed.then_some(e.channel),
            client: e.client.filter(|_| detailed),
            episode_type: detailed.then_some(e.episode_type),
            duration_ms: detailed.then_some(e.duration_us as f64 / 1000.0),
            result_size: detailed.then_some(e.retrievals),
            score: None,
        }
    }
}

/// `episodes` as the caller may see them: another caller's episode (any_caller) that names a
/// path the reader's folder ACL hides in its vault, or a vault the reader cannot reach, shows
/// neither its summary nor its vault.
pub async fn shape(ctx: &CallContext<'_>, episodes: Vec<Episode>, detailed: bool) -> Vec<EpisodeOut> {
    let mut views: std::collections::HashMap<String, Option<otc_kernel::reading::View>> = Default::default();
    let mut out = Vec::with_capacity(episodes.len());
    for e in episodes {
        let own = e.principal_id == ctx.caller.principal_id;
        let paths: Vec<String> = serde_json::from_value(e.paths.clone()).unwrap_or_default();
        let paths: Vec<&String> = paths.iter().filter(|p| !p.starts_with("episode:")).collect();
        let visible = own
            || match e.vault.as_deref() {
                None => paths.is_empty(),
                Some(vault) => {
                    if !views.contains_key(vault) {
                        let view = otc_kernel::reading::View::open(ctx, vault).await.ok();
                        views.insert(vault.to_string(), view);
                    }
                    views[vault].as_ref().is_some_and(|view| paths.iter().all(|p| view.can_read(p)))
                }
            };
        let mut shown = EpisodeOut::of(e, detailed);
        if !visible && !shown.blocked {
            shown.summary = HIDDEN.to_string();
            shown.vault = None;
        }
        out.push(shown);
    }
    out
}

/// Whether `shown` is another caller's episode withheld from this reader.
pub fn hidden(shown: &EpisodeOut) -> bool {
    shown.summary == HIDDEN
}

/// The store error of tool `tool`, as the caller sees it.
pub fn store_err(tool: &str) -> impl Fn(StoreError) -> ToolError + '_ {
    move |e| internal(tool, &e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_ids_are_path_and_ordinal() {
        assert_eq!(parse_chunk_id("a/b#c.md#3", "chunk_id").unwrap(), ("a/b#c.md".to_string(), Some(3)));
        assert_eq!(parse_chunk_id("a/b.md", "chunk_id").unwrap(), ("a/b.md".to_string(), None));
        assert_eq!(parse_chunk_id("a#x", "chunk_id").unwrap(), ("a#x".to_string(), None));
        assert!(parse_chunk_id(" ", "chunk_id").is_err());
        assert_eq!(chunk_id("n.md", 2), "n.md#2");
    }
}
