//! Agents' work sessions (`work_sessions`) and goals (`goals`).

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::Value;
use uuid::Uuid;

use crate::{Result, TenantTx};

/// One work session.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkSession {
    pub id: Uuid,
    pub principal_id: Uuid,
    pub caller: String,
    pub metadata: Value,
    pub started_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    pub end_metadata: Option<Value>,
}

/// One goal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Goal {
    pub id: Uuid,
    pub text: String,
    pub target_date: Option<NaiveDate>,
    /// open, done or abandoned.
    pub status: String,
    pub created_at: DateTime<Utc>,
    pub closed_at: Option<DateTime<Utc>>,
}

impl TenantTx {
    pub async fn start_session(
        &mut self,
        vault: Uuid,
        principal: Uuid,
        caller: &str,
        metadata: &Value,
    ) -> Result<WorkSession> {
        Ok(sqlx::query_as!(
            WorkSession,
            r#"INSERT INTO work_sessions (tenant_id, vault_id, id, principal_id, caller, metadata)
               VALUES ($1, $2, $3, $4, $5, $6)
               RETURNING id, principal_id, caller, metadata, started_at, ended_at, end_metadata"#,
            self.tenant,
            vault,
            Uuid::new_v4(),
            principal,
            caller,
            metadata
        )
        .fetch_one(&mut *self.tx)
        .await?)
    }

    pub async fn session(&mut self, vault: Uuid, id: Uuid) -> Result<Option<WorkSession>> {
        Ok(sqlx::query_as!(
            WorkSession,
            r#"SELECT id, principal_id, caller, metadata, started_at, ended_at, end_metadata FROM work_sessions
                WHERE tenant_id = $1 AND vault_id = $2 AND id = $3"#,
            self.tenant,
            vault,
            id
        )
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    /// Ends a session still open; false when it had ended already.
    pub async fn end_session(&mut self, vault: Uuid, id: Uuid, end_metadata: &Value) -> Result<bool> {
        Ok(sqlx::query!(
            r#"UPDATE work_sessions SET ended_at = now(), end_metadata = $4
                WHERE tenant_id = $1 AND vault_id = $2 AND id = $3 AND ended_at IS NULL"#,
            self.tenant,
            vault,
            id,
            end_metadata
        )
        .execute(&mut *self.tx)
        .await?
        .rows_affected()
            == 1)
    }

    /// A principal's most recent sessions in the vault, newest first.
    pub async fn recent_sessions(&mut self, vault: Uuid, principal: Uuid, limit: i64) -> Result<Vec<WorkSession>> {
        Ok(sqlx::query_as!(
            WorkSession,
            r#"SELECT id, principal_id, caller, metadata, started_at, ended_at, end_metadata FROM work_sessions
                WHERE tenant_id = $1 AND vault_id = $2 AND principal_id = $3
                ORDER BY started_at DESC, id DESC LIMIT $4"#,
            self.tenant,
            vault,
            principal,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    pub async fn set_goal(
        &mut self,
        vault: Uuid,
        text: &str,
        target: Option<NaiveDate>,
        by: Option<Uuid>,
    ) -> Result<Goal> {
        Ok(sqlx::query_as!(
            Goal,
            r#"INSERT INTO goals (tenant_id, vault_id, id, text, target_date, created_by) VALUES ($1, $2, $3, $4, $5, $6)
               RETURNING id, text, target_date, status, created_at, closed_at"#,
            self.tenant,
            vault,
            Uuid::new_v4(),
            text,
            target,
            by
        )
        .fetch_one(&mut *self.tx)
        .await?)
    }

    /// The vault's goals with this status (None: every one), newest first, at most `limit`.
    pub async fn goals(&mut self, vault: Uuid, status: Option<&str>, limit: i64) -> Result<Vec<Goal>> {
        Ok(sqlx::query_as!(
            Goal,
            r#"SELECT id, text, target_date, status, created_at, closed_at FROM goals
                WHERE tenant_id = $1 AND vault_id = $2 AND ($3::text IS NULL OR status = $3)
                ORDER BY created_at DESC, id DESC LIMIT $4"#,
            self.tenant,
            vault,
            status,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// Closes an open goal with `status`; None when there is no such goal, Some(false) when it
    /// was closed already.
    pub async fn close_goal(&mut self, vault: Uuid, id: Uuid, status: &str) -> Result<Option<(bool, Goal)>> {
        let closed = sqlx::query!(
            r#"UPDATE goals SET status = $4, closed_at = now()
                WHERE tenant_id = $1 AND vault_id = $2 AND id = $3 AND status = 'open'"#,
            self.tenant,
            vault,
            id,
            status
        )
        .execute(&mut *self.tx)
        .await?
        .rows_affected()
            == 1;
        let goal = sqlx::query_as!(
            Goal,
            r#"SELECT id, text, target_date, status, created_at, closed_at FROM goals
                WHERE tenant_id = $1 AND vault_id = $2 AND id = $3"#,
            self.tenant,
            vault,
            id
        )
        .fetch_optional(&mut *self.tx)
        .await?;
        Ok(goal.map(|g| (closed, g)))
    }
}
