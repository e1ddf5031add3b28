//! add_observation: a fact about an entity, holding from valid_from; one with a key closes the
//! entity's current fact of that key, which stays answerable as of its time.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::{NewObservation, StoreError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::memory::{self, ObservationOut};
use otc_kernel::{CallContext, Tool, internal};

pub struct AddObservation;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub entity_id: String,
    /// Secrets are redacted.
    #[schemars(length(min = 1, max = 10000))]
    pub observation: String,
    #[serde(default)]
    pub key: Option<String>,
    /// YYYY-MM-DD or RFC 3339 (default now).
    #[serde(default)]
    pub valid_from: Option<String>,
    #[serde(default)]
    pub valid_to: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub entity_id: String,
    #[serde(flatten)]
    pub observation: ObservationOut,
    /// The observations this one closed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub superseded: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redactions: Vec<String>,
    /// Mirror notes rewritten.
    pub rematerialized: usize,
}

impl Tool for AddObservation {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:memory"],
        scope_class: otc_catalog::ScopeClass::Write,
        essentials: true,
        response_format: Format::Fixed { why: "a write acknowledgement: the observation's id and what it superseded" },
        ..ToolSpec::base(
            "add_observation",
            "Add a fact to a memory entity",
            "Adds a fact to a memory entity; with a key it supersedes that key's current fact (get_entity as_of \
             still reads it).",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let id = memory::entity_id(&input.entity_id, "entity_id")?;
        let text = input.observation.trim();
        if text.is_empty() {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "observation may not be blank")
                .detail("field", "observation"));
        }
        let valid_from = memory::time_arg(input.valid_from.as_deref(), "valid_from")?.unwrap_or_else(chrono::Utc::now);
        let valid_to = memory::time_arg(input.valid_to.as_deref(), "valid_to")?;
        if valid_to.is_some_and(|to| to < valid_from) {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "valid_to is before valid_from")
                .detail("field", "valid_to"));
        }
        let screened = memory::screen_fact(text)?;
        let key = input.key.as_deref().map(str::trim).filter(|k| !k.is_empty()).map(str::to_string);
        let store_err = |e: StoreError| internal(ctx.tool, &e);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let entity = memory::find(&mut tx, &view, id).await?;
        memory::check_mirrors(&view, std::slice::from_ref(&entity))?;
        let new = NewObservation { key, text: screened.text.clone(), valid_from, valid_to };
        let (observation, superseded) = tx
            .add_observation(view.vault.id, entity.id, &new, Some(ctx.caller.principal_id))
            .await
            .map_err(store_err)?;
        tx.commit().await.map_err(store_err)?;
        let rematerialized = memory::remirror(ctx, &view, &[entity.id]).await?;
        Ok(Output {
            vault: view.vault.name.clone(),
            entity_id: entity.id.to_string(),
            observation: ObservationOut::of(&observation, true),
            superseded: superseded.iter().map(|s| s.to_string()).collect(),
            redactions: screened.redacted.iter().map(|r| r.to_string()).collect(),
            rematerialized,
        })
    }
}
