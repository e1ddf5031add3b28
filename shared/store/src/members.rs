//! The tenant's members as its admin sees them: every principal (people and services), how it
//! came (the directory, a sign-in, or an operator or admin), whether it is active, and its
//! groups by where each came from. Paged by id.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{Result, TenantTx};

/// One of the tenant's principals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub id: Uuid,
    /// `user` or `service`.
    pub kind: String,
    pub name: String,
    pub email: Option<String>,
    pub active: bool,
    /// `directory` (provisioned over SCIM), `sign_in` (came through the provider) or `local`
    /// (made by an operator or an admin, e.g. a service token's principal).
    pub source: String,
    /// The provider's groups at the last sign-in or directory update.
    pub idp_groups: Vec<String>,
    /// ACL groups an admin gave it.
    pub admin_groups: Vec<String>,
    /// ACL groups the tenant's mapping made of the provider's groups at the last sign-in.
    pub sign_in_groups: Vec<String>,
    /// Directory (SCIM) groups it is a member of, each an ACL group.
    pub directory_groups: Vec<String>,
    pub created_at: DateTime<Utc>,
}

impl TenantTx {
    /// At most `limit` principals with ids after `after`, by id.
    pub async fn members(&mut self, after: Option<Uuid>, limit: i64) -> Result<Vec<Member>> {
        Ok(sqlx::query_as!(
            Member,
            r#"SELECT p.id, p.kind, p.name, p.email, (p.deactivated_at IS NULL) AS "active!",
                      CASE WHEN p.directory IS NOT NULL THEN 'directory'
                           WHEN p.external_subject IS NOT NULL THEN 'sign_in'
                           ELSE 'local' END AS "source!",
                      p.idp_groups,
                      coalesce((SELECT array_agg(g.group_name ORDER BY g.group_name) FROM principal_groups g
                                 WHERE g.principal_id = p.id AND g.source = 'admin'), '{}') AS "admin_groups!",
                      coalesce((SELECT array_agg(g.group_name ORDER BY g.group_name) FROM principal_groups g
                                 WHERE g.principal_id = p.id AND g.source = 'sign_in'), '{}') AS "sign_in_groups!",
                      coalesce((SELECT array_agg(d.display_name ORDER BY d.display_name)
                                  FROM directory_group_members m
                                  JOIN directory_groups d ON d.tenant_id = m.tenant_id AND d.id = m.group_id
                                 WHERE m.principal_id = p.id), '{}') AS "directory_groups!",
                      p.created_at
                 FROM principals p
                WHERE $1::uuid IS NULL OR p.id > $1
                ORDER BY p.id
                LIMIT $2"#,
            after,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }
}
