//! The OAuth resource-server surface (RFC 9728): `/.well-known/oauth-protected-resource`
//! describes this server as a protected resource (and `/.well-known/oauth-protected-resource
//! /mcp[/<surface>]` each MCP endpoint, per the RFC's path rule), and every 401 or 403 from a
//! protected route carries `resource_metadata` in its `WWW-Authenticate` challenge, so a client
//! finds how to get a token from the refusal alone.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Uri};

use crate::{ApiError, AppState};

pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// Where the OAuth settings come from.
#[derive(Debug, Clone, Default)]
pub struct OAuthSettings {
    /// `mcp.public_url`, without a trailing slash.
    pub public_url: Option<String>,
    pub authorization_servers: Vec<String>,
}

/// The base URL clients reach this server at ([`crate::origin::base_url`]).
pub fn base_url(settings: &OAuthSettings, headers: &HeaderMap) -> String {
    crate::origin::base_url(settings.public_url.as_deref(), headers)
}

/// The resource a request path belongs to: an MCP endpoint (`/mcp`, `/mcp/<surface>`) or, for
/// anything else, the server as a whole ("").
fn resource_path(path: &str) -> String {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.split_first() {
        Some((&"mcp", [])) => "/mcp".into(),
        Some((&"mcp", rest)) if crate::mcp::SURFACES.contains(&rest.join("/").as_str()) => {
            format!("/mcp/{}", rest.join("/"))
        }
        _ => String::new(),
    }
}

/// The metadata URL for the resource serving `path`.
pub fn metadata_url(settings: &OAuthSettings, headers: &HeaderMap, path: &str) -> String {
    format!("{}{WELL_KNOWN}{}", base_url(settings, headers), resource_path(path))
}

/// Adds `resource_metadata` to a challenge.
pub fn with_metadata(challenge: &HeaderValue, url: &str) -> HeaderValue {
    let text = challenge.to_str().unwrap_or("Bearer");
    HeaderValue::from_str(&format!("{text}, resource_metadata=\"{url}\"")).unwrap_or_else(|_| challenge.clone())
}

/// The scopes the tools declare, and the ones the sync API and confirmations use.
pub fn scopes(state: &AppState) -> Vec<String> {
    let mut scopes: Vec<&str> =
        state.dispatcher.registry().iter().flat_map(|t| t.spec.scopes.iter().copied()).collect();
    scopes.extend(["read:notes", "write:notes", "delete:notes"]);
    scopes.extend(crate::scopes::CHECKED);
    scopes.sort_unstable();
    scopes.dedup();
    scopes.into_iter().map(str::to_string).collect()
}

/// The resource (RFC 8707) a request path belongs to, as an absolute URL.
pub fn resource_url(settings: &OAuthSettings, headers: &HeaderMap, path: &str) -> String {
    format!("{}{}", base_url(settings, headers), resource_path(path))
}

/// Protected resource metadata (RFC 9728).
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct ResourceMetadata {
    pub resource: String,
    pub authorization_servers: Vec<String>,
    pub scopes_supported: Vec<String>,
    pub bearer_methods_supported: Vec<String>,
    pub resource_name: String,
}

/// `GET /.well-known/oauth-protected-resource[/mcp[/<surface>]]`.
pub async fn metadata(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<ResourceMetadata>, ApiError> {
    let rest = uri.path().strip_prefix(WELL_KNOWN).unwrap_or("");
    let resource = resource_path(rest);
    if rest != resource && !(rest == "/" && resource.is_empty()) {
        return Err(ApiError::not_found());
    }
    let base = base_url(&state.oauth, &headers);
    // This server's own authorization server first (clients take the first), when it runs one.
    let mut servers = Vec::new();
    if state.identity.is_some() {
        servers.push(base.clone());
    }
    servers.extend(state.oauth.authorization_servers.iter().filter(|s| **s != base).cloned());
    Ok(Json(ResourceMetadata {
        resource: format!("{base}{resource}"),
        authorization_servers: servers,
        scopes_supported: scopes(&state),
        bearer_methods_supported: vec!["header".into()],
        resource_name: "obsidian-tc".into(),
    }))
}
