//! obsidian_manage_frontmatter: gets, sets or deletes one frontmatter key, leaving the other
//! keys, comments and quoting as they were.

use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_edit::frontmatter::{FrontmatterOp, edit_frontmatter};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Target, edit_existing, read, reason, refuse, resolve_target};
use otc_kernel::{CallContext, Tool};

pub struct ObsidianManageFrontmatter;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    Get,
    Set,
    Delete,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The vault (filled in when you can reach only one).
    pub vault: String,
    pub operation: Operation,
    pub target: Target,
    #[schemars(length(min = 1))]
    pub key: String,
    /// operation set: the value (any JSON; null counts).
    #[serde(default)]
    #[schemars(schema_with = "otc_kernel::writing::any_json")]
    pub value: Option<Value>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub result: Outcome,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub operation: Operation,
    pub path: String,
    pub key: String,
    /// get: whether the note has the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
    /// get: the value (null when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "otc_kernel::writing::any_json")]
    pub value: Option<Value>,
    /// set and delete: every property after the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontmatter: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_size_in_bytes: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_size_in_bytes: Option<i64>,
}

impl Tool for ObsidianManageFrontmatter {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: otc_catalog::ScopeClass::Write,
        destructive: Sometimes::OnSomeCalls,
        response_format: Format::Fixed { why: super::FIXED },
        ..ToolSpec::base(
            "obsidian_manage_frontmatter",
            "Manage Obsidian frontmatter",
            "Gets, sets or deletes one frontmatter key of a note. set creates the key (and the frontmatter) when \
             missing and answers every property after the change; delete of a missing key writes nothing. Other \
             keys, comments and quoting stay as they were; frontmatter that does not parse is refused.",
            Domain::Metadata,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let path = resolve_target(ctx, &input.vault, &input.target).await?;
        let key = input.key.clone();
        let invalid = |e: ToolError| reason(e, "frontmatter_invalid");
        let outcome = match input.operation {
            Operation::Get => {
                let note = read(ctx, &input.vault, &path).await?;
                let value = otc_kernel::reading::frontmatter_map(&note.text).and_then(|f| f.get(&key).cloned());
                Outcome {
                    operation: Operation::Get,
                    path: note.path,
                    key,
                    exists: Some(value.is_some()),
                    value: Some(value.unwrap_or(Value::Null)),
                    frontmatter: None,
                    previous_size_in_bytes: None,
                    current_size_in_bytes: None,
                }
            }
            op => {
                // A null value is a value; only a missing one is refused.
                let value = match (op, ctx.args.get("value")) {
                    (Operation::Set, None) => {
                        return Err(refuse(ErrorCode::ValidationError, "value_required", "operation set needs value")
                            .detail("field", "value"));
                    }
                    (_, value) => value.cloned().unwrap_or(Value::Null),
                };
                let edit = edit_existing(ctx, "update_frontmatter", &input.vault, &path, |text| {
                    let change = match op {
                        Operation::Set => FrontmatterOp::Set { key: &key, value: &value, nested: false },
                        _ => FrontmatterOp::Remove { key: &key, nested: false },
                    };
                    let edited = edit_frontmatter(text, change).map_err(invalid)?;
                    Ok((edited.text, edited.frontmatter.unwrap_or_default()))
                })
                .await?;
                Outcome {
                    operation: op,
                    path: edit.path,
                    key,
                    exists: None,
                    value: None,
                    frontmatter: Some(edit.extra),
                    previous_size_in_bytes: Some(edit.previous_size),
                    current_size_in_bytes: Some(edit.current_size),
                }
            }
        };
        Ok(Output { result: outcome })
    }
}
