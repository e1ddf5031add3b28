use std::collections::BTreeSet;

use futures::{StreamExt, TryStreamExt};
use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_edit::rewrite::retarget_note;
use otc_errors::{ErrorCode, ToolError};
use otc_store::Expect;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::{CallContext, Tool, writing};

pub struct RewriteLink;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// As written (case-insensitive, .md optional); with #Heading, only links to that heading.
    pub from_target: String,
    /// No ]], | or line breaks; a #Heading replaces the link's own.
    pub to_target: String,
    #[serde(default)]
    pub folder: Option<String>,
    #[serde(default)]
    pub include_embeds: Option<bool>,
    #[serde(default)]
    pub dry_run: Option<bool>,
    #[serde(default)]
    pub elicit_token: Option<String>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub from_target: String,
    pub to_target: String,
    pub dry_run: bool,
    pub notes_changed: usize,
    pub links_rewritten: usize,
    /// The notes you can read but not write that hold such links (left as they are).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_writable: Option<Vec<String>>,
    /// Per note: each link before and after (dry runs, and detailed real runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<Vec<NoteChange>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct NoteChange {
    pub path: String,
    /// The hash the note has (dry run) or had (real run).
    pub prev_hash: String,
    /// The hash it has after a real run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    pub links: Vec<LinkChange>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct LinkChange {
    /// 1-based.
    pub line: usize,
    pub before: String,
    pub after: String,
}

/// The link keys a written target can be stored under (`otc_vault::links::link_key`).
fn keys(target: &str) -> Vec<String> {
    let path = target.split('#').next().unwrap_or(target).trim();
    let name = path.rsplit('/').next().unwrap_or(path).to_lowercase();
    match name.strip_suffix(".md") {
        Some(stem) => vec![stem.to_string(), name.clone()],
        None if !name.contains('.') => vec![format!("{name}.md"), name],
        None => vec![name],
    }
}

impl Tool for RewriteLink {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Bulk),
        scopes: &["write:notes"],
        scope_class: otc_catalog::ScopeClass::Write,
        destructive: Sometimes::OnSomeCalls,
        hitl: Sometimes::OnSomeCalls,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "rewrite_link",
            "Retarget links",
            "Points every link to one target at another (body, embeds, properties; alias kept), all or nothing. \
             dry_run previews; a real run needs confirmation.",
            Domain::Links,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        if input.from_target.trim().is_empty() || input.to_target.trim().is_empty() {
            let field = if input.from_target.trim().is_empty() { "from_target" } else { "to_target" };
            return Err(
                ToolError::with_message(ErrorCode::InvalidInput, format!("{field} is empty")).detail("field", field)
            );
        }
        let view = ctx.view(&input.vault).await?;
        let prefix = view.folder_prefix(input.folder.as_deref())?;
        let dry = input.dry_run.unwrap_or(false);
        let embeds = input.include_embeds.unwrap_or(true);
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let mut replanned = false;
        loop {
            writing::index_covering(ctx, view.vault.id).await?;
            let mut tx = ctx.begin().await?;
            let links = tx.links_named(view.vault.id, &keys(&input.from_target)).await?;
            tx.commit().await?;
            let sources: BTreeSet<String> = links
                .into_iter()
                .map(|l| l.source_path)
                // A wiki's generated pages are the workers' to write; a canvas's links are its
                // own JSON (moves rewrite them, a literal retarget does not).
                .filter(|p| p.starts_with(&prefix) && view.can_read(p) && !view.is_wiki_generated(p))
                .filter(|p| otc_store::FileKind::of_path(p) == otc_store::FileKind::Note)
                .collect();
            let planned: Vec<Option<(String, otc_store::FileEntry, otc_edit::rewrite::Rewrite)>> =
                futures::stream::iter(sources)
                    .map(|path| {
                        let (from, to) = (&input.from_target, &input.to_target);
                        async move {
                            let Some((entry, text)) = writing::current_text(ctx, view.vault.id, &path).await? else {
                                return Ok::<_, ToolError>(None);
                            };
                            let rewrite =
                                retarget_note(&text, &path, from, to, embeds).map_err(|r| r.into_error(Some(&path)))?;
                            Ok(rewrite.map(|r| (path, entry, r)))
                        }
                    })
                    .buffered(16)
                    .try_collect()
                    .await?;
            let planned: Vec<_> = planned.into_iter().flatten().collect();
            let (writable, not_writable): (Vec<_>, Vec<_>) =
                planned.into_iter().partition(|(p, _, _)| view.acl().can_write(p));
            let not_writable: Vec<String> = not_writable.into_iter().map(|(p, _, _)| p).collect();
            let links_rewritten = writable.iter().map(|(_, _, r)| r.links.len()).sum();
            let mut changes: Vec<NoteChange> = writable
                .iter()
                .map(|(path, entry, rewrite)| NoteChange {
                    path: path.clone(),
                    prev_hash: hex::encode(entry.hash),
                    content_hash: None,
                    links: rewrite
                        .links
                        .iter()
                        .map(|l| LinkChange { line: l.line + 1, before: l.before.clone(), after: l.after.clone() })
                        .collect(),
                })
                .collect();
            let mut out = Output {
                vault: view.vault.name.clone(),
                from_target: input.from_target.clone(),
                to_target: input.to_target.clone(),
                dry_run: dry,
                notes_changed: writable.len(),
                links_rewritten,
                not_writable: (!not_writable.is_empty()).then_some(not_writable),
                changes: None,
            };
            if dry || writable.is_empty() {
                out.changes = Some(changes);
                return Ok(out);
            }
            writing::confirm(ctx, true, "it rewrites links in many notes").await?;
            let mut batch = Vec::with_capacity(writable.len());
            let (notes, texts): (Vec<_>, Vec<_>) =
                writable.into_iter().map(|(path, entry, rewrite)| ((path, entry), rewrite.text.into_bytes())).unzip();
            let stored = writing::put_contents(ctx, texts).await?;
            for (((path, entry), (hash, size)), change) in notes.into_iter().zip(stored).zip(changes.iter_mut()) {
                change.content_hash = Some(hex::encode(hash));
                batch.push(writing::put(&path, Expect::Hash(entry.hash), hash, size));
            }
            match writing::commit(ctx, &view, &batch, None).await? {
                Ok(_) => {
                    out.changes = detailed.then_some(changes);
                    return Ok(out);
                }
                Err(_) if !replanned => replanned = true,
                Err(stale) => return Err(writing::stale_error(&view, &stale)),
            }
        }
    }
}
