//! update_observation: a changed fact (a new observation superseding the old, which keeps its
//! history), or a fact retired.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::{NewObservation, StoreError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::memory::{self, ObservationOut};
use otc_kernel::{CallContext, Tool, internal};

pub struct UpdateObservation;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub entity_id: String,
    pub observation_id: String,
    /// New text.
    #[serde(default)]
    pub observation: Option<String>,
    /// End the fact now.
    #[serde(default)]
    pub retire: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub entity_id: String,
    /// The observation as closed.
    pub previous: ObservationOut,
    /// The observation that replaces it (absent when retired).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<ObservationOut>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redactions: Vec<String>,
    pub rematerialized: usize,
}

impl Tool for UpdateObservation {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:memory"],
        scope_class: otc_catalog::ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: the closed and the new observation" },
        ..ToolSpec::base(
            "update_observation",
            "Change or retire a fact",
            "Changes or retires a memory fact that still holds; pass observation or retire, not both. The old \
             fact is kept, closed now.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let entity_id = memory::entity_id(&input.entity_id, "entity_id")?;
        let observation_id = memory::entity_id(&input.observation_id, "observation_id")?;
        let retire = input.retire.unwrap_or(false);
        let text = input.observation.as_deref().map(str::trim).filter(|t| !t.is_empty());
        let rule = |message: &str, field: &str| {
            ToolError::with_message(ErrorCode::InvalidInput, message.to_string()).detail("field", field.to_string())
        };
        match (text, retire) {
            (None, false) => return Err(rule("pass observation (the new text) or retire: true", "observation")),
            (Some(_), true) => return Err(rule("pass observation or retire, not both", "retire")),
            _ => {}
        }
        let store_err = |e: StoreError| internal(ctx.tool, &e);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let entity = memory::find(&mut tx, &view, entity_id).await?;
        memory::check_mirrors(&view, std::slice::from_ref(&entity))?;
        // One change to the entity's facts at a time.
        tx.lock_entity(view.vault.id, entity.id).await.map_err(store_err)?;
        let old =
            tx.observation(view.vault.id, entity.id, observation_id).await.map_err(store_err)?.ok_or_else(|| {
                ToolError::with_message(ErrorCode::NotFound, "the entity has no such observation")
                    .detail("observation_id", observation_id.to_string())
            })?;
        if old.retired || old.valid_to.is_some_and(|to| to <= chrono::Utc::now()) {
            return Err(no_longer_holds(&old));
        }
        let now = chrono::Utc::now().max(old.valid_from);
        let mut redactions = Vec::new();
        let current = match text {
            Some(text) => {
                let screened = memory::screen_fact(text)?;
                redactions = screened.redacted.iter().map(|r| r.to_string()).collect();
                // Carries the old one's key, so the fact stays one fact over time.
                let new = NewObservation { key: old.key.clone(), text: screened.text, valid_from: now, valid_to: None };
                let (created, _) = tx
                    .add_observation(view.vault.id, entity.id, &new, Some(ctx.caller.principal_id))
                    .await
                    .map_err(store_err)?;
                // A keyed fact was closed by its successor already.
                let closed =
                    tx.close_observation(view.vault.id, old.id, now, Some(created.id)).await.map_err(store_err)?;
                if !closed && old.key.is_none() {
                    return Err(no_longer_holds(&old));
                }
                Some(created)
            }
            None => {
                if !tx.close_observation(view.vault.id, old.id, now, None).await.map_err(store_err)? {
                    return Err(no_longer_holds(&old));
                }
                None
            }
        };
        let previous = tx.observation(view.vault.id, entity.id, old.id).await.map_err(store_err)?.unwrap_or(old);
        tx.commit().await.map_err(store_err)?;
        let rematerialized = memory::remirror(ctx, &view, &[entity.id]).await?;
        Ok(Output {
            vault: view.vault.name.clone(),
            entity_id: entity.id.to_string(),
            previous: ObservationOut::of(&previous, true),
            current: current.as_ref().map(|c| ObservationOut::of(c, true)),
            redactions,
            rematerialized,
        })
    }
}

fn no_longer_holds(old: &otc_store::Observation) -> ToolError {
    ToolError::with_message(
        ErrorCode::Conflict,
        "this observation no longer holds (superseded or retired); change the one that replaced it",
    )
    .detail("superseded_by", old.superseded_by.map(|s| s.to_string()).unwrap_or_default())
}
