//! The bodies of the `/v1` sync API, as they travel: what the handlers answer and accept, what
//! `obsidian-tc sync` sends and reads (it uses these same types), and what the committed HTTP
//! contract (`docs/http-api.json`, made by `http_api.rs`) describes.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// GET /v1/vaults
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct VaultList {
    pub vaults: Vec<VaultRow>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct VaultRow {
    pub id: uuid::Uuid,
    pub name: String,
    pub created_at: DateTime<Utc>,
}

/// The query of the paged listings: `after` a path (files), `since` a sequence (changes),
/// `limit` 1 to 5000 (1000 when left out).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct PageQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
}

/// GET /v1/vaults/{vault}/files: one page of the manifest in path order.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FileList {
    pub vault: String,
    /// The vault's sequence when the page was read.
    pub head: i64,
    pub files: Vec<FileRow>,
    /// The `after` of the next page; null on the last one.
    pub next_after: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FileRow {
    pub path: String,
    /// Hex SHA-256 of the content.
    pub hash: String,
    pub size: i64,
    pub mtime: DateTime<Utc>,
    /// note, attachment, canvas, base or other.
    pub kind: String,
    /// The sequence of the commit that last changed the path.
    pub seq: i64,
}

/// GET /v1/vaults/{vault}/changes: the change log after `since`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChangeList {
    pub vault: String,
    pub head: i64,
    pub changes: Vec<ChangeRow>,
    /// The `since` of the next page.
    pub next_since: i64,
    /// Whether the log goes on past this page.
    pub more: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChangeRow {
    pub seq: i64,
    pub commit_id: uuid::Uuid,
    pub path: String,
    /// create, update, delete or move.
    pub op: String,
    pub old_hash: Option<String>,
    pub new_hash: Option<String>,
    pub size: Option<i64>,
    pub mtime: Option<DateTime<Utc>>,
    pub committed_at: DateTime<Utc>,
    /// The tool that made the change (`v1_commit` for this API).
    pub tool: Option<String>,
    /// What the committing client said it was (a commit's `tool`).
    pub client_tool: Option<String>,
    pub client_name: Option<String>,
    pub client_model: Option<String>,
    /// The hash chaining this record to the one before it.
    pub record_hash: String,
}

/// GET /v1/vaults/{vault}/file?path=PATH
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FileQuery {
    pub path: String,
}

/// PUT /v1/vaults/{vault}/blobs/{hash}: the stored content.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Uploaded {
    pub hash: String,
    pub size: u64,
}

/// POST /v1/vaults/{vault}/commit: changes applied together or not at all.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommitRequest {
    pub changes: Vec<ChangeRequest>,
    /// What the client calls the action (kept as `client_tool`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_model: Option<String>,
}

/// One change: a put (`put`) or a delete (`delete: true`) of `path`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeRequest {
    pub path: String,
    /// "absent", "any", or the 64-hex hash the path must hold.
    pub expect: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub put: Option<PutRequest>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delete: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PutRequest {
    /// Content uploaded to this vault (or already readable in it), by hex SHA-256.
    pub hash: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtime: Option<DateTime<Utc>>,
}

/// A commit that landed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Committed {
    pub vault: String,
    /// The vault's sequence after the commit.
    pub seq: i64,
    pub commit_id: uuid::Uuid,
    /// How many paths changed (a put of identical content changes nothing).
    pub changed: usize,
    /// Whether the index caught up before the answer (else the workers finish it).
    pub indexed: bool,
}
