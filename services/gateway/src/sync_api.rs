//! The sync API under `/v1/vaults`: list vaults, page through a vault's manifest and change
//! log, download a file by path or a blob by hash, upload a blob, and commit a batch. Every
//! route is confined to the token's tenant, and to its vault when the token is bound to one.
//!
//! Within a vault every route goes through the tools' policy: `otc_kernel::reading::View`, the
//! vault's `[[acl]]` entry compiled once, seen by [`Audience::Sync`]. A path the caller may not
//! read is answered exactly like a missing one (404 by path, left out of `/files`, `/changes`
//! and their cursors, its content not downloadable by hash); a commit puts only where the ACL
//! lets the caller write and deletes only where it lets it delete (acl_denied otherwise,
//! nothing applied). The sync audience differs from the tools' in one folder: `.obsidian/`
//! (Obsidian's settings, which `obsidian-tc sync` carries between devices) is served and
//! accepted, under the ACL's lists like any path; `.trash/` and `.git/` never are.
//!
//! A commit names content by hash, so it could copy anything the tenant stores into the vault
//! and read it back. It may name only content its caller uploaded to this vault (recorded by
//! `PUT /blobs`) or content the caller can already read in this vault; anything else is refused
//! with the same answer whether the tenant holds it elsewhere or not at all.

use std::collections::HashSet;
use std::time::Duration;

use axum::Json;
use axum::body::Body;
use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use otc_errors::{ErrorCode, ToolError};
use otc_kernel::reading::View;
use otc_store::{Action, Change, Expect, Hash, Provenance, StoreError, TenantTx, Vault};

use crate::wire::{
    ChangeList, ChangeRow, CommitRequest, Committed, FileList, FileQuery, FileRow, PageQuery, Uploaded, VaultList,
    VaultRow,
};
use otc_vault::acl::Audience;

use crate::auth::require;
use crate::{ApiError, AppState, Caller};

type ApiResult<T> = Result<T, ApiError>;

fn store_err(e: StoreError) -> ApiError {
    ApiError::from_store(&e)
}

fn tool_err(code: ErrorCode, message: impl Into<String>) -> ApiError {
    ApiError::from_tool(ToolError::with_message(code, message))
}

fn parse_hash(text: &str) -> ApiResult<Hash> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(text, &mut out)
        .map_err(|_| tool_err(ErrorCode::InvalidInput, "a blob hash is 64 lowercase hex digits (SHA-256)"))?;
    Ok(out)
}

/// Opens the caller's tenant and finds the vault by name or id; a vault the token may not
/// reach reads exactly like one that does not exist.
async fn open_vault(state: &AppState, caller: &Caller, vault: &str) -> ApiResult<(TenantTx, Vault)> {
    let mut tx = state.store.begin(caller.tenant_id).await.map_err(store_err)?;
    let found = match uuid::Uuid::try_parse(vault) {
        Ok(id) => tx.vault(id).await.map_err(store_err)?,
        Err(_) => tx.vault_by_name(vault).await.map_err(store_err)?,
    };
    match found {
        Some(v) if caller.vault_id.is_none_or(|bound| bound == v.id) => Ok((tx, v)),
        _ => Err(ApiError::from_tool(
            ToolError::with_message(ErrorCode::VaultNotFound, "no such vault").echo("vault", vault),
        )),
    }
}

/// [`open_vault`], and the vault as the caller sees it through the sync API.
async fn open_view(state: &AppState, caller: &Caller, vault: &str) -> ApiResult<(TenantTx, View)> {
    let (mut tx, vault) = open_vault(state, caller, vault).await?;
    let view = View::for_caller(&state.dispatcher.services, caller, vault, Audience::Sync, &mut tx)
        .await
        .map_err(store_err)?;
    Ok((tx, view))
}

/// What a file that is missing, or hidden from the caller, answers.
fn no_file(path: &str) -> ApiError {
    ApiError::from_tool(ToolError::with_message(ErrorCode::NotFound, "no file at that path").detail("path", path))
}

/// GET /v1/vaults
pub async fn list_vaults(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> ApiResult<Json<VaultList>> {
    let mut tx = state.store.begin(caller.tenant_id).await.map_err(store_err)?;
    let vaults = tx.list_vaults().await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    let rows: Vec<VaultRow> = vaults
        .into_iter()
        .filter(|v| caller.vault_id.is_none_or(|bound| bound == v.id))
        .map(|v| VaultRow { id: v.id, name: v.name, created_at: v.created_at })
        .collect();
    Ok(Json(VaultList { vaults: rows }))
}

/// The page size asked for: 1000 by default, 1 to 5000.
fn limit_of(page: &PageQuery) -> i64 {
    page.limit.unwrap_or(1000).clamp(1, 5000)
}

/// GET /v1/vaults/{vault}/files?after=PATH&limit=N: the manifest in path order, the paths
/// the caller may read only (the query skips the others, so only the last page is short).
pub async fn list_files(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(vault): Path<String>,
    Query(page): Query<PageQuery>,
) -> ApiResult<Json<FileList>> {
    require(&caller, "read:notes")?;
    let (mut tx, view) = open_view(&state, &caller, &vault).await?;
    let vault = &view.vault;
    let limit = limit_of(&page);
    let files = tx.visible_files(vault.id, page.after.as_deref(), limit, view.visible()).await.map_err(store_err)?;
    let head = tx.head_seq(vault.id).await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    let next = (files.len() as i64 == limit).then(|| files.last().map(|f| f.path.clone())).flatten();
    let files = files
        .into_iter()
        .map(|f| FileRow {
            path: f.path,
            hash: hex::encode(f.hash),
            size: f.size,
            mtime: f.mtime,
            kind: f.kind.as_str().to_string(),
            seq: f.seq,
        })
        .collect();
    Ok(Json(FileList { vault: vault.name.clone(), head, files, next_after: next }))
}

/// GET /v1/vaults/{vault}/changes?since=SEQ&limit=N: the change log after a sequence, records
/// of paths the caller may read only. Sequence numbers keep their gaps where hidden records
/// were; `next_since` moves past them, so paging neither stops early nor loops.
pub async fn changes(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(vault): Path<String>,
    Query(page): Query<PageQuery>,
) -> ApiResult<Json<ChangeList>> {
    require(&caller, "read:notes")?;
    let (mut tx, view) = open_view(&state, &caller, &vault).await?;
    let vault = &view.vault;
    let since = page.since.unwrap_or(0).max(0);
    let limit = limit_of(&page);
    // The head first: every record up to it is committed, so the scan below sees all of them,
    // and a page short of `limit` has covered the log up to the head.
    let head = tx.head_seq(vault.id).await.map_err(store_err)?;
    let records = tx.visible_changes(vault.id, since, head, limit, view.visible()).await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    let next =
        if (records.len() as i64) < limit { head.max(since) } else { records.last().map(|r| r.seq).unwrap_or(since) };
    let changes = records
        .into_iter()
        .map(|r| ChangeRow {
            seq: r.seq,
            commit_id: r.commit_id,
            path: r.path,
            op: r.op,
            old_hash: r.old_hash.map(hex::encode),
            new_hash: r.new_hash.map(hex::encode),
            size: r.size,
            mtime: r.mtime,
            committed_at: r.committed_at,
            tool: r.tool,
            client_tool: r.client_tool,
            client_name: r.client_name,
            client_model: r.client_model,
            record_hash: hex::encode(r.record_hash),
        })
        .collect();
    Ok(Json(ChangeList { vault: vault.name.clone(), head, changes, next_since: next, more: next < head }))
}

fn bytes_response(hash: &Hash, bytes: bytes::Bytes) -> Response {
    let mut response = (StatusCode::OK, Body::from(bytes)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    if let Ok(tag) = HeaderValue::from_str(&format!("\"{}\"", hex::encode(hash))) {
        headers.insert(header::ETAG, tag);
    }
    response
}

async fn fetch_blob(state: &AppState, caller: &Caller, hash: &Hash) -> ApiResult<bytes::Bytes> {
    state.blobs.get_blob(caller.tenant_id, hash).await.map_err(|e| match e {
        // Old content whose last snapshot aged out has been collected.
        otc_blobs::BlobError::NotFound => tool_err(ErrorCode::NotFound, "that content is no longer kept"),
        other => {
            tracing::error!(error = %crate::error_chain(&other), "blob read failed");
            ApiError::unavailable()
        }
    })
}

/// GET /v1/vaults/{vault}/file?path=P: the current bytes at a path (ETag: its hash).
pub async fn download_file(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(vault): Path<String>,
    Query(query): Query<FileQuery>,
) -> ApiResult<Response> {
    require(&caller, "read:notes")?;
    otc_vault::check_path(&query.path).map_err(ApiError::from_tool)?;
    let (mut tx, view) = open_view(&state, &caller, &vault).await?;
    if !view.can_read(&query.path) {
        drop(tx);
        return Err(no_file(&query.path));
    }
    let entry = tx.file(view.vault.id, &query.path).await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    let entry = entry.ok_or_else(|| no_file(&query.path))?;
    let bytes = fetch_blob(&state, &caller, &entry.hash).await?;
    Ok(bytes_response(&entry.hash, bytes))
}

/// GET /v1/vaults/{vault}/blobs/{hash}: any content the vault has held (history included) at a
/// path the caller may read.
pub async fn download_blob(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path((vault, hash)): Path<(String, String)>,
) -> ApiResult<Response> {
    require(&caller, "read:notes")?;
    let hash = parse_hash(&hash)?;
    let (mut tx, view) = open_view(&state, &caller, &vault).await?;
    let known = tx.vault_references_blob(view.vault.id, &hash, view.visible()).await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    if !known {
        return Err(tool_err(ErrorCode::NotFound, "this vault holds no content with that hash"));
    }
    let bytes = fetch_blob(&state, &caller, &hash).await?;
    Ok(bytes_response(&hash, bytes))
}

/// How long an upload holds its slot among the tenant's uploads in flight without renewing it.
const UPLOAD_LEASE: Duration = Duration::from_secs(60);
/// How often a running upload renews its slot.
const UPLOAD_RENEW: Duration = Duration::from_secs(20);

/// PUT /v1/vaults/{vault}/blobs/{hash}: uploads content before a commit names it. The size is
/// declared (Content-Length, at most `sync.max_blob_bytes`; a chunked body of unknown length is
/// refused with 411) and checked against the tenant's
/// storage quota and its uploads in flight before a byte is read; the body is streamed to the
/// object store (multipart past the first part), its SHA-256 checked before the object is
/// completed, so wrong bytes never land. The upload is recorded for this vault and the caller's
/// principal: what lets a commit here name it.
pub async fn upload_blob(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path((vault, hash)): Path<(String, String)>,
    headers: axum::http::HeaderMap,
    body: Body,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let (vault, hash, size, slot) = match admit_upload(&state, &caller, &vault, &hash, &headers).await {
        Ok(admitted) => admitted,
        // Refused before a byte was read: a small body is drained so the connection carries the
        // client's next request (its retry), as every early refusal does.
        Err(refused) => return crate::error::refuse_unread(&headers, body, refused.into_response()).await,
    };
    let outcome = stream_upload(&state, &caller, &vault, &hash, size, body, &slot).await;
    slot.release(&state).await;
    outcome.map(|()| (StatusCode::CREATED, Json(Uploaded { hash: hex::encode(hash), size }))).into_response()
}

/// An upload's checks before its body is read: scope, vault, declared size, storage quota, then a
/// slot among the tenant's uploads in flight.
async fn admit_upload(
    state: &AppState,
    caller: &Caller,
    vault: &str,
    hash: &str,
    headers: &axum::http::HeaderMap,
) -> ApiResult<(Vault, Hash, u64, Slot)> {
    require(caller, "write:notes")?;
    let hash = parse_hash(hash)?;
    let (tx, vault) = open_vault(state, caller, vault).await?;
    drop(tx);
    crate::admin_vaults::writable(state, caller, Some(&vault.name)).await?;
    let limit = state.sync.max_blob_bytes as u64;
    let too_large = || {
        ApiError::from_tool(
            ToolError::with_message(
                ErrorCode::Overflow,
                format!("the file is larger than the upload limit of {limit} bytes"),
            )
            .detail("limit", limit),
        )
    };
    let size: u64 = match headers.get(axum::http::header::CONTENT_LENGTH) {
        // No length and no chunked body: an empty one (what clients send for an empty file).
        None if !headers.contains_key(axum::http::header::TRANSFER_ENCODING) => 0,
        None => {
            return Err(ApiError::from_tool(
                ToolError::with_message(ErrorCode::InvalidInput, "an upload declares its size in Content-Length")
                    .detail("field", "content-length"),
            )
            .with_status(StatusCode::LENGTH_REQUIRED));
        }
        Some(value) => value.to_str().ok().and_then(|v| v.parse().ok()).ok_or_else(|| {
            ApiError::from_tool(
                ToolError::with_message(ErrorCode::InvalidInput, "Content-Length is a whole number of bytes")
                    .detail("field", "content-length"),
            )
        })?,
    };
    if size > limit {
        return Err(too_large());
    }

    // The tenant's quotas, before a byte is read: storage for content it does not hold yet,
    // then a slot among its uploads in flight on every gateway.
    let mut tx = state.store.begin(caller.tenant_id).await.map_err(store_err)?;
    let quotas = tx.quotas().await.map_err(store_err)?;
    if let Some(quota) = quotas.storage_bytes
        && tx.blob_sizes(&[hash]).await.map_err(store_err)?.is_empty()
    {
        let used = tx.usage().await.map_err(store_err)?.storage_bytes;
        if used + size as i64 > quota {
            return Err(ApiError::from_tool(otc_kernel::quota_exceeded(&otc_store::QuotaExceeded {
                quota: "storage_bytes",
                limit: quota,
                used,
                requested: size as i64,
            })));
        }
    }
    tx.commit().await.map_err(store_err)?;
    let slot = Slot::take(state, caller, size, &quotas).await?;
    Ok((vault, hash, size, slot))
}

/// An upload's place among its tenant's uploads in flight (none when Redis could not count it:
/// the upload then goes ahead, logged).
struct Slot {
    tenant: uuid::Uuid,
    id: uuid::Uuid,
    bytes: u64,
    held: bool,
}

impl Slot {
    async fn take(state: &AppState, caller: &Caller, bytes: u64, quotas: &otc_store::Quotas) -> ApiResult<Slot> {
        let id = uuid::Uuid::now_v7();
        let max_uploads = quotas.concurrent_uploads.map_or(u64::MAX, |v| v as u64);
        let max_bytes = quotas.upload_bytes_in_flight.map_or(u64::MAX, |v| v as u64);
        match state.kv.take_upload_slot(caller.tenant_id, id, bytes, max_uploads, max_bytes, UPLOAD_LEASE).await {
            Ok(slot) if slot.admitted => Ok(Slot { tenant: caller.tenant_id, id, bytes, held: true }),
            Ok(slot) => {
                let (quota, limit, used, requested) = if slot.in_flight + 1 > max_uploads {
                    ("concurrent_uploads", max_uploads, slot.in_flight, 1)
                } else {
                    ("upload_bytes_in_flight", max_bytes, slot.bytes_in_flight, bytes)
                };
                Err(ApiError::from_tool(
                    ToolError::with_message(
                        ErrorCode::Throttled,
                        format!("the tenant has too many uploads in flight ({quota}); retry when one finishes"),
                    )
                    .detail("quota", quota)
                    .detail("limit", limit)
                    .detail("used", used)
                    .detail("requested", requested)
                    .detail("retry_after", 1),
                ))
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not count the upload among those in flight; letting it through");
                Ok(Slot { tenant: caller.tenant_id, id, bytes, held: false })
            }
        }
    }

    async fn renew(&self, state: &AppState) {
        if self.held
            && let Err(e) = state.kv.renew_upload_slot(self.tenant, self.id, self.bytes, UPLOAD_LEASE).await
        {
            tracing::warn!(error = %e, "could not renew an upload's slot");
        }
    }

    async fn release(self, state: &AppState) {
        if self.held
            && let Err(e) = state.kv.release_upload_slot(self.tenant, self.id, self.bytes).await
        {
            tracing::warn!(error = %e, "could not give an upload's slot back; it lapses with its lease");
        }
    }
}

/// Records the content (the inventory row first: garbage collection locks it while it deletes,
/// so an upload racing a collection of the same content ends with both in place), streams the
/// body into the object store, renewing the slot as it goes, then records the upload.
async fn stream_upload(
    state: &AppState,
    caller: &Caller,
    vault: &otc_store::Vault,
    hash: &Hash,
    size: u64,
    body: Body,
    slot: &Slot,
) -> ApiResult<()> {
    let mut tx = state.store.begin(caller.tenant_id).await.map_err(store_err)?;
    tx.record_blob(hash, size as i64).await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    let upload = state.blobs.put_blob_stream(caller.tenant_id, hash, body.into_data_stream(), size);
    tokio::pin!(upload);
    let mut renew = tokio::time::interval_at(tokio::time::Instant::now() + UPLOAD_RENEW, UPLOAD_RENEW);
    let stored = loop {
        tokio::select! {
            stored = &mut upload => break stored,
            _ = renew.tick() => slot.renew(state).await,
        }
    };
    stored.map_err(|e| match e {
        otc_blobs::BlobError::HashMismatch { .. } => ApiError::from_tool(
            ToolError::with_message(ErrorCode::InvalidInput, "the uploaded bytes do not hash to the hash in the URL")
                .detail("field", "hash"),
        ),
        otc_blobs::BlobError::TooLarge { limit } => ApiError::from_tool(
            ToolError::with_message(ErrorCode::InvalidInput, "the body is longer than its Content-Length")
                .detail("field", "content-length")
                .detail("declared", limit),
        ),
        otc_blobs::BlobError::Body(_) => ApiError::from_tool(
            ToolError::with_message(ErrorCode::InvalidInput, "the body ended before its Content-Length")
                .detail("field", "content-length"),
        ),
        other => {
            tracing::error!(error = %crate::error_chain(&other), "blob write failed");
            ApiError::unavailable()
        }
    })?;
    let mut tx = state.store.begin(caller.tenant_id).await.map_err(store_err)?;
    tx.record_upload(vault.id, caller.principal_id, hash).await.map_err(store_err)?;
    tx.commit().await.map_err(store_err)?;
    Ok(())
}

/// The tool a /v1 commit is recorded as in provenance.
pub const V1_COMMIT_TOOL: &str = "v1_commit";

/// The folder ACL on one change of a commit: a put needs a path the caller may write, a delete
/// one it may delete; acl_denied otherwise. A path the caller cannot read answers the same (it
/// may neither write nor delete there), whatever the path holds.
fn check_acl(view: &View, index: usize, path: &str, delete: bool) -> ApiResult<()> {
    let (allowed, operation) =
        if delete { (view.acl().can_delete(path), "delete") } else { (view.acl().can_write(path), "write") };
    if allowed {
        return Ok(());
    }
    Err(ApiError::from_tool(
        ToolError::with_message(
            ErrorCode::AclDenied,
            format!("the folder ACL does not let this caller {operation} here"),
        )
        .detail("path", path.to_string())
        .detail("path_index", index)
        .detail("operation", operation),
    ))
}

/// POST /v1/vaults/{vault}/commit: applies a batch atomically, or answers 409
/// concurrent_modification naming every stale path and applies nothing. With an
/// `Idempotency-Key` header, the same key and body answer the first commit's result without
/// committing again (`otc_kernel::idempotency`).
pub async fn commit(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(vault): Path<String>,
    headers: axum::http::HeaderMap,
    request: Result<Json<serde_json::Value>, axum::extract::rejection::JsonRejection>,
) -> impl axum::response::IntoResponse {
    let body = match request {
        Ok(Json(body)) => body,
        Err(e) => return (Extension(crate::error::Paths(vec![])), Err(crate::error::body_rejection("commit", e))),
    };
    let paths = body["changes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["path"].as_str())
        .take(otc_kernel::audit_writer::MAX_PATHS)
        .map(otc_kernel::audit_writer::cut_path)
        .collect();
    (Extension(crate::error::Paths(paths)), commit_keyed(&state, &caller, &vault, &headers, body).await)
}

async fn commit_keyed(
    state: &AppState,
    caller: &Caller,
    vault: &str,
    headers: &axum::http::HeaderMap,
    body: serde_json::Value,
) -> ApiResult<Json<serde_json::Value>> {
    let operation = format!("v1_commit {vault}");
    crate::idempotent::keyed(state, caller, headers, &operation, body, |body| commit_once(state, caller, vault, body))
        .await
        .map(Json)
}

async fn commit_once(
    state: &AppState,
    caller: &Caller,
    vault: &str,
    body: serde_json::Value,
) -> ApiResult<serde_json::Value> {
    let request: CommitRequest =
        serde_json::from_value(body).map_err(|e| tool_err(ErrorCode::ValidationError, format!("commit body: {e}")))?;
    require(caller, "write:notes")?;
    crate::admin_vaults::writable(state, caller, Some(vault)).await?;
    if request.changes.is_empty() {
        return Err(tool_err(ErrorCode::InvalidInput, "commit: changes is empty"));
    }
    if request.changes.len() > state.sync.max_commit_changes {
        return Err(ApiError::from_tool(
            ToolError::with_message(
                ErrorCode::InvalidInput,
                format!("commit: at most {} changes per commit", state.sync.max_commit_changes),
            )
            .detail("field", "changes"),
        ));
    }
    if request.changes.iter().any(|c| c.delete) {
        require(caller, "delete:notes")?;
    }
    let (mut tx, view) = open_view(state, caller, vault).await?;
    let vault = &view.vault;

    let mut seen = HashSet::new();
    for (index, change) in request.changes.iter().enumerate() {
        let path = &change.path;
        otc_vault::check_path(path).map_err(ApiError::from_tool)?;
        if !seen.insert(path.as_str()) {
            return Err(ApiError::from_tool(
                ToolError::with_message(ErrorCode::InvalidInput, "commit: a path appears twice")
                    .detail("path", path.clone()),
            ));
        }
        // Before anything is looked up at the path, so a refusal says nothing of what is there.
        check_acl(&view, index, path, change.delete)?;
    }
    let mut wanted: Vec<Hash> = Vec::new();
    let mut changes = Vec::with_capacity(request.changes.len());
    for c in &request.changes {
        let expect = match c.expect.as_str() {
            "absent" => Expect::Absent,
            "any" => Expect::Any,
            hex => Expect::Hash(parse_hash(hex)?),
        };
        let action = match (&c.put, c.delete) {
            (Some(put), false) => {
                // Any well-formed name: sync carries the files a vault already has (a:b.md,
                // C# notes.md, names differing only by case). The new-name rule is the tools'.
                let hash = parse_hash(&put.hash)?;
                if let Some(mtime) = put.mtime
                    && !(1..=9999).contains(&chrono::Datelike::year(&mtime))
                {
                    return Err(ApiError::from_tool(
                        ToolError::with_message(
                            ErrorCode::InvalidInput,
                            "commit: mtime must fall in the years 1 to 9999",
                        )
                        .detail("path", otc_errors::echo(&c.path)),
                    ));
                }
                wanted.push(hash);
                Action::Put { hash, size: 0, mtime: put.mtime.unwrap_or_else(Utc::now) }
            }
            (None, true) => Action::Delete,
            _ => {
                return Err(ApiError::from_tool(
                    ToolError::with_message(
                        ErrorCode::InvalidInput,
                        "commit: each change has either put or delete: true",
                    )
                    .detail("path", c.path.clone()),
                ));
            }
        };
        changes.push(Change { path: c.path.clone(), expect, action });
    }
    // Only content this caller uploaded here, or can already read here: a hash of content
    // held elsewhere in the tenant answers exactly like one of content held nowhere.
    let sizes =
        tx.committable_blob_sizes(vault.id, caller.principal_id, &wanted, view.visible()).await.map_err(store_err)?;
    for change in &mut changes {
        if let Action::Put { hash, size, .. } = &mut change.action {
            *size = *sizes.get(hash).ok_or_else(|| {
                ApiError::from_tool(
                    ToolError::with_message(
                        ErrorCode::InvalidInput,
                        "commit: content not uploaded; PUT the blob first",
                    )
                    .detail("path", change.path.clone())
                    .detail("hash", hex::encode(*hash)),
                )
            })?;
        }
    }
    // What the server knows: the API and the token. The body's `tool` is the client's own word,
    // kept as client_tool and never shown as the tool.
    let who = Provenance {
        principal_id: Some(caller.principal_id),
        tool: Some(V1_COMMIT_TOOL.into()),
        client_name: request.client_name,
        client_model: request.client_model,
        origin: None,
        client_tool: request.tool,
        token_id: Some(caller.token_id),
    };
    let services = &state.dispatcher.services;
    // A person's edit to a wiki's pages queues their generated index and log, as a tool's does.
    let jobs = services.features.commit_jobs(&view, changes.iter().map(|c| c.path.as_str()));
    let outcome =
        otc_indexer::commit::commit_with_jobs(&services.indexer, &state.kv, tx, vault.id, &changes, &who, None, jobs)
            .await
            .map_err(|e| match e {
                otc_indexer::IndexError::Store(otc_store::StoreError::Quota(q)) => {
                    ApiError::from_tool(otc_kernel::quota_exceeded(&q))
                }
                other => {
                    tracing::error!(error = %other.chain(), "commit failed");
                    ApiError::unavailable()
                }
            })?;
    match outcome {
        Ok(done) => Ok(serde_json::to_value(Committed {
            vault: vault.name.clone(),
            seq: done.committed.seq,
            commit_id: done.committed.commit_id,
            changed: done.committed.changed,
            indexed: done.indexed,
        })
        .expect("a commit's answer serializes")),
        // A delete of a path that holds nothing (expect "any"): not found, nothing applied.
        Err(stale) if stale.paths.is_empty() && !stale.missing.is_empty() => Err(ApiError::from_tool(
            ToolError::with_message(ErrorCode::NotFound, "no file at that path; nothing was applied")
                .detail("missing", stale.missing),
        )),
        Err(stale) => Err(ApiError::from_tool(
            ToolError::with_message(
                ErrorCode::ConcurrentModification,
                format!("{} path(s) changed since they were read; nothing was applied", stale.paths.len()),
            )
            .detail("stale", stale.paths),
        )),
    }
}
