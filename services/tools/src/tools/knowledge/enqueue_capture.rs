//! enqueue_capture: material queued in the capture inbox for review, without writing the vault.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::{NewCapture, StoreError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::tools::knowledge::memory::CaptureOut;
use otc_kernel::{CallContext, Tool, internal};

pub struct EnqueueCapture;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// At most 1 MiB; secrets are redacted.
    #[schemars(length(min = 1, max = 1048576))]
    pub content: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    #[serde(default)]
    pub source: Option<String>,
    /// Suggested note path.
    #[serde(default)]
    pub target_path_hint: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    #[serde(flatten)]
    pub capture: CaptureOut,
}

impl Tool for EnqueueCapture {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:capture"],
        scope_class: otc_catalog::ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: the capture's id, hash and screening" },
        ..ToolSpec::base(
            "enqueue_capture",
            "Queue a capture for review",
            "Queues text in the capture inbox for review, writing no note; text that tries to instruct an AI is \
             quarantined. commit_capture turns a capture into a note.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        if input.content.trim().is_empty() {
            return Err(
                ToolError::with_message(ErrorCode::InvalidInput, "content may not be blank").detail("field", "content")
            );
        }
        let tags = input.tags.unwrap_or_default();
        let limits = [
            ("title", input.title.as_deref().unwrap_or(""), 500),
            ("source", input.source.as_deref().unwrap_or(""), 2000),
        ];
        for (field, text, max) in limits.into_iter().chain(tags.iter().map(|t| ("tags", t.as_str(), 200))) {
            if text.len() > max {
                return Err(ToolError::with_message(
                    ErrorCode::InvalidInput,
                    format!("{field} is longer than {max} bytes"),
                )
                .detail("field", field));
            }
        }
        if tags.len() > 50 {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "at most 50 tags").detail("field", "tags"));
        }
        // Every field is screened: each of them would reach the note (its text or properties).
        let mut signals: Vec<String> = Vec::new();
        let (mut poisoned, mut suspect) = (false, false);
        let mut redactions: Vec<String> = Vec::new();
        let mut screen = |text: &str| {
            let found = otc_kernel::screening::screen(text);
            poisoned |= found.refused.is_some();
            suspect |= !found.suspects.is_empty();
            signals.extend(found.refused.map(str::to_string));
            signals.extend(found.suspects.iter().map(|s| s.to_string()));
            redactions.extend(found.redacted.iter().map(|r| r.to_string()));
            found.text
        };
        let content = screen(&input.content);
        let mut field = |text: Option<&str>| text.map(str::trim).filter(|t| !t.is_empty()).map(&mut screen);
        let title = field(input.title.as_deref());
        let source = field(input.source.as_deref());
        let hint = field(input.target_path_hint.as_deref());
        let tags: Vec<String> = tags.iter().filter_map(|t| field(Some(t.trim().trim_start_matches('#')))).collect();
        signals.sort();
        signals.dedup();
        redactions.sort();
        redactions.dedup();
        let assessment = if poisoned {
            "poisoned"
        } else if suspect {
            "suspect"
        } else {
            "none"
        };
        let new = NewCapture {
            content_hash: hex::encode(sha2::Sha256::digest(content.as_bytes())),
            content,
            title,
            tags,
            source,
            target_path_hint: hint,
            poison_assessment: assessment.to_string(),
            poison_signals: signals,
            redactions,
        };
        let store_err = |e: StoreError| internal(ctx.tool, &e);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let capture =
            tx.enqueue_capture(view.vault.id, &new, Some(ctx.caller.principal_id)).await.map_err(store_err)?;
        tx.commit().await.map_err(store_err)?;
        Ok(Output { vault: view.vault.name.clone(), capture: CaptureOut::of(&capture, false) })
    }
}
