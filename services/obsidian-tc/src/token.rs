//! `obsidian-tc token create|list|revoke`

use std::process::ExitCode;

use anyhow::Context;
use chrono::Utc;
use clap::Subcommand;
use otc_config::Sources;
use otc_store::{NewToken, PrincipalKind, StoreError};
use uuid::Uuid;

use crate::app;

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// Create a token; it is printed once, on standard output, and never stored.
    Create {
        /// Tenant slug or id.
        #[arg(long)]
        tenant: String,
        /// Comma-separated scopes, e.g. read:notes,write:notes (or read:*, or * for all).
        #[arg(long)]
        scopes: String,
        /// Bind the token to this vault (by name): it reaches no other.
        #[arg(long)]
        vault: Option<String>,
        /// A label to tell tokens apart.
        #[arg(long, default_value = "cli")]
        name: String,
        /// Who the token acts as (created on first use).
        #[arg(long, default_value = "cli")]
        principal: String,
        /// Whether the principal is a person or a machine.
        #[arg(long, value_enum, default_value = "service")]
        kind: Kind,
        /// Lifetime, e.g. 90d, 12h, 30m (default: no expiry).
        #[arg(long, value_name = "DURATION")]
        expires_in: Option<String>,
    },
    /// List a tenant's tokens (never their secrets).
    List {
        #[arg(long)]
        tenant: String,
    },
    /// Revoke a token by id; it stops working at once.
    Revoke {
        #[arg(long)]
        tenant: String,
        id: Uuid,
    },
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Kind {
    User,
    Service,
}

/// Parses `90d`, `12h`, `30m` or `45s`.
pub fn parse_duration(text: &str) -> anyhow::Result<chrono::Duration> {
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let n: i64 = number.parse().with_context(|| format!("invalid duration {text:?}: expected e.g. 90d, 12h, 30m"))?;
    let duration = match unit {
        "d" => chrono::Duration::days(n),
        "h" => chrono::Duration::hours(n),
        "m" => chrono::Duration::minutes(n),
        "s" => chrono::Duration::seconds(n),
        _ => anyhow::bail!("invalid duration {text:?}: the unit must be d, h, m or s"),
    };
    anyhow::ensure!(n > 0, "invalid duration {text:?}: must be positive");
    Ok(duration)
}

pub async fn run(sources: Sources, command: TokenCommand) -> anyhow::Result<ExitCode> {
    let store = app::store_only(&sources)?;
    match command {
        TokenCommand::Create { tenant, scopes, vault, name, principal, kind, expires_in } => {
            let scopes = otc_auth::parse_scopes(&scopes)?;
            let expires_at = expires_in.as_deref().map(parse_duration).transpose()?.map(|d| Utc::now() + d);
            let tenant_id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let mut tx = store.begin(tenant_id).await?;
            let vault_id = match &vault {
                Some(name) => Some(
                    tx.vault_by_name(name)
                        .await?
                        .with_context(|| format!("no vault named {name:?} in tenant {tenant}"))?
                        .id,
                ),
                None => None,
            };
            let kind = match kind {
                Kind::User => PrincipalKind::User,
                Kind::Service => PrincipalKind::Service,
            };
            let principal = tx.ensure_principal(kind, &principal).await?;
            let issued = tx
                .issue_token(NewToken {
                    principal_id: principal.id,
                    name: name.clone(),
                    scopes: scopes.clone(),
                    vault_id,
                    expires_at,
                })
                .await
                .map_err(|e| match e {
                    StoreError::Invalid { .. } => anyhow::anyhow!("token name must be 1-200 characters"),
                    other => other.into(),
                })?;
            tx.commit().await?;
            println!("{}", issued.plaintext);
            let scopes: Vec<&str> = scopes.iter().map(|s| s.as_str()).collect();
            eprintln!(
                "token {} for {} ({}), scopes {}, vault {}, expires {}. It is shown only this once.",
                issued.id,
                principal.name,
                kind.as_str(),
                scopes.join(","),
                vault.as_deref().unwrap_or("any"),
                expires_at.map(|t| t.to_rfc3339()).unwrap_or_else(|| "never".into()),
            );
        }
        TokenCommand::List { tenant } => {
            let tenant_id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let mut tx = store.begin(tenant_id).await?;
            let tokens = tx.list_tokens().await?;
            tx.commit().await?;
            let now = Utc::now();
            println!(
                "{:<36}  {:<8}  {:<16}  {:<16}  {:<24}  {:<12}  STATE",
                "ID", "ENDS", "NAME", "PRINCIPAL", "SCOPES", "VAULT"
            );
            for t in tokens {
                let state = if let Some(at) = t.revoked_at {
                    format!("revoked {}", at.format("%Y-%m-%d %H:%M"))
                } else if let Some(at) = t.expires_at.filter(|at| *at <= now) {
                    format!("expired {}", at.format("%Y-%m-%d %H:%M"))
                } else if let Some(at) = t.expires_at {
                    format!("live until {}", at.format("%Y-%m-%d %H:%M"))
                } else {
                    "live".to_string()
                };
                println!(
                    "{:<36}  …{:<7}  {:<16}  {:<16}  {:<24}  {:<12}  {state}",
                    t.id,
                    t.hint,
                    t.name,
                    t.principal_name,
                    t.scopes.join(","),
                    t.vault_name.as_deref().unwrap_or("any"),
                );
            }
        }
        TokenCommand::Revoke { tenant, id } => {
            // Gateways keep checked tokens for a while: they are told (through Redis) before
            // this reports the revocation, so it stops working at once.
            let (_, kv, config) = app::store_and_kv(&sources)?;
            let tenant_id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let mut tx = store.begin(tenant_id).await?;
            match tx.revoke_token(id).await {
                Err(StoreError::NotFound(_)) => anyhow::bail!("no token {id} in tenant {tenant}"),
                other => other?,
            }
            tx.commit().await?;
            if let Err(e) = otc_gateway::auth_cache::revoked(&kv, tenant_id).await {
                eprintln!(
                    "warning: could not tell the gateways through Redis ({}); a gateway that checked this token \
                     recently may accept it for up to {} ms more",
                    otc_gateway::error_chain(&e),
                    config.server.auth_cache_ttl_ms
                );
            }
            println!("revoked token {id}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
