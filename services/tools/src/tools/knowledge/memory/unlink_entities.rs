//! unlink_entities: removes a relation between two entities.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use otc_store::StoreError;
use schemars::JsonSchema;
use serde::Serialize;

/// The same arguments as link_entities: the relation named by its ends and type.
pub use super::link_entities::Input;
use super::link_entities::relation;
use crate::tools::knowledge::memory::{self, RelationOut};
use otc_kernel::{CallContext, Tool, internal};

pub struct UnlinkEntities;

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    #[serde(flatten)]
    pub relation: RelationOut,
    /// False when there was no such relation.
    pub removed: bool,
    pub rematerialized: usize,
}

impl Tool for UnlinkEntities {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:memory"],
        scope_class: otc_catalog::ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: the edge's identity" },
        ..ToolSpec::base(
            "unlink_entities",
            "Remove a relation between entities",
            "Removes the relation source —relation_type→ target (removed: false if none).",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let relation = relation(ctx, &view, &input).await?;
        let store_err = |e: StoreError| internal(ctx.tool, &e);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let removed = tx.unlink_entities(view.vault.id, &relation).await.map_err(store_err)?;
        tx.commit().await.map_err(store_err)?;
        let rematerialized =
            if removed { memory::remirror(ctx, &view, &[relation.source_id, relation.target_id]).await? } else { 0 };
        Ok(Output { vault: view.vault.name.clone(), relation: RelationOut::of(&relation), removed, rematerialized })
    }
}
