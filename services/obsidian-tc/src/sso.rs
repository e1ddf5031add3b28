//! `obsidian-tc idp show|set|remove` (a tenant's identity provider, through which its people
//! sign clients in) and `obsidian-tc grants list|revoke` (what they allowed which clients;
//! a revocation reaches every gateway before the command returns). Both need `oauth.secret_key`.

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use otc_config::Sources;
use otc_identity::admin::{AdminError, Changer, IdpInput};

use crate::app;

#[derive(Subcommand, Debug)]
#[allow(clippy::large_enum_variant)] // parsed once per run
pub enum IdpCommand {
    /// Show the tenant's identity provider (never its client secret).
    Show { tenant: String },
    /// Set the tenant's identity provider. Register obsidian-tc with it as a web application
    /// whose redirect URI is `<public URL>/oauth/callback`.
    Set {
        tenant: String,
        /// The provider's issuer URL (its discovery document is `<issuer>/.well-known/openid-configuration`).
        #[arg(long)]
        issuer: String,
        #[arg(long)]
        client_id: String,
        /// The environment variable holding the client secret (kept off the command line).
        #[arg(long, value_name = "VAR")]
        client_secret_env: Option<String>,
        /// Keep the client secret already stored.
        #[arg(long, conflicts_with = "client_secret_env")]
        keep_secret: bool,
        /// An email domain whose people sign in here; repeatable.
        #[arg(long = "domain", value_name = "DOMAIN")]
        domains: Vec<String>,
        /// The id-token claim that lists a person's groups.
        #[arg(long, default_value = "groups")]
        groups_claim: String,
        /// A scope every signed-in person may grant (`read:*`, `write:notes`); repeatable.
        #[arg(long = "scope", value_name = "SCOPE")]
        scopes: Vec<String>,
        /// GROUP=SCOPE: members of the provider's group may grant the scope too; repeatable.
        #[arg(long = "group-scope", value_name = "GROUP=SCOPE")]
        group_scopes: Vec<String>,
        /// GROUP=ACL_GROUP: members of the provider's group belong to this ACL group (by default
        /// a provider group is the ACL group of the same name); repeatable.
        #[arg(long = "group-acl", value_name = "GROUP=ACL_GROUP")]
        group_acl: Vec<String>,
        /// A host whose Client ID Metadata Documents this tenant's people may authorize (none
        /// listed: any public host); repeatable.
        #[arg(long = "cimd-host", value_name = "HOST")]
        cimd_hosts: Vec<String>,
        /// Another tenant may use the same issuer (a shared provider such as Google); each
        /// tenant's email domains then tell their people apart.
        #[arg(long)]
        shared_issuer: bool,
    },
    /// Remove the tenant's identity provider: its people can no longer sign in (their grants stay
    /// until revoked).
    Remove { tenant: String },
}

#[derive(Subcommand, Debug)]
pub enum GrantsCommand {
    /// The grants of the tenant (or of one principal): client, scopes, resource, last use.
    List {
        tenant: String,
        #[arg(long)]
        principal: Option<String>,
        /// Include revoked grants.
        #[arg(long)]
        all: bool,
    },
    /// Revoke a grant: its refresh and access tokens stop working on every gateway.
    Revoke { tenant: String, grant: uuid::Uuid },
}

fn pairs(field: &str, given: &[String]) -> anyhow::Result<BTreeMap<String, Vec<String>>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for pair in given {
        let (k, v) = pair.split_once('=').with_context(|| format!("--{field} {pair}: expected GROUP=VALUE"))?;
        out.entry(k.trim().to_string()).or_default().push(v.trim().to_string());
    }
    Ok(out)
}

fn admin_error(err: AdminError) -> anyhow::Error {
    match err {
        AdminError::Internal(e) => anyhow::Error::new(e).context("the change failed"),
        other => anyhow::anyhow!("{other}"),
    }
}

fn identity(sources: &Sources) -> anyhow::Result<(otc_store::Store, std::sync::Arc<otc_identity::Identity>)> {
    let (store, kv, config) = app::store_and_kv(sources)?;
    let identity = app::identity(&config, &store, &std::sync::Arc::new(kv))?
        .context("oauth.secret_key is not set: the authorization server is off")?;
    Ok((store, identity))
}

pub async fn run_idp(sources: Sources, command: IdpCommand) -> anyhow::Result<ExitCode> {
    let (store, identity) = identity(&sources)?;
    match command {
        IdpCommand::Show { tenant } => {
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            match identity.idp(id).await.map_err(admin_error)? {
                Some(view) => println!("{}", serde_json::to_string_pretty(&view)?),
                None => println!("no identity provider: the tenant's people sign in with API tokens only"),
            }
        }
        IdpCommand::Set {
            tenant,
            issuer,
            client_id,
            client_secret_env,
            keep_secret,
            domains,
            groups_claim,
            scopes,
            group_scopes,
            group_acl,
            cimd_hosts,
            shared_issuer,
        } => {
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let client_secret = match client_secret_env {
                Some(var) => {
                    Some(std::env::var(&var).with_context(|| format!("reading the client secret from ${var}"))?)
                }
                None => None,
            };
            let input = IdpInput {
                issuer,
                client_id,
                client_secret,
                keep_secret,
                email_domains: domains,
                groups_claim: Some(groups_claim),
                default_scopes: scopes,
                group_scopes: pairs("group-scope", &group_scopes)?,
                group_acl: pairs("group-acl", &group_acl)?,
                cimd_hosts,
                shared_issuer,
            };
            let view = identity.set_idp(id, input, Changer::Operator).await.map_err(admin_error)?;
            println!("{}", serde_json::to_string_pretty(&view)?);
        }
        IdpCommand::Remove { tenant } => {
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            if !identity.remove_idp(id).await.map_err(admin_error)? {
                anyhow::bail!("the tenant has no identity provider");
            }
            println!("removed");
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn run_grants(sources: Sources, command: GrantsCommand) -> anyhow::Result<ExitCode> {
    let (store, identity) = identity(&sources)?;
    match command {
        GrantsCommand::List { tenant, principal, all } => {
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let grants = identity.grants(id, principal.as_deref(), all).await.map_err(admin_error)?;
            if grants.is_empty() {
                println!("no grants");
            }
            for g in grants {
                println!(
                    "{}  {}  {}  [{}]  {}  last used {}{}",
                    g.id,
                    g.principal_name,
                    g.client_name.as_deref().unwrap_or(&g.client_id),
                    g.scopes.join(" "),
                    g.resource,
                    g.last_used_at.format("%Y-%m-%d %H:%M"),
                    g.revoked_at.map(|at| format!("  revoked {}", at.format("%Y-%m-%d %H:%M"))).unwrap_or_default()
                );
            }
        }
        GrantsCommand::Revoke { tenant, grant } => {
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            if identity.revoke_grant(id, grant).await.map_err(admin_error)? {
                println!("revoked");
            } else {
                println!("already revoked");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
