//! What the web console keeps of its own: a person's console sessions (API tokens marked as
//! such, so "sign out everywhere" ends them and nothing else), and the figures its pages show
//! that no other surface asks for (each vault's index and embedding health, a vault's top
//! folders for the access view).

use chrono::{DateTime, Utc};
use otc_auth::Scope;
use uuid::Uuid;

use crate::embeddings::EMBED_JOB;
use crate::index::INDEX_JOB;
use crate::{IssuedToken, Result, TenantTx};

/// The name every console session's token carries in token lists.
pub const CONSOLE_SESSION_NAME: &str = "console session";

/// One vault's health, as the console's overview shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VaultHealth {
    pub vault_id: Uuid,
    pub name: String,
    /// The vault's last commit, and the last the index has taken in.
    pub head_seq: i64,
    pub indexed_seq: i64,
    pub index_queued: i64,
    pub index_dead: i64,
    pub embed_queued: i64,
    pub embed_dead: i64,
    /// The newest error an index or embedding job of the vault recorded.
    pub last_error: Option<String>,
}

impl TenantTx {
    /// Starts a console session for `principal`: a token with `scopes` until `expires_at`.
    pub async fn issue_console_session(
        &mut self,
        principal: Uuid,
        scopes: Vec<Scope>,
        expires_at: DateTime<Utc>,
    ) -> Result<IssuedToken> {
        let issued = self
            .issue_token(crate::NewToken {
                principal_id: principal,
                name: CONSOLE_SESSION_NAME.to_string(),
                scopes,
                vault_id: None,
                expires_at: Some(expires_at),
            })
            .await?;
        sqlx::query!(
            "UPDATE api_tokens SET console_session = true WHERE tenant_id = $1 AND id = $2",
            self.tenant,
            issued.id
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(issued)
    }

    /// Revokes every console session of `principal` not revoked yet (expired ones too, so none
    /// lingers in the index of live sessions); answers how many were still live.
    pub async fn end_console_sessions(&mut self, principal: Uuid) -> Result<u64> {
        let done = sqlx::query_scalar!(
            r#"WITH ended AS (
                   UPDATE api_tokens SET revoked_at = now()
                    WHERE tenant_id = $1 AND principal_id = $2 AND console_session AND revoked_at IS NULL
                   RETURNING expires_at)
               SELECT count(*) FILTER (WHERE expires_at IS NULL OR expires_at > now()) AS "live!" FROM ended"#,
            self.tenant,
            principal
        )
        .fetch_one(&mut *self.tx)
        .await?;
        Ok(done as u64)
    }

    /// Whether token `id` is a console session (the console signs out only those).
    pub async fn is_console_session(&mut self, id: Uuid) -> Result<bool> {
        Ok(sqlx::query_scalar!(
            r#"SELECT console_session AS "yes!" FROM api_tokens WHERE tenant_id = $1 AND id = $2"#,
            self.tenant,
            id
        )
        .fetch_optional(&mut *self.tx)
        .await?
        .unwrap_or(false))
    }

    /// Every live vault's health in one query: how far its index trails its commits, and its
    /// queued and dead index and embedding jobs.
    pub async fn vaults_health(&mut self) -> Result<Vec<VaultHealth>> {
        let rows = sqlx::query!(
            r#"SELECT v.id, v.name,
                      coalesce(h.seq, 0) AS "head_seq!", coalesce(s.indexed_seq, 0) AS "indexed_seq!",
                      coalesce(j.index_queued, 0) AS "index_queued!", coalesce(j.index_dead, 0) AS "index_dead!",
                      coalesce(j.embed_queued, 0) AS "embed_queued!", coalesce(j.embed_dead, 0) AS "embed_dead!",
                      (SELECT last_error FROM jobs e
                        WHERE e.tenant_id = $1 AND e.vault_id = v.id AND e.kind IN ($2, $3)
                          AND e.state IN ('queued', 'dead') AND e.last_error IS NOT NULL
                        ORDER BY e.id DESC LIMIT 1) AS last_error
                 FROM vaults v
                 LEFT JOIN vault_heads h ON h.tenant_id = v.tenant_id AND h.vault_id = v.id
                 LEFT JOIN index_state s ON s.tenant_id = v.tenant_id AND s.vault_id = v.id
                 LEFT JOIN (
                     SELECT vault_id,
                            count(*) FILTER (WHERE kind = $2 AND state = 'queued') AS index_queued,
                            count(*) FILTER (WHERE kind = $2 AND state = 'dead') AS index_dead,
                            count(*) FILTER (WHERE kind = $3 AND state = 'queued') AS embed_queued,
                            count(*) FILTER (WHERE kind = $3 AND state = 'dead') AS embed_dead
                       FROM jobs
                      WHERE tenant_id = $1 AND kind IN ($2, $3) AND state IN ('queued', 'dead')
                      GROUP BY vault_id
                 ) j ON j.vault_id = v.id
                WHERE v.tenant_id = $1 AND v.deleted_at IS NULL
                ORDER BY v.name"#,
            self.tenant,
            INDEX_JOB,
            EMBED_JOB
        )
        .fetch_all(&mut *self.tx)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| VaultHealth {
                vault_id: r.id,
                name: r.name,
                head_seq: r.head_seq,
                indexed_seq: r.indexed_seq,
                index_queued: r.index_queued,
                index_dead: r.index_dead,
                embed_queued: r.embed_queued,
                embed_dead: r.embed_dead,
                last_error: r.last_error,
            })
            .collect())
    }

    /// The vault's top-level folders (those its indexed files sit in), up to `limit`, by name.
    pub async fn top_folders(&mut self, vault: Uuid, limit: i64) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar!(
            r#"SELECT DISTINCT split_part(path, '/', 1) AS "folder!" FROM index_files
                WHERE tenant_id = $1 AND vault_id = $2 AND strpos(path, '/') > 0
                ORDER BY 1 LIMIT $3"#,
            self.tenant,
            vault,
            limit
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }
}
