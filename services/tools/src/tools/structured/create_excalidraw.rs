use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, Sometimes, ToolSpec};
use otc_errors::ToolError;
use otc_formats::excalidraw;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use otc_kernel::writing;
use otc_kernel::{CallContext, Tool};

pub struct CreateExcalidraw;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Ends in .excalidraw.md.
    pub path: String,
    /// A drawing to copy.
    #[serde(default)]
    pub template: Option<String>,
    /// Each needs a type; ids and defaults are filled in.
    #[serde(default)]
    pub elements: Option<Vec<Map<String, Value>>>,
    #[serde(default)]
    pub overwrite: Option<bool>,
    #[serde(default)]
    pub elicit_token: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    /// Elements in the new drawing.
    pub elements: usize,
    /// Ids given to the elements sent.
    pub added_ids: Vec<String>,
    /// False when an existing file was replaced.
    pub created: bool,
    pub content_hash: String,
}

impl Tool for CreateExcalidraw {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:excalidraw"],
        scope_class: ScopeClass::Write,
        destructive: Sometimes::OnSomeCalls,
        hitl: Sometimes::OnSomeCalls,
        response_format: Format::Fixed { why: "a write acknowledgement: counts, ids and the hash" },
        core: false,
        ..ToolSpec::base(
            "create_excalidraw",
            "Create an Excalidraw drawing",
            "Creates an Excalidraw drawing from elements and/or a template drawing.",
            Domain::Structured,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        otc_kernel::reading::check_extension(
            &input.path,
            ".excalidraw.md",
            "a drawing's name ends in .excalidraw.md",
            "path",
        )?;
        writing::check_write(&view, &input.path, "path")?;
        let start = match &input.template {
            Some(template) => {
                view.readable_path(template).map_err(|e| e.detail("field", "template"))?;
                let Some((_, text)) = writing::current_text(ctx, view.vault.id, template).await? else {
                    return Err(otc_kernel::reading::not_found(template).detail("field", "template"));
                };
                let mut drawing = excalidraw::parse(&text).map_err(|e| e.detail("field", "template"))?;
                drawing.compressed = true;
                let mut fresh = excalidraw::new_drawing(Vec::new(), true);
                fresh.scene = drawing.scene;
                fresh
            }
            None => excalidraw::new_drawing(Vec::new(), true),
        };
        let update = excalidraw::Update {
            add_elements: input.elements.unwrap_or_default().into_iter().map(Value::Object).collect(),
            ..Default::default()
        };
        let applied = excalidraw::apply(start, &update, chrono::Utc::now().timestamp_millis())?;
        let elements = excalidraw::summary(&applied.drawing).elements;
        let text = excalidraw::render(&applied.drawing);
        let overwrite = input.overwrite.unwrap_or(false);
        let edited = writing::write_whole(ctx, &view, &input.path, "path", &text, overwrite).await?;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            elements,
            added_ids: applied.added_ids,
            created: edited.extra,
            content_hash: hex::encode(edited.content_hash),
        })
    }
}
