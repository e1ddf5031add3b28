use std::collections::HashSet;

use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_parser::{Link, LinkKind};
use otc_store::Expect;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::not_found;
use otc_kernel::{CallContext, Tool, writing};

pub struct PruneHubLinks;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    #[serde(default)]
    pub remove_unresolved: Option<bool>,
    #[serde(default)]
    pub remove_duplicates: Option<bool>,
    /// Default true; apply with false and the dry run's prev_hash.
    #[serde(default)]
    pub dry_run: Option<bool>,
    #[serde(default)]
    pub prev_hash: Option<String>,
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
    pub path: String,
    pub dry_run: bool,
    /// True when your read ACL is restricted: a link that leads to no note you can read may
    /// lead to one someone else can, so unresolved links were kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unresolved_kept: Option<bool>,
    pub removed_count: usize,
    /// Each link removed (dry run: that would be), in file order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed: Option<Vec<Removed>>,
    /// The hash the note had: pass it as prev_hash to apply the preview.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prev_hash: Option<String>,
    /// The note's hash after a real run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Removed {
    /// 1-based.
    pub line: usize,
    /// The link as written.
    pub link: String,
    /// unresolved or duplicate.
    pub reason: &'static str,
    /// line_removed (the line held only the link, as in a list of links), unlinked (the link's
    /// text stays as plain words) or embed_removed.
    pub action: &'static str,
}

impl Tool for PruneHubLinks {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Graph),
        scopes: &["write:notes"],
        scope_class: otc_catalog::ScopeClass::Write,
        core: false,
        destructive: Sometimes::OnSomeCalls,
        hitl: Sometimes::OnSomeCalls,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "prune_hub_links",
            "Prune a hub's links",
            "Removes unresolved and duplicate links from a hub note: a link-only line goes, a link in prose \
             becomes plain text. Dry run by default.",
            Domain::Links,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        view.readable_path(&input.path)?;
        let dry = input.dry_run.unwrap_or(true);
        if !dry {
            writing::check_write(&view, &input.path, "path")?;
        }
        let prev = writing::parse_prev_hash(input.prev_hash.as_deref())?;
        let unresolved = input.remove_unresolved.unwrap_or(true);
        let duplicates = input.remove_duplicates.unwrap_or(true);
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let mut replanned = false;
        loop {
            let (entry, text) =
                writing::current_text(ctx, view.vault.id, &input.path).await?.ok_or_else(|| not_found(&input.path))?;
            writing::check_prev(&input.path, prev, Some(&entry))?;
            let note = otc_kernel::memory::parse_note(&text)?;
            // Where each link leads among what the caller can read. A caller whose read ACL is
            // restricted cannot tell a dangling link from one to a note it may not read, and
            // neither may the answer: its unresolved links are kept, whatever they lead to.
            let asked: Vec<(&str, &str)> = note
                .links
                .iter()
                .filter(|l| !l.target.is_empty())
                .map(|l| (l.target.as_str(), input.path.as_str()))
                .collect();
            let mut tx = ctx.begin().await?;
            let resolved = tx.resolve_among_readable(view.vault.id, view.readable(), &asked).await?;
            let restricted = view.readable().is_some();
            tx.commit().await?;
            let mut resolved = resolved.into_iter();
            let mut picks = Vec::new();
            let mut seen = HashSet::new();
            for (i, link) in note.links.iter().enumerate() {
                let to = if link.target.is_empty() { Some(input.path.clone()) } else { resolved.next().flatten() };
                let reason = match &to {
                    None if unresolved && !restricted => Some("unresolved"),
                    None => None,
                    Some(to) => {
                        // A repeat within the body, the embeds or the properties; a note
                        // linked from both a property and the body is linked twice on purpose.
                        let kind = match link.kind {
                            LinkKind::Embed => "embed",
                            LinkKind::Body => "body",
                            LinkKind::Property => "property",
                        };
                        let key = (kind, to.clone(), subpath_key(link));
                        (!seen.insert(key) && duplicates).then_some("duplicate")
                    }
                };
                if let Some(reason) = reason {
                    picks.push((i, reason));
                }
            }
            let (new_text, removed) = prune(&text, &note, &picks)?;
            let mut out = Output {
                vault: view.vault.name.clone(),
                path: input.path.clone(),
                dry_run: dry,
                unresolved_kept: (unresolved && restricted).then_some(true),
                removed_count: removed.len(),
                removed: Some(removed),
                prev_hash: Some(hex::encode(entry.hash)),
                content_hash: None,
            };
            if dry || out.removed_count == 0 {
                return Ok(out);
            }
            writing::confirm(ctx, true, "it removes links from the note").await?;
            let (hash, size) = writing::put_content(ctx, new_text.into_bytes()).await?;
            let change = writing::put(&input.path, Expect::Hash(entry.hash), hash, size);
            match writing::commit(ctx, &view, &[change], None).await? {
                Ok(_) => {
                    out.content_hash = Some(hex::encode(hash));
                    if !detailed {
                        (out.removed, out.prev_hash) = (None, None);
                    }
                    return Ok(out);
                }
                // Someone wrote the note in between: plan again from what is there, once,
                // unless the caller pinned the content it previewed.
                Err(_) if prev.is_none() && !replanned => replanned = true,
                Err(stale) => return Err(writing::stale_error(&view, &stale)),
            }
        }
    }
}

/// What makes two links to the same note different targets: the heading or block they name.
fn subpath_key(link: &Link) -> String {
    match &link.subpath {
        Some(otc_parser::Subpath::Heading(h)) => format!("#{}", h.to_lowercase()),
        Some(otc_parser::Subpath::Block(b)) => format!("#^{}", b.to_lowercase()),
        None => String::new(),
    }
}

/// The text without the picked links (`picks`: index into `note.links`, reason), and what
/// became of each. The result is parsed again: every other link must be there as it was, and
/// frontmatter that parsed must still parse, or the call is refused with nothing written.
fn prune(
    text: &str,
    note: &otc_parser::Note,
    picks: &[(usize, &'static str)],
) -> Result<(String, Vec<Removed>), ToolError> {
    let mut out = text.to_string();
    let mut removed = Vec::with_capacity(picks.len());
    // Back to front, so earlier offsets stay valid (a line goes only when the link is all it
    // holds, so no other picked link is on it).
    for &(i, reason) in picks.iter().rev() {
        let link = &note.links[i];
        let range = link.span.range();
        let line_start = out[..range.start].rfind('\n').map_or(0, |n| n + 1);
        let line_end = out[range.end..].find('\n').map_or(out.len(), |n| range.end + n);
        let only = bare(&out[line_start..range.start], true) && bare(&out[range.end..line_end], false);
        let action = if only {
            let cut_end = if line_end < out.len() { line_end + 1 } else { line_end };
            let cut_start = if cut_end == line_end && line_start > 0 { line_start - 1 } else { line_start };
            out.replace_range(cut_start..cut_end, "");
            "line_removed"
        } else if link.kind == LinkKind::Embed {
            out.replace_range(range, "");
            "embed_removed"
        } else {
            out.replace_range(range, &display(link));
            "unlinked"
        };
        removed.push(Removed { line: link.span.start.line + 1, link: link.raw.clone(), reason, action });
    }
    removed.reverse();
    let again = otc_parser::parse(&out);
    let picked: HashSet<usize> = picks.iter().map(|(i, _)| *i).collect();
    let kept: Vec<&str> =
        note.links.iter().enumerate().filter(|(i, _)| !picked.contains(i)).map(|(_, l)| l.raw.as_str()).collect();
    let now: Vec<&str> = again.links.iter().map(|l| l.raw.as_str()).collect();
    let frontmatter_ok = |n: &otc_parser::Note| n.frontmatter.as_ref().is_none_or(|f| f.error.is_none());
    if kept != now || (frontmatter_ok(note) && !frontmatter_ok(&again)) {
        return Err(ToolError::with_message(
            ErrorCode::InvalidInput,
            "removing these links would change other links or break the frontmatter; nothing was written",
        )
        .detail("reason", "unprovable_edit"));
    }
    Ok((out, removed))
}

/// Whether the text beside a link on its line is only list syntax, quotes and trailing
/// punctuation: then the line is the link's alone.
fn bare(side: &str, before: bool) -> bool {
    let s = side.trim();
    let s = s.trim_matches(|c| c == '"' || c == '\'');
    if before {
        let s = s.trim_start_matches(['-', '*', '+']).trim();
        let s = s.strip_prefix("[ ]").or_else(|| s.strip_prefix("[x]")).or_else(|| s.strip_prefix("[X]")).unwrap_or(s);
        let digits = s.trim_end_matches(['.', ')']);
        s.trim().is_empty()
            || (!digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) && digits.len() < s.len())
    } else {
        s.chars().all(|c| matches!(c, ',' | ';' | '.' | ' ' | '\t' | '\r'))
    }
}

/// The words a link shows, for a link unlinked in prose: its alias, else its target's name.
fn display(link: &Link) -> String {
    if let Some(alias) = &link.alias {
        return alias.clone();
    }
    let name = link.target.rsplit('/').next().unwrap_or(&link.target);
    let name = name.strip_suffix(".md").unwrap_or(name);
    match &link.subpath {
        Some(otc_parser::Subpath::Heading(h)) if name.is_empty() => h.clone(),
        Some(otc_parser::Subpath::Heading(h)) => format!("{name} > {h}"),
        _ => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, picks: &[(usize, &'static str)]) -> (String, Vec<&'static str>) {
        let note = otc_parser::parse(text);
        let (out, removed) = prune(text, &note, picks).unwrap();
        (out, removed.iter().map(|r| r.action).collect())
    }

    #[test]
    fn a_list_item_goes_whole_and_prose_keeps_its_words() {
        let (out, actions) = run(
            "# Hub\n- [[Gone]]\n- [[Kept]]\nSee [[Gone|the old page]] here.\n",
            &[(0, "unresolved"), (2, "unresolved")],
        );
        assert_eq!(out, "# Hub\n- [[Kept]]\nSee the old page here.\n");
        assert_eq!(actions, ["line_removed", "unlinked"]);
        let (out, _) = run("1. [[A]],\n2. [[A]]", &[(1, "duplicate")]);
        assert_eq!(out, "1. [[A]],");
        let (out, actions) =
            run("text ![[pic.png]] more\n[[Old#Part]] and [[B]]\n", &[(0, "unresolved"), (1, "unresolved")]);
        assert_eq!(out, "text  more\nOld > Part and [[B]]\n");
        assert_eq!(actions, ["embed_removed", "unlinked"]);
    }

    #[test]
    fn a_property_list_item_goes_and_the_frontmatter_still_parses() {
        let text = "---\nrelated:\n  - \"[[Gone]]\"\n  - \"[[Kept]]\"\n---\nbody\n";
        let (out, _) = run(text, &[(0, "unresolved")]);
        assert_eq!(out, "---\nrelated:\n  - \"[[Kept]]\"\n---\nbody\n");
    }
}
