use chrono::{DateTime, Utc};
use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::ChangeRecord;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{decode_cursor, encode_cursor, page_limit};
use otc_kernel::{CallContext, Tool};

pub struct GetProvenance;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Current path, or a deleted note's last.
    pub path: String,
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
    /// RFC 3339, inclusive.
    #[serde(default)]
    pub since: Option<String>,
    /// RFC 3339, exclusive.
    #[serde(default)]
    pub until: Option<String>,
    /// Check the vault's hash chain.
    #[serde(default)]
    pub include_verification: Option<bool>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    /// Newest first.
    pub records: Vec<Record>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification: Option<Verification>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Record {
    /// The change's number in the vault's log.
    pub seq: i64,
    /// create, update, delete, or move (the note arrived here from `from`).
    pub op: String,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// RFC 3339.
    pub at: String,
    /// The tool (or v1_commit, reconcile) that made the change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The tool a /v1 commit's body claimed (unchecked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_tool: Option<String>,
    /// The client that called it, as it named itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// authored or agent_synthesis, when the writer said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// The principal (person or service) whose credential made it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal_id: Option<String>,
    /// The content after the change (none for a delete).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prev_content_hash: Option<String>,
    /// The record's own link in the vault's hash chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_hash: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Verification {
    /// Whether every record of the vault's log chains to the one before it.
    pub intact: bool,
    /// The first record that does not, when one does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_broken_seq: Option<i64>,
}

/// Where a page stopped: the path being followed and the sequence to continue below.
#[derive(Debug, Serialize, Deserialize)]
struct Position {
    path: String,
    before: i64,
}

fn time_arg(text: Option<&str>, field: &str) -> Result<Option<DateTime<Utc>>, ToolError> {
    text.map(|t| {
        DateTime::parse_from_rfc3339(t.trim()).map(|d| d.with_timezone(&Utc)).map_err(|_| {
            ToolError::with_message(
                ErrorCode::InvalidInput,
                format!("{field} is an RFC 3339 time, e.g. 2026-11-30T12:00:00Z"),
            )
            .detail("field", field.to_string())
        })
    })
    .transpose()
}

impl Tool for GetProvenance {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes", "read:provenance"],
        core: false,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "get_provenance",
            "Get a note's history",
            "Lists a note's changes across moves, newest first: who, when, which tool and client, content hashes.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        view.readable_path(&input.path)?;
        let limit = page_limit(input.limit)?;
        let since = time_arg(input.since.as_deref(), "since")?;
        let until = time_arg(input.until.as_deref(), "until")?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let mut at = match &input.cursor {
            Some(cursor) => decode_cursor::<Position>(ctx.tool, cursor)?,
            None => Position { path: input.path.clone(), before: i64::MAX },
        };
        let mut tx = ctx.begin().await?;
        let mut records = Vec::new();
        let mut next = None;
        'walk: loop {
            let page = tx.path_history(view.vault.id, &at.path, Some(at.before), (limit + 1) as i64).await?;
            if page.is_empty() {
                break;
            }
            for record in page {
                at.before = record.seq;
                if until.is_some_and(|u| record.committed_at >= u) {
                    continue;
                }
                if since.is_some_and(|s| record.committed_at < s) {
                    break 'walk;
                }
                if records.len() == limit {
                    next = Some(encode_cursor(ctx.tool, &Position { path: at.path.clone(), before: record.seq + 1 }));
                    break 'walk;
                }
                // A create in a commit that also removed a path holding the same content is the
                // arrival end of a move: report it as one, and go on with the earlier name.
                let from =
                    if record.op == "create" { moved_from(&mut tx, view.vault.id, &record).await? } else { None };
                let from = from.filter(|p| view.can_read(p));
                records.push(to_record(&record, from.clone(), detailed));
                if let Some(from) = from {
                    at = Position { path: from, before: record.seq };
                    continue 'walk;
                }
            }
        }
        let verification = if input.include_verification == Some(true) {
            let broken = tx.verify_chain(view.vault.id).await?;
            Some(Verification { intact: broken.is_none(), first_broken_seq: broken })
        } else {
            None
        };
        tx.commit().await?;
        Ok(Output { vault: view.vault.name.clone(), path: input.path, records, next_cursor: next, verification })
    }
}

/// The path a created note was moved from, when its commit deleted one with the same content.
async fn moved_from(
    tx: &mut otc_store::TenantTx,
    vault: uuid::Uuid,
    record: &ChangeRecord,
) -> otc_store::Result<Option<String>> {
    let siblings = tx.commit_records(vault, record.commit_id).await?;
    Ok(siblings
        .into_iter()
        .find(|r| {
            r.op == "delete" && r.old_hash.is_some() && r.old_hash == record.new_hash && !r.path.starts_with(".trash/")
        })
        .map(|r| r.path))
}

fn to_record(r: &ChangeRecord, from: Option<String>, detailed: bool) -> Record {
    Record {
        seq: r.seq,
        op: if from.is_some() { "move".into() } else { r.op.clone() },
        path: r.path.clone(),
        from,
        at: r.committed_at.to_rfc3339(),
        tool: r.tool.clone(),
        client_tool: r.client_tool.clone(),
        client: r.client_name.clone(),
        model: r.client_model.clone(),
        origin: r.origin.clone(),
        principal_id: detailed.then(|| r.principal_id.map(|p| p.to_string())).flatten(),
        content_hash: r.new_hash.map(hex::encode),
        prev_content_hash: detailed.then(|| r.old_hash.map(hex::encode)).flatten(),
        record_hash: detailed.then(|| hex::encode(r.record_hash)),
    }
}
