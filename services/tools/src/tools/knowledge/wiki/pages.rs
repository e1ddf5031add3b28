//! The wiki's generated pages (spec: "Generated index and log pages"): `index.md` lists every
//! page of the wiki folder by its SCHEMA.md type; `log.md` projects the folder's change log, one
//! line per change, after the `last_seq` its frontmatter keeps. Workers write them, never a
//! request: every commit that changes the wiki folder (commit_wiki_page, a write, a move, a
//! person's sync) leaves a `wiki_pages` job in its own transaction, and the scheduled pass
//! queues one per wiki. Both list only what a reader holding no rule of their own may read
//! (the deployment's floor and the tenant's rule for everyone), never an Excluded file.
//!
//! Each page is sealed: an HMAC-SHA-256 in its frontmatter over the vault's id, the path and the
//! text without the seal line, under a key derived from the tenant's key in Postgres for that
//! vault, so every worker and gateway agrees on it (the spec's per-server key file cannot: our
//! workers are many processes). A page whose seal does not verify (edited by hand, or someone's
//! own index.md) is left as it is, logged, and reported by lint_wiki's generated_pages check.
//! The write is a commit expecting the content that was verified, so an edit made meanwhile
//! makes it stale and nothing is overwritten: the gap the spec leaves between hash and rename
//! does not exist here.

use hmac::{Hmac, Mac};
use otc_catalog::facade::Surface;
use otc_errors::ToolError;
use otc_store::{Expect, LogLine, NewJob, Provenance, Vault};
use otc_vault::acl::Audience;
use serde_json::Value;
use sha2::Sha256;
use uuid::Uuid;

use otc_kernel::reading::View;
use otc_kernel::reading::{WIKI_INDEX_PAGE as INDEX_PAGE, WIKI_LOG_PAGE as LOG_PAGE};
use otc_kernel::{CallContext, Caller, Dispatcher, internal, store_refusal, writing};

/// The outbox job that regenerates a vault's generated pages.
pub const JOB: &str = "wiki_pages";
/// What the pages' provenance records name as the tool.
const TOOL: &str = "wiki_pages";
/// The marker that says the server wrote a page.
const MARKER: &str = "generated_by: obsidian-tc";
const SEAL_PREFIX: &str = "seal: hmac-sha256:";
/// Change-log records one pass projects at most (the rest wait for the next pass).
const LOG_BATCH: i64 = 5_000;
/// Pages whose `type` one query reads.
const TYPE_PAGE: i64 = 2_000;

/// The job a commit that changes a wiki folder leaves.
pub fn job() -> NewJob {
    NewJob { kind: JOB.into(), payload: Value::Object(Default::default()) }
}

/// The jobs a commit of changes at `paths` leaves for the generated pages: one when a path is
/// in the view's wiki folder (and not a generated page), else none.
pub fn jobs_for(view: &View, mut paths: &mut dyn Iterator<Item = &str>) -> Vec<NewJob> {
    let Some(w) = view.wiki() else { return Vec::new() };
    let folder = format!("{}/", w.folder);
    if Iterator::any(&mut paths, |p| p.starts_with(&folder) && !view.is_wiki_generated(p)) {
        vec![job()]
    } else {
        Vec::new()
    }
}

/// Whether a generated page can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seal {
    /// Sealed by this deployment and unchanged since.
    Valid,
    /// No `generated_by` marker: someone's own page of that name.
    Unmarked,
    /// Marked, but the seal is missing or does not match: edited by hand.
    Broken,
}

/// What a pass did with one page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Written,
    Unchanged,
    /// Left as it is: its seal does not verify.
    LeftAlone(Seal),
}

/// What a pass did with a vault's two pages (None: the vault has no wiki).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Regenerated {
    pub index: Outcome,
    pub log: Outcome,
    /// The change log had more records than one pass projects.
    pub more: bool,
}

type HmacSha256 = Hmac<Sha256>;

/// The vault's seal key: the tenant's key (made on first use, kept in Postgres) through HMAC
/// with the vault's id.
pub async fn seal_key(ctx: &CallContext<'_>, vault: Uuid) -> Result<[u8; 32], ToolError> {
    let services = ctx.services();
    let tenant_key = services.confirmation_keys.get(&services.store, ctx.caller.tenant_id).await?;
    let mut mac = HmacSha256::new_from_slice(&tenant_key).expect("any key length");
    mac.update(b"obsidian-tc wiki page seal v1\0");
    mac.update(vault.as_bytes());
    Ok(mac.finalize().into_bytes().into())
}

fn mac_of(key: &[u8; 32], vault: Uuid, path: &str, unsealed: &str) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(key).expect("any key length");
    mac.update(vault.as_bytes());
    mac.update(path.as_bytes());
    mac.update(b"\0");
    mac.update(unsealed.as_bytes());
    mac
}

/// `text` (whose frontmatter has a `seal:` line to fill) with its seal.
fn seal(key: &[u8; 32], vault: Uuid, path: &str, text: &str) -> String {
    let tag = hex::encode(mac_of(key, vault, path, text).finalize().into_bytes());
    text.replacen("---\n", &format!("---\n{SEAL_PREFIX}{tag}\n"), 1)
}

/// Whether the page at `path` holding `text` is one this deployment sealed and nobody changed.
fn verify(key: &[u8; 32], vault: Uuid, path: &str, text: &str) -> Seal {
    let Some(front) = frontmatter(text) else { return Seal::Unmarked };
    if !front.lines().any(|l| l == MARKER) {
        return Seal::Unmarked;
    }
    let Some(line) = front.lines().find(|l| l.starts_with(SEAL_PREFIX)) else { return Seal::Broken };
    let Ok(tag) = hex::decode(&line[SEAL_PREFIX.len()..]) else { return Seal::Broken };
    let unsealed = text.replacen(&format!("{line}\n"), "", 1);
    match mac_of(key, vault, path, &unsealed).verify_slice(&tag) {
        Ok(()) => Seal::Valid,
        Err(_) => Seal::Broken,
    }
}

/// The frontmatter's lines (between the opening and closing `---`), when the text starts with
/// one.
fn frontmatter(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---\n").or_else(|| rest.ends_with("\n---").then(|| rest.len() - 4))?;
    Some(&rest[..end])
}

/// The body after the frontmatter.
fn body(text: &str) -> &str {
    match text.strip_prefix("---\n").and_then(|rest| rest.find("\n---\n").map(|end| &rest[end + 5..])) {
        Some(body) => body,
        None => text,
    }
}

/// `name` with control, format and line-separator characters taken out, so one page is one
/// line.
fn one_line(name: &str) -> String {
    name.chars()
        .filter(|c| {
            !c.is_control()
                && !matches!(
                    *c,
                    '\u{00AD}'
                        | '\u{061C}'
                        | '\u{180E}'
                        | '\u{200B}'..='\u{200F}'
                        | '\u{2028}'..='\u{202E}'
                        | '\u{2060}'..='\u{206F}'
                        | '\u{FEFF}'
                        | '\u{FFF9}'..='\u{FFFB}'
                        | '\u{E0000}'..='\u{E007F}'
                )
        })
        .collect()
}

/// A link to the page at `path`: a wikilink by its path (without `.md`) showing its name, or its
/// path in code when the name cannot live inside a wikilink.
fn link(path: &str) -> String {
    let target = path.strip_suffix(".md").unwrap_or(path);
    let name = target.rsplit('/').next().unwrap_or(target);
    let (target, name) = (one_line(target), one_line(name));
    if target.contains(['[', ']', '|', '#', '^']) || target.contains("%%") {
        format!("`{}`", target.replace('`', "'"))
    } else {
        format!("[[{target}|{name}]]")
    }
}

const NOTICE: &str = "> [!info] Written by obsidian-tc from the wiki's pages. Do not edit: a changed copy is left \
                      as it is and reported by lint_wiki; delete it and the next pass writes a fresh one.";

/// A principal with no rule of its own in the tenant: the reader the pages are written for.
pub async fn system_caller(store: &otc_store::Store, tenant: Uuid) -> Result<Caller, otc_store::StoreError> {
    let mut tx = store.begin(tenant).await?;
    let access = tx.access(Uuid::nil()).await?;
    tx.commit().await?;
    Ok(Caller {
        tenant_id: tenant,
        token_id: Uuid::nil(),
        principal_id: Uuid::nil(),
        principal_name: "obsidian-tc".into(),
        scopes: ["read:notes".parse().expect("a scope")].into(),
        vault_id: None,
        expires_at: None,
        audience: None,
        rate_tiers: Vec::new(),
        access,
        confirm_in_client: false,
        token_generation: None,
    })
}

/// A context for work a worker does as `caller`, outside any request.
pub fn system_context<'a>(dispatcher: &'a Dispatcher, caller: &'a Caller) -> CallContext<'a> {
    CallContext {
        tool: TOOL,
        caller,
        surface: Surface::Default,
        client_name: Some("obsidian-tc worker"),
        dispatcher,
        progress: None,
        ask: None,
        task: None,
        sample: None,
        args: &Value::Null,
    }
}

/// Writes the vault's index.md and log.md as they should be now (None: the vault has no wiki).
pub async fn regenerate(dispatcher: &Dispatcher, tenant: Uuid, vault: Vault) -> Result<Option<Regenerated>, ToolError> {
    let services = &dispatcher.services;
    let caller = system_caller(&services.store, tenant).await?;
    let ctx = system_context(dispatcher, &caller);
    let mut tx = services.store.begin(tenant).await?;
    let view = View::for_caller(services, &caller, vault, Audience::Tools, &mut tx).await?;
    let Some(wiki) = view.wiki().cloned() else { return Ok(None) };
    let excluded = tx.excluded_paths(view.vault.id).await?.into_iter().collect();
    let readers = every_reader(services, &caller, &view, &mut tx).await?;
    tx.commit().await?;
    let named = Named { view: &view, readers, excluded };
    let key = seal_key(&ctx, view.vault.id).await?;
    let index = write_index(&ctx, &named, &wiki, &key).await?;
    let (log, more) = write_log(&ctx, &named, &wiki, &key).await?;
    Ok(Some(Regenerated { index, log, more }))
}

/// The views of the vault's readers as the tenant's rules make them: one per rule of the vault
/// (a principal's, a group's, everyone's), each under the deployment's floor. A reader's own
/// view grants at least what one of these grants, so a path every one of them reads is a path
/// every reader of the generated pages may read.
async fn every_reader(
    services: &otc_kernel::Services,
    caller: &Caller,
    view: &View,
    tx: &mut otc_store::TenantTx,
) -> Result<Vec<View>, otc_store::StoreError> {
    let rules = tx.acl_rules(Some(view.vault.id)).await?;
    let mut readers = Vec::with_capacity(rules.len());
    for row in rules {
        let mut reader = caller.clone();
        reader.access = otc_store::Access {
            groups: Vec::new(),
            rules: vec![otc_store::VaultRule { vault_id: view.vault.id, rule: row.rule() }],
        };
        readers.push(View::for_caller(services, &reader, view.vault.clone(), Audience::Tools, tx).await?);
    }
    Ok(readers)
}

/// What the pages may name: a path that every reader of the pages may read (the pages are one
/// text for everyone, so a page hidden from some reader is never named there), and that is no
/// Excluded file, raw source or generated page.
struct Named<'a> {
    view: &'a View,
    /// The views the tenant's rules give the vault's readers (see [`every_reader`]).
    readers: Vec<View>,
    excluded: std::collections::HashSet<String>,
}

impl Named<'_> {
    fn allows(&self, path: &str) -> bool {
        !self.excluded.contains(path)
            && !crate::tools::knowledge::wiki::is_raw(self.view, path)
            && !self.view.is_wiki_generated(path)
            && self.view.can_read(path)
            && self.readers.iter().all(|r| r.can_read(path))
    }
}

/// A generated page as it stands: its manifest row and text, and whether its seal holds.
pub(crate) struct Current {
    entry: otc_store::FileEntry,
    text: String,
    pub(crate) seal: Seal,
}

/// The page at `path` of `vault` as it stands, sealed or not (None: nothing is there). Bytes
/// that are not UTF-8 cannot hold a valid seal.
pub(crate) async fn read_page(
    ctx: &CallContext<'_>,
    vault: Uuid,
    path: &str,
    key: &[u8; 32],
) -> Result<Option<Current>, ToolError> {
    let Some(entry) = writing::current(ctx, vault, path).await? else { return Ok(None) };
    let bytes = writing::blob(ctx, &entry.hash).await?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let seal = verify(key, vault, path, &text);
    Ok(Some(Current { entry, text, seal }))
}

/// [`read_page`] for a regeneration, which logs a page it must leave alone.
async fn current(ctx: &CallContext<'_>, view: &View, path: &str, key: &[u8; 32]) -> Result<Option<Current>, ToolError> {
    let Some(page) = read_page(ctx, view.vault.id, path, key).await? else { return Ok(None) };
    if page.seal != Seal::Valid {
        tracing::warn!(
            tenant = %ctx.caller.tenant_id,
            vault = %view.vault.id,
            path,
            seal = ?page.seal,
            "a generated wiki page was changed by hand; left as it is (lint_wiki reports it)"
        );
    }
    Ok(Some(page))
}

/// Commits `text` at `path`, expecting what `before` holds there.
async fn put(
    ctx: &CallContext<'_>,
    view: &View,
    path: &str,
    before: Option<&Current>,
    text: String,
) -> Result<Outcome, ToolError> {
    let services = ctx.services();
    // A held vault's generated pages wait: the job fails and is retried once the hold is lifted.
    services.read_only.check_write(&services.store, ctx.caller.tenant_id, Some(&view.vault.name)).await?;
    let stored = writing::put_contents(ctx, vec![text.into_bytes()]).await?;
    let expect = before.map_or(Expect::Absent, |c| Expect::Hash(c.entry.hash));
    let changes = [writing::put(path, expect, stored[0].0, stored[0].1)];
    let who =
        Provenance { tool: Some(TOOL.into()), client_name: Some("obsidian-tc worker".into()), ..Provenance::default() };
    let tx = ctx.begin().await?;
    let committed = otc_indexer::commit::commit_and_announce(
        &services.indexer,
        &services.kv,
        tx,
        view.vault.id,
        &changes,
        &who,
        None,
    )
    .await
    .map_err(|e| match e {
        otc_indexer::IndexError::Store(s) => store_refusal(&s),
        other => internal(TOOL, &other),
    })?;
    match committed {
        Ok(_) => Ok(Outcome::Written),
        // Changed since it was verified: the next pass looks at it again.
        Err(_) => Err(ToolError::with_message(
            otc_errors::ErrorCode::ConcurrentModification,
            format!("{path} changed while it was being regenerated"),
        )),
    }
}

/// The pages index.md lists: the wiki folder's notes the view reads, less Excluded files,
/// raw sources, SCHEMA.md and the generated pages, each with its `type`.
async fn pages(
    ctx: &CallContext<'_>,
    named: &Named<'_>,
    prefix: &str,
) -> Result<Vec<(String, Option<String>)>, ToolError> {
    let view = named.view;
    let mut tx = ctx.begin().await?;
    let facts = tx.note_facts(view.vault.id, prefix, view.readable()).await?;
    let mut types = std::collections::HashMap::new();
    let mut after: Option<String> = None;
    loop {
        let rows = tx
            .notes_with_property(
                view.vault.id,
                &["type".to_string()],
                None,
                prefix,
                view.readable(),
                after.as_deref(),
                TYPE_PAGE,
            )
            .await?;
        let full = rows.len() as i64 == TYPE_PAGE;
        after = rows.last().map(|(p, _)| p.clone());
        for (path, value) in rows {
            if let Some(t) = value.as_str().map(str::trim).filter(|t| !t.is_empty()) {
                types.insert(path, one_line(t));
            }
        }
        if !full {
            break;
        }
    }
    tx.commit().await?;
    let schema = format!("{prefix}SCHEMA.md");
    Ok(facts
        .into_iter()
        .map(|f| f.path)
        .filter(|p| *p != schema && named.allows(p))
        .map(|p| {
            let t = types.remove(&p);
            (p, t)
        })
        .collect())
}

async fn write_index(
    ctx: &CallContext<'_>,
    named: &Named<'_>,
    wiki: &otc_config::WikiFolders,
    key: &[u8; 32],
) -> Result<Outcome, ToolError> {
    let view = named.view;
    let path = format!("{}/{INDEX_PAGE}", wiki.folder);
    let before = current(ctx, view, &path, key).await?;
    if let Some(c) = &before
        && c.seal != Seal::Valid
    {
        return Ok(Outcome::LeftAlone(c.seal));
    }
    let prefix = format!("{}/", wiki.folder);
    let pages = pages(ctx, named, &prefix).await?;
    // A vault whose wiki holds nothing yet gets no index (the folder is every vault's).
    if pages.is_empty() && before.is_none() {
        return Ok(Outcome::Unchanged);
    }
    let order: Vec<String> = match crate::tools::knowledge::wiki::read_schema(ctx, view, wiki).await? {
        Some(Ok(schema)) => schema.types.iter().map(|t| t.name.clone()).collect(),
        _ => Vec::new(),
    };
    // The schema's types in its order, then the others by name, then the pages with none.
    let mut groups: std::collections::BTreeMap<(usize, String), Vec<&str>> = Default::default();
    for (p, t) in &pages {
        let rank = match t {
            Some(t) => (order.iter().position(|o| o == t).unwrap_or(order.len()), t.clone()),
            None => (usize::MAX, "(no type)".to_string()),
        };
        groups.entry(rank).or_default().push(p);
    }
    let mut listing = String::new();
    for ((_, name), mut paths) in groups {
        paths.sort_by_key(|p| p.to_lowercase());
        listing.push_str(&format!("\n## {name}\n\n"));
        for p in paths {
            listing.push_str(&format!("- {}\n", link(p)));
        }
    }
    let body = format!("\n{NOTICE}\n\n# Index\n\n{} page(s).\n{listing}", pages.len());
    if before.as_ref().is_some_and(|c| self::body(&c.text) == body) {
        return Ok(Outcome::Unchanged);
    }
    let text = seal(key, view.vault.id, &path, &format!("---\n{MARKER}\n---\n{body}"));
    put(ctx, view, &path, before.as_ref(), text).await
}

/// The line above log.md's records.
const LOG_HEADER: &str = "time (UTC) | op | path | principal | model | tool#seq";

/// One line of log.md: time (UTC) | op | path | principal | model | tool#seq.
fn log_line(r: &LogLine) -> String {
    // A name, and what a client says of itself, may hold the column separator.
    let field = |v: &str| one_line(v).replace('|', "\\|");
    let or_dash = |v: Option<&str>| v.map(field).filter(|s| !s.trim().is_empty()).unwrap_or_else(|| "-".into());
    let model = r.client_model.as_deref().or(r.client_name.as_deref());
    format!(
        "{} | {} | {} | {} | {} | {}#{}\n",
        r.committed_at.format("%Y-%m-%dT%H:%M:%SZ"),
        r.op,
        field(&r.path),
        or_dash(r.principal.as_deref()),
        or_dash(model),
        or_dash(r.tool.as_deref()),
        r.seq
    )
}

async fn write_log(
    ctx: &CallContext<'_>,
    named: &Named<'_>,
    wiki: &otc_config::WikiFolders,
    key: &[u8; 32],
) -> Result<(Outcome, bool), ToolError> {
    let view = named.view;
    let path = format!("{}/{LOG_PAGE}", wiki.folder);
    let before = current(ctx, view, &path, key).await?;
    let (last_seq, kept) = match &before {
        None => (0, String::new()),
        Some(c) if c.seal != Seal::Valid => return Ok((Outcome::LeftAlone(c.seal), false)),
        Some(c) => {
            let seq = frontmatter(&c.text)
                .and_then(|f| f.lines().find_map(|l| l.strip_prefix("last_seq: ")))
                .and_then(|v| v.trim().parse::<i64>().ok())
                .unwrap_or(0);
            let lines = body(&c.text).split_once(&format!("{LOG_HEADER}\n\n")).map_or("", |(_, rest)| rest);
            (seq, lines.to_string())
        }
    };
    let prefix = format!("{}/", wiki.folder);
    let mut tx = ctx.begin().await?;
    let records = tx.changes_under(view.vault.id, &prefix, last_seq, LOG_BATCH).await?;
    tx.commit().await?;
    let Some(last) = records.last().map(|r| r.seq) else { return Ok((Outcome::Unchanged, false)) };
    let more = records.len() as i64 == LOG_BATCH;
    let shown: Vec<&LogLine> = records.iter().filter(|r| named.allows(&r.path)).collect();
    // Records it does not show (its own writes, hidden paths) move last_seq on only when a
    // whole batch of them would otherwise be read again and again.
    if shown.is_empty() && !more {
        return Ok((Outcome::Unchanged, false));
    }
    let mut lines = kept;
    for r in shown {
        lines.push_str(&log_line(r));
    }
    let body = format!("\n{NOTICE}\n\n{LOG_HEADER}\n\n{lines}");
    let text = seal(key, view.vault.id, &path, &format!("---\n{MARKER}\nlast_seq: {last}\n---\n{body}"));
    Ok((put(ctx, view, &path, before.as_ref(), text).await?, more))
}

/// One pass over the vaults with `wiki_pages` jobs due, across tenants (one query). A vault is done by one worker at a
/// time (a lock of its own), and only once its index has caught up with the commits that left
/// the jobs (the pages are made from the index); until then its jobs wait, no attempt counted.
/// Its jobs are claimed, its pages regenerated and the jobs finished, or retried with back-off
/// and kept with the error after `max_attempts`; a log that had more to project than one pass
/// takes queues another. Returns the vaults done.
pub async fn run_jobs(dispatcher: &Dispatcher, max_attempts: i32) -> Result<usize, otc_store::StoreError> {
    let store = &dispatcher.services.store;
    let mut done = 0;
    for (tenant, vault_id) in store.due_job_vaults(JOB, 100).await? {
        let mut claim = store.begin(tenant).await?;
        if !claim.try_lock_vault_work(vault_id, JOB).await? {
            continue;
        }
        let jobs = claim.claim_jobs(vault_id, JOB, 100).await?;
        let ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
        let (_, indexed) = claim.index_progress(vault_id).await?;
        if ids.is_empty() || jobs.iter().any(|j| j.seq.is_some_and(|seq| seq > indexed)) {
            continue;
        }
        let Some(vault) = claim.vault(vault_id).await? else {
            claim.finish_jobs(&ids).await?;
            claim.commit().await?;
            continue;
        };
        match regenerate(dispatcher, tenant, vault).await {
            Ok(report) => {
                tracing::info!(%tenant, vault = %vault_id, ?report, "wiki pages regenerated");
                claim.finish_jobs(&ids).await?;
                if report.as_ref().is_some_and(|r| r.more) {
                    claim.queue_job(vault_id, &job()).await?;
                }
                claim.commit().await?;
                done += 1;
            }
            Err(e) => {
                drop(claim);
                let error = format!("{}: {}", e.code.as_str(), e.message);
                tracing::warn!(%tenant, vault = %vault_id, error, "wiki pages failed; will retry");
                let mut tx = store.begin(tenant).await?;
                tx.retry_jobs(&ids, &error, max_attempts, 300.0).await?;
                tx.commit().await?;
            }
        }
    }
    Ok(done)
}

/// Queues a regeneration for each of `tenant`'s vaults with a wiki (the scheduled pass).
/// Returns how many.
pub async fn queue_tenant(dispatcher: &Dispatcher, tenant: Uuid) -> Result<usize, otc_store::StoreError> {
    let services = &dispatcher.services;
    let mut queued = 0;
    let caller = system_caller(&services.store, tenant).await?;
    let mut tx = services.store.begin(tenant).await?;
    for vault in tx.list_vaults().await? {
        let id = vault.id;
        if View::for_caller(services, &caller, vault, Audience::Tools, &mut tx).await?.wiki().is_some() {
            tx.queue_job(id, &job()).await?;
            queued += 1;
        }
    }
    tx.commit().await?;
    Ok(queued)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seal_holds_until_a_byte_changes_and_binds_the_vault_and_path() {
        let key = [7u8; 32];
        let vault = Uuid::from_u128(1);
        let text = seal(&key, vault, "wiki/index.md", &format!("---\n{MARKER}\n---\n\nbody\n"));
        assert_eq!(verify(&key, vault, "wiki/index.md", &text), Seal::Valid);
        assert_eq!(verify(&key, vault, "wiki/index.md", &text.replace("body", "bodY")), Seal::Broken);
        assert_eq!(verify(&key, vault, "wiki/log.md", &text), Seal::Broken);
        assert_eq!(verify(&key, Uuid::from_u128(2), "wiki/index.md", &text), Seal::Broken);
        assert_eq!(verify(&[8u8; 32], vault, "wiki/index.md", &text), Seal::Broken);
        assert_eq!(verify(&key, vault, "wiki/index.md", "# my own index\n"), Seal::Unmarked);
        let unsealed = format!("---\n{MARKER}\n---\nbody\n");
        assert_eq!(verify(&key, vault, "wiki/index.md", &unsealed), Seal::Broken);
    }

    #[test]
    fn names_are_one_line_and_links_stay_links() {
        assert_eq!(one_line("a\u{2028}b\nc\u{200B}d"), "abcd");
        assert_eq!(link("wiki/Topic.md"), "[[wiki/Topic|Topic]]");
        assert_eq!(link("wiki/a|b.md"), "`wiki/a|b`");
    }
}
