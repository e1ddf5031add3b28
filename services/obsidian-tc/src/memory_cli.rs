//! `obsidian-tc memory export`: a tenant's memory (entities, observations and relations, the
//! capture queue, sessions and goals, work episodes and their retrievals, gap and contradiction
//! findings, model usage) as JSON lines, for another system to keep or a person to read.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use otc_config::Sources;

use crate::app;

#[derive(Subcommand, Debug)]
pub enum MemoryCommand {
    /// Every memory row of the tenant as a JSON line `{"table": T, "row": {...}}`, the rows a row
    /// refers to first. With --vault, that vault's rows of the per-vault tables (episodes, their
    /// retrievals and model usage, a principal's across vaults, come whole).
    Export {
        /// Slug or id.
        tenant: String,
        #[arg(long)]
        vault: Option<String>,
    },
}

pub async fn run(sources: Sources, command: MemoryCommand) -> anyhow::Result<ExitCode> {
    let store = app::store_only(&sources)?;
    match command {
        MemoryCommand::Export { tenant, vault } => {
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let mut tx = store.begin(id).await?;
            let vault = match vault {
                Some(name) => Some(tx.vault_by_name(&name).await?.with_context(|| format!("no vault {name:?}"))?.id),
                None => None,
            };
            let mut out = std::io::stdout().lock();
            for (table, _) in otc_store::MEMORY_TABLES {
                for row in tx.memory_rows(table, vault).await? {
                    writeln!(out, "{}", serde_json::json!({"table": table, "row": row}))?;
                }
            }
            tx.commit().await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
