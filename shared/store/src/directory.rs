//! The tenant's directory as SCIM provisions it: people (user principals with their SCIM
//! attributes) and groups (ACL groups with members). Deprovisioning a person deactivates the
//! principal and revokes its grants; every credential of it stops working.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use crate::{Result, StoreError, TenantTx};

/// A provisioned person.
#[derive(Debug, Clone, PartialEq)]
pub struct DirectoryUser {
    pub id: Uuid,
    pub user_name: String,
    pub active: bool,
    /// The SCIM attributes as the directory gave them (externalId, name, emails, ...).
    pub attributes: Value,
    pub created_at: DateTime<Utc>,
}

/// A provisioned group.
#[derive(Debug, Clone, PartialEq)]
pub struct DirectoryGroup {
    pub id: Uuid,
    pub display_name: String,
    pub external_id: Option<String>,
    /// (principal id, user name).
    pub members: Vec<(Uuid, String)>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Which people or groups a listing takes: an attribute equal to a value, or all.
#[derive(Debug, Clone, PartialEq)]
pub enum DirectoryFilter {
    All,
    Id(Uuid),
    /// userName (people) or displayName (groups).
    Name(String),
    ExternalId(String),
}

impl DirectoryFilter {
    fn parts(&self) -> (Option<Uuid>, Option<&str>, Option<&str>) {
        match self {
            DirectoryFilter::All => (None, None, None),
            DirectoryFilter::Id(id) => (Some(*id), None, None),
            DirectoryFilter::Name(n) => (None, Some(n), None),
            DirectoryFilter::ExternalId(e) => (None, None, Some(e)),
        }
    }
}

impl TenantTx {
    /// A page of provisioned people (`offset`, at most `limit`) and how many match in all.
    pub async fn directory_users(
        &mut self,
        filter: &DirectoryFilter,
        offset: i64,
        limit: i64,
    ) -> Result<(i64, Vec<DirectoryUser>)> {
        let (id, name, external) = filter.parts();
        let rows = sqlx::query!(
            r#"SELECT id, name, (deactivated_at IS NULL) AS "active!", directory AS "directory!", created_at,
                      count(*) OVER () AS "total!"
                 FROM principals
                WHERE directory IS NOT NULL AND kind = 'user'
                  AND ($1::uuid IS NULL OR id = $1)
                  AND ($2::text IS NULL OR lower(name) = lower($2))
                  AND ($3::text IS NULL OR directory->>'externalId' = $3)
                ORDER BY created_at, id
                OFFSET $4 LIMIT $5"#,
            id,
            name,
            external,
            offset,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        let total = match rows.first() {
            Some(r) => r.total,
            // A page past the end still reports the total.
            None => {
                sqlx::query_scalar!(
                    r#"SELECT count(*) AS "n!" FROM principals
                    WHERE directory IS NOT NULL AND kind = 'user'
                      AND ($1::uuid IS NULL OR id = $1) AND ($2::text IS NULL OR lower(name) = lower($2))
                      AND ($3::text IS NULL OR directory->>'externalId' = $3)"#,
                    id,
                    name,
                    external
                )
                .fetch_one(&mut *self.tx)
                .await?
            }
        };
        let users = rows
            .into_iter()
            .map(|r| DirectoryUser {
                id: r.id,
                user_name: r.name,
                active: r.active,
                attributes: r.directory,
                created_at: r.created_at,
            })
            .collect();
        Ok((total, users))
    }

    pub async fn directory_user(&mut self, id: Uuid) -> Result<Option<DirectoryUser>> {
        Ok(self.directory_users(&DirectoryFilter::Id(id), 0, 1).await?.1.pop())
    }

    /// Provisions a person. Someone who signed in before (a principal an identity provider
    /// vouched for, not yet provisioned) whose name or email matches, case aside, becomes this
    /// one; any other principal of that name (one made with `token create`) is never taken
    /// over: that answers [`StoreError::Conflict`], as does a name the directory already holds.
    pub async fn create_directory_user(
        &mut self,
        user_name: &str,
        email: Option<&str>,
        active: bool,
        attributes: &Value,
    ) -> Result<DirectoryUser> {
        let adopted = sqlx::query_scalar!(
            r#"UPDATE principals
                  SET directory = $3, email = coalesce($2, email),
                      deactivated_at = CASE WHEN $4 THEN NULL ELSE coalesce(deactivated_at, now()) END
                WHERE id = (SELECT id FROM principals
                             WHERE kind = 'user' AND directory IS NULL AND external_subject IS NOT NULL
                               AND (lower(name) = lower($1) OR lower(email) = lower($2))
                             ORDER BY created_at LIMIT 1)
               RETURNING id"#,
            user_name,
            email,
            attributes,
            active
        )
        .fetch_optional(&mut *self.tx)
        .await?;
        let id = match adopted {
            Some(id) => id,
            None => sqlx::query_scalar!(
                r#"INSERT INTO principals (tenant_id, id, kind, name, email, directory, deactivated_at)
                   VALUES ($1, $2, 'user', $3, $4, $5, CASE WHEN $6 THEN NULL ELSE now() END)
                   ON CONFLICT (tenant_id, kind, name) DO NOTHING
                   RETURNING id"#,
                self.tenant,
                Uuid::now_v7(),
                user_name,
                email,
                attributes,
                active
            )
            .fetch_optional(&mut *self.tx)
            .await?
            .ok_or_else(|| StoreError::Conflict { constraint: "principals_tenant_id_kind_name_key".into() })?,
        };
        if !active {
            self.revoke_principal_grants(id).await?;
        }
        self.directory_user(id).await?.ok_or_else(|| StoreError::NotFound(format!("user {id}")))
    }

    /// Replaces a provisioned person's name, email, state and attributes. Deactivating revokes
    /// every grant it gave.
    pub async fn update_directory_user(
        &mut self,
        id: Uuid,
        user_name: &str,
        email: Option<&str>,
        active: bool,
        attributes: &Value,
    ) -> Result<Option<DirectoryUser>> {
        let done = sqlx::query!(
            r#"UPDATE principals
                  SET name = $2, email = coalesce($3, email), directory = $4,
                      deactivated_at = CASE WHEN $5 THEN NULL ELSE coalesce(deactivated_at, now()) END
                WHERE id = $1 AND directory IS NOT NULL"#,
            id,
            user_name,
            email,
            attributes,
            active
        )
        .execute(&mut *self.tx)
        .await?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        if !active {
            self.revoke_principal_grants(id).await?;
        }
        self.directory_user(id).await
    }

    /// Deprovisions a person for good: deactivated, out of every directory group, no longer a
    /// SCIM resource (the principal stays, for the audit trail and the change log).
    pub async fn delete_directory_user(&mut self, id: Uuid) -> Result<bool> {
        let done = sqlx::query!(
            "UPDATE principals SET directory = NULL, deactivated_at = coalesce(deactivated_at, now()) WHERE id = $1 AND directory IS NOT NULL",
            id
        )
        .execute(&mut *self.tx)
        .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        sqlx::query!("DELETE FROM directory_group_members WHERE principal_id = $1", id).execute(&mut *self.tx).await?;
        self.revoke_principal_grants(id).await?;
        Ok(true)
    }

    async fn revoke_principal_grants(&mut self, principal: Uuid) -> Result<()> {
        sqlx::query!(
            "UPDATE oauth_grants SET revoked_at = now(), revoked_reason = 'deprovisioned' WHERE principal_id = $1 AND revoked_at IS NULL",
            principal
        )
        .execute(&mut *self.tx)
        .await?;
        sqlx::query!(
            "UPDATE api_tokens SET revoked_at = now() WHERE principal_id = $1 AND grant_id IS NOT NULL AND revoked_at IS NULL",
            principal
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// A page of provisioned groups and how many match in all.
    pub async fn directory_groups(
        &mut self,
        filter: &DirectoryFilter,
        offset: i64,
        limit: i64,
    ) -> Result<(i64, Vec<DirectoryGroup>)> {
        let (id, name, external) = filter.parts();
        let rows = sqlx::query!(
            r#"SELECT g.id, g.display_name, g.external_id, g.created_at, g.updated_at, count(*) OVER () AS "total!",
                      ARRAY(SELECT m.principal_id FROM directory_group_members m
                             WHERE m.tenant_id = g.tenant_id AND m.group_id = g.id ORDER BY m.principal_id) AS "member_ids!",
                      ARRAY(SELECT p.name FROM directory_group_members m
                              JOIN principals p ON p.tenant_id = m.tenant_id AND p.id = m.principal_id
                             WHERE m.tenant_id = g.tenant_id AND m.group_id = g.id ORDER BY m.principal_id) AS "member_names!"
                 FROM directory_groups g
                WHERE ($1::uuid IS NULL OR g.id = $1)
                  AND ($2::text IS NULL OR lower(g.display_name) = lower($2))
                  AND ($3::text IS NULL OR g.external_id = $3)
                ORDER BY g.created_at, g.id
                OFFSET $4 LIMIT $5"#,
            id,
            name,
            external,
            offset,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?;
        let total = match rows.first() {
            Some(r) => r.total,
            None => {
                sqlx::query_scalar!(
                    r#"SELECT count(*) AS "n!" FROM directory_groups g
                    WHERE ($1::uuid IS NULL OR g.id = $1) AND ($2::text IS NULL OR lower(g.display_name) = lower($2))
                      AND ($3::text IS NULL OR g.external_id = $3)"#,
                    id,
                    name,
                    external
                )
                .fetch_one(&mut *self.tx)
                .await?
            }
        };
        let groups = rows
            .into_iter()
            .map(|r| DirectoryGroup {
                id: r.id,
                display_name: r.display_name,
                external_id: r.external_id,
                members: r.member_ids.into_iter().zip(r.member_names).collect(),
                created_at: r.created_at,
                updated_at: r.updated_at,
            })
            .collect();
        Ok((total, groups))
    }

    pub async fn directory_group(&mut self, id: Uuid) -> Result<Option<DirectoryGroup>> {
        Ok(self.directory_groups(&DirectoryFilter::Id(id), 0, 1).await?.1.pop())
    }

    /// Provisions a group; a name taken answers [`StoreError::Conflict`].
    pub async fn create_directory_group(&mut self, display_name: &str, external_id: Option<&str>) -> Result<Uuid> {
        let id = Uuid::now_v7();
        sqlx::query!(
            "INSERT INTO directory_groups (tenant_id, id, display_name, external_id) VALUES ($1, $2, $3, $4)",
            self.tenant,
            id,
            display_name,
            external_id
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(id)
    }

    /// Renames a group (its members' ACL group follows) and sets its external id.
    pub async fn update_directory_group(
        &mut self,
        id: Uuid,
        display_name: &str,
        external_id: Option<&str>,
    ) -> Result<bool> {
        let done = sqlx::query!(
            "UPDATE directory_groups SET display_name = $2, external_id = $3, updated_at = now() WHERE id = $1",
            id,
            display_name,
            external_id
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Changes a group's members: `replace` first (when given), then adds and removals. Every
    /// member named must be a provisioned person; an unknown one answers
    /// [`StoreError::NotFound`] naming it.
    pub async fn change_directory_members(
        &mut self,
        id: Uuid,
        replace: Option<&[Uuid]>,
        add: &[Uuid],
        remove: &[Uuid],
    ) -> Result<()> {
        let named: Vec<Uuid> = replace.unwrap_or_default().iter().chain(add).copied().collect();
        let known =
            sqlx::query_scalar!("SELECT id FROM principals WHERE id = ANY($1) AND directory IS NOT NULL", &named)
                .fetch_all(&mut *self.tx)
                .await?;
        if let Some(unknown) = named.iter().find(|n| !known.contains(n)) {
            return Err(StoreError::NotFound(format!("user {unknown}")));
        }
        if let Some(members) = replace {
            sqlx::query!(
                "DELETE FROM directory_group_members WHERE group_id = $1 AND NOT (principal_id = ANY($2))",
                id,
                members
            )
            .execute(&mut *self.tx)
            .await?;
        }
        let adding: Vec<Uuid> = replace.unwrap_or_default().iter().chain(add).copied().collect();
        sqlx::query!(
            r#"INSERT INTO directory_group_members (tenant_id, group_id, principal_id)
               SELECT $1, $2, p FROM unnest($3::uuid[]) AS p ON CONFLICT DO NOTHING"#,
            self.tenant,
            id,
            &adding
        )
        .execute(&mut *self.tx)
        .await?;
        sqlx::query!("DELETE FROM directory_group_members WHERE group_id = $1 AND principal_id = ANY($2)", id, remove)
            .execute(&mut *self.tx)
            .await?;
        sqlx::query!("UPDATE directory_groups SET updated_at = now() WHERE id = $1", id).execute(&mut *self.tx).await?;
        Ok(())
    }

    pub async fn delete_directory_group(&mut self, id: Uuid) -> Result<bool> {
        let done = sqlx::query!("DELETE FROM directory_groups WHERE id = $1", id).execute(&mut *self.tx).await?;
        Ok(done.rows_affected() > 0)
    }
}
