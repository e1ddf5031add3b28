//! enqueue_capture: material queued in the capture inbox for review, without writing the vault.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::{NewCapture, StoreError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::memory::CaptureOut;
use crate::reading::View;
use crate::{CallContext, Tool, internal};

pub struct EnqueueCapture;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// The captured text (at most 1 MiB; secrets are redacted before it is stored).
    #[schemars(length(min = 1, max = 1048576))]
    pub content: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// Where it came from (a URL, a chat, a tool).
    #[serde(default)]
    pub source: Option<String>,
    /// Where it should land when committed.
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
            "Queues captured text in the vault's capture inbox without writing a note: secrets are redacted first, and \
             text that tries to instruct an AI reader is quarantined (poison_assessment poisoned) and can never be \
             committed. commit_capture turns a queued capture into a note; idempotency_key makes a retry safe.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let name = Self::SPEC.name;
        let view = View::open(ctx, name, &input.vault).await?;
        if input.content.trim().is_empty() {
            return Err(
                ToolError::with_message(ErrorCode::InvalidInput, "content may not be blank").detail("field", "content")
            );
        }
        let screened = crate::screening::screen(&input.content);
        let (assessment, mut signals): (&str, Vec<String>) = match screened.refused {
            Some(kind) => ("poisoned", vec![kind.to_string()]),
            None if !screened.suspects.is_empty() => ("suspect", Vec::new()),
            None => ("none", Vec::new()),
        };
        signals.extend(screened.suspects.iter().map(|s| s.to_string()));
        let clean =
            |text: Option<String>| text.map(|t| crate::screening::screen(t.trim()).text).filter(|t| !t.is_empty());
        let new = NewCapture {
            content_hash: hex::encode(sha2::Sha256::digest(screened.text.as_bytes())),
            content: screened.text,
            title: clean(input.title),
            tags: input
                .tags
                .unwrap_or_default()
                .iter()
                .map(|t| t.trim().trim_start_matches('#').to_string())
                .filter(|t| !t.is_empty())
                .collect(),
            source: clean(input.source),
            target_path_hint: input.target_path_hint.map(|p| p.trim().to_string()).filter(|p| !p.is_empty()),
            poison_assessment: assessment.to_string(),
            poison_signals: signals,
            redactions: screened.redacted.iter().map(|r| r.to_string()).collect(),
        };
        let store_err = |e: StoreError| internal(name, &e);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let capture =
            tx.enqueue_capture(view.vault.id, &new, Some(ctx.caller.principal_id)).await.map_err(store_err)?;
        tx.commit().await.map_err(store_err)?;
        Ok(Output { vault: view.vault.name.clone(), capture: CaptureOut::of(&capture, false) })
    }
}
