//! Invitations for a tenant's first admins: made by an operator, accepted once before they
//! expire, each accepted one becoming an admin token for the person it names.

use chrono::{DateTime, Utc};
use otc_auth::{Scope, TokenHash};
use uuid::Uuid;

use crate::{Result, TenantTx};

/// The prefix of an invitation code (`otci_<tenant>_<secret>`).
pub const INVITATION_PREFIX: &str = "otci_";

/// An invitation just made: its code exists only now.
pub struct IssuedInvitation {
    pub id: Uuid,
    pub code: String,
    pub expires_at: DateTime<Utc>,
}

/// An invitation as accepted: who it was for and what they may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedInvitation {
    pub id: Uuid,
    pub email: String,
    pub scopes: Vec<Scope>,
}

impl TenantTx {
    /// Invites `email` to administer the tenant with `scopes` until `expires_at`.
    pub async fn invite(
        &mut self,
        email: &str,
        scopes: &[Scope],
        expires_at: DateTime<Utc>,
    ) -> Result<IssuedInvitation> {
        let minted = otc_auth::mint_with(INVITATION_PREFIX, self.tenant);
        let scopes: Vec<String> = scopes.iter().map(|s| s.as_str().to_string()).collect();
        let id = Uuid::now_v7();
        sqlx::query!(
            "INSERT INTO invitations (tenant_id, id, email, code_hash, scopes, expires_at) VALUES ($1, $2, $3, $4, $5, $6)",
            self.tenant,
            id,
            email,
            &minted.hash.0[..],
            &scopes,
            expires_at
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(IssuedInvitation { id, code: minted.plaintext, expires_at })
    }

    /// Accepts the invitation with this code hash, once: None when there is none, it expired or
    /// it was accepted before (the three alike).
    pub async fn accept_invitation(&mut self, hash: &TokenHash) -> Result<Option<AcceptedInvitation>> {
        let row = sqlx::query!(
            "UPDATE invitations SET accepted_at = now()
              WHERE code_hash = $1 AND accepted_at IS NULL AND expires_at > now()
              RETURNING id, email, scopes",
            &hash.0[..]
        )
        .fetch_optional(&mut *self.tx)
        .await?;
        Ok(row.map(|r| AcceptedInvitation {
            id: r.id,
            email: r.email,
            scopes: r.scopes.into_iter().filter_map(|s| Scope::try_from(s).ok()).collect(),
        }))
    }
}
