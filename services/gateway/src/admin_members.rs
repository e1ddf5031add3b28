//! `GET /v1/admin/members[?after=ID&limit=N]` (`admin:members`, a credential bound to no one
//! vault): the tenant's people and services as its directory (SCIM) and sign-in know them, each
//! with its ACL groups by where they came from (an admin, the provider's groups through the
//! tenant's mapping at the last sign-in, directory groups) and the provider's own groups. Paged
//! by id; `next` is the `after` of the next page. An admin changes a member's groups at
//! `/v1/principals/{principal}/groups` and the mapping of provider groups at `/v1/idp`.

use axum::Json;
use axum::extract::{Extension, Query, State};
use chrono::{DateTime, Utc};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::scopes::MEMBERS as SCOPE;
use crate::{ApiError, AppState, Caller};

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MembersQuery {
    /// The `next` of the page before.
    #[serde(default)]
    pub after: Option<Uuid>,
    /// 1 to 500 (100 when left out).
    #[serde(default)]
    pub limit: Option<i64>,
}

/// A member's ACL groups by where each came from.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct MemberGroups {
    pub admin: Vec<String>,
    pub sign_in: Vec<String>,
    pub directory: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AdminMember {
    pub id: Uuid,
    /// `user` or `service`.
    pub kind: String,
    pub name: String,
    pub email: Option<String>,
    /// False once the directory deprovisioned it: none of its credentials work.
    pub active: bool,
    /// `directory`, `sign_in` or `local`.
    pub source: String,
    pub groups: MemberGroups,
    /// The provider's groups at the last sign-in or directory update.
    pub idp_groups: Vec<String>,
    pub created_at: DateTime<Utc>,
}

/// GET /v1/admin/members
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AdminMembers {
    pub members: Vec<AdminMember>,
    /// Present while there are more.
    pub next: Option<Uuid>,
}

pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<MembersQuery>,
) -> Result<Json<AdminMembers>, ApiError> {
    crate::auth::tenant_admin(&caller, SCOPE, "list the tenant's members")?;
    let limit = query.limit.unwrap_or(100);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::from_tool(
            ToolError::with_message(ErrorCode::InvalidInput, "limit: 1 to 500").detail("field", "limit"),
        ));
    }
    let store = &state.dispatcher.services.store;
    let mut tx = store.begin(caller.tenant_id).await.map_err(|e| ApiError::from_store(&e))?;
    let mut page = tx.members(query.after, limit + 1).await.map_err(|e| ApiError::from_store(&e))?;
    tx.commit().await.map_err(|e| ApiError::from_store(&e))?;
    let more = page.len() as i64 > limit;
    page.truncate(limit as usize);
    let next = if more { page.last().map(|m| m.id) } else { None };
    let members = page
        .into_iter()
        .map(|m| AdminMember {
            id: m.id,
            kind: m.kind,
            name: m.name,
            email: m.email,
            active: m.active,
            source: m.source,
            groups: MemberGroups { admin: m.admin_groups, sign_in: m.sign_in_groups, directory: m.directory_groups },
            idp_groups: m.idp_groups,
            created_at: m.created_at,
        })
        .collect();
    Ok(Json(AdminMembers { members, next }))
}
