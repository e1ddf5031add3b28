//! `obsidian-tc elicit`: a person confirms one destructive call. The call's elicit_required
//! answer gives the command line in `details.command` (tenant, principal, tool, args hash);
//! this prints a single-use token, valid `--ttl-secs`, that the caller sends as `elicit_token`.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use otc_config::Sources;

use crate::app;

#[derive(Args, Debug)]
pub struct ElicitArgs {
    /// Tenant slug or id.
    #[arg(long)]
    tenant: String,
    /// The principal whose call is confirmed (its id, from the call's details.principal).
    #[arg(long)]
    principal: uuid::Uuid,
    /// The tool the call names.
    #[arg(long)]
    tool: String,
    /// The call's details.args_hash.
    #[arg(long)]
    hash: String,
    /// The call's vault (details.vault): the token confirms the call on that vault only.
    #[arg(long)]
    vault: Option<String>,
    /// How long the token is valid (default: tools.confirmation_ttl_secs; at most a day).
    #[arg(long)]
    ttl_secs: Option<u64>,
}

pub async fn run(sources: Sources, args: ElicitArgs) -> anyhow::Result<ExitCode> {
    let config = app::load(&sources)?.config;
    otc_kernel::confirmation::check_args_hash(&args.hash).map_err(|e| anyhow::anyhow!("--hash: {}", e.message))?;
    let store = app::store_only(&sources)?;
    let tenant = store.resolve_tenant(&args.tenant).await.context("finding the tenant")?;
    let ttl = Duration::from_secs(args.ttl_secs.unwrap_or(config.tools.confirmation_ttl_secs));
    let minted = otc_kernel::confirmation::mint(
        &store,
        tenant,
        args.principal,
        &args.tool,
        &args.hash,
        args.vault.as_deref(),
        ttl,
    )
    .await
    .context("minting the token")?;
    println!("{}", minted.token);
    eprintln!("valid until {} for one call of {} with those arguments", minted.expires_at.to_rfc3339(), args.tool);
    Ok(ExitCode::SUCCESS)
}
