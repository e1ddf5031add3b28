use uuid::Uuid;

use crate::{Result, TenantTx};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrincipalKind {
    /// A person (later: signed in through the tenant's identity provider).
    User,
    /// A machine identity: a CI job, a sync client, an integration.
    Service,
}

impl PrincipalKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PrincipalKind::User => "user",
            PrincipalKind::Service => "service",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub id: Uuid,
    pub kind: PrincipalKind,
    pub name: String,
}

impl TenantTx {
    /// The principal of this kind and name, created on first use.
    pub async fn ensure_principal(&mut self, kind: PrincipalKind, name: &str) -> Result<Principal> {
        let id = sqlx::query_scalar!(
            r#"INSERT INTO principals (tenant_id, id, kind, name) VALUES ($1, $2, $3, $4)
               ON CONFLICT (tenant_id, kind, name) DO UPDATE SET name = EXCLUDED.name
               RETURNING id"#,
            self.tenant,
            Uuid::now_v7(),
            kind.as_str(),
            name
        )
        .fetch_one(&mut *self.tx)
        .await?;
        Ok(Principal { id, kind, name: name.to_string() })
    }
}
