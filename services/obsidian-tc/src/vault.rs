//! `obsidian-tc vault create|list|import` and `obsidian-tc sync`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use otc_config::Sources;
use otc_store::StoreError;

use crate::app;
use crate::sync_client::{self, Client, Remote};

#[derive(Subcommand, Debug)]
pub enum VaultCommand {
    /// Create a vault in a tenant.
    Create {
        #[arg(long)]
        tenant: String,
        /// Letters, digits, spaces, dots, dashes and underscores; up to 100 characters.
        name: String,
    },
    /// List a tenant's vaults (and the deleted ones not erased yet).
    List {
        #[arg(long)]
        tenant: String,
    },
    /// Delete a vault: no tool, token or job reaches it from now on, and a worker erases every
    /// row, object and key of it after the grace period (`lifecycle.deletion_grace_hours`).
    Delete {
        #[arg(long)]
        tenant: String,
        /// Name or id.
        name: String,
        /// Hours until it is erased (default: lifecycle.deletion_grace_hours).
        #[arg(long)]
        grace_hours: Option<u64>,
    },
    /// Bring back a deleted vault, as it was, before it is erased.
    Undelete {
        #[arg(long)]
        tenant: String,
        /// Name or id.
        name: String,
    },
    /// Erase a deleted vault now instead of at the end of its grace period.
    Purge {
        #[arg(long)]
        tenant: String,
        /// Name or id.
        name: String,
    },
    /// Put a vault (or one folder) back to its state at a change-log sequence or a time, as one
    /// new change.
    Restore {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        vault: String,
        /// A sequence number, or an RFC 3339 time (the last change at or before it).
        #[arg(long)]
        at: String,
        /// Only this folder.
        #[arg(long)]
        folder: Option<String>,
        /// Show what would change without changing it.
        #[arg(long)]
        dry_run: bool,
    },
    /// Push a folder into a vault: parallel, and resumable (files the vault already holds are
    /// skipped).
    Import {
        /// The folder to import.
        dir: PathBuf,
        #[arg(long)]
        vault: String,
        #[command(flatten)]
        remote: Remote,
        /// No progress line.
        #[arg(long)]
        quiet: bool,
    },
}

/// `obsidian-tc sync DIR --vault NAME [--watch]`
#[derive(Args, Debug)]
pub struct SyncArgs {
    /// The local folder (created if missing).
    dir: PathBuf,
    #[arg(long)]
    vault: String,
    #[command(flatten)]
    remote: Remote,
    /// Keep syncing until interrupted.
    #[arg(long)]
    watch: bool,
    /// Seconds between passes with --watch.
    #[arg(long, default_value_t = 2)]
    interval: u64,
}

pub async fn run(sources: Sources, command: VaultCommand) -> anyhow::Result<ExitCode> {
    match command {
        VaultCommand::Create { tenant, name } => {
            let store = app::store_only(&sources)?;
            let tenant_id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let mut tx = store.begin(tenant_id).await?;
            let vault = match tx.create_vault(&name).await {
                Err(StoreError::Conflict { .. }) => anyhow::bail!("vault {name:?} already exists in tenant {tenant}"),
                Err(StoreError::Invalid { .. }) => anyhow::bail!(
                    "invalid vault name {name:?}: use letters, digits, spaces, dots, dashes and underscores (up to 100), starting with a letter or digit"
                ),
                other => other?,
            };
            tx.commit().await?;
            println!("created vault {} ({})", vault.name, vault.id);
        }
        VaultCommand::Restore { tenant, vault, at, folder, dry_run } => {
            use otc_tools::tools::vault::restore::{self, RestoreAt, RestoreError};
            let at = RestoreAt::parse(&at).context("--at is a change-log sequence number or an RFC 3339 time")?;
            let config = app::load(&sources)?.config;
            let deps = app::Deps::new(&config)?;
            let tenant_id = deps.store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let mut tx = deps.store.begin(tenant_id).await?;
            let found = tx.vault_by_name(&vault).await?;
            tx.commit().await?;
            let found = found.with_context(|| format!("no vault {vault:?} in tenant {tenant}"))?;
            let folder = folder.map(|f| format!("{}/", f.trim_matches('/'))).filter(|f| f != "/").unwrap_or_default();
            let refused = |e: RestoreError| match e {
                RestoreError::Refused(e) => {
                    anyhow::anyhow!("{}: {} {}", e.code, e.message, serde_json::Value::Object(e.details))
                }
                other => anyhow::Error::new(other),
            };
            let plan =
                restore::plan(&deps.store, tenant_id, found.id, at, &folder, &|_| true).await.map_err(refused)?;
            println!(
                "restore {} to sequence {} (now {}): {} restored, {} deleted, {} unchanged",
                found.name,
                plan.seq,
                plan.head,
                plan.restored.len(),
                plan.deleted.len(),
                plan.unchanged
            );
            for path in plan.restored.iter().take(50) {
                println!("  restore {path}");
            }
            for path in plan.deleted.iter().take(50) {
                println!("  delete  {path}");
            }
            if !dry_run {
                let who = otc_store::Provenance {
                    tool: Some("vault restore".into()),
                    client_name: Some("obsidian-tc cli".into()),
                    ..Default::default()
                };
                let seq = restore::apply(&deps.store, &deps.kv, &deps.indexer, tenant_id, found.id, &plan, &who)
                    .await
                    .map_err(refused)?;
                println!("restored; the vault is now at sequence {seq}");
            }
        }
        VaultCommand::List { tenant } => {
            let store = app::store_only(&sources)?;
            let tenant_id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let mut tx = store.begin(tenant_id).await?;
            for vault in tx.list_vaults().await? {
                println!("{}  {}  {}", vault.id, vault.created_at.format("%Y-%m-%d"), vault.name);
            }
            for vault in tx.deleted_vaults().await? {
                println!(
                    "{}  deleted {}  {}  (erased after {})",
                    vault.id,
                    vault.deleted_at.format("%Y-%m-%d"),
                    vault.name,
                    vault.purge_after.to_rfc3339()
                );
            }
            tx.commit().await?;
        }
        VaultCommand::Delete { tenant, name, grace_hours } => {
            let config = app::load(&sources)?.config;
            let deps = app::Deps::new(&config)?;
            let tenant_id = deps.store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let grace = grace_hours
                .map(|h| Duration::from_secs(h.saturating_mul(3600)))
                .unwrap_or_else(|| config.lifecycle.deletion_grace());
            let (vault, purge_after) =
                match otc_kernel::lifecycle::delete_vault(&deps.store, &deps.kv, tenant_id, &name, grace).await {
                    Err(StoreError::NotFound(_)) => anyhow::bail!("no vault {name:?} in tenant {tenant}"),
                    other => other?,
                };
            println!(
                "deleted vault {} ({}); erased after {} unless `obsidian-tc vault undelete --tenant {tenant} {}` first",
                vault.name,
                vault.id,
                purge_after.to_rfc3339(),
                vault.name
            );
        }
        VaultCommand::Undelete { tenant, name } => {
            let deps = app::Deps::new(&app::load(&sources)?.config)?;
            let tenant_id = deps.store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let vault = match otc_kernel::lifecycle::undelete_vault(&deps.store, &deps.kv, tenant_id, &name).await {
                Err(StoreError::NotFound(_)) => {
                    anyhow::bail!("no deleted vault {name:?} in tenant {tenant} (never deleted, or already erased)")
                }
                Err(StoreError::Conflict { .. }) => {
                    anyhow::bail!("a vault named {name:?} was made since; rename it first")
                }
                other => other?,
            };
            println!("restored vault {} ({})", vault.name, vault.id);
        }
        VaultCommand::Purge { tenant, name } => {
            let deps = app::Deps::new(&app::load(&sources)?.config)?;
            let tenant_id = deps.store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let vault = match otc_kernel::lifecycle::purge_vault(&deps.store, tenant_id, &name).await {
                Err(StoreError::NotFound(_)) => {
                    anyhow::bail!("no deleted vault {name:?} in tenant {tenant}: delete it first")
                }
                other => other?,
            };
            let report = otc_worker::erasure::erase_due(&deps.store, &deps.blobs, &deps.kv, tenant_id, None)
                .await
                .map_err(anyhow::Error::from_boxed)?;
            println!(
                "erased vault {} ({}): {} rows, {} Redis keys (its unreferenced blobs go with the next sweep)",
                vault.name, vault.id, report.rows, report.keys
            );
        }
        VaultCommand::Import { dir, vault, remote, quiet } => {
            anyhow::ensure!(dir.is_dir(), "{} is not a folder", dir.display());
            let client = Client::new(&remote, &vault)?;
            let report = sync_client::import(&client, &dir, quiet).await?;
            println!(
                "imported {} files ({:.1} MB) in {:.1} s: {:.0} files/s, {:.1} MB/s; {} already there{}",
                report.files,
                report.bytes as f64 / 1e6,
                report.seconds,
                report.files as f64 / report.seconds.max(0.001),
                report.bytes as f64 / 1e6 / report.seconds.max(0.001),
                report.already,
                match report.name_warnings {
                    0 => String::new(),
                    n => format!("; {n} stored under a name other systems cannot hold (warnings above)"),
                }
            );
            if !report.complete() {
                // Not a complete copy: say so, list what is missing, and exit non-zero.
                eprintln!(
                    "obsidian-tc: import incomplete: the vault holds {} of the folder's {} files; {} could not be \
                     stored:",
                    report.total - report.failed.len(),
                    report.total,
                    report.failed.len()
                );
                for failed in &report.failed {
                    eprintln!("  {}: {}", failed.path, failed.reason);
                }
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn sync_command(args: SyncArgs) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(&args.dir).with_context(|| format!("creating {}", args.dir.display()))?;
    let client = Client::new(&args.remote, &args.vault)?;
    if args.watch {
        sync_client::watch(&client, &args.dir, Duration::from_secs(args.interval.max(1)), app::shutdown_signal())
            .await?;
    } else {
        let report = sync_client::sync_once(&client, &args.dir).await?;
        println!(
            "pulled {}, pushed {}, deleted {} here and {} there, {} conflict(s); vault at change {}",
            report.pulled,
            report.pushed,
            report.deleted_local,
            report.deleted_remote,
            report.conflicts.len(),
            report.seq
        );
        for copy in report.conflicts {
            println!("conflict: your version kept as {copy}");
        }
        if !report.server_only.is_empty() {
            println!("{} file(s) left on the server: this computer cannot hold their names", report.server_only.len());
        }
        if !report.failed.is_empty() {
            // Files this pass could not carry (warned about above): the next pass tries again.
            eprintln!("obsidian-tc: sync incomplete: {} file(s) could not be synced:", report.failed.len());
            for failed in &report.failed {
                eprintln!("  {}: {}", failed.path, failed.reason);
            }
            return Ok(ExitCode::FAILURE);
        }
    }
    Ok(ExitCode::SUCCESS)
}
