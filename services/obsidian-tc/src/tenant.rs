//! `obsidian-tc tenant create|show`

use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use otc_config::Sources;
use otc_store::StoreError;

use crate::app;

#[derive(Subcommand, Debug)]
pub enum TenantCommand {
    /// Create a tenant (an organisation).
    Create {
        /// Short name: lowercase letters, digits and dashes, e.g. `acme`.
        slug: String,
        /// Display name (default: the slug).
        #[arg(long)]
        name: Option<String>,
    },
    /// Show one tenant and its vaults.
    Show {
        /// Slug or id.
        tenant: String,
    },
}

pub async fn run(sources: Sources, command: TenantCommand) -> anyhow::Result<ExitCode> {
    let store = app::store_only(&sources)?;
    match command {
        TenantCommand::Create { slug, name } => {
            let name = name.unwrap_or_else(|| slug.clone());
            let tenant = match store.create_tenant(&slug, &name).await {
                Err(StoreError::Conflict { .. }) => anyhow::bail!("tenant {slug:?} already exists"),
                Err(StoreError::Invalid { .. }) => anyhow::bail!(
                    "invalid tenant slug {slug:?}: use 1-63 lowercase letters, digits and dashes, starting with a letter or digit"
                ),
                other => other.context("creating the tenant")?,
            };
            println!("created tenant {} ({})", tenant.slug, tenant.id);
        }
        TenantCommand::Show { tenant } => {
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let mut tx = store.begin(id).await?;
            let tenant = tx.tenant().await?.context("tenant vanished")?;
            let vaults = tx.list_vaults().await?;
            tx.commit().await?;
            println!("tenant  {} ({})\nname    {}\ncreated {}", tenant.slug, tenant.id, tenant.name, tenant.created_at);
            for vault in vaults {
                println!("vault   {} ({})", vault.name, vault.id);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
