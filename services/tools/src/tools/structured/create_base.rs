use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, Sometimes, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_formats::bases;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tools::structured::read_base::check_base_path;
use otc_kernel::writing;
use otc_kernel::{CallContext, Tool};

pub struct CreateBase;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// {filters, formulas, properties, views: [{type: table|cards|list|map, name, order, ...}]}.
    pub base: Map<String, Value>,
    #[serde(default)]
    pub overwrite: Option<bool>,
    #[serde(default)]
    #[schemars(schema_with = "otc_kernel::writing::any_json")]
    pub options: Option<Value>,
    #[serde(default)]
    pub elicit_token: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    pub views: usize,
    pub formulas: usize,
    /// False when an existing base was replaced.
    pub created: bool,
    pub content_hash: String,
}

impl Tool for CreateBase {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:bases"],
        scope_class: ScopeClass::Write,
        destructive: Sometimes::OnSomeCalls,
        hitl: Sometimes::OnSomeCalls,
        response_format: Format::Fixed { why: "a write acknowledgement: counts and the hash" },
        core: false,
        ..ToolSpec::base(
            "create_base",
            "Create a base",
            "Creates an Obsidian Bases file (.base), checking its expressions and views.",
            Domain::Structured,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        check_base_path(&input.path)?;
        writing::check_write(&view, &input.path, "path")?;
        let text = bases::to_yaml(&Value::Object(input.base.clone()));
        let parsed = bases::parse(&text).map_err(|e| e.detail("field", "base"))?;
        let problems = bases::validate(&parsed);
        if !problems.is_empty() {
            return Err(ToolError::with_message(
                ErrorCode::InvalidInput,
                format!("the base has problems: {}", problems.join("; ")),
            )
            .detail("field", "base")
            .detail("problems", problems));
        }
        let overwrite = input.overwrite.unwrap_or(false);
        let edited = writing::write_whole(ctx, &view, &input.path, "path", &text, overwrite).await?;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            views: parsed.views.len(),
            formulas: parsed.formulas.len(),
            created: edited.extra,
            content_hash: hex::encode(edited.content_hash),
        })
    }
}
