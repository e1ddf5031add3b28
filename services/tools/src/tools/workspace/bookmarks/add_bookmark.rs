use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::tools::workspace::bookmarks;
use crate::tools::workspace::settings::{self, BOOKMARKS};
use otc_kernel::reading::not_found;
use otc_kernel::{CallContext, Tool, writing};

pub struct AddBookmark;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    File,
    Folder,
    Heading,
    Block,
    Search,
    Url,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Bookmark {
    #[serde(rename = "type")]
    pub kind: Kind,
    /// For file, folder, heading, block.
    #[serde(default)]
    pub path: Option<String>,
    /// heading: "#Heading"; block: "#^id".
    #[serde(default)]
    pub subpath: Option<String>,
    #[serde(default)]
    pub query: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub bookmark: Bookmark,
    /// A top-level group's title (created if missing).
    #[serde(default)]
    pub group: Option<String>,
    #[serde(default)]
    pub allow_duplicate: Option<bool>,
    /// list_bookmarks' content_hash.
    #[serde(default)]
    pub prev_hash: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// Bookmarks at the top level afterwards (a group counts once).
    pub count: usize,
    /// True when the group was made by this call.
    pub group_created: bool,
    pub content_hash: String,
}

fn missing(field: &str, kind: Kind) -> ToolError {
    ToolError::with_message(
        ErrorCode::InvalidInput,
        format!("a {} bookmark needs {field}", otc_kernel::format::variant_name(kind)),
    )
    .detail("field", "bookmark")
}

impl Tool for AddBookmark {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:bookmarks"],
        scope_class: ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: the count and the hash" },
        core: false,
        ..ToolSpec::base(
            "add_bookmark",
            "Add a bookmark",
            "Adds a file, folder, heading, block, search or url bookmark to Obsidian's Bookmarks.",
            Domain::Workspace,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let b = &input.bookmark;
        let mut item = Map::new();
        item.insert("type".into(), json!(b.kind));
        item.insert("ctime".into(), json!(chrono::Utc::now().timestamp_millis()));
        match b.kind {
            Kind::File | Kind::Folder | Kind::Heading | Kind::Block => {
                let path = b.path.as_deref().ok_or_else(|| missing("path", b.kind))?.trim_matches('/');
                otc_vault::check_path(path).map_err(|e| e.detail("field", "bookmark"))?;
                if b.kind != Kind::Folder {
                    view.readable_path(path)?;
                    writing::current(ctx, view.vault.id, path).await?.ok_or_else(|| not_found(path))?;
                } else if !bookmarks::folder_visible(&view, path) {
                    return Err(not_found(path));
                }
                item.insert("path".into(), json!(path));
                if matches!(b.kind, Kind::Heading | Kind::Block) {
                    let sub = b.subpath.as_deref().ok_or_else(|| missing("subpath", b.kind))?;
                    let sub = if sub.starts_with('#') { sub.to_string() } else { format!("#{sub}") };
                    item.insert("subpath".into(), json!(sub));
                }
            }
            Kind::Search => {
                item.insert("query".into(), json!(b.query.as_deref().ok_or_else(|| missing("query", b.kind))?));
            }
            Kind::Url => {
                item.insert("url".into(), json!(b.url.as_deref().ok_or_else(|| missing("url", b.kind))?));
            }
        }
        if let Some(title) = &b.title {
            item.insert("title".into(), json!(title));
        }
        // Two bookmarks are the same when they point at the same thing.
        let identity: Map<String, Value> = item
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "ctime" | "title"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let allow_duplicate = input.allow_duplicate.unwrap_or(false);
        let edited = settings::change(ctx, &view, BOOKMARKS, input.prev_hash.as_deref(), |mut object| {
            let mut items = object.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
            let mut group_created = false;
            let target: &mut Vec<Value> = match &input.group {
                None => &mut items,
                Some(title) => {
                    let at = items.iter().position(|i| {
                        i.get("type").and_then(Value::as_str) == Some("group")
                            && i.get("title").and_then(Value::as_str) == Some(title.as_str())
                    });
                    let at = match at {
                        Some(at) => at,
                        None => {
                            group_created = true;
                            items.push(json!({"type": "group", "ctime": item["ctime"], "items": [], "title": title}));
                            items.len() - 1
                        }
                    };
                    let group = items[at].as_object_mut().expect("a group is an object");
                    if !group.get("items").is_some_and(Value::is_array) {
                        group.insert("items".into(), json!([]));
                    }
                    group.get_mut("items").and_then(Value::as_array_mut).expect("made an array above")
                }
            };
            if !allow_duplicate && target.iter().filter_map(Value::as_object).any(|i| bookmarks::matches(i, &identity))
            {
                return Err(ToolError::with_message(
                    ErrorCode::Conflict,
                    "that bookmark is there already; send allow_duplicate: true to add it again",
                )
                .detail("field", "bookmark"));
            }
            target.push(Value::Object(item.clone()));
            let count = items.len();
            object.insert("items".into(), Value::Array(items));
            Ok((object, (count, group_created)))
        })
        .await?;
        let (count, group_created) = edited.extra;
        Ok(Output {
            vault: view.vault.name.clone(),
            count,
            group_created,
            content_hash: hex::encode(edited.content_hash),
        })
    }
}
