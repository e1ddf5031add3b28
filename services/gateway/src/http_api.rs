//! The HTTP API's committed contract (`docs/http-api.json`): every route the gateway serves
//! besides MCP's JSON-RPC (whose tools have their own snapshots), with its method, what it
//! needs, and the JSON Schema of what it takes and answers, generated from the very types the
//! handlers use. Where a standard defines the body (OAuth 2.0 and its extensions, SCIM 2.0),
//! the route names the standard beside the schema of what we serve of it
//! (`otc_identity::wire`); pages and redirects name the standard alone. A test compares the
//! generated contract with the committed file, so a change to the API is a change to that file
//! too.

use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

use crate::{
    acl_api, admin_chat, admin_domains, admin_members, admin_tokens, admin_usage, admin_vaults, authorization,
    directory, elicit, invitations, me, oauth, policies, scopes, signup, whoami, wire,
};

/// What a body is.
enum Body {
    None,
    /// JSON described by a schema of ours.
    Json(schemars::Schema),
    /// Raw bytes (a file's content).
    Bytes,
    /// JSON Lines or CSV rows, as the query asks.
    Export,
    /// What the named standard defines, and nothing of ours to describe (a page, a redirect).
    Standard(&'static str),
    /// What the named standard defines, as we serve or read it: its content type and schema.
    Defined {
        standard: &'static str,
        content_type: &'static str,
        schema: schemars::Schema,
    },
}

struct Route {
    method: &'static str,
    path: &'static str,
    /// A scope the token must hold, or how else the route is reached.
    access: &'static str,
    query: Option<schemars::Schema>,
    request: Body,
    response: Body,
    /// The status of a success, when it is not 200.
    status: u16,
}

/// The error body every `/v1` route answers a refusal with.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct ErrorBody {
    error: ErrorPayload,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct ErrorPayload {
    /// One of `codes` below.
    code: String,
    message: String,
    retryable: bool,
    /// What to do about it.
    hint: String,
    details: Map<String, Value>,
}

fn routes(g: &mut SchemaGenerator) -> Vec<Route> {
    macro_rules! s {
        ($t:ty) => {
            g.subschema_for::<$t>()
        };
    }
    let route = |method, path, access, query, request, response| Route {
        method,
        path,
        access,
        query,
        request,
        response,
        status: 200,
    };
    use otc_identity::wire as idw;
    macro_rules! scim {
        ($t:ident $(<$p:ty>)?) => {
            Body::Defined {
                standard: "SCIM 2.0 (RFC 7643 resources, RFC 7644 protocol)",
                content_type: "application/scim+json",
                schema: g.subschema_for::<idw::$t $(<$p>)?>(),
            }
        };
    }
    macro_rules! oauth {
        ($standard:literal, $content_type:literal, $t:ident) => {
            Body::Defined { standard: $standard, content_type: $content_type, schema: g.subschema_for::<idw::$t>() }
        };
    }
    let mut routes = vec![
        route("GET", "/healthz", "open", None, Body::None, Body::Standard("200 with `ok` while the process runs")),
        route(
            "GET",
            "/readyz",
            "open",
            None,
            Body::None,
            Body::Standard("200 while every dependency answers, else 503 naming them"),
        ),
        route(
            "GET",
            "/metrics",
            "the operators' listener (server.admin_listen)",
            None,
            Body::None,
            Body::Standard("Prometheus text exposition 0.0.4"),
        ),
        route("GET", "/v1/whoami", "any token", None, Body::None, Body::Json(s!(whoami::WhoAmI))),
        route(
            "POST",
            "/v1/invitations/accept",
            "open (per address, as client registration)",
            None,
            Body::Json(s!(invitations::AcceptInvitation)),
            Body::Json(s!(invitations::InvitationAccepted)),
        ),
        route(
            "POST",
            "/v1/signup",
            "open when signup.enabled (per address, as client registration)",
            None,
            Body::Json(s!(signup::SignUp)),
            Body::Json(s!(signup::SignedUp)),
        ),
        route("GET", "/v1/me/vaults", "any token", None, Body::None, Body::Json(s!(me::MyVaults))),
        route("GET", "/v1/me/tokens", "any token", None, Body::None, Body::Json(s!(me::MyTokens))),
        route("DELETE", "/v1/me/tokens/{id}", "any token", None, Body::None, Body::Json(s!(me::Ended))),
        route("GET", "/v1/me/grants", "any token", None, Body::None, Body::Json(s!(me::MyGrants))),
        route("DELETE", "/v1/me/grants/{id}", "any token", None, Body::None, Body::Json(s!(me::Ended))),
        route("GET", "/v1/me/clients", "any token", None, Body::None, Body::Json(s!(me::MyClients))),
        route(
            "POST",
            "/v1/elicit",
            scopes::CONFIRM,
            None,
            Body::Json(s!(elicit::ElicitRequest)),
            Body::Json(s!(elicit::Elicited)),
        ),
        route("GET", "/v1/audit", scopes::AUDIT, None, Body::None, Body::Export),
        route("GET", "/v1/admin/vaults", scopes::VAULTS, None, Body::None, Body::Json(s!(admin_vaults::AdminVaults))),
        route(
            "POST",
            "/v1/admin/vaults",
            scopes::VAULTS,
            None,
            Body::Json(s!(admin_vaults::VaultName)),
            Body::Json(s!(admin_vaults::AdminVault)),
        ),
        route(
            "PATCH",
            "/v1/admin/vaults/{vault}",
            scopes::VAULTS,
            None,
            Body::Json(s!(admin_vaults::VaultName)),
            Body::Json(s!(admin_vaults::AdminVault)),
        ),
        route(
            "DELETE",
            "/v1/admin/vaults/{vault}",
            scopes::VAULTS,
            None,
            Body::None,
            Body::Json(s!(admin_vaults::AdminVault)),
        ),
        route(
            "POST",
            "/v1/admin/vaults/{vault}/restore",
            scopes::VAULTS,
            None,
            Body::None,
            Body::Json(s!(admin_vaults::AdminVault)),
        ),
        route(
            "POST",
            "/v1/admin/vaults/{vault}/purge",
            scopes::VAULTS,
            None,
            Body::None,
            Body::Json(s!(admin_vaults::AdminVault)),
        ),
        route(
            "PUT",
            "/v1/admin/vaults/{vault}/read-only",
            scopes::VAULTS,
            None,
            Body::Json(s!(admin_vaults::HoldInput)),
            Body::Json(s!(admin_vaults::AdminVault)),
        ),
        route(
            "DELETE",
            "/v1/admin/vaults/{vault}/read-only",
            scopes::VAULTS,
            None,
            Body::None,
            Body::Json(s!(admin_vaults::AdminVault)),
        ),
        route(
            "GET",
            "/v1/admin/vaults/{vault}/export",
            scopes::EXPORT,
            None,
            Body::None,
            Body::Standard("a POSIX tar archive (application/x-tar), streamed; END.json last"),
        ),
        route("GET", "/v1/admin/health", scopes::VAULTS, None, Body::None, Body::Json(s!(admin_vaults::VaultsHealth))),
        route(
            "POST",
            "/v1/admin/imports",
            scopes::VAULTS,
            Some(s!(admin_vaults::ImportQuery)),
            Body::Standard("an export's tar archive (application/x-tar), streamed"),
            Body::Json(s!(admin_vaults::ImportedArchive)),
        ),
        route("GET", "/v1/admin/domains", scopes::DOMAINS, None, Body::None, Body::Json(s!(admin_domains::Domains))),
        route(
            "POST",
            "/v1/admin/domains",
            scopes::DOMAINS,
            None,
            Body::Json(s!(admin_domains::ClaimDomain)),
            Body::Json(s!(admin_domains::DomainClaim)),
        ),
        route(
            "POST",
            "/v1/admin/domains/{domain}/verify",
            scopes::DOMAINS,
            None,
            Body::None,
            Body::Json(s!(admin_domains::DomainChanged)),
        ),
        route(
            "DELETE",
            "/v1/admin/domains/{domain}",
            scopes::DOMAINS,
            None,
            Body::None,
            Body::Json(s!(admin_domains::DomainChanged)),
        ),
        route("GET", "/v1/admin/tokens", scopes::TOKENS, None, Body::None, Body::Json(s!(admin_tokens::AdminTokens))),
        route(
            "GET",
            "/v1/admin/members",
            scopes::MEMBERS,
            Some(s!(admin_members::MembersQuery)),
            Body::None,
            Body::Json(s!(admin_members::AdminMembers)),
        ),
        route("GET", "/v1/admin/chat", scopes::CHAT, None, Body::None, Body::Json(s!(admin_chat::Chat))),
        route(
            "PUT",
            "/v1/admin/chat",
            scopes::CHAT,
            None,
            Body::Json(s!(admin_chat::ChatInput)),
            Body::Json(s!(admin_chat::Chat)),
        ),
        route("DELETE", "/v1/admin/chat", scopes::CHAT, None, Body::None, Body::Json(s!(admin_chat::ChatRemoved))),
        route(
            "GET",
            "/v1/admin/usage",
            scopes::USAGE,
            Some(s!(admin_usage::UsageQuery)),
            Body::None,
            Body::Json(s!(admin_usage::Usage)),
        ),
        route(
            "POST",
            "/v1/admin/tokens",
            scopes::TOKENS,
            None,
            Body::Json(s!(admin_tokens::NewAdminToken)),
            Body::Json(s!(admin_tokens::IssuedAdminToken)),
        ),
        route(
            "DELETE",
            "/v1/admin/tokens/{id}",
            scopes::TOKENS,
            None,
            Body::None,
            Body::Json(s!(admin_tokens::RevokedToken)),
        ),
        route(
            "GET",
            "/v1/acl",
            "admin:acl",
            Some(s!(acl_api::ListQuery)),
            Body::None,
            Body::Json(s!(acl_api::AclRules)),
        ),
        route(
            "PUT",
            "/v1/acl",
            "admin:acl",
            None,
            Body::Json(s!(acl_api::SetRule)),
            Body::Json(s!(acl_api::AclRuleSet)),
        ),
        route(
            "DELETE",
            "/v1/acl",
            "admin:acl",
            Some(s!(acl_api::SubjectFields)),
            Body::None,
            Body::Json(s!(acl_api::AclRuleRemoved)),
        ),
        route(
            "GET",
            "/v1/acl/access",
            "admin:acl",
            Some(s!(acl_api::AccessQuery)),
            Body::None,
            Body::Json(s!(acl_api::MemberAccess)),
        ),
        route(
            "GET",
            "/v1/principals/{principal}/groups",
            "admin:acl",
            None,
            Body::None,
            Body::Json(s!(acl_api::PrincipalGroups)),
        ),
        route(
            "POST",
            "/v1/principals/{principal}/groups",
            "admin:acl",
            None,
            Body::Json(s!(acl_api::GroupChange)),
            Body::Json(s!(acl_api::PrincipalGroups)),
        ),
        route(
            "GET",
            "/v1/oauth/grants",
            scopes::GRANTS,
            Some(s!(directory::GrantsQuery)),
            Body::None,
            Body::Json(s!(directory::Grants)),
        ),
        route(
            "DELETE",
            "/v1/oauth/grants/{id}",
            scopes::GRANTS,
            None,
            Body::None,
            Body::Json(s!(directory::GrantRevoked)),
        ),
        route("GET", "/v1/idp", scopes::SSO, None, Body::None, Body::Json(s!(directory::Idp))),
        route(
            "PUT",
            "/v1/idp",
            scopes::SSO,
            None,
            Body::Json(s!(otc_identity::admin::IdpInput)),
            Body::Json(s!(directory::Idp)),
        ),
        route("DELETE", "/v1/idp", scopes::SSO, None, Body::None, Body::Json(s!(directory::IdpRemoved))),
        route("POST", "/v1/idp/test", scopes::SSO, None, Body::None, Body::Json(s!(directory::IdpTest))),
        route("GET", "/v1/policies", scopes::CONFIRM, None, Body::None, Body::Json(s!(policies::Policies))),
        route(
            "PUT",
            "/v1/policies",
            scopes::CONFIRM,
            None,
            Body::Json(s!(policies::PolicyInput)),
            Body::Json(s!(policies::Policies)),
        ),
        route("GET", "/scim/v2/ServiceProviderConfig", scopes::SCIM, None, Body::None, scim!(ServiceProviderConfig)),
        route("GET", "/scim/v2/ResourceTypes", scopes::SCIM, None, Body::None, scim!(ScimList<idw::ResourceType>)),
        route(
            "GET",
            "/scim/v2/{resource}",
            scopes::SCIM,
            Some(s!(otc_identity::scim::ListQuery)),
            Body::None,
            scim!(ScimList<idw::ScimResource>),
        ),
        Route {
            status: 201,
            ..route("POST", "/scim/v2/{resource}", scopes::SCIM, None, scim!(ScimResource), scim!(ScimResource))
        },
        route("GET", "/scim/v2/{resource}/{id}", scopes::SCIM, None, Body::None, scim!(ScimResource)),
        route("PUT", "/scim/v2/{resource}/{id}", scopes::SCIM, None, scim!(ScimResource), scim!(ScimResource)),
        route("PATCH", "/scim/v2/{resource}/{id}", scopes::SCIM, None, scim!(ScimPatch), scim!(ScimResource)),
        Route {
            status: 204,
            ..route("DELETE", "/scim/v2/{resource}/{id}", scopes::SCIM, None, Body::None, Body::None)
        },
        route("GET", "/v1/vaults", "any token", None, Body::None, Body::Json(s!(wire::VaultList))),
        route(
            "GET",
            "/v1/vaults/{vault}/files",
            "read:notes",
            Some(s!(wire::PageQuery)),
            Body::None,
            Body::Json(s!(wire::FileList)),
        ),
        route("GET", "/v1/vaults/{vault}/file", "read:notes", Some(s!(wire::FileQuery)), Body::None, Body::Bytes),
        route(
            "GET",
            "/v1/vaults/{vault}/changes",
            "read:notes",
            Some(s!(wire::PageQuery)),
            Body::None,
            Body::Json(s!(wire::ChangeList)),
        ),
        route(
            "POST",
            "/v1/vaults/{vault}/commit",
            "write:notes (delete:notes to delete)",
            None,
            Body::Json(s!(wire::CommitRequest)),
            Body::Json(s!(wire::Committed)),
        ),
        route("GET", "/v1/vaults/{vault}/blobs/{hash}", "read:notes", None, Body::None, Body::Bytes),
        Route {
            status: 201,
            ..route(
                "PUT",
                "/v1/vaults/{vault}/blobs/{hash}",
                "write:notes",
                None,
                Body::Bytes,
                Body::Json(s!(wire::Uploaded)),
            )
        },
        route("GET", oauth::WELL_KNOWN, "open", None, Body::None, Body::Json(s!(oauth::ResourceMetadata))),
        route(
            "GET",
            "/.well-known/oauth-protected-resource/{*resource}",
            "open",
            None,
            Body::None,
            Body::Json(s!(oauth::ResourceMetadata)),
        ),
        route(
            "GET",
            authorization::METADATA,
            "open",
            None,
            Body::None,
            oauth!("RFC 8414", "application/json", ServerMetadata),
        ),
        route(
            "GET",
            authorization::OPENID_CONFIGURATION,
            "open",
            None,
            Body::None,
            oauth!("OpenID Connect Discovery 1.0", "application/json", ServerMetadata),
        ),
        route(
            "GET",
            otc_identity::paths::JWKS,
            "open",
            None,
            Body::None,
            oauth!("RFC 7517", "application/json", JwkSet),
        ),
        Route {
            status: 201,
            ..route(
                "POST",
                otc_identity::paths::REGISTER,
                "open, rate limited per address",
                None,
                oauth!("RFC 7591", "application/json", ClientMetadata),
                oauth!("RFC 7591", "application/json", RegisteredClient),
            )
        },
        route(
            "GET",
            otc_identity::paths::AUTHORIZE,
            "open",
            None,
            Body::None,
            Body::Standard("RFC 6749 section 4.1 with PKCE (RFC 7636); a redirect"),
        ),
        route("GET", otc_identity::paths::SIGN_IN, "open", None, Body::None, Body::Standard("an HTML page")),
        route(
            "POST",
            otc_identity::paths::SIGN_IN,
            "open",
            None,
            Body::Standard("an HTML form"),
            Body::Standard("a redirect"),
        ),
        route(
            "GET",
            otc_identity::paths::CALLBACK,
            "open",
            None,
            Body::None,
            Body::Standard("OpenID Connect authorization code response; a redirect"),
        ),
        route("GET", otc_identity::paths::CONSENT, "signed in", None, Body::None, Body::Standard("an HTML page")),
        route(
            "POST",
            otc_identity::paths::CONSENT,
            "signed in",
            None,
            Body::Standard("an HTML form"),
            Body::Standard("a redirect"),
        ),
        route(
            "POST",
            otc_identity::paths::TOKEN,
            "client",
            None,
            oauth!("RFC 6749, RFC 7523 (ID-JAG)", "application/x-www-form-urlencoded", TokenRequest),
            oauth!("RFC 6749 section 5.1", "application/json", TokenResponse),
        ),
        route(
            "POST",
            otc_identity::paths::REVOKE,
            "client",
            None,
            oauth!("RFC 7009", "application/x-www-form-urlencoded", RevokeRequest),
            Body::None,
        ),
    ];
    // The web console: HTML pages and forms, each calling the routes above for its person.
    routes.extend(crate::console::ROUTES.iter().map(|&(method, path)| {
        let open = ["/console/sign-in", "/console/invitation"].contains(&path) || path.starts_with("/console/assets/");
        let request = if method == "POST" { Body::Standard("an HTML form") } else { Body::None };
        let response = match path {
            p if p.starts_with("/console/assets/") => Body::Standard("the console's stylesheet or script"),
            p if p.ends_with("/export") => Body::Standard("a download (the API's export, as an attachment)"),
            _ if method == "POST" => Body::Standard("a redirect, or an HTML page"),
            _ => Body::Standard("an HTML page"),
        };
        route(method, path, if open { "open" } else { "console session" }, None, request, response)
    }));
    routes
}

fn body(body: &Body) -> Value {
    match body {
        Body::None => Value::Null,
        Body::Json(schema) => json!({ "content_type": "application/json", "schema": schema.clone().to_value() }),
        Body::Bytes => json!({ "content_type": "application/octet-stream" }),
        Body::Export => json!({ "content_type": "application/x-ndjson or text/csv", "rows": "audit records" }),
        Body::Standard(what) => json!({ "standard": what }),
        Body::Defined { standard, content_type, schema } => {
            json!({ "standard": standard, "content_type": content_type, "schema": schema.clone().to_value() })
        }
    }
}

/// The contract as committed: routes, the schemas they name, the error body and every code
/// with its HTTP status.
pub fn contract() -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let routes: Vec<Value> = routes(&mut generator)
        .iter()
        .map(|r| {
            json!({
                "method": r.method,
                "path": r.path,
                "access": r.access,
                "status": r.status,
                "query": r.query.clone().map(|q| q.to_value()),
                "request": body(&r.request),
                "response": body(&r.response),
            })
        })
        .collect();
    let error_body = generator.subschema_for::<ErrorBody>().to_value();
    let oauth_error = generator.subschema_for::<otc_identity::wire::OAuthErrorBody>().to_value();
    let scim_error = generator.subschema_for::<otc_identity::wire::ScimErrorBody>().to_value();
    let codes: Map<String, Value> =
        otc_errors::TABLE.iter().map(|c| (c.code.as_str().to_string(), json!(c.http_status))).collect();
    json!({
        "title": "obsidian-tc HTTP API",
        "note": "MCP's JSON-RPC routes (/mcp and its surfaces) are described by the tool snapshots",
        "routes": routes,
        "error": { "schema": error_body, "codes": codes },
        "oauth_error": { "standard": "RFC 6749 section 5.2", "schema": oauth_error },
        "scim_error": { "standard": "RFC 7644 section 3.12", "content_type": "application/scim+json", "schema": scim_error },
        "$defs": generator.take_definitions(true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed_path() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/http-api.json")
    }

    /// `UPDATE_SNAPSHOTS=1 cargo test -p otc-gateway http_api` writes it anew.
    #[test]
    fn the_committed_contract_is_the_generated_one() {
        let generated = serde_json::to_string_pretty(&contract()).unwrap() + "\n";
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            std::fs::write(committed_path(), &generated).unwrap();
        }
        let committed = std::fs::read_to_string(committed_path()).expect("docs/http-api.json is committed");
        assert!(
            committed == generated,
            "docs/http-api.json differs from the API's types: run UPDATE_SNAPSHOTS=1 cargo test -p otc-gateway http_api and commit it"
        );
    }

    /// Every route the router names by a literal path is in the contract.
    #[test]
    fn every_route_is_in_the_contract() {
        let source = [include_str!("lib.rs"), include_str!("console/mod.rs")].concat();
        let listed: Vec<String> =
            contract()["routes"].as_array().unwrap().iter().map(|r| r["path"].as_str().unwrap().to_string()).collect();
        let mut missing = Vec::new();
        for piece in source.split(".route(\"").skip(1).chain(source.split(".route_service(\"").skip(1)) {
            let path = &piece[..piece.find('"').unwrap()];
            // The console's catch-all answers its not-found page: no route of the API.
            if !path.starts_with("/mcp") && path != "/console/{*rest}" && !listed.iter().any(|l| l == path) {
                missing.push(path.to_string());
            }
        }
        assert!(missing.is_empty(), "routes missing from the contract: {missing:?}");
        assert!(listed.len() >= 45, "{} routes", listed.len());
    }
}
