//! Folder ACLs as tenant data (`acl_rules`, `principal_groups`): per vault, rules for one
//! principal, one group or everyone, and which groups a principal belongs to. The most specific
//! subject decides ([`TenantTx::access`]): a principal's own rule, else its groups' rules
//! together, else the rule for everyone, else none (only the deployment's floor applies).

use chrono::{DateTime, Utc};
use otc_vault::acl::{Layer, Rule};
use uuid::Uuid;

use crate::{Result, StoreError, TenantTx};

/// Whom a rule is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    Principal(Uuid),
    Group(String),
    Everyone,
}

impl Subject {
    fn kind(&self) -> &'static str {
        match self {
            Subject::Principal(_) => "principal",
            Subject::Group(_) => "group",
            Subject::Everyone => "everyone",
        }
    }

    fn principal(&self) -> Option<Uuid> {
        if let Subject::Principal(id) = self { Some(*id) } else { None }
    }

    fn group(&self) -> Option<&str> {
        if let Subject::Group(g) = self { Some(g) } else { None }
    }
}

/// A rule to store: its vault, subject and lists (None: unrestricted).
#[derive(Debug, Clone)]
pub struct NewAclRule {
    pub vault_id: Uuid,
    pub subject: Subject,
    pub read_paths: Option<Vec<String>>,
    pub write_paths: Option<Vec<String>>,
    pub delete_paths: Option<Vec<String>>,
    pub read_only: bool,
}

/// A stored rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclRuleRow {
    pub id: Uuid,
    pub vault_id: Uuid,
    pub vault_name: String,
    /// principal, group or everyone.
    pub subject_kind: String,
    pub principal_id: Option<Uuid>,
    pub principal_name: Option<String>,
    pub group_name: Option<String>,
    pub read_paths: Option<Vec<String>>,
    pub write_paths: Option<Vec<String>>,
    pub delete_paths: Option<Vec<String>>,
    pub read_only: bool,
    pub updated_at: DateTime<Utc>,
}

impl AclRuleRow {
    /// "principal alice", "group eng" or "everyone".
    pub fn subject_label(&self) -> String {
        match (&self.principal_name, &self.group_name) {
            (Some(p), _) => format!("principal {p}"),
            (_, Some(g)) => format!("group {g}"),
            _ => "everyone".to_string(),
        }
    }

    /// The rule, compiled. Globs were checked when the rule was stored; one that no longer
    /// compiles makes a rule that grants nothing, so a bad row closes rather than opens.
    pub fn rule(&self) -> Rule {
        let subject = self.subject_label();
        Rule::new(
            Layer::Tenant,
            subject.clone(),
            self.read_paths.as_deref(),
            self.write_paths.as_deref(),
            self.delete_paths.as_deref(),
            self.read_only,
        )
        .unwrap_or_else(|e| {
            tracing::error!(rule = %self.id, error = %e, "stored ACL rule does not compile; it grants nothing");
            Rule::new(Layer::Tenant, subject, Some(&[]), Some(&[]), Some(&[]), true).expect("empty lists compile")
        })
        .with_id(self.id.to_string())
    }
}

/// A tenant rule compiled for one vault, as a caller carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VaultRule {
    pub vault_id: Uuid,
    pub rule: Rule,
}

/// What the tenant's data says a principal may reach: its groups, and per vault the rules of
/// its most specific subject.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Access {
    pub groups: Vec<String>,
    pub rules: Vec<VaultRule>,
}

impl TenantTx {
    /// The tenant's rules (of one vault, or all), by vault name and subject.
    pub async fn acl_rules(&mut self, vault: Option<Uuid>) -> Result<Vec<AclRuleRow>> {
        Ok(sqlx::query_as!(
            AclRuleRow,
            r#"SELECT r.id, r.vault_id, v.name AS vault_name, r.subject_kind, r.principal_id,
                      p.name AS "principal_name?", r.group_name, r.read_paths, r.write_paths,
                      r.delete_paths, r.read_only, r.updated_at
                 FROM acl_rules r
                 JOIN vaults v ON v.tenant_id = r.tenant_id AND v.id = r.vault_id
                 LEFT JOIN principals p ON p.tenant_id = r.tenant_id AND p.id = r.principal_id
                WHERE $1::uuid IS NULL OR r.vault_id = $1
                ORDER BY v.name, r.subject_kind, p.name, r.group_name"#,
            vault
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// Sets the rule for one vault and subject, replacing the one it had.
    pub async fn set_acl_rule(&mut self, rule: &NewAclRule) -> Result<AclRuleRow> {
        let id = sqlx::query_scalar!(
            r#"INSERT INTO acl_rules (tenant_id, id, vault_id, subject_kind, principal_id, group_name,
                                      read_paths, write_paths, delete_paths, read_only)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
               ON CONFLICT (tenant_id, vault_id, subject_kind, principal_id, group_name) DO UPDATE
                  SET read_paths = EXCLUDED.read_paths, write_paths = EXCLUDED.write_paths,
                      delete_paths = EXCLUDED.delete_paths, read_only = EXCLUDED.read_only,
                      updated_at = now()
               RETURNING id"#,
            self.tenant,
            Uuid::now_v7(),
            rule.vault_id,
            rule.subject.kind(),
            rule.subject.principal(),
            rule.subject.group(),
            rule.read_paths.as_deref(),
            rule.write_paths.as_deref(),
            rule.delete_paths.as_deref(),
            rule.read_only
        )
        .fetch_one(&mut *self.tx)
        .await?;
        self.acl_rules(Some(rule.vault_id))
            .await?
            .into_iter()
            .find(|r| r.id == id)
            .ok_or_else(|| StoreError::NotFound(format!("acl rule {id}")))
    }

    /// Drops the rule for one vault and subject; whether there was one.
    pub async fn remove_acl_rule(&mut self, vault: Uuid, subject: &Subject) -> Result<bool> {
        let done = sqlx::query!(
            r#"DELETE FROM acl_rules
                WHERE vault_id = $1 AND subject_kind = $2
                  AND principal_id IS NOT DISTINCT FROM $3 AND group_name IS NOT DISTINCT FROM $4"#,
            vault,
            subject.kind(),
            subject.principal(),
            subject.group()
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// The groups a principal belongs to, by name.
    pub async fn groups(&mut self, principal: Uuid) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar!(
            "SELECT group_name FROM principal_groups WHERE principal_id = $1 AND source = 'admin' ORDER BY group_name",
            principal
        )
        .fetch_all(&mut *self.tx)
        .await?)
    }

    /// Makes `groups` the principal's groups an admin gave it (adding and dropping as needed).
    pub async fn set_groups(&mut self, principal: Uuid, groups: &[String]) -> Result<()> {
        self.replace_groups(principal, "admin", groups).await
    }

    /// Makes `groups` the principal's groups from its provider, at a sign-in; the groups an admin
    /// gave it stay.
    pub async fn set_sign_in_groups(&mut self, principal: Uuid, groups: &[String]) -> Result<()> {
        self.replace_groups(principal, "sign_in", groups).await
    }

    async fn replace_groups(&mut self, principal: Uuid, source: &str, groups: &[String]) -> Result<()> {
        sqlx::query!(
            "DELETE FROM principal_groups WHERE principal_id = $1 AND source = $2 AND NOT (group_name = ANY($3))",
            principal,
            source,
            groups
        )
        .execute(&mut *self.tx)
        .await?;
        sqlx::query!(
            r#"INSERT INTO principal_groups (tenant_id, principal_id, source, group_name)
               SELECT $1, $2, $3, g FROM unnest($4::text[]) AS g
               ON CONFLICT DO NOTHING"#,
            self.tenant,
            principal,
            source,
            groups
        )
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// What the tenant's rules let `principal` reach: its groups, and in each vault with a rule
    /// for it the rules of its most specific subject (its own; else its groups', any of which
    /// grants; else everyone's).
    pub async fn access(&mut self, principal: Uuid) -> Result<Access> {
        // The groups an admin gave, those the last sign-in brought, and those the tenant's
        // directory (SCIM) names.
        let groups = sqlx::query_scalar!(
            r#"SELECT group_name AS "name!" FROM principal_groups WHERE principal_id = $1
               UNION
               SELECT g.display_name FROM directory_group_members m
                 JOIN directory_groups g ON g.tenant_id = m.tenant_id AND g.id = m.group_id
                WHERE m.principal_id = $1
               ORDER BY 1"#,
            principal
        )
        .fetch_all(&mut *self.tx)
        .await?;
        let rows = sqlx::query_as!(
            AclRuleRow,
            r#"SELECT r.id, r.vault_id, v.name AS vault_name, r.subject_kind, r.principal_id,
                      p.name AS "principal_name?", r.group_name, r.read_paths, r.write_paths,
                      r.delete_paths, r.read_only, r.updated_at
                 FROM acl_rules r
                 JOIN vaults v ON v.tenant_id = r.tenant_id AND v.id = r.vault_id
                 LEFT JOIN principals p ON p.tenant_id = r.tenant_id AND p.id = r.principal_id
                WHERE r.subject_kind = 'everyone' OR r.principal_id = $1 OR r.group_name = ANY($2)
                ORDER BY r.vault_id, r.group_name"#,
            principal,
            &groups
        )
        .fetch_all(&mut *self.tx)
        .await?;
        let rank = |r: &AclRuleRow| match r.subject_kind.as_str() {
            "principal" => 0,
            "group" => 1,
            _ => 2,
        };
        let mut rules = Vec::new();
        for vault in rows.chunk_by(|a, b| a.vault_id == b.vault_id) {
            let best = vault.iter().map(rank).min().unwrap_or(2);
            rules.extend(
                vault.iter().filter(|r| rank(r) == best).map(|r| VaultRule { vault_id: r.vault_id, rule: r.rule() }),
            );
        }
        Ok(Access { groups, rules })
    }

    /// A principal by id, or else by name (a person's first, then a machine's).
    pub async fn find_principal(&mut self, id_or_name: &str) -> Result<Option<crate::Principal>> {
        let id = Uuid::parse_str(id_or_name).ok();
        let row = sqlx::query!(
            r#"SELECT id, kind, name FROM principals
                WHERE id = $1 OR ($1::uuid IS NULL AND name = $2)
                ORDER BY kind DESC LIMIT 1"#,
            id,
            id_or_name
        )
        .fetch_optional(&mut *self.tx)
        .await?;
        Ok(row.map(|r| crate::Principal {
            id: r.id,
            kind: if r.kind == "service" { crate::PrincipalKind::Service } else { crate::PrincipalKind::User },
            name: r.name,
        }))
    }
}
