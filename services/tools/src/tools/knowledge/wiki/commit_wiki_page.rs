use std::collections::{BTreeSet, HashSet};

use futures::{StreamExt, TryStreamExt};
use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::Expect;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::wiki::{self, Problem};
use otc_kernel::reading::not_found;
use otc_kernel::screening::screen;
use otc_kernel::{CallContext, Tool, writing};

pub struct CommitWikiPage;

/// The heading a link patch goes under when the patch names none (created when missing).
pub const SEE_ALSO: &str = "See also";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    #[serde(default)]
    pub topic: Option<String>,
    /// SCHEMA.md page type.
    #[serde(default, rename = "type")]
    pub page_type: Option<String>,
    #[serde(default)]
    pub sources: Option<Vec<String>>,
    pub page: Page,
    /// Links to the page from other notes.
    #[serde(default)]
    pub patches: Option<Vec<Patch>>,
    #[serde(default)]
    pub elicit_token: Option<String>,
    #[serde(default)]
    pub allow_duplicate: Option<bool>,
    /// Let a model judge soft duplicates.
    #[serde(default)]
    pub judge: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Page {
    /// Inside the wiki folder, ending in .md.
    pub path: String,
    /// With frontmatter.
    pub content: String,
    /// overwrite needs prev_hash and confirmation.
    #[serde(default)]
    pub mode: Option<PageMode>,
    #[serde(default)]
    pub prev_hash: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PageMode {
    #[default]
    Create,
    Overwrite,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Patch {
    pub path: String,
    /// content_hash from draft_wiki_page.
    pub prev_hash: String,
    /// link adds a [[page]] bullet under heading (default "See also"); append adds text.
    pub op: PatchOp,
    #[serde(default)]
    pub heading: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PatchOp {
    Link,
    Append,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub page: Written,
    /// The notes patched, in the order given (a skipped patch is a problem instead).
    pub patched: Vec<Patched>,
    /// What to fix; none of it stopped the write.
    pub problems: Vec<Problem>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Written {
    pub path: String,
    pub created: bool,
    pub content_hash: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Patched {
    pub path: String,
    pub op: PatchOp,
    pub content_hash: String,
}

impl Tool for CommitWikiPage {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes", "read:notes"],
        scope_class: otc_catalog::ScopeClass::Write,
        core: false,
        destructive: Sometimes::OnSomeCalls,
        hitl: Sometimes::OnSomeCalls,
        response_format: Format::Fixed {
            why: "a short receipt of the writes plus the problems: every field is a safety signal",
        },
        ..ToolSpec::base(
            "commit_wiki_page",
            "Commit a wiki page",
            "Writes a wiki page and links to it from other notes, all or nothing; refuses duplicates and prompt \
             injection, and reports schema and link problems.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let folders = wiki::folders(&view)?;
        let path = input.page.path.as_str();
        otc_vault::check_path(path).map_err(|e| e.detail("field", "page.path"))?;
        if !path.starts_with(&format!("{}/", folders.folder)) {
            return Err(wiki::invalid(
                "outside_wiki_folder",
                format!("a page goes inside {}/", folders.folder),
                "page.path",
            ));
        }
        if !path.ends_with(".md") {
            return Err(wiki::invalid("not_markdown", "a page is a .md note", "page.path"));
        }
        if view.is_wiki_generated(path) {
            return Err(wiki::invalid("generated_page", "index.md and log.md are written by the server", "page.path"));
        }
        writing::check_write(&view, path, "page.path")?;
        if !view.can_read(path) {
            // Whether or not a note is there, the answer is the same.
            return Err(ToolError::with_message(
                ErrorCode::AclDenied,
                "the folder ACL does not let this caller read here",
            )
            .detail("field", "page.path"));
        }
        let mode = input.page.mode.unwrap_or_default();
        let page_prev = writing::parse_prev_hash(input.page.prev_hash.as_deref())?;
        if mode == PageMode::Overwrite && page_prev.is_none() {
            return Err(wiki::invalid(
                "prev_hash_required",
                "an overwrite needs the page's prev_hash",
                "page.prev_hash",
            ));
        }
        let patches = input.patches.unwrap_or_default();
        let mut keys = HashSet::from([otc_vault::clash_key(path)]);
        let mut patch_prev = Vec::with_capacity(patches.len());
        for (i, p) in patches.iter().enumerate() {
            let field = format!("patches[{i}].path");
            view.readable_path(&p.path).map_err(|e| e.detail("field", field.clone()))?;
            writing::check_write(&view, &p.path, &field)?;
            if !keys.insert(otc_vault::clash_key(&p.path)) {
                return Err(wiki::invalid("duplicate_entry", "two entries name one note", &field));
            }
            patch_prev.push(writing::parse_prev_hash(Some(&p.prev_hash))?.expect("given"));
            if p.op == PatchOp::Append && p.text.as_deref().is_none_or(|t| t.trim().is_empty()) {
                return Err(wiki::invalid(
                    "text_required",
                    "an append patch needs text",
                    &format!("patches[{i}].text"),
                ));
            }
        }

        // What is there now, and every stale prev_hash at once.
        let current = writing::current_text(ctx, view.vault.id, path).await?;
        let mut stale = Vec::new();
        match (&current, mode) {
            (Some(_), PageMode::Create) => {
                return Err(ToolError::with_message(
                    ErrorCode::NoteExists,
                    "a note already exists at page.path: overwrite it with mode overwrite and its prev_hash",
                )
                .detail("path", path.to_string()));
            }
            (None, PageMode::Overwrite) => return Err(not_found(path).detail("field", "page.path")),
            (Some((entry, _)), PageMode::Overwrite) if Some(entry.hash) != page_prev => stale.push(path.to_string()),
            _ => {}
        }
        if current.is_none() {
            writing::check_new_name(ctx, &view, path, "page.path").await?;
        }
        // The patched notes, read sixteen at a time.
        let vault_id = view.vault.id;
        let paths: Vec<String> = patches.iter().map(|p| p.path.clone()).collect();
        let notes: Vec<(otc_store::FileEntry, String)> =
            futures::stream::iter(paths)
                .map(|path| async move {
                    writing::current_text(ctx, vault_id, &path).await?.ok_or_else(|| not_found(&path))
                })
                .buffered(16)
                .try_collect()
                .await?;
        for ((p, prev), (entry, _)) in patches.iter().zip(&patch_prev).zip(&notes) {
            if entry.hash != *prev {
                stale.push(p.path.clone());
            }
        }
        if !stale.is_empty() {
            return Err(ToolError::with_message(
                ErrorCode::ConcurrentModification,
                format!("{} note(s) changed since their prev_hash was read; nothing was written", stale.len()),
            )
            .detail("stale", stale));
        }

        // The screen: a takeover attempt refuses; signs and secrets are problems.
        let mut problems = Vec::new();
        let page_text = screened(&input.page.content, path, &mut problems)?;

        // Another page on the topic (checked again right before the write).
        let stem = path.rsplit('/').next().unwrap_or(path).trim_end_matches(".md").to_string();
        let topic = input.topic.clone().unwrap_or_else(|| stem.clone());
        let min = crate::tools::knowledge::wiki::find_existing_page::DEFAULT_MIN_SIMILARITY;
        let wiki_prefix = format!("{}/", folders.folder);
        let found = wiki::find(ctx, &view, &topic, &wiki_prefix, min, input.judge).await?;
        if let Some(existing) = found.existing().filter(|c| c.path != path)
            && !input.allow_duplicate.unwrap_or(false)
        {
            return Err(ToolError::with_message(
                ErrorCode::Conflict,
                "a page on this topic exists: extend it, or pass allow_duplicate",
            )
            .detail("reason", "duplicate_page")
            .detail("existing", existing.path.clone()));
        }
        if found.verdict == "ambiguous" {
            let paths: Vec<&str> =
                found.candidates.iter().filter(|c| c.path != path).map(|c| c.path.as_str()).collect();
            if !paths.is_empty() {
                problems.push(Problem::new(
                    "possible_duplicate",
                    None,
                    format!("pages that may cover the topic: {}", paths.join(", ")),
                ));
            }
        }

        // The patches.
        let excluded = &found.excluded;
        // The page's name as a link: its file name, or its path when another file has that name
        // (a bare [[name]] would then lead to whichever Obsidian picks).
        let link_name = {
            let keys = otc_vault::links::affected_link_keys(path);
            let mut tx = ctx.begin().await?;
            let named = tx.paths_named(view.vault.id, &keys).await?;
            tx.commit().await?;
            match named.iter().any(|p| p != path) {
                true => path.trim_end_matches(".md").to_string(),
                false => stem.clone(),
            }
        };
        let mut planned: Vec<(usize, String)> = Vec::new();
        let mut links_in = false;
        for (i, (p, (_, text))) in patches.iter().zip(&notes).enumerate() {
            if excluded.contains(&p.path) {
                problems.push(Problem::new("excluded_note", Some(&p.path), "the note is in Obsidian's Excluded files"));
            }
            let note = otc_kernel::memory::parse_note(text)?;
            let already = note.links.iter().any(|l| wiki::names_page(&l.target, path));
            let new_text = match p.op {
                PatchOp::Link if already => {
                    problems.push(Problem::new("patch_skipped", Some(&p.path), "the note already links the page"));
                    links_in = true;
                    continue;
                }
                PatchOp::Link => {
                    let heading = p.heading.as_deref().unwrap_or(SEE_ALSO);
                    let bullet = format!("- [[{link_name}]]");
                    let (done, _) = otc_edit::anchor::append_under_heading(
                        text,
                        &note,
                        heading,
                        None,
                        &bullet,
                        p.heading.is_none(),
                    )
                    .map_err(|e| e.detail("field", format!("patches[{i}].heading")))?;
                    links_in = true;
                    done.text
                }
                PatchOp::Append => {
                    let add = screened(p.text.as_deref().unwrap_or(""), &p.path, &mut problems)?;
                    if otc_parser::parse(&add).links.iter().any(|l| wiki::names_page(&l.target, path)) {
                        links_in = true;
                    } else {
                        problems.push(Problem::new(
                            "patch_without_link",
                            Some(&p.path),
                            "the appended text does not link the page",
                        ));
                    }
                    match &p.heading {
                        Some(h) => {
                            otc_edit::anchor::append_under_heading(text, &note, h, None, &add, false)
                                .map_err(|e| e.detail("field", format!("patches[{i}].heading")))?
                                .0
                                .text
                        }
                        None => {
                            let nl = otc_edit::anchor::line_break(text);
                            let sep = if text.is_empty() || text.ends_with('\n') { "" } else { nl };
                            format!("{text}{sep}{add}{}", if add.ends_with('\n') { "" } else { nl })
                        }
                    }
                }
            };
            planned.push((i, new_text));
        }

        // Schema and link findings.
        let page_note = otc_kernel::memory::parse_note(&page_text)?;
        let frontmatter = page_note.frontmatter.as_ref().and_then(|f| f.value.clone());
        problems.extend(
            wiki::schema_problems(ctx, &view, &folders, path, input.page_type.as_deref(), frontmatter.as_ref()).await?,
        );
        problems
            .extend(wiki::link_problems(ctx, &view, path, &page_note, input.sources.as_deref().unwrap_or(&[])).await?);
        if !links_in && !wiki::has_inbound(ctx, &view, path).await? {
            problems.push(Problem::new("no_inbound_link", Some(path), "no note links the page: add a link patch"));
        }

        // An overwrite of a page with content is confirmed like write_note's.
        if let Some((entry, _)) = &current
            && entry.size > 0
        {
            writing::confirm(ctx, true, "it overwrites a wiki page").await?;
        }

        // One commit: the page and every patch, each expecting what was read.
        let mut texts = vec![page_text.into_bytes()];
        texts.extend(planned.iter().map(|(_, t)| t.clone().into_bytes()));
        let stored = writing::put_contents(ctx, texts).await?;
        let mut changes =
            vec![writing::put(path, writing::expect_of(current.as_ref().map(|(e, _)| e)), stored[0].0, stored[0].1)];
        for ((i, _), (hash, size)) in planned.iter().zip(&stored[1..]) {
            changes.push(writing::put(&patches[*i].path, Expect::Hash(patch_prev[*i]), *hash, *size));
        }
        // The commit queues the regeneration of the generated index.md and log.md.
        if let Err(stale) = writing::commit(ctx, &view, &changes, None).await? {
            return Err(writing::stale_error(&view, &stale));
        }
        Ok(Output {
            vault: view.vault.name.clone(),
            page: Written {
                path: path.to_string(),
                created: current.is_none(),
                content_hash: hex::encode(stored[0].0),
            },
            patched: planned
                .iter()
                .zip(&stored[1..])
                .map(|((i, _), (hash, _))| Patched {
                    path: patches[*i].path.clone(),
                    op: patches[*i].op,
                    content_hash: hex::encode(hash),
                })
                .collect(),
            problems,
        })
    }
}

/// `text` after the screen: refused (content_rejected) on a takeover attempt; signs and
/// replaced secrets become problems.
fn screened(text: &str, path: &str, problems: &mut Vec<Problem>) -> Result<String, ToolError> {
    let s = screen(text);
    if let Some(why) = s.refused {
        return Err(ToolError::with_message(
            ErrorCode::ContentRejected,
            "the text tries to give instructions to an AI reader",
        )
        .detail("reason", why)
        .detail("path", path.to_string()));
    }
    for kind in s.suspects {
        problems.push(Problem::new(
            "poison_suspect",
            Some(path),
            format!("the text may address an AI reader ({kind})"),
        ));
    }
    if !s.redacted.is_empty() {
        let kinds: BTreeSet<&str> = s.redacted.into_iter().collect();
        problems.push(Problem::new(
            "redacted",
            Some(path),
            format!("secrets were replaced: {}", kinds.into_iter().collect::<Vec<_>>().join(", ")),
        ));
    }
    Ok(s.text)
}
