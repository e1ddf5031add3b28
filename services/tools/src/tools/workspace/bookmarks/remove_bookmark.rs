use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, Sometimes, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tools::workspace::bookmarks;
use crate::tools::workspace::settings::{self, BOOKMARKS};
use otc_kernel::{CallContext, Tool};

pub struct RemoveBookmark;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Any of type, path, subpath, query, url, title; all must match.
    #[serde(rename = "match")]
    pub wanted: Map<String, Value>,
    #[serde(default)]
    pub group: Option<String>,
    /// list_bookmarks' content_hash.
    #[serde(default)]
    pub prev_hash: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub removed: usize,
    pub content_hash: String,
}

const KEYS: [&str; 6] = ["type", "path", "subpath", "query", "url", "title"];

impl Tool for RemoveBookmark {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["delete:bookmarks"],
        scope_class: ScopeClass::Delete,
        destructive: Sometimes::Always,
        response_format: Format::Fixed { why: "a write acknowledgement: the count and the hash" },
        core: false,
        ..ToolSpec::base(
            "remove_bookmark",
            "Remove bookmarks",
            "Removes the matching bookmarks; the notes stay.",
            Domain::Workspace,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        if input.wanted.is_empty() || input.wanted.keys().any(|k| !KEYS.contains(&k.as_str())) {
            return Err(ToolError::with_message(
                ErrorCode::InvalidInput,
                "match names what to remove by type, path, subpath, query, url or title",
            )
            .detail("field", "match"));
        }
        let edited = settings::change(ctx, &view, BOOKMARKS, input.prev_hash.as_deref(), |mut object| {
            let mut items = object.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
            let removed = match &input.group {
                None => bookmarks::remove(&view, &mut items, &input.wanted),
                Some(title) => items
                    .iter_mut()
                    .filter(|i| {
                        i.get("type").and_then(Value::as_str) == Some("group")
                            && i.get("title").and_then(Value::as_str) == Some(title)
                    })
                    .filter_map(|g| g.get_mut("items").and_then(Value::as_array_mut))
                    .map(|inner| bookmarks::remove(&view, inner, &input.wanted))
                    .sum(),
            };
            if removed == 0 {
                return Err(
                    ToolError::with_message(ErrorCode::NotFound, "no bookmark matches").detail("field", "match")
                );
            }
            object.insert("items".into(), Value::Array(items));
            Ok((object, removed))
        })
        .await?;
        Ok(Output {
            vault: view.vault.name.clone(),
            removed: edited.extra,
            content_hash: hex::encode(edited.content_hash),
        })
    }
}
