//! What every write tool shares: the write and delete checks of the folder ACL, content into the
//! object store, the one commit path (`otc_indexer::commit`: one transaction, then the vault's
//! generation and inline indexing before the answer), the compare-and-swap on `prev_hash`, the
//! read-modify-write loop that redoes an edit when another writer got in first, the trash
//! naming, and the one confirmation gate of destructive calls.
//!
//! Every change is committed with the hash it was planned from as its expected state, so a
//! concurrent writer is never overwritten: the commit is refused and the edit redone on the new
//! text (or, when the caller pinned `prev_hash`, refused as concurrent_modification).

use otc_errors::{ErrorCode, ToolError};
use otc_indexer::commit::Announced;
use otc_store::{Action, Change, Expect, FileEntry, Hash, Provenance, Stale};
use otc_vault::acl::{Op, Verdict};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::reading::{View, not_found};
use crate::{CallContext, internal};

/// How many times an edit is redone when other writers keep getting in first.
const EDIT_ATTEMPTS: u32 = 8;

/// A path the caller must be able to write (create, replace): acl_denied otherwise. A path it
/// cannot even read answers the same, so nothing is revealed about what is there.
pub fn check_write(view: &View, path: &str, field: &str) -> Result<(), ToolError> {
    otc_vault::check_path(path).map_err(|e| e.detail("field", field.to_string()))?;
    if view.acl().can_write(path) {
        return Ok(());
    }
    Err(denied(view, Op::Write, path, field, "the folder ACL does not let this caller write here"))
}

/// A path the caller must be able to delete (delete, move away): acl_denied otherwise.
pub fn check_delete(view: &View, path: &str, field: &str) -> Result<(), ToolError> {
    otc_vault::check_path(path).map_err(|e| e.detail("field", field.to_string()))?;
    if view.acl().can_delete(path) {
        return Ok(());
    }
    if !view.can_read(path) {
        return Err(not_found(path));
    }
    Err(denied(view, Op::Delete, path, field, "the folder ACL does not let this caller delete here"))
}

/// acl_denied for `op` on `path`, naming the layer that refused it (the deployment's floor or
/// the tenant's rules); inspect_acl names the rules.
fn denied(view: &View, op: Op, path: &str, field: &str, message: &str) -> ToolError {
    let verdict = view.acl().explain(op, path);
    let message = match verdict {
        Verdict::Immutable(_) => "the wiki's raw sources folder is immutable: no tool writes, moves or deletes in it",
        Verdict::ScopeRequired(_) => "this file needs a scope the caller does not hold",
        _ => message,
    };
    let mut err = ToolError::with_message(ErrorCode::AclDenied, message)
        .detail("field", field.to_string())
        .detail("operation", op.as_str());
    match verdict {
        Verdict::Denied(layer, _) => err = err.detail("layer", layer.as_str()),
        Verdict::Immutable(_) => err = err.detail("reason", "immutable_raw_folder"),
        Verdict::ScopeRequired(scope) => err = err.detail("reason", "scope_required").detail("scope", scope),
        _ => {}
    }
    err
}

/// A name the call is about to create: storable on every desktop, link-safe
/// (`otc_vault::check_new_name`), and not one that would clash with an existing file on a
/// case-insensitive or normalization-insensitive file system (macOS, Windows).
pub async fn check_new_name(ctx: &CallContext<'_>, view: &View, path: &str, field: &str) -> Result<(), ToolError> {
    check_new_name_except(ctx, view, path, field, None).await
}

/// [`check_new_name`] for a rename: the file moving away from `from` does not count, so a
/// case-only rename (`a.md` to `A.md`) stays allowed.
pub async fn check_new_name_except(
    ctx: &CallContext<'_>,
    view: &View,
    path: &str,
    field: &str,
    from: Option<&str>,
) -> Result<(), ToolError> {
    otc_vault::check_new_name(path).map_err(|e| e.detail("field", field.to_string()))?;
    let mut tx = ctx.begin().await?;
    let clashes = tx.name_clashes(view.vault.id, path, from).await?;
    tx.commit().await?;
    match clashes.first() {
        None => Ok(()),
        Some(first) => Err(name_clash(view, &clashes, first.folder.is_some(), field)),
    }
}

/// The rule for a destination a call writes whole (copy_note, move_note, write_attachment): a new
/// name must pass the new-name rules (the file moving away from `renamed_from` does not count);
/// an existing file is replaced only with `overwrite`, and then only with a person's
/// confirmation when `confirm`.
#[allow(clippy::too_many_arguments)]
pub async fn check_destination(
    ctx: &CallContext<'_>,
    view: &View,
    path: &str,
    field: &str,
    now: Option<&FileEntry>,
    overwrite: bool,
    renamed_from: Option<&str>,
    confirm: bool,
) -> Result<(), ToolError> {
    match now {
        None => check_new_name_except(ctx, view, path, field, renamed_from).await,
        Some(_) if !overwrite => Err(ToolError::with_message(
            ErrorCode::NoteExists,
            "a file already exists at the destination; pass overwrite: true to replace it",
        )
        .detail("path", path.to_string())),
        Some(_) => self::confirm(ctx, confirm, "it replaces the file at the destination").await,
    }
}

/// conflict: the new name clashes with an existing file (or folder); `details.existing` names
/// it only when the caller can read a file that shows it, so a hidden path never leaks.
fn name_clash(view: &View, clashes: &[otc_store::NameClash], folder: bool, field: &str) -> ToolError {
    let shown = clashes.iter().filter(|c| c.folder.is_some() == folder).find(|c| view.can_read(&c.path));
    let what = if folder { "a folder" } else { "a file" };
    let message = format!(
        "{what} whose name differs from this one only by letter case or Unicode normalization already exists; \
         macOS and Windows cannot keep both. {}",
        match (shown.is_some(), folder) {
            (true, false) => "Write to that file (details.existing) or pick another name.",
            (true, true) => "Spell the folder as it is spelled (details.existing) or pick another name.",
            (false, _) => "Pick another name.",
        }
    );
    let mut error = ToolError::with_message(ErrorCode::Conflict, message)
        .detail("field", field.to_string())
        .detail("clash", if folder { "folder" } else { "file" });
    if let Some(c) = shown {
        error = error.detail("existing", c.folder.clone().unwrap_or_else(|| c.path.clone()));
    }
    error
}

/// `prev_hash` as given: 64 hex digits.
pub fn parse_prev_hash(prev: Option<&str>) -> Result<Option<Hash>, ToolError> {
    let Some(text) = prev else { return Ok(None) };
    let mut out = [0u8; 32];
    hex::decode_to_slice(text.trim(), &mut out).map_err(|_| {
        ToolError::with_message(
            ErrorCode::InvalidInput,
            "prev_hash is the content_hash a read returned (64 hex digits)",
        )
        .detail("field", "prev_hash")
    })?;
    Ok(Some(out))
}

/// The compare-and-swap of `prev_hash` against what is at `path` now.
pub fn check_prev(path: &str, prev: Option<Hash>, current: Option<&FileEntry>) -> Result<(), ToolError> {
    match (prev, current) {
        (None, _) => Ok(()),
        (Some(want), Some(entry)) if entry.hash == want => Ok(()),
        (Some(want), now) => Err(ToolError::with_message(
            ErrorCode::ConcurrentModification,
            "the note changed since prev_hash was read; nothing was written",
        )
        .detail("path", path.to_string())
        .detail("expected", hex::encode(want))
        .detail("actual", now.map(|e| Value::String(hex::encode(e.hash))).unwrap_or(Value::Null))
        .detail("stale", vec![path.to_string()])),
    }
}

/// The manifest row at `path` as the database has it now (not from the gateway's cache: a
/// write plans from the latest state).
pub async fn current(ctx: &CallContext<'_>, vault: uuid::Uuid, path: &str) -> Result<Option<FileEntry>, ToolError> {
    Ok(ctx.services().store.file(ctx.caller.tenant_id, vault, path).await?)
}

/// Returns once the vault's index covers every commit up to `head`, indexing what is due when
/// need be, for a plan that reads links from the index (a move's rewrites): a lagging index
/// would hide the notes that link what moves. Waits at most `index.rewrite_wait_ms`; past it
/// the call is refused (service_unavailable, nothing done) and the workers go on indexing.
pub async fn index_covering(ctx: &CallContext<'_>, vault: uuid::Uuid) -> Result<(), ToolError> {
    let services = ctx.services();
    let mut tx = ctx.begin().await?;
    let (head, indexed) = tx.index_progress(vault).await?;
    tx.commit().await?;
    if indexed >= head {
        return Ok(());
    }
    let wait = std::time::Duration::from_millis(services.config.index.rewrite_wait_ms);
    let refused = || {
        ToolError::with_message(
            ErrorCode::ServiceUnavailable,
            format!(
                "the vault's index is {} changes behind and links are rewritten from it; nothing was changed. \
                 Retry in a minute, once get_index_status shows it caught up",
                head - indexed
            ),
        )
        .detail("dependency", "index")
        .detail("behind", head - indexed)
    };
    match tokio::time::timeout(wait, services.indexer.catch_up_to(ctx.caller.tenant_id, vault, head)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => {
            tracing::warn!(%vault, error = %e.chain(), "indexing before a link rewrite failed");
            Err(refused())
        }
        Err(_) => Err(refused()),
    }
}

/// The bytes of a blob.
pub async fn blob(ctx: &CallContext<'_>, hash: &Hash) -> Result<bytes::Bytes, ToolError> {
    Ok(ctx.services().blobs.get_blob(ctx.caller.tenant_id, hash).await?)
}

/// A note's text: refused when it is not UTF-8 (an edit would corrupt it).
pub fn note_text(path: &str, bytes: &[u8]) -> Result<String, ToolError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| {
        ToolError::with_message(ErrorCode::InvalidInput, "the file is not UTF-8 text; it cannot be edited as a note")
            .detail("path", path.to_string())
    })
}

/// The current text of the note at `path`, with its row, or None when nothing is there.
pub async fn current_text(
    ctx: &CallContext<'_>,
    vault: uuid::Uuid,
    path: &str,
) -> Result<Option<(FileEntry, String)>, ToolError> {
    let tool = ctx.tool;
    let Some(entry) = current(ctx, vault, path).await? else { return Ok(None) };
    Ok(Some(text_of(ctx, tool, entry).await?))
}

/// The text of the note `entry` (the manifest row at `path`) holds; a note too large to parse
/// or edit whole is refused.
async fn text_of(ctx: &CallContext<'_>, path: &str, entry: FileEntry) -> Result<(FileEntry, String), ToolError> {
    crate::reading::check_parse_size(ctx, path, &entry)?;
    let bytes = blob(ctx, &entry.hash).await?;
    let text = note_text(path, &bytes)?;
    Ok((entry, text))
}

/// Stores `bytes` as a blob of the caller's tenant (inventory row first, as uploads do) and
/// returns its hash and size. Refuses content over the upload limit.
pub async fn put_content(ctx: &CallContext<'_>, bytes: Vec<u8>) -> Result<(Hash, i64), ToolError> {
    let stored = put_contents(ctx, vec![bytes]).await?;
    Ok(stored[0])
}

/// [`put_content`] for many contents at once: one inventory statement, then the objects written
/// sixteen at a time. Returns each content's hash and size, in order.
pub async fn put_contents(ctx: &CallContext<'_>, contents: Vec<Vec<u8>>) -> Result<Vec<(Hash, i64)>, ToolError> {
    use futures::{StreamExt, TryStreamExt};
    let limit = ctx.services().config.sync.max_blob_bytes;
    if contents.iter().any(|c| c.len() > limit) {
        return Err(ToolError::with_message(
            ErrorCode::InvalidInput,
            format!("the content is larger than the limit of {limit} bytes"),
        )
        .detail("field", "content")
        .detail("limit", limit));
    }
    let stored: Vec<(Hash, i64)> = contents.iter().map(|c| (otc_blobs::Blobs::hash_of(c), c.len() as i64)).collect();
    let services = ctx.services();
    let mut tx = ctx.begin().await?;
    tx.record_blobs(&stored).await.map_err(|e| crate::store_refusal(&e))?;
    // Inventory rows: a retry records the same ones, so they are not the call's effect.
    tx.commit_repeatable().await?;
    let tenant = ctx.caller.tenant_id;
    let hashes: Vec<Hash> = stored.iter().map(|(hash, _)| *hash).collect();
    futures::stream::iter(contents.into_iter().zip(hashes))
        .map(|(bytes, hash)| async move {
            services.blobs.put_blob(tenant, &hash, bytes.into()).await.map_err(ToolError::from)
        })
        .buffer_unordered(16)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(stored)
}

/// A put of stored content at `path`, expecting `expect` there.
pub fn put(path: &str, expect: Expect, hash: Hash, size: i64) -> Change {
    Change { path: path.to_string(), expect, action: Action::Put { hash, size, mtime: chrono::Utc::now() } }
}

/// What a change expects at a path that holds `entry` now: when None, a new name (absent, and
/// no other file's name clashes with it when the commit lands).
pub fn expect_of(entry: Option<&FileEntry>) -> Expect {
    entry.map_or(Expect::NewName, |e| Expect::Hash(e.hash))
}

/// Commits `changes` through the one commit path, recording the tool, the principal and the
/// client. `Err(Stale)` when a path changed since it was planned (nothing applied).
pub async fn commit(
    ctx: &CallContext<'_>,
    view: &View,
    changes: &[Change],
    origin: Option<&str>,
) -> Result<Result<Announced, Stale>, ToolError> {
    commit_at(ctx, view, changes, origin, None).await
}

/// What the change log records about a call's writes: the principal, the tool, the client.
pub fn provenance(ctx: &CallContext<'_>, origin: Option<&str>) -> Provenance {
    let tool = ctx.tool;
    Provenance {
        principal_id: Some(ctx.caller.principal_id),
        tool: Some(tool.to_string()),
        client_name: ctx.client_name.map(str::to_string),
        client_model: None,
        origin: origin.map(str::to_string),
        client_tool: None,
        token_id: Some(ctx.caller.token_id),
    }
}

/// [`commit`], refused unless the vault is still at sequence `at_head` (when given).
pub async fn commit_at(
    ctx: &CallContext<'_>,
    view: &View,
    changes: &[Change],
    origin: Option<&str>,
    at_head: Option<i64>,
) -> Result<Result<Announced, Stale>, ToolError> {
    let tool = ctx.tool;
    let services = ctx.services();
    // What the features check of a write (a wiki's conventions), before anything lands.
    services.features.vet_commit(ctx, view, changes).await?;
    // A change in a wiki's folder (but to its generated pages) queues their regeneration with
    // the commit, for the workers.
    let jobs = services.features.commit_jobs(view, changes.iter().map(|c| c.path.as_str()));
    let who = provenance(ctx, origin);
    // The last checkpoint of the call's memory budget: past it, nothing is written.
    crate::memory::check()?;
    // A hold put on while the call ran (or a background pass writing for the system) stops here.
    let (store, tenant) = (&services.store, ctx.caller.tenant_id);
    services.read_only.check_write(store, tenant, Some(&view.vault.name)).await?;
    let tx = ctx.begin().await?;
    let (indexer, kv, vault) = (&services.indexer, &services.kv, view.vault.id);
    let landed = otc_indexer::commit::commit_with_jobs(indexer, kv, tx, vault, changes, &who, at_head, jobs)
        .await
        .map_err(|e| match e {
            otc_indexer::IndexError::Store(otc_store::StoreError::Quota(q)) => crate::quota_exceeded(&q),
            // A dependency that went away mid-commit is named, retryable (logged with its chain).
            otc_indexer::IndexError::Store(e) if e.is_unavailable() => e.answer(),
            otc_indexer::IndexError::Blob { source: e @ otc_blobs::BlobError::Unavailable(_), .. } => e.into(),
            other => internal(tool, &other),
        })?;
    if landed.is_ok() {
        crate::memory::committed();
    }
    Ok(landed)
}

/// The refusal for a commit whose planned state no longer holds: concurrent_modification
/// naming every stale path the caller may read (the others are only counted), or not found for
/// a delete of a path that holds nothing.
pub fn stale_error(view: &View, stale: &Stale) -> ToolError {
    if stale.paths.is_empty()
        && let Some(path) = stale.missing.first()
    {
        return not_found(path);
    }
    if stale.paths.is_empty() && stale.missing.is_empty() {
        return ToolError::with_message(
            ErrorCode::ConcurrentModification,
            "the vault kept changing while this call was planned; nothing was written",
        )
        .detail("stale", Vec::<String>::new());
    }
    let named: Vec<String> = stale.paths.iter().filter(|p| view.can_read(p)).cloned().collect();
    let hidden = stale.paths.len() - named.len();
    let mut error = ToolError::with_message(
        ErrorCode::ConcurrentModification,
        format!("{} note(s) changed while this call ran; nothing was written", stale.paths.len()),
    )
    .detail("stale", named);
    if hidden > 0 {
        error = error.detail("hidden_notes", true);
    }
    error
}

/// Writes `text` as the whole file at `path` (field `field`): a new name must pass the new-name
/// rules; an existing file is replaced only with `overwrite`, then with a person's confirmation,
/// its old content kept in the trash. The edit's extra is whether the file was created.
pub async fn write_whole(
    ctx: &CallContext<'_>,
    view: &View,
    path: &str,
    field: &str,
    text: &str,
    overwrite: bool,
) -> Result<Edited<bool>, ToolError> {
    let now = current(ctx, view.vault.id, path).await?;
    check_destination(ctx, view, path, field, now.as_ref(), overwrite, None, true).await?;
    edit_read_note(ctx, view, path, None, None, Some(now), |existing, _| match existing {
        // Made by another writer since the check: replaced only with overwrite.
        Some(_) if !overwrite => Err(ToolError::with_message(ErrorCode::NoteExists, "a file already exists at path")
            .detail("path", path.to_string())),
        existing => Ok(Planned { text: text.to_string(), extra: existing.is_none(), trash_old: existing.is_some() }),
    })
    .await
}

/// The result of one read-modify-write edit.
pub struct Edited<T> {
    /// The row before the edit (None: the call created the note).
    pub before: Option<FileEntry>,
    pub content_hash: Hash,
    pub size: i64,
    /// False when the edit left the text as it was (nothing was committed).
    pub changed: bool,
    pub extra: T,
}

/// What an edit function returns: the new text and whatever the tool reports about it.
pub struct Planned<T> {
    pub text: String,
    pub extra: T,
    /// Whether the replaced text also goes to `.trash/` (an overwrite).
    pub trash_old: bool,
}

/// Reads the note at `path`, asks `edit` for its new text (given the current text, or None when
/// the path holds nothing), and commits it with a compare-and-swap on what was read. When the
/// caller gave no `prev_hash` and another writer got in between, the note is read again and the
/// edit redone (at most eight times, with growing, jittered pauses), so concurrent edits never lose one another.
pub async fn edit_note<T, F>(
    ctx: &CallContext<'_>,
    view: &View,
    path: &str,
    prev: Option<Hash>,
    origin: Option<&str>,
    edit: F,
) -> Result<Edited<T>, ToolError>
where
    F: FnMut(Option<&str>, Option<&FileEntry>) -> Result<Planned<T>, ToolError>,
{
    edit_read_note(ctx, view, path, prev, origin, None, edit).await
}

/// [`edit_note`] for a caller that has just read the manifest row at `path` (`read`:
/// `Some(None)` when nothing was there): the first attempt plans from that row instead of
/// reading it again. A row that moved on in between costs what any race costs: the commit's
/// compare-and-swap refuses it, and the edit is redone from a fresh read.
#[allow(clippy::too_many_arguments)]
pub async fn edit_read_note<T, F>(
    ctx: &CallContext<'_>,
    view: &View,
    path: &str,
    prev: Option<Hash>,
    origin: Option<&str>,
    mut read: Option<Option<FileEntry>>,
    mut edit: F,
) -> Result<Edited<T>, ToolError>
where
    F: FnMut(Option<&str>, Option<&FileEntry>) -> Result<Planned<T>, ToolError>,
{
    let tool = ctx.tool;
    let mut last = None;
    for attempt in 0..EDIT_ATTEMPTS {
        if attempt > 0 {
            // Spread the retries of writers that collided, so they do not collide again.
            let jitter = u64::from(
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos()) % 16,
            );
            tokio::time::sleep(std::time::Duration::from_millis(u64::from(attempt) * 4 + jitter)).await;
        }
        let now = match read.take() {
            Some(None) => None,
            Some(Some(entry)) => Some(text_of(ctx, tool, entry).await?),
            None => current_text(ctx, view.vault.id, path).await?,
        };
        let entry = now.as_ref().map(|(e, _)| e.clone());
        check_prev(path, prev, entry.as_ref())?;
        let planned = edit(now.as_ref().map(|(_, t)| t.as_str()), entry.as_ref())?;
        if let Some((entry, text)) = &now
            && *text == planned.text
        {
            return Ok(Edited {
                before: Some(entry.clone()),
                content_hash: entry.hash,
                size: entry.size,
                changed: false,
                extra: planned.extra,
            });
        }
        let (hash, size) = put_content(ctx, planned.text.into_bytes()).await?;
        let mut changes = vec![put(path, expect_of(entry.as_ref()), hash, size)];
        if planned.trash_old
            && let Some(old) = &entry
        {
            changes.push(trash_change(ctx, view, path, old).await?);
        }
        match commit(ctx, view, &changes, origin).await? {
            Ok(_) => {
                return Ok(Edited { before: entry, content_hash: hash, size, changed: true, extra: planned.extra });
            }
            Err(stale) if entry.is_none() && stale.paths.iter().any(|p| p == path) => {
                // Another writer landed a name that clashes with this new one (`a.md` against
                // `A.md`): say so, as the check before the commit would have.
                check_new_name(ctx, view, path, "path").await?;
                last = Some(stale);
            }
            Err(stale) if prev.is_none() && stale.missing.is_empty() => last = Some(stale),
            Err(stale) => return Err(stale_error(view, &stale)),
        }
    }
    Err(stale_error(view, &last.expect("the loop ran")))
}

/// Where a removed or replaced file goes in the vault's trash: `.trash/<path>`, or
/// `.trash/<stem> (n).<ext>` with the first n free. The first hundred names are checked in one
/// query; a name replaced more often than that (a log an agent overwrites) gets the time in
/// milliseconds as n, so a deep trash costs one more query, not one per copy.
pub async fn trash_path(ctx: &CallContext<'_>, vault: uuid::Uuid, path: &str) -> Result<String, ToolError> {
    let first = format!(".trash/{path}");
    let (stem, ext) = match first.rsplit_once('.') {
        Some((stem, ext)) if !ext.contains('/') && !stem.ends_with('/') => (stem.to_string(), format!(".{ext}")),
        _ => (first.clone(), String::new()),
    };
    let numbered = |n: u64| if n == 0 { first.clone() } else { format!("{stem} ({n}){ext}") };
    let millis = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    for names in [(0..100).map(numbered).collect::<Vec<_>>(), (millis..millis + 100).map(numbered).collect()] {
        let mut tx = ctx.begin().await?;
        let taken = tx.existing_paths(vault, &names).await?;
        tx.commit().await?;
        if let Some(free) = names.into_iter().find(|n| !taken.contains(n)) {
            return Ok(free);
        }
    }
    Err(ToolError::with_message(ErrorCode::Conflict, "the trash holds too many copies of this name")
        .detail("path", path))
}

/// A delete of `entry` at `path`, with its copy into the trash unless `permanent`: the changes
/// and where the copy goes.
pub async fn delete_changes(
    ctx: &CallContext<'_>,
    view: &View,
    path: &str,
    entry: &FileEntry,
    permanent: bool,
) -> Result<(Vec<Change>, Option<String>), ToolError> {
    let mut changes = vec![Change { path: path.to_string(), expect: Expect::Hash(entry.hash), action: Action::Delete }];
    if permanent {
        return Ok((changes, None));
    }
    let trash = trash_change(ctx, view, path, entry).await?;
    let to = trash.path.clone();
    changes.push(trash);
    Ok((changes, Some(to)))
}

/// The change that keeps `old` (what is at `path` now) in the trash.
pub async fn trash_change(
    ctx: &CallContext<'_>,
    view: &View,
    path: &str,
    old: &FileEntry,
) -> Result<Change, ToolError> {
    let to = trash_path(ctx, view.vault.id, path).await?;
    Ok(put(&to, Expect::Absent, old.hash, old.size))
}

/// The hash a confirmation is bound to: SHA-256 over the tool's name and the canonical JSON of
/// its arguments (keys sorted, `elicit_token` left out).
pub fn args_hash(tool: &str, args: &Value) -> String {
    fn canonical(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().filter(|k| *k != "elicit_token").collect();
                keys.sort();
                out.push('{');
                for (i, key) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push(':');
                    canonical(&map[key], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    canonical(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut text = String::new();
    canonical(args, &mut text);
    let mut h = Sha256::new();
    h.update(tool.as_bytes());
    h.update([0]);
    h.update(text.as_bytes());
    hex::encode(h.finalize())
}

/// The one confirmation gate. A destructive call (`needed`) answers elicit_required, bound to
/// its arguments by `details.args_hash`, unless the deployment turned confirmation off
/// (`tools.confirm_destructive`), the call carries a confirmation token minted for it
/// (`confirmation::redeem`: this caller, tool and arguments, unexpired, unused), or the client
/// asked its person (MCP elicitation, on stdio) and they accepted.
pub async fn confirm(ctx: &CallContext<'_>, needed: bool, reason: &str) -> Result<(), ToolError> {
    let tool = ctx.tool;
    if !needed || !ctx.services().config.tools.confirm_destructive {
        return Ok(());
    }
    let hash = args_hash(tool, ctx.args);
    if let Some(token) = ctx.args.get("elicit_token").and_then(Value::as_str) {
        let services = ctx.services();
        return crate::confirmation::redeem(
            &services.store,
            &services.kv,
            &services.confirmation_keys,
            ctx.caller,
            tool,
            &hash,
            ctx.args.get("vault").and_then(Value::as_str),
            token,
        )
        .await;
    }
    // A client that can ask its person (MCP elicitation on a stateful connection) is asked.
    if let Some(ask) = ctx.ask {
        let message = format!("Confirm {tool}: {reason}.\nArguments: {}", otc_errors::echo(&ctx.args.to_string()));
        match ask(crate::Ask { message, tool: tool.to_string(), args_hash: hash.clone() }).await {
            Some(true) => return Ok(()),
            Some(false) => {
                return Err(ToolError::with_message(
                    ErrorCode::ElicitRequired,
                    format!("{tool} was not confirmed: the person declined ({reason})"),
                )
                .detail("args_hash", hash)
                .detail("tool", tool.to_string())
                .detail("declined", true));
            }
            None => {}
        }
    }
    let command = format!(
        "obsidian-tc elicit --tenant {} --principal {} --tool {tool} --hash {hash}",
        ctx.caller.tenant_id, ctx.caller.principal_id
    );
    let vault = ctx.args.get("vault").and_then(Value::as_str);
    let command = match vault {
        Some(vault) => format!("{command} --vault {}", shell_word(vault)),
        None => command,
    };
    let mut error =
        ToolError::with_message(ErrorCode::ElicitRequired, format!("{tool} needs a person's confirmation: {reason}"))
            .detail("args_hash", hash)
            .detail("tool", tool.to_string())
            .detail("reason", reason.to_string())
            .detail("principal", ctx.caller.principal_id.to_string())
            .detail("command", command);
    if let Some(vault) = vault {
        error = error.detail("vault", vault.to_string());
    }
    Err(error)
}

/// `word` quoted for a POSIX shell when it needs it.
fn shell_word(word: &str) -> String {
    if !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_hash_ignores_key_order_and_the_token() {
        let a = serde_json::json!({"vault": "V", "path": "a.md", "nested": {"y": 1, "x": [2, 3]}});
        let b = serde_json::json!({"nested": {"x": [2, 3], "y": 1}, "elicit_token": "t", "path": "a.md", "vault": "V"});
        assert_eq!(args_hash("delete_note", &a), args_hash("delete_note", &b));
        assert_ne!(args_hash("delete_note", &a), args_hash("move_note", &a));
        let c = serde_json::json!({"vault": "V", "path": "b.md", "nested": {"y": 1, "x": [2, 3]}});
        assert_ne!(args_hash("delete_note", &a), args_hash("delete_note", &c));
    }
}

#[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Anchor {
    #[serde(rename = "type")]
    pub kind: AnchorKind,
    /// Text without #s; "Parent > Child" for one under a parent.
    #[serde(default)]
    pub heading: Option<String>,
    /// 1-based, when several headings match.
    #[serde(default)]
    pub occurrence: Option<u32>,
    /// Without ^.
    #[serde(default)]
    pub block_id: Option<String>,
    /// A top-level property (none: the preamble).
    #[serde(default)]
    pub field: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AnchorKind {
    Heading,
    Block,
    Frontmatter,
}

/// Where an edit acts, from a tool's `anchor` argument (read_note's shape).
pub enum AnchorAt {
    /// A heading, a block, or (a frontmatter anchor without a field) the preamble.
    Text(otc_edit::anchor::Target),
    /// One frontmatter property.
    Field(String),
}

impl AnchorAt {
    pub fn of(anchor: &Anchor) -> Result<AnchorAt, ToolError> {
        use otc_edit::anchor::Target;
        let missing = |field: &str| {
            ToolError::with_message(ErrorCode::InvalidInput, format!("anchor.{field} is required for this anchor type"))
                .detail("field", format!("anchor.{field}"))
        };
        Ok(match anchor.kind {
            AnchorKind::Heading => AnchorAt::Text(Target::Heading {
                heading: anchor.heading.clone().filter(|h| !h.trim().is_empty()).ok_or_else(|| missing("heading"))?,
                occurrence: anchor.occurrence,
            }),
            AnchorKind::Block => AnchorAt::Text(Target::Block {
                id: anchor.block_id.clone().filter(|b| !b.trim().is_empty()).ok_or_else(|| missing("block_id"))?,
            }),
            AnchorKind::Frontmatter => match &anchor.field {
                Some(field) if !field.trim().is_empty() => AnchorAt::Field(field.clone()),
                _ => AnchorAt::Text(Target::Preamble),
            },
        })
    }
}

/// A frontmatter value given as text: JSON when it parses as JSON, else the text itself.
pub fn field_value(content: &str) -> Value {
    serde_json::from_str(content.trim()).unwrap_or_else(|_| Value::String(content.to_string()))
}

/// Who stands behind the content (in the change log).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// A person's (the default).
    Authored,
    /// An agent's synthesis.
    AgentSynthesis,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Authored => "authored",
            Origin::AgentSynthesis => "agent_synthesis",
        }
    }
}

/// The schema of an argument that takes any JSON value: the JSON types listed (a schema with
/// no type is not in the portable subset).
pub fn any_json(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["string", "number", "boolean", "array", "object", "null"] })
}
