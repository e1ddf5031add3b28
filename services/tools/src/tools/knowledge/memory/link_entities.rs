//! link_entities: a typed relation from one entity to another.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::{Relation, StoreError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::memory::{self, RelationOut};
use otc_kernel::reading::View;
use otc_kernel::{CallContext, Tool, internal};

pub struct LinkEntities;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub source_id: String,
    pub target_id: String,
    /// e.g. works_on.
    #[schemars(length(min = 1, max = 100))]
    pub relation_type: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    #[serde(flatten)]
    pub relation: RelationOut,
    /// False when the relation was already there.
    pub created: bool,
    pub rematerialized: usize,
}

/// The relation an input names, both ends visible to the caller.
pub async fn relation(ctx: &CallContext<'_>, view: &View, input: &Input) -> Result<Relation, ToolError> {
    let tool = ctx.tool;
    let kind = input.relation_type.trim();
    if kind.is_empty() {
        return Err(ToolError::with_message(ErrorCode::InvalidInput, "relation_type may not be blank")
            .detail("field", "relation_type"));
    }
    let (source, target) =
        (memory::entity_id(&input.source_id, "source_id")?, memory::entity_id(&input.target_id, "target_id")?);
    let store_err = |e: StoreError| internal(tool, &e);
    let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
    let ends = [memory::find(&mut tx, view, source).await?, memory::find(&mut tx, view, target).await?];
    tx.commit().await.map_err(store_err)?;
    // Both ends' mirrors are rewritten: refused before the change when one may not be.
    memory::check_mirrors(view, &ends)?;
    Ok(Relation { source_id: source, target_id: target, relation_type: kind.to_string() })
}

impl Tool for LinkEntities {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:memory"],
        scope_class: otc_catalog::ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: the edge's identity" },
        ..ToolSpec::base(
            "link_entities",
            "Relate two memory entities",
            "Relates two memory entities: source —relation_type→ target. Linking again changes nothing.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let relation = relation(ctx, &view, &input).await?;
        let store_err = |e: StoreError| internal(ctx.tool, &e);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let created =
            tx.link_entities(view.vault.id, &relation, Some(ctx.caller.principal_id)).await.map_err(store_err)?;
        tx.commit().await.map_err(store_err)?;
        let rematerialized =
            if created { memory::remirror(ctx, &view, &[relation.source_id, relation.target_id]).await? } else { 0 };
        Ok(Output { vault: view.vault.name.clone(), relation: RelationOut::of(&relation), created, rematerialized })
    }
}
