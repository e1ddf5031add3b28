//! create_entity: a new entity of the vault's memory, with its first observations, optionally
//! mirrored as a note.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::{NewObservation, StoreError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::memory::{self, EntityOut};
use otc_kernel::{CallContext, Tool, internal};

pub struct CreateEntity;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    #[serde(rename = "type")]
    #[schemars(length(min = 1, max = 100))]
    pub kind: String,
    #[schemars(length(min = 1, max = 200))]
    pub name: String,
    /// First facts; secrets in them are redacted.
    #[serde(default)]
    pub observations: Option<Vec<String>>,
    /// Also mirror it as a note, <entity folder>/<type>/<name>.md, kept in step.
    #[serde(default)]
    pub materialize: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    #[serde(flatten)]
    pub entity: EntityOut,
    pub observations: usize,
    /// Kinds of secret replaced in the observations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redactions: Vec<String>,
}

impl Tool for CreateEntity {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:memory"],
        scope_class: otc_catalog::ScopeClass::Write,
        essentials: true,
        response_format: Format::Fixed { why: "a write acknowledgement: the entity's id, status and counts" },
        ..ToolSpec::base(
            "create_entity",
            "Create a memory entity",
            "Creates a memory entity (person, project, thing) with its first facts; refused if a live one has \
             the same type and name.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let (kind, title) = (input.kind.trim(), input.name.trim());
        if kind.is_empty() || title.is_empty() {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "type and name may not be blank")
                .detail("field", if kind.is_empty() { "type" } else { "name" }));
        }
        let mirror = if input.materialize.unwrap_or(false) {
            let path = memory::mirror_path(ctx, kind, title);
            memory::check_mirror(ctx, &view, (kind, title), &path, None).await?;
            Some(path)
        } else {
            None
        };
        let mut redactions: Vec<String> = Vec::new();
        let now = chrono::Utc::now();
        let texts = input.observations.unwrap_or_default();
        if texts.len() > 100 || texts.iter().any(|t| t.len() > 10_000) {
            return Err(ToolError::with_message(
                ErrorCode::InvalidInput,
                "at most 100 observations of 10,000 bytes each",
            )
            .detail("field", "observations"));
        }
        let mut observations = Vec::new();
        for text in texts.iter().map(|t| t.trim()).filter(|t| !t.is_empty()) {
            let screened = memory::screen_fact(text)?;
            redactions.extend(screened.redacted.iter().map(|r| r.to_string()));
            observations.push(NewObservation { key: None, text: screened.text, valid_from: now, valid_to: None });
        }
        redactions.sort();
        redactions.dedup();
        let store_err = |e: StoreError| internal(ctx.tool, &e);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let entity = match tx
            .create_entity(view.vault.id, kind, title, mirror.as_deref(), Some(ctx.caller.principal_id))
            .await
        {
            Ok(entity) => entity,
            Err(StoreError::Conflict { .. }) => return Err(memory::name_taken(kind, title)),
            Err(e) => return Err(store_err(e)),
        };
        for observation in &observations {
            tx.add_observation(view.vault.id, entity.id, observation, Some(ctx.caller.principal_id))
                .await
                .map_err(store_err)?;
        }
        tx.commit().await.map_err(store_err)?;
        // An entity whose mirror could not be written is not kept.
        if let Err(err) = memory::remirror(ctx, &view, &[entity.id]).await {
            let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
            tx.delete_entity(view.vault.id, entity.id).await.map_err(store_err)?;
            tx.commit().await.map_err(store_err)?;
            return Err(err);
        }
        Ok(Output {
            vault: view.vault.name.clone(),
            entity: EntityOut::of(&entity, true),
            observations: observations.len(),
            redactions,
        })
    }
}
