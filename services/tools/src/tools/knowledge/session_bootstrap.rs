//! session_bootstrap: what a new session should load: the open goals, how your last sessions
//! ended, the vault's recent changes, waiting captures, and the notes a message points at,
//! within a byte budget.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use otc_store::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::list_goals::GoalOut;
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::{CallContext, Tool, internal};

pub struct SessionBootstrap;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Default: 16 KiB of notes; full: 64 KiB.
    #[default]
    Brief,
    Full,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub mode: Option<Mode>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub goals: Vec<GoalOut>,
    /// Your last sessions in this vault, newest first.
    pub sessions: Vec<SessionOut>,
    /// The vault's latest writes (with read:git).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recent_changes: Vec<ChangeOut>,
    /// Captures waiting for review (with read:capture).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_captures: Option<usize>,
    /// The notes the message points at, whole, as many as the budget holds.
    pub notes: Vec<NoteOut>,
    /// Notes that matched but did not fit the budget.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_loaded: Vec<String>,
    pub budget_bytes: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionOut {
    pub session_id: String,
    pub caller: String,
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// What it left for the next session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_metadata: Option<Map<String, Value>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ChangeOut {
    pub at: String,
    pub path: String,
    pub op: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct NoteOut {
    pub path: String,
    /// The note's whole text.
    pub content: String,
    /// Detailed only: its properties, parsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontmatter: Option<Map<String, Value>>,
}

impl Tool for SessionBootstrap {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "session_bootstrap",
            "Load a new session's context",
            "Loads a new session's context: open goals, your last sessions, recent changes, waiting captures, \
             notes matching message.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let (budget, sessions, changes) = match input.mode.unwrap_or_default() {
            Mode::Brief => (16 * 1024, 3, 10),
            Mode::Full => (64 * 1024, 10, 30),
        };
        let store_err = |e: StoreError| internal(ctx.tool, &e);
        let may = |scope: &str| ctx.caller.scopes.iter().any(|held| held.grants(scope));
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let goals = tx.goals(view.vault.id, Some("open"), 50).await.map_err(store_err)?;
        let past = tx.recent_sessions(view.vault.id, ctx.caller.principal_id, sessions).await.map_err(store_err)?;
        let pending = if may("read:capture") {
            Some(tx.captures(view.vault.id, false, None, None, 1000).await.map_err(store_err)?.len())
        } else {
            None
        };
        tx.commit().await.map_err(store_err)?;
        // The rest through the catalogue's tools, so the ACL and scopes apply as to any call.
        let mut recent_changes = Vec::new();
        if ctx.dispatcher.reachable(ctx.caller, "git_log") {
            let log = ctx.call_part_json("git_log", json!({"vault": input.vault, "limit": changes})).await?;
            for commit in log["commits"].as_array().into_iter().flatten() {
                for change in commit["changes"].as_array().into_iter().flatten() {
                    recent_changes.push(ChangeOut {
                        at: commit["at"].as_str().unwrap_or_default().to_string(),
                        path: change["path"].as_str().unwrap_or_default().to_string(),
                        op: change["op"].as_str().unwrap_or_default().to_string(),
                        tool: commit["tool"].as_str().map(str::to_string),
                    });
                }
            }
            recent_changes.truncate(changes as usize);
        }
        let mut notes = Vec::new();
        let mut not_loaded = Vec::new();
        let mut used = 0;
        if let Some(message) = input.message.as_deref().map(str::trim).filter(|m| !m.is_empty()) {
            let found = ctx
                .call_part_json("search_vault", json!({"vault": input.vault, "query": message, "limit": 10}))
                .await?;
            for hit in found["hits"].as_array().into_iter().flatten() {
                let Some(path) = hit["path"].as_str() else { continue };
                let read = ctx
                    .call_part_json("read_note", json!({"vault": input.vault, "path": path, "format": "content"}))
                    .await?;
                let content = read["content"].as_str().unwrap_or_default().to_string();
                if used + content.len() > budget {
                    not_loaded.push(path.to_string());
                    continue;
                }
                used += content.len();
                let frontmatter = detailed.then(|| otc_kernel::reading::frontmatter_map(&content)).flatten();
                notes.push(NoteOut { path: path.to_string(), content, frontmatter });
            }
        }
        Ok(Output {
            vault: view.vault.name.clone(),
            goals: goals.iter().map(GoalOut::of).collect(),
            sessions: past
                .into_iter()
                .map(|s| SessionOut {
                    session_id: s.id.to_string(),
                    caller: s.caller,
                    started_at: s.started_at.to_rfc3339(),
                    ended_at: s.ended_at.map(|t| t.to_rfc3339()),
                    end_metadata: match s.end_metadata {
                        Some(Value::Object(map)) if !map.is_empty() => Some(map),
                        _ => None,
                    },
                })
                .collect(),
            recent_changes,
            pending_captures: pending,
            notes,
            not_loaded,
            budget_bytes: budget,
        })
    }
}
