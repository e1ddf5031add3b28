//! The tenant-admin surface of sign-in (`otc_identity` does the work):
//! - SCIM 2.0 at `/scim/v2` (`/Users`, `/Groups`, `/ServiceProviderConfig`, `/ResourceTypes`),
//!   for the tenant's directory, with an API token holding `admin:scim`.
//! - `GET /v1/oauth/grants[?principal=P&all=true]` and `DELETE /v1/oauth/grants/{id}`
//!   (`admin:grants`): what the tenant's people allowed which clients, and revoking it.
//! - `GET|PUT|DELETE /v1/idp` (`admin:sso`): the tenant's identity provider; `POST /v1/idp/test`
//!   tests the connection to it as sign-in would use it, with no person signing in.
//!
//! A credential bound to one vault manages none of these: they span the tenant.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use otc_errors::{ErrorCode, ToolError};
use otc_identity::admin::{AdminError, Changer, IdpInput};
use otc_identity::scim::{self, Resource, ScimError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ApiError, AppState, Caller};

use crate::scopes::{GRANTS as GRANTS_SCOPE, SCIM as SCIM_SCOPE, SSO as SSO_SCOPE};

fn identity(state: &AppState) -> Result<&std::sync::Arc<otc_identity::Identity>, ApiError> {
    state.identity.as_ref().ok_or_else(|| {
        ApiError::from_tool(ToolError::with_message(
            ErrorCode::NotFound,
            "sign-in is not configured on this server (oauth.secret_key is not set)",
        ))
        .with_status(StatusCode::NOT_FOUND)
    })
}

/// The caller may manage the tenant's sign-in and directory ([`crate::auth::tenant_admin`]).
fn tenant_admin(caller: &Caller, scope: &str) -> Result<(), ApiError> {
    crate::auth::tenant_admin(caller, scope, "manage the tenant's sign-in or directory")
}

fn scim_response(status: StatusCode, body: impl serde::Serialize) -> Response {
    let mut response = (status, Json(body)).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/scim+json"));
    response
}

fn scim_error(err: ScimError) -> Response {
    let status = StatusCode::from_u16(err.status).unwrap_or(StatusCode::BAD_REQUEST);
    scim_response(status, err.body())
}

fn scim_answer(result: Result<impl serde::Serialize, ScimError>, status: StatusCode) -> Response {
    match result {
        Ok(body) => scim_response(status, body),
        Err(e) => scim_error(e),
    }
}

/// The SCIM base URL, for resources' locations.
fn base(state: &AppState, headers: &HeaderMap) -> String {
    format!("{}/scim/v2", crate::origin::base_url(state.oauth.public_url.as_deref(), headers))
}

fn scim_body(body: &Bytes) -> Result<Value, ScimError> {
    let bad = |detail: &str| ScimError { status: 400, scim_type: Some("invalidSyntax"), detail: detail.into() };
    let value: Value = serde_json::from_slice(body).map_err(|_| bad("the body is not JSON"))?;
    // Postgres keeps no NUL in text or JSON.
    if value.to_string().contains("\\u0000") {
        return Err(bad("the body contains a NUL character"));
    }
    Ok(value)
}

/// Checks a SCIM request's credential; a refusal in SCIM's error shape.
fn scim_guard(state: &AppState, caller: &Caller) -> Result<std::sync::Arc<otc_identity::Identity>, Box<Response>> {
    let refuse =
        |status: u16, detail: &str| Box::new(scim_error(ScimError { status, scim_type: None, detail: detail.into() }));
    let identity = state.identity.clone().ok_or_else(|| refuse(404, "sign-in is not configured on this server"))?;
    if tenant_admin(caller, SCIM_SCOPE).is_err() {
        return Err(refuse(403, "this credential needs the admin:scim scope and no vault binding"));
    }
    Ok(identity)
}

macro_rules! guarded {
    ($state:expr, $caller:expr) => {
        match scim_guard(&$state, &$caller) {
            Ok(identity) => identity,
            Err(response) => return *response,
        }
    };
}

/// The resource an endpoint names (`Users`, `Groups`); another answers SCIM's 404.
fn resource(name: &str) -> Result<Resource, Box<Response>> {
    Resource::from_endpoint(name).ok_or_else(|| {
        Box::new(scim_error(ScimError { status: 404, scim_type: None, detail: format!("no endpoint /{name}") }))
    })
}

/// The resource an endpoint names and the request's body, or SCIM's answer to either being bad.
fn resource_and_body(name: &str, body: &Bytes) -> Result<(Resource, Value), Box<Response>> {
    let resource = resource(name)?;
    let body = scim_body(body).map_err(|e| Box::new(scim_error(e)))?;
    Ok((resource, body))
}

pub async fn service_provider_config(
    State(state): State<AppState>,
    headers: HeaderMap,
    Extension(caller): Extension<Caller>,
) -> Response {
    let _ = guarded!(state, caller);
    scim_response(StatusCode::OK, scim::service_provider_config(&base(&state, &headers)))
}

pub async fn resource_types(
    State(state): State<AppState>,
    headers: HeaderMap,
    Extension(caller): Extension<Caller>,
) -> Response {
    let _ = guarded!(state, caller);
    scim_response(StatusCode::OK, scim::resource_types(&base(&state, &headers)))
}

/// `GET /scim/v2/{Users|Groups}`.
pub async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Query(query): Query<scim::ListQuery>,
) -> Response {
    let identity = guarded!(state, caller);
    let resource = match resource(&name) {
        Ok(r) => r,
        Err(response) => return *response,
    };
    scim_answer(identity.scim_list(caller.tenant_id, &base(&state, &headers), resource, &query).await, StatusCode::OK)
}

/// `POST /scim/v2/{Users|Groups}`.
pub async fn create(
    State(state): State<AppState>,
    headers: HeaderMap,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    let identity = guarded!(state, caller);
    let (resource, body) = match resource_and_body(&name, &body) {
        Ok(parsed) => parsed,
        Err(response) => return *response,
    };
    let result = identity.scim_put(caller.tenant_id, &base(&state, &headers), resource, None, &body).await;
    scim_answer(result, StatusCode::CREATED)
}

/// `GET /scim/v2/{Users|Groups}/{id}`.
pub async fn get(
    State(state): State<AppState>,
    headers: HeaderMap,
    Extension(caller): Extension<Caller>,
    Path((name, id)): Path<(String, String)>,
) -> Response {
    let identity = guarded!(state, caller);
    let resource = match resource(&name) {
        Ok(r) => r,
        Err(response) => return *response,
    };
    scim_answer(identity.scim_get(caller.tenant_id, &base(&state, &headers), resource, &id).await, StatusCode::OK)
}

/// `PUT /scim/v2/{Users|Groups}/{id}`.
pub async fn replace(
    State(state): State<AppState>,
    headers: HeaderMap,
    Extension(caller): Extension<Caller>,
    Path((name, id)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let identity = guarded!(state, caller);
    let (resource, body) = match resource_and_body(&name, &body) {
        Ok(parsed) => parsed,
        Err(response) => return *response,
    };
    let result = identity.scim_put(caller.tenant_id, &base(&state, &headers), resource, Some(&id), &body).await;
    scim_answer(result, StatusCode::OK)
}

/// `PATCH /scim/v2/{Users|Groups}/{id}`.
pub async fn patch(
    State(state): State<AppState>,
    headers: HeaderMap,
    Extension(caller): Extension<Caller>,
    Path((name, id)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let identity = guarded!(state, caller);
    let (resource, body) = match resource_and_body(&name, &body) {
        Ok(parsed) => parsed,
        Err(response) => return *response,
    };
    let result = identity.scim_patch(caller.tenant_id, &base(&state, &headers), resource, &id, &body).await;
    scim_answer(result, StatusCode::OK)
}

/// `DELETE /scim/v2/{Users|Groups}/{id}`.
pub async fn delete(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path((name, id)): Path<(String, String)>,
) -> Response {
    let identity = guarded!(state, caller);
    let resource = match resource(&name) {
        Ok(r) => r,
        Err(response) => return *response,
    };
    match identity.scim_delete(caller.tenant_id, resource, &id).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => scim_error(e),
    }
}

fn admin_error(err: AdminError) -> ApiError {
    match err {
        AdminError::Invalid { field, message } => {
            ApiError::from_tool(ToolError::with_message(ErrorCode::InvalidInput, message).detail("field", field))
        }
        AdminError::NotFound(what) => {
            ApiError::from_tool(ToolError::with_message(ErrorCode::NotFound, format!("{what} not found")))
                .with_status(StatusCode::NOT_FOUND)
        }
        AdminError::DomainTaken => ApiError::from_tool(ToolError::with_message(
            ErrorCode::Conflict,
            "an email domain is already claimed by another organisation",
        ))
        .with_status(StatusCode::CONFLICT),
        AdminError::Forbidden(why) => {
            ApiError::from_tool(ToolError::with_message(ErrorCode::Forbidden, why)).with_status(StatusCode::FORBIDDEN)
        }
        AdminError::Internal(e) => {
            tracing::error!(error = %crate::error_chain(&e), "sign-in admin");
            ApiError::internal()
        }
    }
}

/// Whose grants (a principal's name or id; everyone's when left out), and whether revoked ones
/// too.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrantsQuery {
    #[serde(default)]
    pub principal: Option<String>,
    #[serde(default)]
    pub all: bool,
}

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Grants {
    pub grants: Vec<GrantOut>,
}

/// One OAuth grant: a client a principal let act for them.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct GrantOut {
    pub id: uuid::Uuid,
    pub principal: GrantPrincipal,
    pub client_id: String,
    pub client_name: Option<String>,
    pub scopes: Vec<String>,
    pub resource: String,
    /// How it was granted (consent, sso, id-jag ...).
    pub via: String,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub last_used_at: chrono::DateTime<chrono::Utc>,
    pub revoked_at: Option<chrono::DateTime<chrono::Utc>>,
    pub revoked_reason: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct GrantPrincipal {
    pub id: uuid::Uuid,
    pub name: String,
    pub active: bool,
}

#[derive(Serialize, JsonSchema)]
pub struct GrantRevoked {
    pub revoked: bool,
    pub gateways_told: bool,
}

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Idp {
    pub idp: Option<otc_identity::admin::IdpView>,
}

#[derive(Serialize, JsonSchema)]
pub struct IdpRemoved {
    pub removed: bool,
}

/// `GET /v1/oauth/grants`.
pub async fn grants(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(q): Query<GrantsQuery>,
) -> Result<Json<Grants>, ApiError> {
    tenant_admin(&caller, GRANTS_SCOPE)?;
    let identity = identity(&state)?;
    let grants = identity.grants(caller.tenant_id, q.principal.as_deref(), q.all).await.map_err(admin_error)?;
    let grants = grants
        .into_iter()
        .map(|g| GrantOut {
            id: g.id,
            principal: GrantPrincipal { id: g.principal_id, name: g.principal_name, active: g.principal_active },
            client_id: g.client_id,
            client_name: g.client_name,
            scopes: g.scopes,
            resource: g.resource,
            via: g.via,
            created_at: g.created_at,
            last_used_at: g.last_used_at,
            revoked_at: g.revoked_at,
            revoked_reason: g.revoked_reason,
        })
        .collect();
    Ok(Json(Grants { grants }))
}

/// `DELETE /v1/oauth/grants/{id}`.
pub async fn revoke_grant(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<GrantRevoked>, ApiError> {
    tenant_admin(&caller, GRANTS_SCOPE)?;
    let identity = identity(&state)?;
    let id = uuid::Uuid::try_parse(&id).map_err(|_| admin_error(AdminError::NotFound(format!("grant {id}"))))?;
    let revoked = identity.revoke_grant(caller.tenant_id, id).await.map_err(admin_error)?;
    Ok(Json(GrantRevoked { revoked, gateways_told: true }))
}

/// `GET /v1/idp`.
pub async fn idp(State(state): State<AppState>, Extension(caller): Extension<Caller>) -> Result<Json<Idp>, ApiError> {
    tenant_admin(&caller, SSO_SCOPE)?;
    let view = identity(&state)?.idp(caller.tenant_id).await.map_err(admin_error)?;
    Ok(Json(Idp { idp: view.into() }))
}

/// `PUT /v1/idp`: the body is the provider's settings (`issuer`, `client_id`, `client_secret`
/// or `keep_secret`, `email_domains`, `groups_claim`, `default_scopes`, `group_scopes`,
/// `group_acl`, `cimd_hosts`).
pub async fn set_idp(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    body: Bytes,
) -> Result<Json<Idp>, ApiError> {
    tenant_admin(&caller, SSO_SCOPE)?;
    let input: IdpInput = serde_json::from_slice(&body)
        .map_err(|e| ApiError::from_tool(ToolError::with_message(ErrorCode::InvalidInput, format!("the body: {e}"))))?;
    let by = Changer::TenantAdmin { scopes: caller.scopes.clone() };
    let view = identity(&state)?.set_idp(caller.tenant_id, input, by).await.map_err(admin_error)?;
    Ok(Json(Idp { idp: view.into() }))
}

/// POST /v1/idp/test: each step of the connection test, and whether all passed.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct IdpTest {
    pub ok: bool,
    pub steps: Vec<otc_identity::federation::ConnectionStep>,
}

/// `POST /v1/idp/test`: reads the provider's discovery and keys afresh and presents the client's
/// credentials at its token endpoint with a code it never issued (see
/// [`otc_identity::federation::ConnectionStep`]). 200 with `ok: false` and the failing step when
/// the provider is misconfigured; 404 when the tenant has none.
pub async fn test_idp(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
) -> Result<Json<IdpTest>, ApiError> {
    tenant_admin(&caller, SSO_SCOPE)?;
    let issuer = crate::origin::base_url(state.oauth.public_url.as_deref(), &headers);
    let steps = identity(&state)?.test_idp(caller.tenant_id, &issuer).await.map_err(admin_error)?;
    Ok(Json(IdpTest { ok: steps.iter().all(|s| s.ok), steps }))
}

/// `DELETE /v1/idp`.
pub async fn remove_idp(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<IdpRemoved>, ApiError> {
    tenant_admin(&caller, SSO_SCOPE)?;
    let removed = identity(&state)?.remove_idp(caller.tenant_id).await.map_err(admin_error)?;
    if !removed {
        return Err(admin_error(AdminError::NotFound("identity provider".into())));
    }
    Ok(Json(IdpRemoved { removed: true }))
}
