use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::ToolError;
use otc_formats::bases;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tools::structured::read_base::check_base_path;
use otc_kernel::reading::not_found;
use otc_kernel::writing::{self, Planned};
use otc_kernel::{CallContext, Tool};

pub struct UpdateBase;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// RFC 7386 merge patch: null removes a key; views are replaced whole.
    pub patch: Map<String, Value>,
    #[serde(default)]
    pub prev_hash: Option<String>,
    #[serde(default)]
    pub elicit_token: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    /// False when the patch left the base as it was.
    pub changed: bool,
    pub views: usize,
    pub content_hash: String,
}

impl Tool for UpdateBase {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:bases"],
        scope_class: ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: counts and the hash" },
        core: false,
        ..ToolSpec::base(
            "update_base",
            "Change a base",
            "Changes an Obsidian Bases file by JSON merge patch; refused if that adds a problem.",
            Domain::Structured,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        check_base_path(&input.path)?;
        view.readable_path(&input.path)?;
        writing::check_write(&view, &input.path, "path")?;
        let prev = writing::parse_prev_hash(input.prev_hash.as_deref())?;
        let patch = Value::Object(input.patch.clone());
        let edited = writing::edit_note(ctx, &view, &input.path, prev, None, |now, _| {
            let text = now.ok_or_else(|| not_found(&input.path))?;
            let updated = bases::update(text, &patch)?;
            let views = bases::parse(&updated)?.views.len();
            Ok(Planned { text: updated, extra: views, trash_old: false })
        })
        .await?;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            changed: edited.changed,
            views: edited.extra,
            content_hash: hex::encode(edited.content_hash),
        })
    }
}
