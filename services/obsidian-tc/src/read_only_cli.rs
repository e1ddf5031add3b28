//! `obsidian-tc read-only`: the operator's read-only switch, for the whole deployment, one
//! tenant or one vault (maintenance, a legal hold). While one is on, every write through MCP or
//! /v1 is refused (`read_only`, or `read_only_mode` for a vault) and reads go on; every gateway
//! applies a change within `read_only.refresh_ms`. A tenant's or vault's hold put on here is the
//! operator's: the tenant's admins cannot lift it.

use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use otc_config::Sources;
use otc_store::StoreError;
use otc_store::read_only::{Hold, HoldBy, HoldChange};

use crate::app;

#[derive(Args, Debug)]
pub struct ReadOnlyArgs {
    /// `on`, `off`, or `show` (the default) for what is on now.
    #[arg(value_enum, default_value = "show")]
    switch: Switch,
    /// Only this tenant (slug or id); without it, the whole deployment.
    #[arg(long)]
    tenant: Option<String>,
    /// Only this vault (name or id) of --tenant.
    #[arg(long, requires = "tenant")]
    vault: Option<String>,
    /// Why (up to 500 characters), shown to every writer refused; with `on`.
    #[arg(long)]
    reason: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Switch {
    On,
    Off,
    Show,
}

fn describe(what: &str, hold: &Option<Hold>) {
    match hold {
        None => println!("{what}: writable"),
        Some(h) => println!(
            "{what}: read-only since {} (set by the {}){}",
            h.since.to_rfc3339(),
            h.by,
            h.reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default()
        ),
    }
}

pub async fn run(sources: Sources, args: ReadOnlyArgs) -> anyhow::Result<ExitCode> {
    let (store, _kv, config) = app::store_and_kv(&sources)?;
    if args.reason.is_some() && args.switch != Switch::On {
        anyhow::bail!("--reason goes with `on`");
    }
    // What to set, if anything: on (with its reason) or off.
    let change = match args.switch {
        Switch::On => Some(Some(args.reason.as_deref())),
        Switch::Off => Some(None),
        Switch::Show => None,
    };
    let invalid = |e: StoreError| match e {
        StoreError::Invalid { .. } => anyhow::anyhow!("--reason: at most 500 characters, no control characters"),
        other => other.into(),
    };
    let Some(tenant) = args.tenant else {
        if let Some(on) = change {
            store.set_server_read_only(on).await.map_err(invalid)?;
        }
        describe("the deployment", &store.server_read_only().await?);
        if config.read_only.server {
            println!(
                "read_only.server is set in the configuration: the deployment is read-only whatever the switch says"
            );
        }
        return Ok(ExitCode::SUCCESS);
    };
    let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
    let mut tx = store.begin(id).await?;
    match &args.vault {
        None => {
            if let Some(on) = change {
                tx.set_tenant_read_only(on, HoldBy::Operator).await.map_err(invalid)?;
            }
        }
        Some(name) => {
            let vault = tx.vault_by_name_or_id(name).await?.with_context(|| format!("no vault {name} in {tenant}"))?;
            if let Some(on) = change
                && tx.set_vault_read_only(vault.id, on, HoldBy::Operator).await.map_err(invalid)? == HoldChange::NoVault
            {
                anyhow::bail!("no vault {name} in {tenant}");
            }
        }
    }
    let holds = tx.read_only_holds().await?;
    tx.commit().await?;
    describe(&format!("tenant {tenant}"), &holds.tenant);
    for (_, name, hold) in &holds.vaults {
        describe(&format!("vault {name}"), &Some(hold.clone()));
    }
    if holds.vaults.is_empty() {
        println!("no vault of {tenant} is on hold");
    }
    Ok(ExitCode::SUCCESS)
}
