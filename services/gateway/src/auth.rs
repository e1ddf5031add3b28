use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use otc_auth::PresentedToken;

use crate::auth_cache::Lookup;
use crate::{ApiError, AppState};

/// Who is calling: attached to every authenticated request.
pub type Caller = otc_store::Authenticated;

/// Requires `Authorization: Bearer <token>` naming a live token; attaches the [`Caller`]. Every
/// challenge (a 401 here, a 403 for a missing scope further in) names the resource's OAuth
/// metadata (RFC 9728).
pub async fn require_token(State(state): State<AppState>, request: Request, next: Next) -> Response {
    // What the metadata URL is made of, kept cheaply (reference-counted) for the rare answer
    // that carries a challenge.
    let uri = request.uri().clone();
    let mut origin = axum::http::HeaderMap::new();
    for name in [header::HOST, header::HeaderName::from_static("x-forwarded-proto")] {
        if let Some(value) = request.headers().get(&name) {
            origin.insert(name, value.clone());
        }
    }
    let method = match request.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        None => "none",
        Some(h) if h.split_once(' ').is_some_and(|(_, t)| t.trim().starts_with("otc_")) => "token",
        Some(_) => "oauth",
    };
    let mut request = request;
    let mut response = match authenticate(&state, &mut request).await {
        Ok(()) => {
            otc_telemetry::metrics().auth(method, "ok");
            next.run(request).await
        }
        Err(refused) => {
            let outcome = match (method, refused.status.is_server_error()) {
                (_, true) => "error",
                ("none", _) => "missing",
                _ => "refused",
            };
            otc_telemetry::metrics().auth(method, outcome);
            crate::error::refuse(request, refused.into_response()).await
        }
    };
    if let Some(challenge) = response.headers().get(header::WWW_AUTHENTICATE) {
        let metadata = crate::oauth::metadata_url(&state.oauth, &origin, uri.path());
        let challenge = crate::oauth::with_metadata(challenge, &metadata);
        response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
    }
    response
}

async fn authenticate(state: &AppState, request: &mut Request) -> Result<(), ApiError> {
    let header = request.headers().get(header::AUTHORIZATION).ok_or_else(ApiError::missing_token)?;
    let header = header.to_str().map_err(|_| ApiError::invalid_token())?;
    let (scheme, token) = header.split_once(' ').ok_or_else(ApiError::invalid_token)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(ApiError::missing_token());
    }
    let token = token.trim();
    // An API token names its tenant in its text; an OAuth access token (a JWT) in its `tid`
    // claim, read here only to find the cache entry: a hit is a token with exactly these bytes
    // that was verified before, and a miss verifies it whole.
    let access_token = !token.starts_with("otc_");
    let presented = if access_token {
        let tenant = otc_auth::jwt::tenant_claim(token).ok_or_else(ApiError::invalid_token)?;
        PresentedToken { tenant, hash: otc_auth::TokenHash::of(token) }
    } else {
        token.parse().map_err(|_| ApiError::invalid_token())?
    };

    let caller = match state.auth_cache.lookup(&state.kv, presented.tenant, &presented.hash).await {
        Lookup::Hit(caller) => *caller,
        Lookup::Miss(tag) => {
            if access_token {
                let identity = state.identity.as_ref().ok_or_else(ApiError::invalid_token)?;
                let issuer = crate::oauth::base_url(&state.oauth, request.headers());
                if identity.access_token_tenant_for(token, Some(&issuer)).await != Some(presented.tenant) {
                    return Err(ApiError::invalid_token());
                }
            }
            let lookup = async {
                let mut tx = state.store.begin(presented.tenant).await?;
                let caller = tx.authenticate(&presented.hash).await?;
                tx.commit().await?;
                Ok::<_, otc_store::StoreError>(caller)
            };
            let mut caller = lookup.await.map_err(|e| ApiError::from_store(&e))?.ok_or_else(ApiError::invalid_token)?;
            state.auth_cache.keep(&state.kv, tag, &presented.hash, &caller).await;
            if let crate::auth_cache::Tag::Generation(generation) = tag {
                caller.token_generation = Some(generation);
            }
            caller
        }
    };
    // An access token is for one resource (RFC 8707): the MCP endpoint it was issued for, or the
    // whole server.
    if let Some(audience) = &caller.audience {
        let base = crate::oauth::base_url(&state.oauth, request.headers());
        let resource = crate::oauth::resource_url(&state.oauth, request.headers(), request.uri().path());
        if *audience != resource && *audience != base {
            return Err(ApiError::invalid_token());
        }
    }
    request.extensions_mut().insert(caller);
    Ok(())
}

/// Refuses a caller without `scope`, naming it (403 with an insufficient_scope challenge).
pub(crate) fn require(caller: &Caller, scope: &str) -> Result<(), crate::ApiError> {
    if caller.scopes.iter().any(|s| s.grants(scope)) {
        return Ok(());
    }
    Err(crate::ApiError::insufficient_scope(scope))
}

/// The caller may act for the whole tenant: it holds `scope` and is bound to no one vault
/// (403 otherwise, saying it cannot `what`).
pub(crate) fn tenant_admin(caller: &Caller, scope: &str, what: &str) -> Result<(), crate::ApiError> {
    require(caller, scope)?;
    if caller.vault_id.is_some() {
        return Err(crate::ApiError::from_tool(otc_errors::ToolError::with_message(
            otc_errors::ErrorCode::Forbidden,
            format!("a credential bound to one vault cannot {what}"),
        ))
        .with_status(axum::http::StatusCode::FORBIDDEN));
    }
    Ok(())
}
