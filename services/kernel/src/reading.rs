//! What every read tool shares: the one check of what a caller may see (the vault, its folder
//! ACL), the path rules, the not-found answer a hidden note gets, content reads, and paging
//! (opaque keyset cursors, pages kept under a byte budget by lowering the item count).

use base64::Engine;
use otc_errors::{ErrorCode, ToolError};
use otc_store::{StoreError, TenantTx, Vault, Visible};
use otc_vault::acl::{Acl, Audience, Layer, Rule};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::{CallContext, Caller, Services, caller_vault};

/// A compiled `[[acl]]` entry: the deployment's floor for one vault name.
pub struct VaultAcl {
    tenant: Option<String>,
    vault: String,
    rule: Rule,
}

/// Compiles the configured ACLs.
pub fn compile_acls(config: &otc_config::Config) -> Result<Vec<VaultAcl>, String> {
    config
        .acl
        .iter()
        .map(|e| {
            let rule = Rule::new(
                Layer::Deployment,
                format!("[[acl]] for vault {}", e.vault),
                e.read_paths.as_deref(),
                e.write_paths.as_deref(),
                e.delete_paths.as_deref(),
                false,
            )?;
            Ok(VaultAcl { tenant: e.tenant.clone(), vault: e.vault.clone(), rule })
        })
        .collect()
}

/// The scope that reads provenance (get_provenance, a wiki's log.md).
pub const PROVENANCE_SCOPE: &str = "read:provenance";

/// The generated listing of a wiki's pages, in its folder.
pub const WIKI_INDEX_PAGE: &str = "index.md";
/// The generated projection of a wiki folder's change log, in the folder, which only callers
/// with [`PROVENANCE_SCOPE`] may read.
pub const WIKI_LOG_PAGE: &str = "log.md";
/// The pages the server generates in a wiki's folder.
pub const WIKI_GENERATED_PAGES: [&str; 2] = [WIKI_INDEX_PAGE, WIKI_LOG_PAGE];

/// A vault as one caller may see it: the deployment's `[[acl]]` floor for it, narrowed by the
/// tenant's rules for the caller.
pub struct View {
    pub vault: Vault,
    acl: Acl,
    /// The vault's wiki and raw folders, when it has a wiki.
    wiki: Option<otc_config::WikiFolders>,
    /// The read ACL as Postgres regular expressions (None: unrestricted), made the first time a
    /// query asks (the read tools that look one note up never do).
    read_regex: std::sync::OnceLock<Option<Vec<String>>>,
}

/// The first `[[acl]]` entry for the vault named `vault` that applies to the caller's tenant
/// (no tenant named, or the tenant's id, or its slug as `slug` reads it, at most once).
async fn acl_entry<'a, F, Fut>(
    acls: &'a [VaultAcl],
    caller: &Caller,
    vault: &str,
    slug: F,
) -> Result<Option<&'a VaultAcl>, StoreError>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<Option<String>, StoreError>>,
{
    let mut slug = Some(slug);
    let mut known: Option<Option<String>> = None;
    for entry in acls.iter().filter(|e| e.vault == vault) {
        let applies = match &entry.tenant {
            None => true,
            Some(t) if *t == caller.tenant_id.to_string() => true,
            Some(t) => {
                if known.is_none()
                    && let Some(read) = slug.take()
                {
                    known = Some(read().await?);
                }
                known.as_ref().is_some_and(|s| s.as_deref() == Some(t.as_str()))
            }
        };
        if applies {
            return Ok(Some(entry));
        }
    }
    Ok(None)
}

/// The wiki folders configured for the caller's vault `vault` (the tenant's slug read only when
/// an entry names a tenant other than by id).
async fn wiki_folders(
    services: &Services,
    caller: &Caller,
    vault: &str,
) -> Result<Option<otc_config::WikiFolders>, StoreError> {
    let wiki = &services.config.wiki;
    let id = caller.tenant_id.to_string();
    let by_slug = wiki.vaults.iter().any(|v| v.vault == vault && v.tenant.as_deref().is_some_and(|t| t != id));
    let slug = if by_slug {
        let mut tx = services.store.begin(caller.tenant_id).await?;
        let tenant = tx.tenant().await?;
        tx.commit().await?;
        tenant.map(|t| t.slug)
    } else {
        None
    };
    Ok(wiki.folders(&id, slug.as_deref(), vault))
}

/// The default page of a list tool (spec: "Result size and paging").
pub const DEFAULT_PAGE: usize = 100;
/// Pages stay under 20 KB of JSON by holding fewer items: the items get this much, the rest is
/// left for the envelope (vault name, warnings kept short, and a cursor holding a path).
pub const PAGE_BUDGET_BYTES: usize = 17_000;

impl View {
    /// The caller's vault `name` with its ACL, as the tools see it: vault_not_found when the
    /// caller cannot reach it.
    pub async fn open(ctx: &CallContext<'_>, name: &str) -> Result<View, ToolError> {
        let vault = caller_vault(ctx, name).await?;
        let services = ctx.services();
        let slug = || async {
            let mut tx = services.store.begin(ctx.caller.tenant_id).await?;
            let tenant = tx.tenant().await?;
            tx.commit().await?;
            Ok(tenant.map(|t| t.slug))
        };
        let entry = acl_entry(&services.acls, ctx.caller, &vault.name, slug).await?;
        let wiki = wiki_folders(services, ctx.caller, &vault.name).await?;
        Ok(View::with(ctx.caller, vault, entry, Audience::Tools, wiki))
    }

    /// `vault`, which the caller may reach (the caller checked that), as `audience` shows it
    /// to the caller: the same `[[acl]]` entry the tools use, for callers outside a tool call
    /// (the sync API). Reads the tenant's slug in `tx` when an entry names a tenant by slug.
    pub async fn for_caller(
        services: &Services,
        caller: &Caller,
        vault: Vault,
        audience: Audience,
        tx: &mut TenantTx,
    ) -> Result<View, StoreError> {
        let slug = move || async move { Ok(tx.tenant().await?.map(|t| t.slug)) };
        let entry = acl_entry(&services.acls, caller, &vault.name, slug).await?;
        let wiki = wiki_folders(services, caller, &vault.name).await?;
        Ok(View::with(caller, vault, entry, audience, wiki))
    }

    fn with(
        caller: &Caller,
        vault: Vault,
        entry: Option<&VaultAcl>,
        audience: Audience,
        wiki: Option<otc_config::WikiFolders>,
    ) -> View {
        let tenant = caller.access.rules.iter().filter(|r| r.vault_id == vault.id).map(|r| r.rule.clone()).collect();
        let mut acl =
            Acl::open().with_layer(entry.map(|e| vec![e.rule.clone()]).unwrap_or_default()).with_layer(tenant);
        // A person's sync client adds raw sources: the folder is immutable to the tools only.
        if audience == Audience::Tools
            && let Some(raw) = wiki.as_ref().and_then(|w| w.raw.as_deref())
        {
            acl = acl.with_immutable(raw);
        }
        // The wiki's log.md says who changed what: get_provenance's facts, under its scope.
        if let Some(w) = &wiki
            && !caller.scopes.iter().any(|g| g.grants(PROVENANCE_SCOPE))
        {
            acl = acl.with_closed(&format!("{}/{}", w.folder, WIKI_LOG_PAGE), PROVENANCE_SCOPE);
        }
        View { vault, read_regex: std::sync::OnceLock::new(), acl: acl.for_audience(audience), wiki }
    }

    /// The vault's wiki and raw folders, when it has a wiki.
    pub fn wiki(&self) -> Option<&otc_config::WikiFolders> {
        self.wiki.as_ref()
    }

    /// Whether `path` is one of the pages the server generates in the vault's wiki folder.
    pub fn is_wiki_generated(&self, path: &str) -> bool {
        let Some(wiki) = self.wiki() else { return false };
        WIKI_GENERATED_PAGES.iter().any(|g| path == format!("{}/{g}", wiki.folder))
    }

    /// The paths of the pages the server generates in the vault's wiki folder (none without
    /// one). They are no topic, no orphan and no source of inbound links.
    pub fn wiki_generated_paths(&self) -> Vec<String> {
        self.wiki()
            .map(|w| WIKI_GENERATED_PAGES.iter().map(|g| format!("{}/{g}", w.folder)).collect())
            .unwrap_or_default()
    }

    /// What the caller may see, for the store's queries: the audience's hidden folders and the
    /// read ACL.
    pub fn visible(&self) -> Visible<'_> {
        Visible { hidden: self.acl.audience().hidden_regex(), readable: self.readable() }
    }

    pub fn can_read(&self, path: &str) -> bool {
        self.acl.can_read(path)
    }

    pub fn acl(&self) -> &Acl {
        &self.acl
    }

    /// The read ACL for the store's queries.
    pub fn readable(&self) -> Option<&[String]> {
        self.read_regex.get_or_init(|| self.acl.read_regexes()).as_deref()
    }

    /// A path argument: valid, and readable, else the same not-found a missing note gets.
    pub fn readable_path(&self, path: &str) -> Result<(), ToolError> {
        otc_vault::check_path(path).map_err(|e| e.detail("field", "path"))?;
        if self.can_read(path) { Ok(()) } else { Err(not_found(path)) }
    }

    /// A folder argument as a path prefix ("" for the root, else "Folder/").
    pub fn folder_prefix(&self, folder: Option<&str>) -> Result<String, ToolError> {
        let folder = folder.map(|f| f.trim_matches('/')).unwrap_or("");
        if folder.is_empty() {
            return Ok(String::new());
        }
        otc_vault::check_path(folder).map_err(|e| e.detail("field", "folder"))?;
        Ok(format!("{folder}/"))
    }
}

/// A path argument named `field` that must end in `extension` (compared case-blind); else
/// invalid_input with `message`.
pub fn check_extension(path: &str, extension: &str, message: &str, field: &str) -> Result<(), ToolError> {
    if path.to_lowercase().ends_with(extension) {
        return Ok(());
    }
    Err(ToolError::with_message(ErrorCode::InvalidInput, message).detail("field", field.to_string()))
}

/// What a note that is missing, or hidden from the caller, answers.
pub fn not_found(path: &str) -> ToolError {
    ToolError::new(ErrorCode::NoteNotFound).detail("path", path)
}

/// A note as stored: its text, the content hash the next write passes as its expected hash,
/// and its manifest row (size, mtime).
pub struct Content {
    pub text: String,
    pub content_hash: String,
    pub entry: otc_store::FileEntry,
}

/// The manifest row at `path` in the caller's tenant, through the gateway's row cache. No
/// visibility check: callers check what the caller may read.
pub async fn file_entry(
    ctx: &CallContext<'_>,
    vault: uuid::Uuid,
    path: &str,
) -> Result<Option<otc_store::FileEntry>, ToolError> {
    let services = ctx.services();
    Ok(services.files.file(&services.store, &services.kv, ctx.caller.tenant_id, vault, path).await?)
}

/// The note's stored content, or not found (missing and unreadable alike); a note over
/// `tools.max_parse_bytes` is refused (see [`check_parse_size`]).
pub async fn read_content(ctx: &CallContext<'_>, view: &View, path: &str) -> Result<Content, ToolError> {
    view.readable_path(path)?;
    let entry = file_entry(ctx, view.vault.id, path).await?.ok_or_else(|| not_found(path))?;
    check_parse_size(ctx, path, &entry)?;
    let bytes = ctx.services().blobs.get_blob(ctx.caller.tenant_id, &entry.hash).await?;
    Ok(Content { text: String::from_utf8_lossy(&bytes).into_owned(), content_hash: hex::encode(entry.hash), entry })
}

/// Refuses a note larger than a tool reads whole (`tools.max_parse_bytes`): parsing costs many
/// times a note's size, so a bigger one is read in pages and changed whole, never edited in
/// place. The refusal names the limit and the ways around it.
pub fn check_parse_size(ctx: &CallContext<'_>, path: &str, entry: &otc_store::FileEntry) -> Result<(), ToolError> {
    let limit = ctx.services().config.tools.max_parse_bytes;
    match u64::try_from(entry.size).unwrap_or(0) <= limit {
        true => Ok(()),
        false => Err(too_large_to_parse(ctx, path, entry)),
    }
}

/// The refusal of a note over `tools.max_parse_bytes` to a call that would read it whole.
pub fn too_large_to_parse(ctx: &CallContext<'_>, path: &str, entry: &otc_store::FileEntry) -> ToolError {
    let limit = ctx.services().config.tools.max_parse_bytes;
    let size = u64::try_from(entry.size).unwrap_or(0);
    ToolError::with_message(
        ErrorCode::ComputeBudgetExceeded,
        format!(
            "the note is {size} bytes, more than the {limit} a tool reads whole to parse or edit \
             (tools.max_parse_bytes). Read it in pages (read_note with a cursor) or its document map and \
             sections; to change it, replace the whole file (PUT a blob and POST /v1/vaults/{{vault}}/commit) or \
             split it into smaller notes"
        ),
    )
    .detail("path", path)
    .detail("size", size)
    .detail("limit", "tools.max_parse_bytes")
    .detail("limit_bytes", limit)
}

/// The most note text one page of a paged read carries: `tools.read_page_bytes`, and at most a
/// quarter of the response budget (escaping can grow text in JSON).
pub fn page_bytes(ctx: &CallContext<'_>) -> u64 {
    let config = &ctx.services().config;
    config.tools.read_page_bytes.min(config.governor.max_response_bytes / 4).max(256)
}

/// One page of a note read in pages.
#[derive(Debug)]
pub struct Page {
    pub text: String,
    /// The page's bytes in the note: `start` inclusive, `end` exclusive.
    pub start: u64,
    pub end: u64,
    /// The 1-based lines of the page's first and last byte.
    pub start_line: u64,
    pub end_line: u64,
    /// The cursor for the rest of the range, when the page stops short of it.
    pub next: Option<String>,
}

/// Where a paged read goes on: the note's content hash, the next byte, the end of the range
/// read, and the line the next byte is on.
#[derive(Serialize, serde::Deserialize)]
struct PageCursor {
    h: String,
    o: u64,
    e: u64,
    l: u64,
}

/// The page of the note `entry` that starts at byte `start` (on 1-based line `line`), within
/// the range that ends at `end`: at most [`page_bytes`], cut after the last line end in its
/// second half when there is one, and never inside a character. Only the page's bytes are
/// read from the object store.
pub async fn read_page(
    ctx: &CallContext<'_>,
    entry: &otc_store::FileEntry,
    start: u64,
    end: u64,
    line: u64,
) -> Result<Page, ToolError> {
    let size = u64::try_from(entry.size).unwrap_or(0);
    let end = end.min(size);
    let start = start.min(end);
    let budget = page_bytes(ctx);
    // One byte past the page, to see whether the cut falls inside a character.
    let fetch_end = (start + budget + 1).min(end);
    let bytes = ctx.services().blobs.get_blob_range(ctx.caller.tenant_id, &entry.hash, start..fetch_end).await?;
    let mut cut = bytes.len().min(budget as usize);
    if start + (cut as u64) < end {
        match bytes[cut / 2..cut].iter().rposition(|b| *b == b'\n') {
            Some(at) => cut = cut / 2 + at + 1,
            None => {
                while cut > 0 && bytes.get(cut).is_some_and(|b| b & 0xC0 == 0x80) {
                    cut -= 1;
                }
                if cut == 0 {
                    cut = bytes.len().min(budget as usize);
                }
            }
        }
    }
    let page = &bytes[..cut];
    let newlines = page.iter().filter(|b| **b == b'\n').count() as u64;
    let last = page.len().saturating_sub(1);
    let end_line = line + page[..last].iter().filter(|b| **b == b'\n').count() as u64;
    let page_end = start + cut as u64;
    let next = (page_end < end).then(|| {
        let cursor = PageCursor { h: hex::encode(entry.hash), o: page_end, e: end, l: line + newlines };
        encode_cursor(ctx.tool, &cursor)
    });
    Ok(Page {
        text: String::from_utf8_lossy(page).into_owned(),
        start,
        end: page_end,
        start_line: line,
        end_line,
        next,
    })
}

/// The page a cursor from [`read_page`] points at, refused when the note changed since.
pub async fn read_next_page(
    ctx: &CallContext<'_>,
    path: &str,
    entry: &otc_store::FileEntry,
    cursor: &str,
) -> Result<Page, ToolError> {
    let at: PageCursor = decode_cursor(ctx.tool, cursor)?;
    if at.h != hex::encode(entry.hash) {
        return Err(ToolError::with_message(
            ErrorCode::ConcurrentModification,
            "the note changed since the page before; read it again from its first page",
        )
        .detail("path", path)
        .detail("content_hash", hex::encode(entry.hash)));
    }
    read_page(ctx, entry, at.o, at.e, at.l).await
}

/// An opaque cursor: the tool's name and its position, so a cursor from one tool (or a
/// made-up one) is refused rather than misread.
pub fn encode_cursor(tool: &str, position: &impl Serialize) -> String {
    let json = serde_json::json!({ "t": tool, "p": position });
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json.to_string())
}

pub fn decode_cursor<T: DeserializeOwned>(tool: &str, cursor: &str) -> Result<T, ToolError> {
    let bad = || {
        ToolError::with_message(ErrorCode::InvalidInput, "cursor is not one this tool handed out")
            .detail("field", "cursor")
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    if value.get("t").and_then(Value::as_str) != Some(tool) {
        return Err(bad());
    }
    serde_json::from_value(value["p"].clone()).map_err(|_| bad())
}

/// The leading items whose JSON fits `budget` bytes (at least one, so a page always moves on),
/// and whether any were left out.
pub fn fit<T: Serialize>(items: Vec<T>, budget: usize) -> (Vec<T>, bool) {
    let (kept, left) = fit_counted(items, budget);
    (kept, left > 0)
}

/// [`fit`] over any list, counting the items left out (they are only counted, never kept or
/// serialized).
pub fn fit_counted<T: Serialize>(items: impl IntoIterator<Item = T>, budget: usize) -> (Vec<T>, usize) {
    let mut used: usize = 0;
    let mut kept = Vec::new();
    let mut items = items.into_iter();
    for item in items.by_ref() {
        let size = serde_json::to_vec(&item).map(|v| v.len() + 1).unwrap_or(usize::MAX);
        if !kept.is_empty() && used.saturating_add(size) > budget {
            return (kept, 1 + items.count());
        }
        used = used.saturating_add(size);
        kept.push(item);
    }
    (kept, 0)
}

/// One page of a keyset-paged list: the leading items that fit `budget`, and the cursor for
/// the rest (when the query found rows beyond the page, `more`, or the budget cut it), made
/// from the last item's key.
pub fn page<T: Serialize, K: Serialize>(
    tool: &str,
    items: Vec<T>,
    more: bool,
    budget: usize,
    key: impl Fn(&T) -> K,
) -> (Vec<T>, Option<String>) {
    let (items, cut) = fit(items, budget);
    let next = (more || cut).then(|| encode_cursor(tool, &items.last().map(&key)));
    (items, next)
}

/// A page size argument: 1 to 1,000, default [`DEFAULT_PAGE`].
pub fn page_limit(limit: Option<u32>) -> Result<usize, ToolError> {
    bounded(limit, DEFAULT_PAGE, 1..=1000, "limit")
}

/// A numeric argument within `range` (`default` when absent); invalid_input naming `field`
/// otherwise.
pub fn bounded(
    value: Option<u32>,
    default: usize,
    range: std::ops::RangeInclusive<u32>,
    field: &str,
) -> Result<usize, ToolError> {
    match value {
        None => Ok(default),
        Some(n) if range.contains(&n) => Ok(n as usize),
        Some(_) => Err(ToolError::with_message(
            ErrorCode::InvalidInput,
            format!("{field} must be between {} and {}", range.start(), range.end()),
        )
        .detail("field", field)),
    }
}

/// A note's properties: its frontmatter parsed, when it has one that parses to a mapping.
pub fn frontmatter_map(text: &str) -> Option<Map<String, Value>> {
    match otc_parser::parse_head(text).frontmatter?.value? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}
