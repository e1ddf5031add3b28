use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use otc_auth::PresentedToken;

use crate::auth_cache::Lookup;
use crate::{ApiError, AppState};

/// Who is calling: attached to every authenticated request.
pub type Caller = otc_store::Authenticated;

/// Requires `Authorization: Bearer <token>` naming a live token; attaches the [`Caller`].
pub async fn require_token(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let header = request.headers().get(header::AUTHORIZATION).ok_or_else(ApiError::missing_token)?;
    let header = header.to_str().map_err(|_| ApiError::invalid_token())?;
    let (scheme, token) = header.split_once(' ').ok_or_else(ApiError::invalid_token)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(ApiError::missing_token());
    }
    let presented: PresentedToken = token.trim().parse().map_err(|_| ApiError::invalid_token())?;

    let caller = match state.auth_cache.lookup(&state.kv, presented.tenant, &presented.hash).await {
        Lookup::Hit(caller) => caller,
        Lookup::Miss(tag) => {
            let lookup = async {
                let mut tx = state.store.begin(presented.tenant).await?;
                let caller = tx.authenticate(&presented.hash).await?;
                tx.commit().await?;
                Ok::<_, otc_store::StoreError>(caller)
            };
            let caller = lookup.await.map_err(|e| ApiError::from_store(&e))?.ok_or_else(ApiError::invalid_token)?;
            state.auth_cache.keep(&state.kv, tag, &presented.hash, &caller).await;
            caller
        }
    };
    request.extensions_mut().insert(caller);
    Ok(next.run(request).await)
}
