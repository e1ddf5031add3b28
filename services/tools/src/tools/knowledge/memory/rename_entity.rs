//! rename_entity: a new name and/or status for an entity (its mirror note follows the name).

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::memory::{self, EntityOut};
use otc_kernel::{CallContext, Tool, internal};

pub struct RenameEntity;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Active,
    Archived,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub entity_id: String,
    #[serde(default)]
    pub new_name: Option<String>,
    #[serde(default)]
    pub status: Option<Status>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    #[serde(flatten)]
    pub entity: EntityOut,
    /// The name before.
    pub previous_name: String,
}

impl Tool for RenameEntity {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:memory"],
        scope_class: otc_catalog::ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: the entity's id, name and status" },
        ..ToolSpec::base(
            "rename_entity",
            "Rename or archive a memory entity",
            "Renames a memory entity and/or sets it active or archived; refused if a live entity of its type \
             has the name. Its mirror note follows.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let id = memory::entity_id(&input.entity_id, "entity_id")?;
        let new_name = input.new_name.as_deref().map(str::trim);
        if new_name.is_some_and(str::is_empty) {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "new_name may not be blank")
                .detail("field", "new_name"));
        }
        if new_name.is_none() && input.status.is_none() {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "pass new_name, status or both")
                .detail("field", "new_name"));
        }
        let store_err = |e: StoreError| internal(ctx.tool, &e);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let entity = memory::find(&mut tx, &view, id).await?;
        // The neighbours the caller may see link to it by name in their mirrors: rewritten too.
        let neighbours = memory::visible_neighbours(&mut tx, &view, id).await?;
        tx.commit().await.map_err(store_err)?;
        memory::check_mirrors(&view, std::slice::from_ref(&entity))?;
        memory::check_mirrors(&view, &neighbours)?;
        let title = new_name.unwrap_or(&entity.name).to_string();
        let status = match input.status {
            Some(Status::Active) => "active",
            Some(Status::Archived) => "archived",
            None => entity.status.as_str(),
        }
        .to_string();
        // A mirrored entity's note follows its name.
        let renamed = title != entity.name;
        let mirror = match &entity.note_path {
            Some(old) if renamed => {
                let path = memory::mirror_path(ctx, &entity.kind, &title);
                if path != *old {
                    memory::check_mirror(ctx, &view, (&entity.kind, &title), &path, Some(old)).await?;
                    otc_kernel::writing::check_delete(&view, old, "note_path")?;
                }
                Some(path)
            }
            other => other.clone(),
        };
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        match tx.update_entity(view.vault.id, id, &title, &status, mirror.as_deref()).await {
            Ok(true) => {}
            // Deleted since it was read: a rename never brings it back.
            Ok(false) => return Err(memory::not_found(&id.to_string())),
            Err(StoreError::Conflict { .. }) => return Err(memory::name_taken(&entity.kind, &title)),
            Err(e) => return Err(store_err(e)),
        }
        let after = tx.entity(view.vault.id, id).await.map_err(store_err)?.unwrap_or_else(|| entity.clone());
        tx.commit().await.map_err(store_err)?;
        if let (Some(old), Some(new)) = (&entity.note_path, &mirror)
            && old != new
        {
            memory::unmirror(ctx, &view, old).await?;
        }
        let mut rewrite: Vec<uuid::Uuid> = neighbours.iter().map(|e| e.id).collect();
        rewrite.push(id);
        memory::remirror(ctx, &view, &rewrite).await?;
        Ok(Output { vault: view.vault.name.clone(), entity: EntityOut::of(&after, true), previous_name: entity.name })
    }
}
