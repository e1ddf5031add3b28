use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_edit::frontmatter::{FrontmatterOp, edit_frontmatter};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::not_found;
use otc_kernel::writing::{self, Planned};
use otc_kernel::{CallContext, Tool};

pub struct UpdateFrontmatter;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// set (key, value), remove (key), merge (properties), replace (properties become the whole
    /// frontmatter; needs confirmation).
    pub operation: Operation,
    /// With nested, a dotted path (meta.author).
    #[serde(default)]
    pub key: Option<String>,
    #[serde(default)]
    #[schemars(schema_with = "otc_kernel::writing::any_json")]
    pub value: Option<Value>,
    #[serde(default)]
    pub properties: Option<Map<String, Value>>,
    #[serde(default)]
    pub prev_hash: Option<String>,
    #[serde(default)]
    pub create_if_missing: Option<bool>,
    #[serde(default)]
    pub nested: Option<bool>,
    #[serde(default)]
    pub elicit_token: Option<String>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    Set,
    Remove,
    Merge,
    Replace,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    pub content_hash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<Operation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<bool>,
    /// Whether the note changed (a remove of a missing key, or a set to the same value, does not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed: Option<bool>,
    /// The properties after the edit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontmatter: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prev_hash: Option<String>,
}

fn needs(field: &str, operation: &str) -> ToolError {
    ToolError::with_message(ErrorCode::InvalidInput, format!("update_frontmatter {operation}: {field} is required"))
        .detail("field", field.to_string())
        .detail("operation", operation.to_string())
}

impl Tool for UpdateFrontmatter {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: otc_catalog::ScopeClass::Write,
        destructive: Sometimes::OnSomeCalls,
        hitl: Sometimes::OnSomeCalls,
        essentials: true,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "update_frontmatter",
            "Update frontmatter",
            "Sets, removes, merges or replaces a note's frontmatter properties; the rest stays byte for byte.",
            Domain::Metadata,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let operation = input.operation;
        let nested = input.nested.unwrap_or(false);
        let null = Value::Null;
        let op = match operation {
            Operation::Set => FrontmatterOp::Set {
                key: input.key.as_deref().filter(|k| !k.is_empty()).ok_or_else(|| needs("key", "set"))?,
                value: if input.value.is_some() || ctx.args.get("value").is_some() {
                    input.value.as_ref().unwrap_or(&null)
                } else {
                    return Err(needs("value", "set"));
                },
                nested,
            },
            Operation::Remove => FrontmatterOp::Remove {
                key: input.key.as_deref().filter(|k| !k.is_empty()).ok_or_else(|| needs("key", "remove"))?,
                nested,
            },
            Operation::Merge => FrontmatterOp::Merge {
                properties: input.properties.as_ref().ok_or_else(|| needs("properties", "merge"))?,
            },
            Operation::Replace => FrontmatterOp::Replace {
                properties: input.properties.as_ref().ok_or_else(|| needs("properties", "replace"))?,
            },
        };
        let view = ctx.view(&input.vault).await?;
        let path = input.path.clone();
        writing::check_write(&view, &path, "path")?;
        let prev = writing::parse_prev_hash(input.prev_hash.as_deref())?;
        let create = input.create_if_missing.unwrap_or(false);
        let exists = writing::current(ctx, view.vault.id, &path).await?;
        if exists.is_none() {
            if !create {
                return Err(not_found(&path).detail("hint", "pass create_if_missing: true to create the note"));
            }
            writing::check_new_name(ctx, &view, &path, "path").await?;
        }
        writing::confirm(
            ctx,
            operation == Operation::Replace && exists.is_some(),
            "replace discards every other property",
        )
        .await?;
        let edited = writing::edit_note(ctx, &view, &path, prev, None, |now, _| {
            let text = match now {
                Some(text) => text,
                None if create => "",
                None => return Err(not_found(&path)),
            };
            let edited = edit_frontmatter(text, op)?;
            Ok(Planned { text: edited.text, extra: (now.is_none(), edited.frontmatter), trash_old: false })
        })
        .await?;
        let (created, frontmatter) = edited.extra;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        Ok(Output {
            vault: view.vault.name.clone(),
            path,
            content_hash: hex::encode(edited.content_hash),
            operation: detailed.then_some(operation),
            created: detailed.then_some(created),
            changed: detailed.then_some(edited.changed),
            frontmatter: if detailed { frontmatter } else { None },
            prev_hash: detailed.then(|| edited.before.as_ref().map(|e| hex::encode(e.hash))).flatten(),
        })
    }
}
