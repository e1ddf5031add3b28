//! MCP note resources (`obsidian-tc://<vault>/<path>`, see [`crate::citations`]): what
//! resources/list, resources/read and the read_resources tool share. Every read goes through the
//! tools' own checks: the caller's scopes (read:notes), its vault binding, the vault's folder
//! ACL and the always-hidden folders, so a resource answers exactly as read_note would; any
//! refusal reads as a missing note. With `resources.bound_vault_only`, resources stay on the
//! caller's default vault (the one its token is bound to, or the tenant's only vault).

use std::collections::HashMap;

use otc_catalog::facade::Surface;
use otc_errors::{ErrorCode, ToolError};
use otc_store::{FileKind, Vault};
use serde_json::Value;

use crate::citations::{note_title, note_uri, parse_note_uri};
use crate::reading::{Content, DEFAULT_PAGE, View, decode_cursor, encode_cursor, not_found, read_content};
use crate::{CallContext, Caller, Dispatcher, ResponseFormat};

/// The scopes a caller needs to list or read a note resource (read_note's).
pub const SCOPES: &[&str] = &["read:notes"];
/// The MIME type of a note resource.
pub const MIME_TYPE: &str = "text/markdown";
/// The catalogue as a resource: every tool this caller may list (hidden tags and scopes
/// applied as for tools/list), by name, with its title, domain, tags, scopes and description.
pub const CATALOG_URI: &str = "obsidian-tc://catalog";
/// The catalogue resource's MIME type.
pub const CATALOG_MIME_TYPE: &str = "application/json";
/// What resources/list and resources/read are called in logs and cursors.
const LIST: &str = "resources/list";
const READ: &str = "resources/read";

/// A note as resources/list lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct NoteResource {
    pub uri: String,
    pub vault: String,
    pub path: String,
    /// The file name without `.md`.
    pub title: String,
    /// Bytes of the raw note.
    pub size: i64,
}

/// One page of resources/list.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourcePage {
    pub resources: Vec<NoteResource>,
    /// Absent on the last page.
    pub next_cursor: Option<String>,
}

/// A note resource read, whole.
pub struct NoteText {
    /// The canonical URI (however the caller spelt it).
    pub uri: String,
    pub vault: String,
    pub path: String,
    /// The raw markdown.
    pub text: String,
    /// Where the body starts (after the frontmatter block).
    pub body_start: usize,
    pub content_hash: String,
    pub size: i64,
    pub mtime: chrono::DateTime<chrono::Utc>,
}

impl NoteText {
    pub fn body(&self) -> &str {
        &self.text[self.body_start..]
    }
}

/// What resources/read returns: the text in the configured response format.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceText {
    pub uri: String,
    pub mime_type: &'static str,
    pub text: String,
}

fn may_read(caller: &Caller) -> bool {
    SCOPES.iter().all(|s| caller.scopes.iter().any(|g| g.grants(s)))
}

/// An URI that names no note resource.
pub fn unknown_uri(uri: &str) -> ToolError {
    ToolError::with_message(ErrorCode::NotFound, "no resource has this URI; notes are obsidian-tc://<vault>/<path>")
        .detail("uri", uri.to_string())
}

async fn tenant_vaults(ctx: &CallContext<'_>) -> Result<Vec<Vault>, ToolError> {
    let mut tx = ctx.begin().await?;
    let mut vaults = tx.list_vaults().await?;
    tx.commit().await?;
    vaults.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(vaults)
}

/// The vaults the caller's note resources reach, in name order.
async fn reachable_vaults(ctx: &CallContext<'_>) -> Result<Vec<Vault>, ToolError> {
    if !may_read(ctx.caller) {
        return Ok(Vec::new());
    }
    let vaults = tenant_vaults(ctx).await?;
    Ok(match ctx.caller.vault_id {
        Some(bound) => vaults.into_iter().filter(|v| v.id == bound).collect(),
        None if ctx.services().config.resources.bound_vault_only && vaults.len() != 1 => Vec::new(),
        None => vaults,
    })
}

/// The caller's view of the vault named `vault`, for a note resource at `path`: not found
/// (for `path`) when the caller may not reach it.
async fn open(ctx: &CallContext<'_>, vault: &str, path: &str) -> Result<View, ToolError> {
    if !may_read(ctx.caller) {
        return Err(not_found(path));
    }
    let view = match View::open(ctx, vault).await {
        Err(e) if e.code == ErrorCode::VaultNotFound => return Err(not_found(path)),
        other => other?,
    };
    if ctx.services().config.resources.bound_vault_only
        && ctx.caller.vault_id.is_none()
        && tenant_vaults(ctx).await?.len() != 1
    {
        return Err(not_found(path));
    }
    Ok(view)
}

/// Reads the note resource `uri` whole. `views` keeps the vaults opened so far (a batch opens
/// each once).
pub async fn read(ctx: &CallContext<'_>, views: &mut HashMap<String, View>, uri: &str) -> Result<NoteText, ToolError> {
    let (vault, path) = parse_note_uri(uri).ok_or_else(|| unknown_uri(uri))?;
    if FileKind::of_path(&path) != FileKind::Note {
        return Err(not_found(&path));
    }
    if !views.contains_key(&vault) {
        let view = open(ctx, &vault, &path).await?;
        views.insert(vault.clone(), view);
    }
    let view = &views[&vault];
    let Content { text, content_hash, entry } = read_content(ctx, view, &path).await?;
    let body_start = otc_parser::parse_head(&text).body_start;
    Ok(NoteText {
        uri: note_uri(&view.vault.name, &path),
        vault: view.vault.name.clone(),
        path,
        text,
        body_start,
        content_hash,
        size: entry.size,
        mtime: entry.mtime,
    })
}

/// One page of the notes the caller may read, across the vaults its resources reach, in
/// (vault, path) order.
pub async fn list(ctx: &CallContext<'_>, cursor: Option<&str>) -> Result<ResourcePage, ToolError> {
    let after: Option<(String, String)> = cursor.map(|c| decode_cursor(LIST, c)).transpose()?;
    let notes = [".md".to_string()];
    let mut out: Vec<NoteResource> = Vec::new();
    for vault in reachable_vaults(ctx).await? {
        if after.as_ref().is_some_and(|(name, _)| vault.name < *name) {
            continue;
        }
        let view = View::open(ctx, &vault.name).await?;
        let after_path = after.as_ref().filter(|(name, _)| *name == vault.name).map(|(_, p)| p.as_str());
        let want = DEFAULT_PAGE + 1 - out.len();
        let mut tx = ctx.begin().await?;
        let rows = tx.list_files(vault.id, "", true, Some(&notes), view.readable(), after_path, want as i64).await?;
        tx.commit().await?;
        out.extend(rows.into_iter().map(|r| NoteResource {
            uri: note_uri(&vault.name, &r.path),
            vault: vault.name.clone(),
            title: note_title(&r.path).to_string(),
            path: r.path,
            size: r.size,
        }));
        if out.len() > DEFAULT_PAGE {
            break;
        }
    }
    let more = out.len() > DEFAULT_PAGE;
    out.truncate(DEFAULT_PAGE);
    let next_cursor = more.then(|| {
        let last = out.last().expect("a full page");
        encode_cursor(LIST, &(&last.vault, &last.path))
    });
    Ok(ResourcePage { resources: out, next_cursor })
}

/// How long a listener goes without reading the change log even though no vault generation
/// moved (a commit whose generation bump failed is still seen within this).
const RECHECK: std::time::Duration = std::time::Duration::from_secs(60);
/// The change-log records one look reads per vault; more wait for the next look.
const CHANGES_PER_LOOK: i64 = 1000;
const WATCH: &str = "resources/watch";

/// A listener's position in the note resources its caller may read: each reachable vault with
/// the last change seen and its generation then, and the notes it subscribed to.
pub struct Watch {
    vaults: Vec<Watched>,
    /// The subscribed notes by (vault name, path), each with the URIs the client wrote for it
    /// (a hand-written URI is heard of as written).
    subscribed: HashMap<(String, String), Vec<String>>,
    read_at: std::time::Instant,
}

struct Watched {
    id: uuid::Uuid,
    name: String,
    seq: i64,
    generation: Option<i64>,
    /// The last look stopped at [`CHANGES_PER_LOOK`]: the next reads on regardless.
    more: bool,
}

/// What changed since the last look, among the notes the caller may read.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ResourceChanges {
    /// Subscribed notes written, moved or deleted, by the URIs the client subscribed with.
    pub updated: Vec<String>,
    /// Whether a note the caller may read appeared or went (resources/list would differ).
    pub list_changed: bool,
}

impl Dispatcher {
    /// Starts following `caller`'s note resources from now: notes under `subscribed` (note
    /// URIs; others are ignored) for their own changes, every readable note for the listing.
    pub async fn watch_resources(&self, caller: &Caller, subscribed: &[String]) -> Result<Watch, ToolError> {
        let args = Value::Null;
        let ctx = self.resource_context(WATCH, caller, &args);
        let mut vaults = Vec::new();
        for vault in reachable_vaults(&ctx).await? {
            let generation = self.services.kv.generation(otc_kv::Generation::Vault(vault.id)).await.ok();
            let mut tx = self.services.store.begin(caller.tenant_id).await?;
            let seq = tx.head_seq(vault.id).await?;
            tx.commit().await?;
            vaults.push(Watched { id: vault.id, name: vault.name, seq, generation, more: false });
        }
        let mut by_note: HashMap<(String, String), Vec<String>> = HashMap::new();
        for uri in subscribed {
            if let Some(note) = parse_note_uri(uri) {
                by_note.entry(note).or_default().push(uri.clone());
            }
        }
        Ok(Watch { vaults, subscribed: by_note, read_at: std::time::Instant::now() })
    }

    /// The changes since the last look. A vault is read only when its generation in Redis
    /// moved (or [`RECHECK`] passed; Redis unreachable reads as unchanged until then); only
    /// paths the caller may read now count, so a listener learns nothing of notes hidden from
    /// it. A vault renamed since the watch began is no longer followed (the ACL entry of its
    /// old name may be another vault's now).
    pub async fn resource_changes(&self, caller: &Caller, watch: &mut Watch) -> Result<ResourceChanges, ToolError> {
        let args = Value::Null;
        let ctx = self.resource_context(WATCH, caller, &args);
        let recheck = watch.read_at.elapsed() >= RECHECK;
        if recheck {
            watch.read_at = std::time::Instant::now();
        }
        let mut changes = ResourceChanges::default();
        for watched in &mut watch.vaults {
            let generation = self.services.kv.generation(otc_kv::Generation::Vault(watched.id)).await.ok();
            let moved = generation.is_some() && generation != watched.generation;
            if !(moved || watched.more || recheck) {
                continue;
            }
            if generation.is_some() {
                watched.generation = generation;
            }
            let mut tx = self.services.store.begin(caller.tenant_id).await?;
            let lines = tx.changes_under(watched.id, "", watched.seq, CHANGES_PER_LOOK).await?;
            tx.commit().await?;
            watched.more = lines.len() as i64 == CHANGES_PER_LOOK;
            let Some(last) = lines.last() else { continue };
            watched.seq = last.seq;
            let view = match View::open(&ctx, &watched.name).await {
                Ok(view) if view.vault.id == watched.id => view,
                // Renamed, gone, or out of the caller's reach: nothing more to say of it.
                Ok(_) => continue,
                Err(e) if e.code == ErrorCode::VaultNotFound => continue,
                Err(e) => return Err(e),
            };
            for line in &lines {
                if FileKind::of_path(&line.path) != FileKind::Note || !view.can_read(&line.path) {
                    continue;
                }
                if line.op != "update" {
                    changes.list_changed = true;
                }
                for uri in watch.subscribed.get(&(watched.name.clone(), line.path.clone())).into_iter().flatten() {
                    if !changes.updated.contains(uri) {
                        changes.updated.push(uri.clone());
                    }
                }
            }
        }
        Ok(changes)
    }

    /// The catalogue resource's text for `caller`.
    pub fn catalog(&self, caller: &Caller) -> String {
        let tools: Vec<Value> = otc_catalog::facade::listed(&self.registry, &self.settings, Some(&caller.scopes))
            .into_iter()
            .map(|t| {
                serde_json::json!({
                    "name": t.name(),
                    "title": t.spec.title,
                    "domain": t.spec.domain.as_str(),
                    "tags": t.tags,
                    "scopes": t.spec.scopes,
                    "description": t.spec.description,
                })
            })
            .collect();
        serde_json::json!({"tools": tools}).to_string()
    }

    fn resource_context<'a>(&'a self, tool: &'static str, caller: &'a Caller, args: &'a Value) -> CallContext<'a> {
        CallContext {
            tool,
            caller,
            surface: Surface::Default,
            client_name: None,
            dispatcher: self,
            progress: None,
            ask: None,
            task: None,
            sample: None,
            args,
        }
    }

    /// resources/list for `caller`: a page of the notes it may read.
    pub async fn list_resources(&self, caller: &Caller, cursor: Option<&str>) -> Result<ResourcePage, ToolError> {
        let args = Value::Null;
        let ctx = self.resource_context(LIST, caller, &args);
        list(&ctx, cursor).await.map_err(|e| self.hinted(caller, e))
    }

    /// resources/read for `caller`: the note at `uri`, whole (or its body, when the configured
    /// response format is concise), refused with overflow when the raw note is larger than the
    /// response ceiling.
    pub async fn read_resource(&self, caller: &Caller, uri: &str) -> Result<ResourceText, ToolError> {
        if uri == CATALOG_URI {
            return Ok(ResourceText {
                uri: CATALOG_URI.into(),
                mime_type: CATALOG_MIME_TYPE,
                text: self.catalog(caller),
            });
        }
        let args = Value::Null;
        let ctx = self.resource_context(READ, caller, &args);
        let read = async {
            let note = read(&ctx, &mut HashMap::new(), uri).await?;
            if note.size as u64 > self.max_response_bytes {
                return Err(ToolError::new(ErrorCode::Overflow)
                    .detail("bytes", note.size)
                    .detail("limit", self.max_response_bytes)
                    .detail("uri", note.uri.clone()));
            }
            let text = match self.default_format {
                ResponseFormat::Concise => note.body().to_string(),
                ResponseFormat::Detailed => note.text,
            };
            Ok(ResourceText { uri: note.uri, mime_type: MIME_TYPE, text })
        };
        read.await.map_err(|e| self.hinted(caller, e))
    }
}
