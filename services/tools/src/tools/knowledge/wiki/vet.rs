//! SCHEMA.md's conventions at the commit: a tool's write of a wiki page that adds a breach of a
//! rule the schema marks `severity: block` is refused (`invalid_input`, `reason: convention`,
//! each breach named) and nothing lands. A breach the page already had does not stop its
//! edit, so an old page can be mended a step at a time; rules that warn only report (through
//! commit_wiki_page, draft_wiki_page and lint_wiki). Writes through the sync API (a person's own
//! Obsidian) are not vetted: a sync client cannot resolve a refusal.

use futures::future::BoxFuture;
use otc_errors::{ErrorCode, ToolError};
use otc_kernel::CallContext;
use otc_kernel::reading::View;
use otc_kernel::writing;
use otc_store::{Action, Change, Hash};
use serde_json::json;

use super::schema::{Breach, Schema, Severity};

/// Pages one commit vets at most; past them the write goes on unvetted for the rest (a bulk
/// change of thousands of pages is not held up reading each twice), and lint_wiki reports them.
const MAX_PAGES: usize = 200;
/// The bytes of a page read for its frontmatter.
const HEAD_BYTES: u64 = 64 * 1024;

/// The [`otc_kernel::features::VetCommit`] hook.
pub fn vet<'a>(
    ctx: &'a CallContext<'a>,
    view: &'a View,
    changes: &'a [Change],
) -> BoxFuture<'a, Result<(), ToolError>> {
    Box::pin(async move {
        let Some(folders) = view.wiki().cloned() else { return Ok(()) };
        let inside = format!("{}/", folders.folder);
        let schema_path = format!("{}/SCHEMA.md", folders.folder);
        let pages: Vec<(&str, &Hash)> = changes
            .iter()
            .filter_map(|c| match &c.action {
                Action::Put { hash, .. } => Some((c.path.as_str(), hash)),
                Action::Delete => None,
            })
            .filter(|(path, _)| {
                path.starts_with(&inside)
                    && path.ends_with(".md")
                    && *path != schema_path
                    && !view.is_wiki_generated(path)
            })
            .take(MAX_PAGES)
            .collect();
        if pages.is_empty() {
            return Ok(());
        }
        let Some(Ok(schema)) = super::read_schema(ctx, view, &folders).await? else { return Ok(()) };
        if schema.blocking.is_empty() {
            return Ok(());
        }
        let moved = deleted_pages(ctx, view, changes, &inside).await?;
        let mut added = Vec::new();
        for (path, hash) in pages {
            let new = blocking(ctx, &schema, &folders.folder, path, hash).await?;
            if new.is_empty() {
                continue;
            }
            let old = match writing::current(ctx, view.vault.id, path).await? {
                Some(entry) => blocking(ctx, &schema, &folders.folder, path, &entry.hash).await?,
                // A move or rename in the wiki: the page's breaches where it was count as old.
                None => match moved.get(hash) {
                    Some(from) => blocking(ctx, &schema, &folders.folder, from, hash).await?,
                    None => Vec::new(),
                },
            };
            added.extend(new.into_iter().filter(|b| !old.contains(b)).map(|b| (path.to_string(), b)));
        }
        if added.is_empty() {
            return Ok(());
        }
        let listed: Vec<_> = added
            .iter()
            .map(|(path, b)| json!({"path": path, "rule": b.rule.as_str(), "message": b.message}))
            .collect();
        Err(ToolError::with_message(
            ErrorCode::InvalidInput,
            format!(
                "the write breaks a convention SCHEMA.md marks severity: block ({}); nothing was written. \
                 Fix what `breaches` lists (draft_wiki_page shows what a page type needs), or ask the \
                 schema's owner to make the rule warn",
                added[0].1.message
            ),
        )
        .detail("reason", "convention")
        .detail("schema", schema_path)
        .detail("breaches", listed))
    })
}

/// The wiki pages this commit deletes, by their content (at most [`MAX_PAGES`]): a page put
/// elsewhere with the same content is that page moved.
async fn deleted_pages(
    ctx: &CallContext<'_>,
    view: &View,
    changes: &[Change],
    inside: &str,
) -> Result<std::collections::HashMap<Hash, String>, ToolError> {
    let mut out = std::collections::HashMap::new();
    let deletes = changes.iter().filter(|c| matches!(c.action, Action::Delete) && c.path.starts_with(inside));
    for change in deletes.take(MAX_PAGES) {
        if let Some(entry) = writing::current(ctx, view.vault.id, &change.path).await? {
            out.insert(entry.hash, change.path.clone());
        }
    }
    Ok(out)
}

/// The breaches of blocking rules in the page whose content is `hash`.
async fn blocking(
    ctx: &CallContext<'_>,
    schema: &Schema,
    wiki: &str,
    path: &str,
    hash: &Hash,
) -> Result<Vec<Breach>, ToolError> {
    let bytes = ctx.services().blobs.get_blob_range(ctx.caller.tenant_id, hash, 0..HEAD_BYTES).await?;
    // A head cut inside a character reads as far as it is whole.
    let text = match std::str::from_utf8(&bytes) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
    };
    let head = otc_parser::parse_head(text);
    let frontmatter = head.frontmatter.and_then(|f| f.value);
    Ok(schema
        .breaches(wiki, path, None, frontmatter.as_ref())
        .into_iter()
        .filter(|b| schema.severity(b.rule) == Severity::Block)
        .collect())
}
