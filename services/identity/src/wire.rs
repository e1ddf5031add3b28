//! The JSON bodies of the OAuth and SCIM endpoints as types, for the HTTP API's committed
//! contract (`docs/http-api.json`). What the endpoints answer is built as these types and
//! serialized. What they take is parsed leniently, the way directories and clients send it
//! (SCIM attribute names in any case, booleans as strings, a form for the token endpoint), so
//! the request types here describe the fields the parsers read; a test in each parser's module
//! holds the two lists together.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

// ---- OAuth 2.0 ----

/// An OAuth error (RFC 6749 §5.2).
#[derive(Debug, Serialize, JsonSchema)]
pub struct OAuthErrorBody {
    pub error: String,
    pub error_description: String,
}

/// Authorization server metadata (RFC 8414), also served as OpenID Connect discovery.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: String,
    pub revocation_endpoint: String,
    pub jwks_uri: String,
    pub response_types_supported: Vec<String>,
    pub response_modes_supported: Vec<String>,
    pub grant_types_supported: Vec<String>,
    pub code_challenge_methods_supported: Vec<String>,
    pub token_endpoint_auth_methods_supported: Vec<String>,
    pub revocation_endpoint_auth_methods_supported: Vec<String>,
    /// The scopes the tools declare.
    pub scopes_supported: Vec<String>,
    pub client_id_metadata_document_supported: bool,
    pub authorization_response_iss_parameter_supported: bool,
    /// OpenID discovery only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject_types_supported: Option<Vec<String>>,
    /// OpenID discovery only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_token_signing_alg_values_supported: Option<Vec<String>>,
}

/// The keys that sign access tokens (RFC 7517).
#[derive(Debug, Serialize, JsonSchema)]
pub struct JwkSet {
    /// Public keys: EC P-256 (ES256), each with its `kid`.
    pub keys: Vec<Value>,
}

/// A dynamic client registration (RFC 7591 §2): the fields read; others are kept and echoed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ClientMetadata {
    /// 1 to 20 exact URIs: https, http on a loopback address, or a native app's scheme.
    pub redirect_uris: Vec<String>,
    /// none, client_secret_basic (the default) or client_secret_post.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
    /// authorization_code, refresh_token, urn:ietf:params:oauth:grant-type:jwt-bearer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grant_types: Option<Vec<String>>,
    /// code only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_types: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_name: Option<String>,
    /// Only in a Client ID Metadata Document: the document's own URL (a registration is
    /// assigned one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Any other metadata, kept as sent.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// A registered client (RFC 7591 §3.2.1): its metadata as registered, and its credentials.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RegisteredClient {
    #[serde(flatten)]
    pub metadata: ClientMetadata,
    pub client_id: String,
    pub client_id_issued_at: i64,
    /// A confidential client's secret, shown this once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// 0: it does not expire.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret_expires_at: Option<i64>,
}

/// The token endpoint's form (RFC 6749 §4.1.3 and §6, and the JWT bearer grant of RFC 7523
/// that redeems an identity assertion, ID-JAG): the fields read, by grant.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TokenRequest {
    /// authorization_code, refresh_token or urn:ietf:params:oauth:grant-type:jwt-bearer (for
    /// confidential clients).
    pub grant_type: String,
    pub code: Option<String>,
    pub redirect_uri: Option<String>,
    /// PKCE (RFC 7636), S256.
    pub code_verifier: Option<String>,
    pub refresh_token: Option<String>,
    /// The JWT bearer grant's identity assertion.
    pub assertion: Option<String>,
    /// The resource indicator (RFC 8707) the token is for.
    pub resource: Option<String>,
    pub scope: Option<String>,
    /// With client_secret_post (else HTTP Basic), or a public client's id.
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
}

/// The revocation endpoint's form (RFC 7009).
#[derive(Debug, Serialize, JsonSchema)]
pub struct RevokeRequest {
    /// A refresh or access token of the client.
    pub token: String,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
}

/// An issued token (RFC 6749 §5.1).
#[derive(Debug, Serialize, JsonSchema)]
pub struct TokenResponse {
    pub access_token: String,
    /// Bearer.
    pub token_type: String,
    pub expires_in: i64,
    /// The scopes granted, space-separated.
    pub scope: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
}

// ---- SCIM 2.0 ----

/// A SCIM error (RFC 7644 §3.12).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScimErrorBody {
    pub schemas: Vec<String>,
    /// The HTTP status, as a string.
    pub status: String,
    #[serde(rename = "scimType", skip_serializing_if = "Option::is_none")]
    pub scim_type: Option<String>,
    pub detail: String,
}

/// A resource's `meta` (RFC 7643 §3.1).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScimMeta {
    #[serde(rename = "resourceType")]
    pub resource_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<DateTime<Utc>>,
    #[serde(rename = "lastModified", skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<DateTime<Utc>>,
    pub location: String,
}

/// A provisioned person (RFC 7643 §4.1). In a request, `userName` is required, `active` may
/// be a string ("True"), names are matched in any case, and server-owned attributes (`id`,
/// `meta`, `schemas`) and `password` are ignored.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScimUser {
    pub schemas: Vec<String>,
    pub id: Uuid,
    /// 1 to 200 characters.
    #[serde(rename = "userName")]
    pub user_name: String,
    pub active: bool,
    pub meta: ScimMeta,
    /// The other attributes the directory sent (`name`, `emails`, `externalId`,
    /// `displayName`...), kept as sent; the primary email must be in one of the tenant's
    /// email domains.
    #[serde(flatten)]
    pub attributes: Map<String, Value>,
}

/// A directory group (RFC 7643 §4.2): its name is an ACL group's.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScimGroup {
    pub schemas: Vec<String>,
    pub id: Uuid,
    /// 1 to 100 letters, digits, spaces or `._@:-`, starting with a letter or digit.
    #[serde(rename = "displayName")]
    pub display_name: String,
    #[serde(rename = "externalId", skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// Left out when the listing's `excludedAttributes` names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub members: Option<Vec<ScimMember>>,
    pub meta: ScimMeta,
}

/// A group's member: a provisioned person.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScimMember {
    /// The person's id.
    pub value: Uuid,
    /// The person's userName.
    pub display: String,
    #[serde(rename = "$ref")]
    pub reference: String,
}

/// A user or a group, as its endpoint (`/Users`, `/Groups`) serves them.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ScimResource {
    User(ScimUser),
    Group(ScimGroup),
}

/// A page of resources (RFC 7644 §3.4.2).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScimList<T> {
    pub schemas: Vec<String>,
    #[serde(rename = "totalResults")]
    pub total_results: i64,
    #[serde(rename = "startIndex")]
    pub start_index: i64,
    #[serde(rename = "itemsPerPage")]
    pub items_per_page: usize,
    #[serde(rename = "Resources")]
    pub resources: Vec<T>,
}

/// A PATCH request (RFC 7644 §3.5.2), as Okta and Entra ID send it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScimPatch {
    /// `urn:ietf:params:scim:api:messages:2.0:PatchOp` when given.
    pub schemas: Option<Vec<String>>,
    /// At most 1000; `operations` is read too.
    #[serde(rename = "Operations")]
    pub operations: Vec<ScimPatchOperation>,
}

/// One PATCH operation.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScimPatchOperation {
    /// add, replace or remove, in any case.
    pub op: String,
    /// A top-level attribute, a sub-attribute (`name.givenName`), a filtered multi-valued one
    /// (`emails[type eq "work"].value`, `members[value eq "id"]`); left out, `value` is an
    /// object of attributes.
    pub path: Option<String>,
    pub value: Option<Value>,
}

/// What the server supports (RFC 7643 §5).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ServiceProviderConfig {
    pub schemas: Vec<String>,
    #[serde(rename = "documentationUri")]
    pub documentation_uri: String,
    pub patch: Supported,
    pub bulk: BulkSupport,
    pub filter: FilterSupport,
    #[serde(rename = "changePassword")]
    pub change_password: Supported,
    pub sort: Supported,
    pub etag: Supported,
    #[serde(rename = "authenticationSchemes")]
    pub authentication_schemes: Vec<AuthenticationScheme>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Supported {
    pub supported: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BulkSupport {
    pub supported: bool,
    #[serde(rename = "maxOperations")]
    pub max_operations: u32,
    #[serde(rename = "maxPayloadSize")]
    pub max_payload_size: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FilterSupport {
    pub supported: bool,
    #[serde(rename = "maxResults")]
    pub max_results: i64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AuthenticationScheme {
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    pub description: String,
    pub primary: bool,
}

/// A resource type the server serves (RFC 7643 §6).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ResourceType {
    pub schemas: Vec<String>,
    pub id: String,
    pub name: String,
    pub endpoint: String,
    pub schema: String,
    pub meta: ScimMeta,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The string arguments of each `call("...")` in `source`.
    fn read_fields(source: &str, call: &str) -> Vec<String> {
        source.split(call).skip(1).filter_map(|rest| rest.split('"').next().map(str::to_string)).collect()
    }

    fn properties<T: JsonSchema>() -> Vec<String> {
        let schema = schemars::schema_for!(T).to_value();
        schema["properties"].as_object().map(|p| p.keys().cloned().collect()).unwrap_or_default()
    }

    /// The request types describe the lenient parsers: every field those read is in them.
    #[test]
    fn every_field_a_parser_reads_is_in_its_request_type() {
        let mut form = properties::<TokenRequest>();
        form.extend(properties::<RevokeRequest>());
        let read = read_fields(include_str!("tokens.rs"), "field(form, \"");
        assert!(read.len() >= 10, "{read:?}");
        let missing: Vec<_> = read.iter().filter(|f| !form.contains(f)).collect();
        assert!(missing.is_empty(), "the token endpoints read {missing:?}, which TokenRequest/RevokeRequest lack");

        let metadata = properties::<ClientMetadata>();
        let source = include_str!("clients.rs");
        let mut read = read_fields(source, "strings(doc, \"");
        read.extend(read_fields(source, "doc.get(\""));
        assert!(read.len() >= 5, "{read:?}");
        let missing: Vec<_> = read.iter().filter(|f| !metadata.contains(f)).collect();
        assert!(missing.is_empty(), "registration reads {missing:?}, which ClientMetadata lacks");
    }
}
