//! delete_entity: an entity out of memory (kept as deleted, or removed for good).

use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::memory;
use otc_kernel::{CallContext, Tool, internal};

pub struct DeleteEntity;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub entity_id: String,
    /// Also remove its relations (required if any).
    #[serde(default)]
    pub cascade: Option<bool>,
    /// Remove it and its observations for good (default: soft delete).
    #[serde(default)]
    pub permanent: Option<bool>,
    /// The confirmation token.
    #[serde(default)]
    pub elicit_token: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub entity_id: String,
    /// deleted (kept) or removed (for good).
    pub status: String,
    pub relations_removed: u64,
    pub observations_removed: u64,
    /// Where its mirror note went, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note_trashed: Option<String>,
    /// Neighbours whose mirror notes were rewritten.
    pub rematerialized: usize,
}

impl Tool for DeleteEntity {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["delete:memory"],
        scope_class: otc_catalog::ScopeClass::Delete,
        destructive: Sometimes::Always,
        hitl: Sometimes::Always,
        response_format: Format::Fixed { why: "a write acknowledgement: counts of what went" },
        ..ToolSpec::base(
            "delete_entity",
            "Delete a memory entity",
            "Deletes a memory entity; its mirror note goes to the trash. Needs a person's confirmation.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let id = memory::entity_id(&input.entity_id, "entity_id")?;
        let permanent = input.permanent.unwrap_or(false);
        let store_err = |e: StoreError| internal(ctx.tool, &e);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let entity = memory::find(&mut tx, &view, id).await?;
        let relations = tx.relations_of(view.vault.id, &[id]).await.map_err(store_err)?;
        // Only the neighbours the caller may see are named, counted and rewritten.
        let visible = memory::visible_neighbours(&mut tx, &view, id).await?;
        if !relations.is_empty() && !input.cascade.unwrap_or(false) {
            return Err(ToolError::with_message(
                ErrorCode::Conflict,
                "the entity has relations; pass cascade: true to remove them with it",
            )
            .detail("visible_neighbours", visible.len()));
        }
        memory::check_mirrors(&view, &visible)?;
        if let Some(path) = &entity.note_path {
            otc_kernel::writing::check_delete(&view, path, "entity_id")?;
        }
        tx.commit().await.map_err(store_err)?;
        otc_kernel::writing::confirm(ctx, true, "it deletes the entity").await?;
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let neighbours: Vec<uuid::Uuid> = visible.iter().map(|e| e.id).collect();
        let (observations_removed, relations_removed) = if permanent {
            tx.delete_entity(view.vault.id, id).await.map_err(store_err)?
        } else {
            let removed = tx.remove_relations_of(view.vault.id, id).await.map_err(store_err)?;
            // Deleted meanwhile by another call: that one answered for it.
            if !tx
                .update_entity(view.vault.id, id, &entity.name, "deleted", entity.note_path.as_deref())
                .await
                .map_err(store_err)?
            {
                return Err(memory::not_found(&id.to_string()));
            }
            (0, removed)
        };
        tx.commit().await.map_err(store_err)?;
        if let Some(path) = &entity.note_path {
            memory::unmirror(ctx, &view, path).await?;
        }
        let rematerialized = memory::remirror(ctx, &view, &neighbours).await?;
        Ok(Output {
            vault: view.vault.name.clone(),
            entity_id: id.to_string(),
            status: if permanent { "removed" } else { "deleted" }.into(),
            relations_removed,
            observations_removed,
            note_trashed: entity.note_path,
            rematerialized,
        })
    }
}
