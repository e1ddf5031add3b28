//! get_entity: one entity with the observations that held at a time (now by default) and its
//! relations.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::memory::{self, EntityOut, ObservationOut, RelationOut};
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::{CallContext, Tool, internal};

pub struct GetEntity;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Or give type and name.
    #[serde(default)]
    pub entity_id: Option<String>,
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub include_retired: Option<bool>,
    /// YYYY-MM-DD or RFC 3339 (default now).
    #[serde(default)]
    pub as_of: Option<String>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    #[serde(flatten)]
    pub entity: EntityOut,
    pub observations: Vec<ObservationOut>,
    /// From or to this entity (to entities the caller may see).
    pub relations: Vec<RelationOut>,
    /// Detailed only: the time the facts are for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
}

impl Tool for GetEntity {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:memory"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "get_entity",
            "Read a memory entity",
            "Reads a memory entity with its relations and current facts (or those at as_of); include_retired \
             adds superseded and retired ones.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let as_of = memory::time_arg(input.as_of.as_deref(), "as_of")?.unwrap_or_else(chrono::Utc::now);
        let store_err = |e: StoreError| internal(ctx.tool, &e);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let entity = match (&input.entity_id, &input.kind, &input.name) {
            (Some(id), _, _) => memory::find(&mut tx, &view, memory::entity_id(id, "entity_id")?).await?,
            (None, Some(kind), Some(title)) => tx
                .entity_named(view.vault.id, kind, title)
                .await
                .map_err(store_err)?
                .filter(|e| memory::visible(&view, e))
                .ok_or_else(|| memory::not_found(&format!("{kind}/{title}")))?,
            _ => {
                return Err(ToolError::with_message(ErrorCode::InvalidInput, "pass entity_id, or type and name")
                    .detail("field", "entity_id"));
            }
        };
        let all = input.include_retired.unwrap_or(false);
        let observations = tx.observations(view.vault.id, &[entity.id], as_of, all).await.map_err(store_err)?;
        let relations = tx.relations_of(view.vault.id, &[entity.id]).await.map_err(store_err)?;
        let mut others: Vec<uuid::Uuid> =
            relations.iter().map(|r| if r.source_id == entity.id { r.target_id } else { r.source_id }).collect();
        others.sort_unstable();
        others.dedup();
        let seen: Vec<uuid::Uuid> = tx
            .entities(view.vault.id, &others)
            .await
            .map_err(store_err)?
            .into_iter()
            .filter(|e| memory::visible(&view, e))
            .map(|e| e.id)
            .collect();
        tx.commit().await.map_err(store_err)?;
        Ok(Output {
            vault: view.vault.name.clone(),
            entity: EntityOut::of(&entity, detailed),
            observations: observations.iter().map(|o| ObservationOut::of(o, detailed)).collect(),
            // A relation shows when the entity at its other end may be seen.
            relations: relations
                .iter()
                .filter(|r| {
                    r.source_id == r.target_id
                        || seen.contains(if r.source_id == entity.id { &r.target_id } else { &r.source_id })
                })
                .map(RelationOut::of)
                .collect(),
            as_of: detailed.then(|| as_of.to_rfc3339()),
        })
    }
}
