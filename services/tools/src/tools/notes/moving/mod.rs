//! Moves with their link rewrites, planned and proven before anything is written, committed as
//! one batch: what move_note, bulk_move_notes and move_attachment share.
//!
//! A plan reads every note that could be affected (those with a link named like a moved file,
//! old name or new, and the moved notes themselves, whose relative links may change meaning),
//! rewrites each with `otc_edit::rewrite::plan_note` (which proves every changed link by
//! parsing the result again), and turns the moves and rewrites into one list of changes, each
//! expecting exactly the content the plan was made from. The commit engine applies all of them
//! in one transaction or none; when a linking note changed in between, the plan is made once
//! more, and a second change is refused as concurrent_modification.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use futures::{StreamExt, TryStreamExt};
use otc_edit::rewrite::{Moved, plan_note};
use otc_errors::{ErrorCode, ToolError};
use otc_store::{Action, Change, Expect, FileEntry};
use otc_vault::links::{Resolver, affected_link_keys, lookup_keys};
use schemars::JsonSchema;
use serde::Serialize;

use otc_kernel::CallContext;
use otc_kernel::reading::View;
use otc_kernel::writing;

/// One move as asked for, with what is at each end now.
#[derive(Debug, Clone)]
pub struct MoveSpec {
    pub from: String,
    pub to: String,
    pub source: FileEntry,
    /// What is at `to` now (an overwrite), when anything.
    pub dest: Option<FileEntry>,
}

/// A planned batch.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The changes to commit (filled by [`materialize`]).
    pub changes: Vec<Change>,
    /// Per linking note (its path after the moves): the links rewritten in it.
    pub rewritten: BTreeMap<String, usize>,
    /// Per linking note (its path before the moves): each rewritten link, before and after.
    pub details: BTreeMap<String, Vec<otc_edit::rewrite::ChangedLink>>,
    /// The new texts: (path before the moves, the hash it was planned from, text).
    pending: Vec<(String, otc_store::Hash, String)>,
    /// Where each overwritten destination went in the trash.
    pub trashed: HashMap<String, String>,
    /// The vault's sequence the plan was made at: the batch commits only if nothing else that
    /// could change it was committed since.
    pub head: i64,
    /// The link keys the plan depends on: a file with one of these names appearing or going,
    /// or a note gaining a link with one, can change it.
    names: BTreeSet<String>,
    /// The content hash each move's destination will hold (filled by [`materialize`]).
    pub dest_hash: HashMap<String, otc_store::Hash>,
    /// Raw-source notes that link what moves: never rewritten (spec: "Renames leave raw notes
    /// alone"); the readable ones by path, the others counted.
    immutable: Vec<String>,
    immutable_hidden: usize,
}

// What a move's answer says of the raw-source notes it left alone (a plain comment: a doc
// comment would become the description of every output it is flattened into).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ImmutableSkipped {
    /// Notes in the wiki's raw sources folder that you can read and that link what moved: left
    /// as they were, so their links now point at the old name.
    pub immutable_not_updated: Vec<String>,
    /// How many such notes you cannot read.
    pub immutable_not_updated_hidden: usize,
    pub immutable_warning: &'static str,
}

impl Plan {
    pub fn links(&self) -> usize {
        self.rewritten.values().sum()
    }

    /// The raw-source notes left alone, when there were any.
    pub fn immutable_skipped(&self) -> Option<ImmutableSkipped> {
        (!self.immutable.is_empty() || self.immutable_hidden > 0).then(|| ImmutableSkipped {
            immutable_not_updated: self.immutable.clone(),
            immutable_not_updated_hidden: self.immutable_hidden,
            immutable_warning: "raw sources are immutable: their links to the moved name were not rewritten;                                 repoint them outside the server",
        })
    }
}

/// Plans `moves` (nothing is stored or written); with `update_links` false only the files move.
pub async fn plan(
    ctx: &CallContext<'_>,
    view: &View,
    moves: &[MoveSpec],
    update_links: bool,
) -> Result<Plan, ToolError> {
    let moved: Vec<Moved> = moves.iter().map(|m| Moved { from: &m.from, to: &m.to }).collect();
    let from_set: BTreeSet<&str> = moves.iter().map(|m| m.from.as_str()).collect();

    // The notes whose links can change: those with a link named like a moved file (old name
    // or new), and the moved notes themselves.
    let mut keys: BTreeSet<String> = BTreeSet::new();
    for m in moves {
        keys.extend(affected_link_keys(&m.from));
        keys.extend(affected_link_keys(&m.to));
    }
    let keys: Vec<String> = keys.into_iter().collect();
    if update_links {
        writing::index_covering(ctx, view.vault.id).await?;
    }
    let started = std::time::Instant::now();
    let mut sources: BTreeSet<String> = BTreeSet::new();
    let mut tx = ctx.begin().await?;
    let head = tx.head_seq(view.vault.id).await?;
    if update_links {
        let links = tx.links_named(view.vault.id, &keys).await?;
        sources.extend(links.into_iter().map(|l| l.source_path));
    }
    // Their manifest rows, read with the links (one snapshot); the moved notes' rows are in hand.
    let wanted: Vec<String> = sources.iter().filter(|p| !from_set.contains(p.as_str())).cloned().collect();
    let mut entries: Vec<FileEntry> = tx.files_at(view.vault.id, &wanted).await?;
    tx.commit().await?;
    entries.extend(moves.iter().map(|m| m.source.clone()));
    // Notes and canvases only, and never Obsidian's own state or the trash.
    let hidden = |p: &str| p.starts_with(".obsidian/") || p.starts_with(".trash/") || p.starts_with(".git/");
    let links_in =
        |p: &str| matches!(otc_store::FileKind::of_path(p), otc_store::FileKind::Note | otc_store::FileKind::Canvas);
    entries.retain(|e| links_in(&e.path) && !hidden(&e.path));
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    entries.dedup_by(|a, b| a.path == b.path);
    let looked_up = started.elapsed();

    // Read them all.
    let texts: Vec<(String, FileEntry, String)> = futures::stream::iter(entries)
        .map(|entry| {
            async move {
                let path = entry.path.clone();
                let bytes = writing::blob(ctx, &entry.hash).await?;
                // A note that is not text holds no links to rewrite.
                match String::from_utf8(bytes.to_vec()) {
                    Ok(text) => Ok::<_, ToolError>(Some((path, entry, text))),
                    Err(_) => Ok(None),
                }
            }
        })
        .buffer_unordered(16)
        .try_filter_map(|found| async move { Ok(found) })
        .try_collect()
        .await?;

    let read = started.elapsed();

    // The resolvers: every file a link of these notes could name, before and after the moves.
    let mut names: BTreeSet<String> = keys.iter().cloned().collect();
    for (path, _, text) in &texts {
        if is_canvas(path) {
            if let Ok(canvas) = otc_formats::canvas::parse(text) {
                let links = otc_formats::canvas::links(&canvas);
                names.extend(links.files.iter().flat_map(|f| lookup_keys(f)));
                names.extend(links.text_links.iter().flat_map(|l| lookup_keys(&l.target)));
            }
            continue;
        }
        for link in otc_parser::parse(text).links {
            names.extend(lookup_keys(&link.target));
        }
    }
    let name_list: Vec<String> = names.iter().cloned().collect();
    let mut tx = ctx.begin().await?;
    let mut paths = tx.paths_named(view.vault.id, &name_list).await?;
    tx.commit().await?;
    for m in moves {
        if !paths.contains(&m.from) {
            paths.push(m.from.clone());
        }
    }
    let before = Resolver::new(paths.iter().cloned());
    let to_set: BTreeSet<&str> = moves.iter().map(|m| m.to.as_str()).collect();
    let after = Resolver::new(
        paths
            .iter()
            .filter(|p| !from_set.contains(p.as_str()) && !to_set.contains(p.as_str()))
            .cloned()
            .chain(moves.iter().map(|m| m.to.clone())),
    );

    let mut plan = Plan { head, names, ..Plan::default() };
    let mut new_text: HashMap<String, String> = HashMap::new();
    let mut hidden = false;
    let mut unwritable: Vec<String> = Vec::new();
    let mut refusal: Option<ToolError> = None;
    let target_of: HashMap<&str, &str> = moves.iter().map(|m| (m.from.as_str(), m.to.as_str())).collect();
    for (path, _, text) in &texts {
        let after_path = target_of.get(path.as_str()).copied().unwrap_or(path.as_str());
        let rewrite = if is_canvas(path) && (update_links || from_set.contains(path.as_str())) {
            otc_edit::rewrite::plan_canvas(text, path, after_path, &before, &after, &moved)
        } else if update_links || from_set.contains(path.as_str()) {
            plan_note(text, path, after_path, &before, &after, &moved)
        } else {
            Ok(None)
        };
        // A wiki's generated pages are the workers' to write (the commit queues their
        // regeneration); an edit would break their seal.
        if !from_set.contains(path.as_str()) && view.is_wiki_generated(path) {
            continue;
        }
        // A raw source's links are never rewritten (so one that could not be is no refusal).
        let raw = !from_set.contains(path.as_str()) && view.acl().immutable_folder(path).is_some();
        if raw && !matches!(rewrite, Ok(None)) {
            if view.can_read(path) {
                plan.immutable.push(path.clone());
            } else {
                plan.immutable_hidden += 1;
            }
            continue;
        }
        match rewrite {
            Ok(None) => {}
            Ok(Some(rewrite)) => {
                if !view.can_read(path) {
                    hidden = true;
                } else if !from_set.contains(path.as_str()) && !view.acl().can_write(path) {
                    unwritable.push(path.clone());
                } else {
                    plan.rewritten.insert(after_path.to_string(), rewrite.links.len());
                    plan.details.insert(path.clone(), rewrite.links);
                    new_text.insert(path.clone(), rewrite.text);
                }
            }
            Err(why) if view.can_read(path) => {
                refusal.get_or_insert(why.into_error(Some(path)));
            }
            Err(_) => hidden = true,
        }
    }
    if hidden {
        return Err(ToolError::with_message(
            ErrorCode::InvalidInput,
            "notes you cannot read link to what would move, and their links cannot be updated; nothing was moved",
        )
        .detail("hidden_notes", true));
    }
    if let Some(refusal) = refusal {
        return Err(refusal);
    }
    if !unwritable.is_empty() {
        return Err(ToolError::with_message(
            ErrorCode::AclDenied,
            "notes whose links would need updating are outside the folders this caller may write; nothing was moved",
        )
        .detail("notes", unwritable));
    }

    for (path, entry, _) in &texts {
        if let Some(text) = new_text.remove(path) {
            plan.pending.push((path.clone(), entry.hash, text));
        }
    }
    tracing::debug!(
        notes = texts.len(),
        rewritten = plan.pending.len(),
        lookup_us = looked_up.as_micros() as u64,
        read_us = (read - looked_up).as_micros() as u64,
        rewrite_us = (started.elapsed() - read).as_micros() as u64,
        "move planned"
    );
    Ok(plan)
}

/// Turns a plan into its batch (storing the new texts): each move (the destination gets the
/// rewritten text when the note's own links changed), each rewritten note expecting exactly the
/// content the plan was made from, and the trash copy of each overwritten destination.
pub async fn materialize(
    ctx: &CallContext<'_>,
    view: &View,
    moves: &[MoveSpec],
    plan: &mut Plan,
) -> Result<(), ToolError> {
    let mut texts: HashMap<String, (otc_store::Hash, String)> =
        plan.pending.drain(..).map(|(path, hash, text)| (path, (hash, text))).collect();
    for m in moves {
        let (hash, size) = match texts.remove(&m.from) {
            Some((_, text)) => writing::put_content(ctx, text.into_bytes()).await?,
            None => (m.source.hash, m.source.size),
        };
        plan.dest_hash.insert(m.to.clone(), hash);
        plan.changes.push(Change { path: m.from.clone(), expect: Expect::Hash(m.source.hash), action: Action::Delete });
        plan.changes.push(writing::put(&m.to, writing::expect_of(m.dest.as_ref()), hash, size));
        if let Some(dest) = &m.dest {
            let trash = writing::trash_change(ctx, view, &m.to, dest).await?;
            plan.trashed.insert(m.to.clone(), trash.path.clone());
            plan.changes.push(trash);
        }
    }
    let mut rest: Vec<(String, (otc_store::Hash, String))> = texts.into_iter().collect();
    rest.sort_by(|a, b| a.0.cmp(&b.0));
    let (paths, texts): (Vec<(String, otc_store::Hash)>, Vec<Vec<u8>>) =
        rest.into_iter().map(|(path, (was, text))| ((path, was), text.into_bytes())).unzip();
    let stored = writing::put_contents(ctx, texts).await?;
    for ((path, was), (hash, size)) in paths.into_iter().zip(stored) {
        plan.changes.push(writing::put(&path, Expect::Hash(was), hash, size));
    }
    Ok(())
}

/// Plans and commits `moves` (see the module docs): one batch, committed only if the vault is
/// still as planned. When other commits landed meanwhile and none of them can touch the plan
/// (no file of a name it depends on came or went, no note gained such a link), it commits
/// as planned; otherwise it plans once more, and a second conflict is refused.
pub async fn run(
    ctx: &CallContext<'_>,
    view: &View,
    moves: &[MoveSpec],
    update_links: bool,
) -> Result<Plan, ToolError> {
    let mut replanned = false;
    let mut plan = plan(ctx, view, moves, update_links).await?;
    let started = std::time::Instant::now();
    materialize(ctx, view, moves, &mut plan).await?;
    let stored = started.elapsed();
    for _ in 0..16 {
        let stale = match writing::commit_at(ctx, view, &plan.changes, None, Some(plan.head)).await? {
            Ok(_) => {
                tracing::debug!(
                    changes = plan.changes.len(),
                    store_us = stored.as_micros() as u64,
                    commit_us = (started.elapsed() - stored).as_micros() as u64,
                    "move committed"
                );
                return Ok(plan);
            }
            Err(stale) => stale,
        };
        // The moved files themselves changed: the caller planned from content that is gone.
        if stale.paths.iter().any(|p| moves.iter().any(|m| m.from == *p || m.to == *p)) {
            return Err(writing::stale_error(view, &stale));
        }
        if let Some(now) = stale.head_moved
            && !touches(ctx, view, &plan, now).await?
        {
            plan.head = now;
            continue;
        }
        if replanned {
            return Err(writing::stale_error(view, &stale));
        }
        replanned = true;
        plan = self::plan(ctx, view, moves, update_links).await?;
        materialize(ctx, view, moves, &mut plan).await?;
    }
    Err(writing::stale_error(view, &otc_store::Stale { paths: Vec::new(), missing: Vec::new(), head_moved: None }))
}

/// Whether any change committed after the plan's sequence (up to `now`) can change it: a file
/// whose name the plan depends on came or went or changed, or a note now links such a name.
async fn touches(ctx: &CallContext<'_>, view: &View, plan: &Plan, now: i64) -> Result<bool, ToolError> {
    let mut tx = ctx.begin().await?;
    let records = tx.changes_since(view.vault.id, plan.head, now - plan.head).await?;
    tx.commit().await?;
    for record in records {
        if affected_link_keys(&record.path).iter().any(|k| plan.names.contains(k)) {
            return Ok(true);
        }
        let Some(hash) = record.new_hash else { continue };
        let names = |target: &str| lookup_keys(target).iter().any(|k| plan.names.contains(k));
        match otc_store::FileKind::of_path(&record.path) {
            otc_store::FileKind::Note => {
                let bytes = writing::blob(ctx, &hash).await?;
                let text = String::from_utf8_lossy(&bytes);
                if otc_parser::parse(&text).links.iter().any(|l| names(&l.target)) {
                    return Ok(true);
                }
            }
            otc_store::FileKind::Canvas => {
                let bytes = writing::blob(ctx, &hash).await?;
                if let Ok(canvas) = otc_formats::canvas::parse(&String::from_utf8_lossy(&bytes)) {
                    let links = otc_formats::canvas::links(&canvas);
                    if links.files.iter().any(|f| names(f)) || links.text_links.iter().any(|l| names(&l.target)) {
                        return Ok(true);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(false)
}

/// A JSON Canvas file: its links are its file nodes and the links in its text nodes.
fn is_canvas(path: &str) -> bool {
    otc_store::FileKind::of_path(path) == otc_store::FileKind::Canvas
}
