use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_formats::excalidraw;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use otc_kernel::reading::not_found;
use otc_kernel::writing::{self, Planned};
use otc_kernel::{CallContext, Tool};

pub struct UpdateExcalidraw;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// Each needs a type; ids and defaults are filled in.
    #[serde(default)]
    pub add_elements: Option<Vec<Map<String, Value>>>,
    /// References to them go too.
    #[serde(default)]
    pub remove_element_ids: Option<Vec<String>>,
    /// Each: id and the fields to set.
    #[serde(default)]
    pub update_elements: Option<Vec<Map<String, Value>>>,
    #[serde(default)]
    pub update_app_state: Option<Map<String, Value>>,
    #[serde(default)]
    pub prev_hash: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    pub added: usize,
    pub removed: usize,
    pub updated: usize,
    /// Ids given to the added elements.
    pub added_ids: Vec<String>,
    pub content_hash: String,
}

impl Tool for UpdateExcalidraw {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:excalidraw"],
        scope_class: ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: counts, ids and the hash" },
        core: false,
        ..ToolSpec::base(
            "update_excalidraw",
            "Change an Excalidraw drawing",
            "Adds, removes and changes an Excalidraw drawing's elements in one write.",
            Domain::Structured,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        view.readable_path(&input.path)?;
        writing::check_write(&view, &input.path, "path")?;
        let prev = writing::parse_prev_hash(input.prev_hash.as_deref())?;
        let update = excalidraw::Update {
            add_elements: input.add_elements.unwrap_or_default().into_iter().map(Value::Object).collect(),
            remove_element_ids: input.remove_element_ids.unwrap_or_default(),
            update_elements: input.update_elements.unwrap_or_default().into_iter().map(Value::Object).collect(),
            update_app_state: input.update_app_state,
        };
        let now_ms = chrono::Utc::now().timestamp_millis();
        let edited = writing::edit_note(ctx, &view, &input.path, prev, None, |now, _| {
            let text = now.ok_or_else(|| not_found(&input.path))?;
            if !excalidraw::is_drawing(&input.path, text) {
                return Err(ToolError::with_message(ErrorCode::InvalidInput, "the file is not an Excalidraw drawing")
                    .detail("field", "path"));
            }
            let applied = excalidraw::apply(excalidraw::parse(text)?, &update, now_ms)?;
            let text = excalidraw::render(&applied.drawing);
            Ok(Planned {
                text,
                extra: (applied.added, applied.removed, applied.updated, applied.added_ids),
                trash_old: false,
            })
        })
        .await?;
        let (added, removed, updated, added_ids) = edited.extra;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            added,
            removed,
            updated,
            added_ids,
            content_hash: hex::encode(edited.content_hash),
        })
    }
}
