//! The tenant admin API for vaults (`admin:vaults`, a credential bound to no one vault):
//! - `GET /v1/admin/vaults`: the live vaults, and the deleted ones not erased yet.
//! - `POST /v1/admin/vaults` `{name}`: makes one (409 conflict when a live or deleted vault has
//!   the name).
//! - `PATCH /v1/admin/vaults/{vault}` `{name}`: renames one.
//! - `DELETE /v1/admin/vaults/{vault}`: deletes one: no tool, token bound to it or job reaches
//!   it from the answer on, and it is erased after `lifecycle.deletion_grace_hours`.
//! - `POST /v1/admin/vaults/{vault}/restore`: brings a deleted one back as it was.
//! - `POST /v1/admin/vaults/{vault}/purge`: erases a deleted one at the next erase pass.
//! - `PUT /v1/admin/vaults/{vault}/read-only` `{reason?}`: puts the vault on hold (maintenance, a
//!   legal hold): every write to it, through MCP or /v1, answers `read_only_mode` within
//!   `read_only.refresh_ms`, and it cannot be renamed, deleted or purged; `DELETE` lifts it
//!   (one the operator put on answers 403 `reason: operator_hold`).
//! - `GET /v1/admin/vaults/{vault}/export` (`admin:export`): the vault as a tar archive.
//! - `GET /v1/admin/health`: each live vault's index and embedding health (its index's lag
//!   behind its commits, queued and failed jobs, the last error).
//! - `POST /v1/admin/imports[?name=N]` (`admin:vaults`), a tar body: an export (a vault's, as
//!   a new vault named N or its own name; or a whole tenant's, each vault under its own name)
//!   made into new vaults, files, memory, ACLs and trail; nothing is left of one that fails.
//!
//! `{vault}` is a name or an id. Every mutation takes an `Idempotency-Key` header; every call is
//! audited and rate-limited as each /v1 route is. Another tenant's vaults answer as missing ones.
//! While the deployment or the tenant is read-only every change but a vault's hold answers
//! `read_only`; a held vault cannot be renamed or deleted (`read_only_mode`).

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::HeaderMap;
use chrono::{DateTime, Utc};
use otc_errors::{ErrorCode, ToolError};
use otc_store::StoreError;
use otc_store::read_only::{HoldBy, HoldChange};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::scopes::VAULTS as SCOPE;
use crate::{ApiError, AppState, Caller};

/// A vault as the admin sees it; a deleted one says when it was deleted and when it is erased.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AdminVault {
    pub id: uuid::Uuid,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted_at: Option<DateTime<Utc>>,
    /// When a deleted vault is erased (from then on, at the next erase pass).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purge_after: Option<DateTime<Utc>>,
    /// A live vault's hold: its writes are refused (`read_only_mode`) until it is lifted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<ReadOnlyHold>,
}

/// A hold on writes (the tenant's or a vault's).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ReadOnlyHold {
    pub since: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `operator` (lifted only by the operator) or `tenant`.
    pub set_by: String,
}

impl From<otc_store::read_only::Hold> for ReadOnlyHold {
    fn from(hold: otc_store::read_only::Hold) -> Self {
        ReadOnlyHold { since: hold.since, reason: hold.reason, set_by: hold.by }
    }
}

/// The refusal of a tenant admin's change to a hold the operator put on.
pub(crate) fn operator_hold() -> ApiError {
    ApiError::from_tool(
        ToolError::with_message(
            ErrorCode::Forbidden,
            "the operator put this hold on; only the operator lifts or changes it (obsidian-tc read-only)",
        )
        .detail("reason", "operator_hold"),
    )
}

/// PUT /v1/admin/vaults/{vault}/read-only: why (shown to every writer refused).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HoldInput {
    /// Up to 500 characters.
    #[serde(default)]
    pub reason: Option<String>,
}

/// GET /v1/admin/vaults
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AdminVaults {
    pub vaults: Vec<AdminVault>,
    /// Deleted and not erased yet: `restore` brings one back.
    pub deleted: Vec<AdminVault>,
}

/// POST /v1/admin/vaults and PATCH /v1/admin/vaults/{vault}: the (new) name.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VaultName {
    /// Letters, digits, spaces, dots, dashes and underscores; up to 100 characters.
    pub name: String,
}

fn live(v: otc_store::Vault) -> AdminVault {
    AdminVault {
        id: v.id,
        name: v.name,
        created_at: Some(v.created_at),
        deleted_at: None,
        purge_after: None,
        read_only: None,
    }
}

fn deleted(v: otc_store::DeletedVault) -> AdminVault {
    AdminVault {
        id: v.id,
        name: v.name,
        created_at: None,
        deleted_at: Some(v.deleted_at),
        purge_after: Some(v.purge_after),
        read_only: None,
    }
}

fn tenant_admin(caller: &Caller) -> Result<(), ApiError> {
    crate::auth::tenant_admin(caller, SCOPE, "manage the tenant's vaults")
}

/// Refuses a change to the tenant's vaults (to `vault`'s, when it names one) while a hold is on.
pub(crate) async fn writable(state: &AppState, caller: &Caller, vault: Option<&str>) -> Result<(), ApiError> {
    let services = &state.dispatcher.services;
    services.read_only.check_write(&services.store, caller.tenant_id, vault).await.map_err(ApiError::from_tool)
}

/// A store refusal as the admin API answers it: a missing vault as vault_not_found (another
/// tenant's too, alike), a taken name as conflict, a bad name as invalid_input.
fn refused(vault: &str) -> impl Fn(StoreError) -> ApiError + '_ {
    move |e| {
        match e {
        StoreError::NotFound(_) => ApiError::from_tool(ToolError::new(ErrorCode::VaultNotFound).echo("vault", vault)),
        StoreError::Conflict { .. } => ApiError::from_tool(
            ToolError::with_message(
                ErrorCode::Conflict,
                "a vault (live, or deleted and not erased yet) has this name: restore or purge it, or pick another",
            )
            .echo("name", vault),
        ),
        StoreError::Invalid { .. } => ApiError::from_tool(
            ToolError::with_message(
                ErrorCode::InvalidInput,
                "a vault name is 1 to 100 letters, digits, spaces, dots, dashes and underscores, starting with a letter or digit",
            )
            .detail("field", "name"),
        ),
        other => ApiError::from_store(&other),
    }
    }
}

fn body<T: serde::de::DeserializeOwned>(bytes: &Bytes) -> Result<T, ApiError> {
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::from_tool(ToolError::with_message(ErrorCode::InvalidInput, format!("the body: {e}"))))
}

fn answer<T: Serialize>(value: T) -> Result<Value, ApiError> {
    Ok(serde_json::to_value(value).expect("a wire type serializes"))
}

pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<AdminVaults>, ApiError> {
    tenant_admin(&caller)?;
    let store = &state.dispatcher.services.store;
    let mut tx = store.begin(caller.tenant_id).await.map_err(|e| ApiError::from_store(&e))?;
    let vaults = tx.list_vaults().await.map_err(|e| ApiError::from_store(&e))?;
    let gone = tx.deleted_vaults().await.map_err(|e| ApiError::from_store(&e))?;
    let mut holds = tx.read_only_holds().await.map_err(|e| ApiError::from_store(&e))?.vaults;
    tx.commit().await.map_err(|e| ApiError::from_store(&e))?;
    let with_hold = |v: otc_store::Vault| {
        let hold = holds.iter().position(|(id, _, _)| *id == v.id).map(|at| holds.swap_remove(at).2.into());
        AdminVault { read_only: hold, ..live(v) }
    };
    Ok(Json(AdminVaults {
        vaults: vaults.into_iter().map(with_hold).collect(),
        deleted: gone.into_iter().map(deleted).collect(),
    }))
}

/// One vault's index and embedding health (`GET /v1/admin/health`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct VaultHealthOut {
    pub id: uuid::Uuid,
    pub name: String,
    /// The vault's last commit, and the last one its index has taken in.
    pub head_seq: i64,
    pub indexed_seq: i64,
    /// Index and embedding jobs waiting, and those that failed for good.
    pub index_queued: i64,
    pub index_dead: i64,
    pub embed_queued: i64,
    pub embed_dead: i64,
    /// The newest error one of those jobs recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// GET /v1/admin/health
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct VaultsHealth {
    pub vaults: Vec<VaultHealthOut>,
}

/// `GET /v1/admin/health` (`admin:vaults`): every live vault's index and embedding health, in
/// one query.
pub async fn health(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<VaultsHealth>, ApiError> {
    tenant_admin(&caller)?;
    let store = &state.dispatcher.services.store;
    let mut tx = store.begin(caller.tenant_id).await.map_err(|e| ApiError::from_store(&e))?;
    let rows = tx.vaults_health().await.map_err(|e| ApiError::from_store(&e))?;
    tx.commit().await.map_err(|e| ApiError::from_store(&e))?;
    let vaults = rows
        .into_iter()
        .map(|h| VaultHealthOut {
            id: h.vault_id,
            name: h.name,
            head_seq: h.head_seq,
            indexed_seq: h.indexed_seq,
            index_queued: h.index_queued,
            index_dead: h.index_dead,
            embed_queued: h.embed_queued,
            embed_dead: h.embed_dead,
            last_error: h.last_error,
        })
        .collect();
    Ok(Json(VaultsHealth { vaults }))
}

pub async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    tenant_admin(&caller)?;
    let input: VaultName = body(&bytes)?;
    writable(&state, &caller, None).await?;
    let services = &state.dispatcher.services;
    crate::idempotent::keyed(&state, &caller, &headers, "admin_vault_create", json!(input), |_| async {
        let made = otc_kernel::lifecycle::create_vault(&services.store, caller.tenant_id, &input.name)
            .await
            .map_err(refused(&input.name))?;
        answer(live(made))
    })
    .await
    .map(Json)
}

pub async fn rename(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(vault): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    tenant_admin(&caller)?;
    let input: VaultName = body(&bytes)?;
    writable(&state, &caller, Some(&vault)).await?;
    let services = &state.dispatcher.services;
    let operation = format!("admin_vault_rename {vault}");
    crate::idempotent::keyed(&state, &caller, &headers, &operation, json!(input), |_| async {
        let lifecycle =
            otc_kernel::lifecycle::rename_vault(&services.store, &services.kv, caller.tenant_id, &vault, &input.name);
        let renamed = lifecycle.await.map_err(|e| match e {
            StoreError::NotFound(_) => refused(&vault)(e),
            other => refused(&input.name)(other),
        })?;
        answer(live(renamed))
    })
    .await
    .map(Json)
}

pub async fn delete(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(vault): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    tenant_admin(&caller)?;
    writable(&state, &caller, Some(&vault)).await?;
    let services = &state.dispatcher.services;
    let grace = services.config.lifecycle.deletion_grace();
    let operation = format!("admin_vault_delete {vault}");
    crate::idempotent::keyed(&state, &caller, &headers, &operation, Value::Null, |_| async {
        let (gone, purge_after) =
            otc_kernel::lifecycle::delete_vault(&services.store, &services.kv, caller.tenant_id, &vault, grace)
                .await
                .map_err(refused(&vault))?;
        answer(AdminVault {
            id: gone.id,
            name: gone.name,
            created_at: Some(gone.created_at),
            deleted_at: Some(Utc::now()),
            purge_after: Some(purge_after),
            read_only: None,
        })
    })
    .await
    .map(Json)
}

pub async fn restore(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(vault): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    tenant_admin(&caller)?;
    writable(&state, &caller, None).await?;
    let services = &state.dispatcher.services;
    let operation = format!("admin_vault_restore {vault}");
    crate::idempotent::keyed(&state, &caller, &headers, &operation, Value::Null, |_| async {
        let back = otc_kernel::lifecycle::undelete_vault(&services.store, &services.kv, caller.tenant_id, &vault)
            .await
            .map_err(refused(&vault))?;
        answer(live(back))
    })
    .await
    .map(Json)
}

pub async fn purge(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(vault): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    tenant_admin(&caller)?;
    writable(&state, &caller, None).await?;
    let services = &state.dispatcher.services;
    let operation = format!("admin_vault_purge {vault}");
    crate::idempotent::keyed(&state, &caller, &headers, &operation, Value::Null, |_| async {
        let gone = otc_kernel::lifecycle::purge_vault(&services.store, caller.tenant_id, &vault)
            .await
            .map_err(refused(&vault))?;
        answer(AdminVault { purge_after: Some(Utc::now()), ..deleted(gone) })
    })
    .await
    .map(Json)
}

/// `PUT /v1/admin/vaults/{vault}/read-only`: puts the vault on hold.
pub async fn hold(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(vault): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    tenant_admin(&caller)?;
    let input: HoldInput = if bytes.is_empty() { HoldInput::default() } else { body(&bytes)? };
    set_hold(&state, &caller, &vault, &headers, Some(input)).await
}

/// `DELETE /v1/admin/vaults/{vault}/read-only`: lifts the vault's hold.
pub async fn lift(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(vault): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    tenant_admin(&caller)?;
    set_hold(&state, &caller, &vault, &headers, None).await
}

async fn set_hold(
    state: &AppState,
    caller: &Caller,
    vault: &str,
    headers: &HeaderMap,
    hold: Option<HoldInput>,
) -> Result<Json<Value>, ApiError> {
    let services = &state.dispatcher.services;
    let operation = format!("admin_vault_hold {vault}");
    crate::idempotent::keyed(state, caller, headers, &operation, json!(hold), |_| async {
        let store_err = |e: StoreError| match e {
            StoreError::Invalid { .. } => ApiError::from_tool(
                ToolError::with_message(
                    ErrorCode::InvalidInput,
                    "a reason is at most 500 characters, with no control characters",
                )
                .detail("field", "reason"),
            ),
            other => refused(vault)(other),
        };
        let mut tx = services.store.begin(caller.tenant_id).await.map_err(store_err)?;
        let found = tx.vault_by_name_or_id(vault).await.map_err(store_err)?;
        let found = found.ok_or_else(|| refused(vault)(StoreError::NotFound("vault".into())))?;
        let reason = hold.as_ref().map(|h| h.reason.as_deref());
        let change = tx.set_vault_read_only(found.id, reason, HoldBy::Tenant).await.map_err(store_err)?;
        // Putting on a hold the operator holds already leaves theirs; lifting it is refused.
        if change == HoldChange::OperatorHold && hold.is_none() {
            return Err(operator_hold());
        }
        let held = tx.read_only_holds().await.map_err(store_err)?;
        tx.commit().await.map_err(store_err)?;
        services.read_only.forget(caller.tenant_id);
        let hold = held.vaults.into_iter().find(|(id, _, _)| *id == found.id).map(|(_, _, h)| h.into());
        answer(AdminVault { read_only: hold, ..live(found) })
    })
    .await
    .map(Json)
}

/// `GET /v1/admin/vaults/{vault}/export` (`admin:export`): the vault as a tar archive, streamed
/// as it is made (`otc_kernel::export`): its files as stored, an index with each file's SHA-256,
/// the change-log head, and its ACL rules, memory, sessions, goals, episodes and audit trail.
/// An archive without `END.json` was cut short.
pub async fn export(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(vault): Path<String>,
) -> Result<axum::response::Response, ApiError> {
    crate::auth::tenant_admin(&caller, crate::scopes::EXPORT, "export the tenant's vaults")?;
    let services = &state.dispatcher.services;
    let mut tx = services.store.begin(caller.tenant_id).await.map_err(|e| ApiError::from_store(&e))?;
    let found = tx.vault_by_name_or_id(&vault).await.map_err(|e| ApiError::from_store(&e))?;
    tx.commit().await.map_err(|e| ApiError::from_store(&e))?;
    let found =
        found.ok_or_else(|| ApiError::from_tool(ToolError::new(ErrorCode::VaultNotFound).echo("vault", &vault)))?;
    // The trail holds every call this gateway answered before this one.
    services.audit.flush(std::time::Duration::from_secs(2)).await;
    let (sink, chunks) = otc_kernel::export::Sink::new(8);
    let (store, blobs, tenant) = (services.store.clone(), services.blobs.clone(), caller.tenant_id);
    let name = found.name.clone();
    tokio::spawn(async move {
        if let Err(e) = otc_kernel::export::export_vault(&store, &blobs, tenant, &found, &sink).await {
            tracing::warn!(%tenant, vault = %found.id, error = %crate::error_chain(&e), "export cut short");
            sink.fail("the export stopped short".into()).await;
        }
    });
    // A chunk that says the export stopped aborts the response: the archive is not taken whole.
    let chunks = futures::stream::unfold(chunks, |mut chunks| async move {
        let chunk = chunks.recv().await?.map_err(std::io::Error::other);
        Some((chunk, chunks))
    });
    let body = axum::body::Body::from_stream(chunks);
    Ok(axum::response::Response::builder()
        .header(axum::http::header::CONTENT_TYPE, "application/x-tar")
        .header(
            axum::http::header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{}.tar\"", name.replace('"', "")),
        )
        .body(body)
        .expect("a valid response"))
}

/// POST /v1/admin/imports
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportQuery {
    /// The new vault's name, for a vault's archive (its own name when left out).
    #[serde(default)]
    pub name: Option<String>,
}

/// What an import made.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ImportedArchive {
    /// The vaults made, by name.
    pub vaults: Vec<String>,
    pub files: u64,
    pub bytes: u64,
    /// Rows inserted per table.
    pub rows: std::collections::BTreeMap<String, u64>,
    /// Rows left out per table: their ids were taken, or they name a principal this tenant does
    /// not have.
    pub skipped: std::collections::BTreeMap<String, u64>,
}

/// An import's failure as the admin API answers it.
fn import_refused(e: otc_kernel::export::import::ImportError) -> ApiError {
    use otc_kernel::export::import::ImportError as E;
    match e {
        E::Archive(why) => ApiError::from_tool(
            ToolError::with_message(ErrorCode::InvalidInput, format!("the archive: {why}; nothing was imported"))
                .detail("field", "body"),
        ),
        E::TooLarge { path, size, limit } => ApiError::from_tool(
            ToolError::with_message(
                ErrorCode::Overflow,
                format!("a file is larger than the upload limit of {limit} bytes; nothing was imported"),
            )
            .detail("path", otc_errors::echo(&path))
            .detail("size", size)
            .detail("limit", limit),
        ),
        E::Exists(name) => refused(&name)(StoreError::Conflict { constraint: String::new() }),
        E::Store(StoreError::Quota(q)) | E::Index(otc_indexer::IndexError::Store(StoreError::Quota(q))) => {
            ApiError::from_tool(otc_kernel::quota_exceeded(&q))
        }
        E::Store(e @ StoreError::Invalid { .. }) => refused("")(e),
        E::Io(e) => {
            tracing::warn!(error = %crate::error_chain(&e), "an import's body stopped");
            ApiError::from_tool(ToolError::with_message(
                ErrorCode::InvalidInput,
                "the archive's upload stopped before its end; nothing was imported",
            ))
        }
        other => {
            tracing::error!(error = %crate::error_chain(&other), "an import failed");
            ApiError::unavailable()
        }
    }
}

pub async fn import(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    axum::extract::Query(query): axum::extract::Query<ImportQuery>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Result<Json<Value>, ApiError> {
    tenant_admin(&caller)?;
    writable(&state, &caller, None).await?;
    let services = &state.dispatcher.services;
    let operation = "admin_vault_import";
    crate::idempotent::keyed(&state, &caller, &headers, operation, json!(query), |_| async {
        use futures::TryStreamExt;
        let stream = body.into_data_stream().map_err(std::io::Error::other);
        let archive = tokio_util::io::StreamReader::new(stream);
        let deps = otc_kernel::export::import::Deps {
            store: &services.store,
            blobs: &services.blobs,
            indexer: &services.indexer,
            kv: &services.kv,
            max_file_bytes: state.sync.max_blob_bytes as u64,
        };
        let done = otc_kernel::export::import::import(&deps, caller.tenant_id, archive, query.name.as_deref())
            .await
            .map_err(import_refused)?;
        answer(ImportedArchive {
            vaults: done.vaults,
            files: done.files,
            bytes: done.bytes,
            rows: done.rows,
            skipped: done.skipped,
        })
    })
    .await
    .map(Json)
}
