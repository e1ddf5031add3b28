//! `obsidian-tc`: one binary, a subcommand per role. The library half lets the integration
//! tests start the same app in-process.

pub mod acl_cli;
pub mod app;
pub mod audit_cli;
pub mod dev;
pub mod doctor;
pub mod elicit;
pub mod memory_cli;
pub mod read_only_cli;
pub mod sso;
pub mod sync_client;
pub mod tenant;
pub mod token;
pub mod vault;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "obsidian-tc", version, about = "Hosted multi-tenant MCP server for Obsidian vaults")]
pub struct Cli {
    /// Configuration file (TOML). Default: ./obsidian-tc.toml when it exists.
    #[arg(long, global = true, env = "OTC_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,

    /// Set any configuration key, e.g. --set server.shutdown_grace_secs=5 (repeatable).
    /// Flags override environment variables (OTC__SECTION__KEY), which override the file.
    #[arg(long = "set", global = true, value_name = "KEY=VALUE")]
    set: Vec<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the HTTP gateway.
    Serve {
        /// Address to listen on (server.listen).
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
    },
    /// Run the background worker.
    Worker,
    /// Speak MCP on standard input and output, acting for the token's principal.
    Stdio {
        /// The API token (or set OTC_TOKEN).
        #[arg(long, env = "OTC_TOKEN", hide_env_values = true)]
        token: String,
    },
    /// Apply pending database migrations, then exit.
    Migrate,
    /// Every role in one process over a local vault folder: the embedded default.
    Dev(dev::DevArgs),
    /// Check the configuration and every dependency; one line per problem, non-zero exit on any.
    Doctor,
    /// Create, list and revoke API tokens.
    #[command(subcommand)]
    Token(token::TokenCommand),
    /// Create and inspect tenants.
    #[command(subcommand)]
    Tenant(tenant::TenantCommand),
    /// Create, list and import vaults.
    #[command(subcommand)]
    Vault(vault::VaultCommand),
    /// Two-way sync of a local folder with a vault.
    Sync(vault::SyncArgs),
    /// Confirm one destructive call: print a single-use token for it.
    Elicit(elicit::ElicitArgs),
    /// Manage a tenant's folder-ACL rules and its principals' groups.
    #[command(subcommand)]
    Acl(acl_cli::AclCommand),
    /// A tenant's identity provider, through which its people sign MCP clients in (OAuth).
    #[command(subcommand)]
    Idp(sso::IdpCommand),
    /// The OAuth grants a tenant's people gave clients: list and revoke.
    #[command(subcommand)]
    Grants(sso::GrantsCommand),
    /// Read a tenant's audit trail (a record per tool call and /v1 request) and set its retention.
    #[command(subcommand)]
    Audit(audit_cli::AuditCommand),
    /// Export a tenant's agent memory (entities, captures, sessions, goals, work episodes,
    /// findings) as JSON lines.
    #[command(subcommand)]
    Memory(memory_cli::MemoryCommand),
    /// Make the deployment, a tenant or a vault read-only (maintenance, a legal hold), or
    /// writable again; without on/off, show what is on hold.
    ReadOnly(read_only_cli::ReadOnlyArgs),
}

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let sources = app::sources(cli.config.clone(), &cli.set)?;
    match cli.command {
        Command::Serve { listen } => {
            let sources = match listen {
                Some(addr) => sources.flag("server.listen", addr, "--listen"),
                None => sources,
            };
            app::serve(sources).await
        }
        Command::Worker => app::worker(sources).await,
        Command::Stdio { token } => app::stdio(sources, &token).await,
        Command::Migrate => app::migrate(sources).await,
        Command::Dev(args) => dev::run(sources, args).await,
        Command::Doctor => doctor::run(sources).await,
        Command::Token(command) => token::run(sources, command).await,
        Command::Tenant(command) => tenant::run(sources, command).await,
        Command::Vault(command) => vault::run(sources, command).await,
        Command::Sync(args) => vault::sync_command(args).await,
        Command::Elicit(args) => elicit::run(sources, args).await,
        Command::Acl(command) => acl_cli::run(sources, command).await,
        Command::Audit(command) => audit_cli::run(sources, command).await,
        Command::Memory(command) => memory_cli::run(sources, command).await,
        Command::ReadOnly(args) => read_only_cli::run(sources, args).await,
        Command::Idp(command) => sso::run_idp(sources, command).await,
        Command::Grants(command) => sso::run_grants(sources, command).await,
    }
}

/// An error with its causes, for the one line the CLI prints.
pub fn chain(err: &anyhow::Error) -> String {
    err.chain().map(|c| c.to_string()).collect::<Vec<_>>().join(": ")
}
