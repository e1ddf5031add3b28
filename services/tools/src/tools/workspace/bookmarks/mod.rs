//! Obsidian's bookmarks (`.obsidian/bookmarks.json`: `{"items": [...]}`, each item a file,
//! folder, heading, block, search, url or a group holding more) as the bookmark tools see them:
//! filtered to what the caller may read, matched for removal.

pub mod add_bookmark;
pub mod list_bookmarks;
pub mod remove_bookmark;

use serde_json::{Map, Value};

use otc_kernel::reading::View;

/// Whether the caller may see `item`: a bookmark of a path it cannot read is left out (a group
/// stays, with what it may see).
pub fn visible(view: &View, item: &Map<String, Value>) -> bool {
    match item.get("path").and_then(Value::as_str) {
        None => true,
        Some(path) if item.get("type").and_then(Value::as_str) == Some("folder") => folder_visible(view, path),
        Some(path) => view.can_read(path),
    }
}

/// Whether the caller may read the folder `path` or something in it.
pub fn folder_visible(view: &View, path: &str) -> bool {
    view.can_read(path) || view.can_read(&format!("{}/x", path.trim_end_matches('/')))
}

/// `items` as the caller may see them, groups filtered in turn.
pub fn filtered(view: &View, items: &[Value]) -> Vec<Map<String, Value>> {
    items
        .iter()
        .filter_map(Value::as_object)
        .filter(|item| visible(view, item))
        .map(|item| {
            let mut item = item.clone();
            if let Some(Value::Array(inner)) = item.get("items") {
                let inner = filtered(view, inner).into_iter().map(Value::Object).collect();
                item.insert("items".into(), Value::Array(inner));
            }
            item
        })
        .collect()
}

/// Whether `item` matches every key of `wanted` (compared as JSON values).
pub fn matches(item: &Map<String, Value>, wanted: &Map<String, Value>) -> bool {
    wanted.iter().all(|(k, v)| item.get(k) == Some(v))
}

/// Removes from `items` (and the groups in them) every item the caller may see that matches
/// `wanted`; returns how many went.
pub fn remove(view: &View, items: &mut Vec<Value>, wanted: &Map<String, Value>) -> usize {
    let before = items.len();
    items.retain(|item| !item.as_object().is_some_and(|i| visible(view, i) && matches(i, wanted)));
    let mut removed = before - items.len();
    for item in items.iter_mut() {
        if let Some(Value::Array(inner)) = item.as_object_mut().and_then(|i| i.get_mut("items")) {
            removed += remove(view, inner, wanted);
        }
    }
    removed
}
