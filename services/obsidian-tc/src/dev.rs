//! `obsidian-tc dev --vault DIR`: every role in one process, the embedded default.
//!
//! On first start it creates the tenant `local`, a vault named after the folder and a token,
//! kept in the data folder so later starts reuse it, and prints a ready-to-paste MCP client
//! configuration. The object store defaults to a directory in the data folder. The folder is
//! imported on start and kept in two-way sync while the process runs (state in
//! `DIR/.otc-sync/`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use otc_auth::PresentedToken;
use otc_config::{ObjectStoreKind, Sources};
use otc_store::{NewToken, PrincipalKind, Store};
use otc_worker::Worker;

use crate::app::{self, Deps};
use crate::sync_client;

pub const DEV_TENANT: &str = "local";
const DEV_PRINCIPAL: &str = "local-dev";

#[derive(Args, Debug)]
pub struct DevArgs {
    /// The vault folder to serve.
    #[arg(long, value_name = "DIR")]
    vault: PathBuf,
    /// Address to listen on (server.listen).
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// Speak MCP on standard input and output (no HTTP listener) instead of serving HTTP.
    #[arg(long)]
    stdio: bool,
    /// Where local state lives: the dev token and, by default, the object store.
    #[arg(long, value_name = "DIR", default_value = ".otc")]
    data_dir: PathBuf,
}

/// A vault name from a folder name: the characters vault names allow, the rest as dashes.
pub fn vault_name_for(dir: &Path) -> String {
    let base = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut name: String =
        base.chars().map(|c| if c.is_ascii_alphanumeric() || " ._-".contains(c) { c } else { '-' }).collect();
    name = name.trim_start_matches(|c: char| !c.is_ascii_alphanumeric()).chars().take(100).collect();
    if name.is_empty() { "vault".into() } else { name }
}

pub async fn run(sources: Sources, args: DevArgs) -> anyhow::Result<ExitCode> {
    // Installed first: a SIGTERM while the process is still starting (migrations, the import)
    // is a stop like any other, not a death by the signal's default action.
    let signal = app::shutdown_signal();
    let vault_dir = args.vault.canonicalize().with_context(|| format!("vault folder {}", args.vault.display()))?;
    anyhow::ensure!(vault_dir.is_dir(), "{} is not a folder", vault_dir.display());
    std::fs::create_dir_all(&args.data_dir).with_context(|| format!("data folder {}", args.data_dir.display()))?;

    let mut sources = sources;
    if let Some(listen) = &args.listen {
        sources = sources.flag("server.listen", listen.clone(), "--listen");
    }
    let mut loaded = app::load(&sources)?;
    // The embedded default keeps objects in the data folder unless a store was configured.
    if loaded.origin("object_store.kind").is_none() && loaded.origin("object_store.path").is_none() {
        loaded.config.object_store.kind = ObjectStoreKind::Local;
        loaded.config.object_store.path = args.data_dir.join("objects");
    }
    // One person's own server: the client they run it for may ask them to confirm, unless the
    // configuration says otherwise (a hosted deployment lets no client by default).
    if loaded.origin("mcp.confirm_in_client").is_none() {
        loaded.config.mcp.confirm_in_client = true;
    }
    // A vault folder with a wiki/ folder keeps its wiki there (the wiki tools and the generated
    // index and log pages), unless the configuration names another.
    let wiki_found = loaded.origin("wiki.folder").is_none() && vault_dir.join("wiki").is_dir();
    if wiki_found {
        loaded.config.wiki.folder = Some("wiki".into());
    }
    let config = loaded.config.clone();
    let telemetry = otc_telemetry::init(&config.telemetry)?;
    if wiki_found {
        tracing::info!("the vault's wiki/ folder is its wiki (set wiki.folder to use another)");
    }
    for unknown in &loaded.unknown_keys {
        tracing::warn!("{unknown} (ignored)");
    }

    let deps = Deps::new(&config)?;
    deps.store.migrate().await.context("applying migrations (is Postgres up? `scripts/services up`)")?;
    let vault_name = vault_name_for(&vault_dir);
    let token = ensure_dev_identity(&deps.store, &vault_name, &args.data_dir).await?;

    // One stop signal for every role: Ctrl-C/SIGTERM, or stdin closing in --stdio mode.
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let signal_stop = stop.clone();
    tokio::spawn(async move {
        signal.await;
        let _ = signal_stop.send(true);
    });

    let worker = Worker::new(deps.store.clone(), deps.kv.clone(), deps.blobs.clone(), app::worker_settings(&config))
        .with_indexer(deps.indexer.clone())
        .with_embedding(deps.embedding.clone())
        .with_wiki(app::dispatcher(&config, &deps)?);
    let worker = tokio::spawn(worker.run(app::until(stopped.clone())));

    // With --stdio the HTTP listener is internal (an ephemeral loopback port): it serves only
    // the folder mirror below.
    let mut gateway_config = config.clone();
    if args.stdio {
        gateway_config.server.listen = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    }
    let running = app::start_gateway(&gateway_config, &deps, app::until(stopped.clone())).await?;
    otc_telemetry::metrics().started("dev");
    let admin = app::start_admin(&config, &deps, app::until(stopped.clone())).await?;
    let outbox = tokio::spawn(otc_worker::outbox_metrics::run(
        deps.store.clone(),
        app::OUTBOX_METRICS_EVERY,
        app::until(stopped.clone()),
    ));

    // The folder is imported on start, then mirrored both ways: the agent's edits appear in
    // the folder (where Obsidian shows them), and edits made in Obsidian reach the vault.
    let remote = sync_client::Remote { url: format!("http://{}", running.addr), token: token.clone() };
    let client = sync_client::Client::new(&remote, &vault_name)?;
    // A stop during the import cancels it: what was committed stays, the rest comes with the
    // next start's import.
    let first = tokio::select! {
        first = sync_client::sync_once(&client, &vault_dir) => Some(first),
        () = app::until(stopped.clone()) => None,
    };
    let first = match first {
        Some(Ok(first)) => first,
        Some(Err(_)) | None if *stopped.borrow() => {
            eprintln!("obsidian-tc dev: stopped during the folder import; the next start carries on");
            return finish(running, admin, vec![worker, outbox], deps, telemetry, &stop).await;
        }
        Some(Err(e)) => return Err(e).context("importing the vault folder"),
        None => unreachable!("the import ends only by finishing or by the stop"),
    };
    if first.failed.is_empty() {
        eprintln!(
            "obsidian-tc dev: vault folder imported ({} file(s) sent, {} received); mirroring changes both ways",
            first.pushed, first.pulled
        );
    } else {
        // Not "imported": the vault lacks these files until a later pass carries them.
        eprintln!(
            "obsidian-tc dev: vault folder partly imported ({} file(s) sent, {} received; {} could not be carried, \
             see the warnings above; each pass tries them again); mirroring changes both ways",
            first.pushed,
            first.pulled,
            first.failed.len()
        );
    }
    let mirror_dir = vault_dir.clone();
    let mirror_stop = app::until(stopped.clone());
    let mirror = tokio::spawn(async move {
        if let Err(e) = sync_client::watch(&client, &mirror_dir, Duration::from_secs(1), mirror_stop).await {
            tracing::warn!(error = %crate::chain(&e), "the folder mirror stopped");
        }
    });

    if args.stdio {
        // Standard output belongs to MCP: nothing else may be printed there.
        eprintln!("obsidian-tc dev: serving vault {vault_name:?} over stdio (tenant {DEV_TENANT})");
        let caller = app::authenticate(&deps.store, &token).await?;
        // The session ends when stdin closes, or at SIGTERM like every other role.
        let dispatcher = app::dispatcher(&config, &deps)?;
        let audit = dispatcher.services.audit.clone();
        let served = tokio::select! {
            served = app::serve_stdio(dispatcher, caller) => served,
            () = app::until(stopped.clone()) => {
                audit.flush(app::AUDIT_FLUSH_LIMIT).await;
                Ok(())
            }
        };
        let _ = stop.send(true);
        served?;
    } else {
        print_client_config(&running.addr.to_string(), &token, &vault_name, &vault_dir);
    }
    finish(running, admin, vec![worker, outbox, mirror], deps, telemetry, &stop).await
}

/// Waits for the gateway to drain, stops the other roles and waits for them, then closes
/// the connections: how every stop of `dev` ends.
async fn finish(
    running: app::Running,
    admin: Option<app::Running>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    deps: Deps,
    telemetry: otc_telemetry::Telemetry,
    stop: &tokio::sync::watch::Sender<bool>,
) -> anyhow::Result<ExitCode> {
    running.wait().await.context("gateway")?;
    let _ = stop.send(true);
    if let Some(admin) = admin {
        admin.stop().await.context("admin listener")?;
    }
    for task in tasks {
        let _ = task.await;
    }
    deps.indexer.shutdown();
    deps.store.close().await;
    telemetry.shutdown();
    Ok(ExitCode::SUCCESS)
}

/// The local tenant, the vault and a live token, made on first start; the token is kept in
/// `<data>/dev-token` (mode 0600) and reused while it still works.
async fn ensure_dev_identity(store: &Store, vault_name: &str, data_dir: &Path) -> anyhow::Result<String> {
    let tenant_id = match store.tenant_id_by_slug(DEV_TENANT).await? {
        Some(id) => id,
        None => match store.create_tenant(DEV_TENANT, "Local development").await {
            Ok(tenant) => tenant.id,
            // Another dev process made it first.
            Err(otc_store::StoreError::Conflict { .. }) => {
                store.tenant_id_by_slug(DEV_TENANT).await?.context("tenant vanished")?
            }
            Err(e) => return Err(e.into()),
        },
    };
    let mut tx = store.begin(tenant_id).await?;
    if tx.vault_by_name(vault_name).await?.is_none() {
        tx.create_vault(vault_name).await.with_context(|| format!("creating vault {vault_name:?}"))?;
    }
    let token_file = data_dir.join("dev-token");
    if let Ok(saved) = std::fs::read_to_string(&token_file) {
        let saved = saved.trim().to_string();
        if let Ok(presented) = saved.parse::<PresentedToken>()
            && presented.tenant == tenant_id
            && tx.authenticate(&presented.hash).await?.is_some()
        {
            tx.commit().await?;
            return Ok(saved);
        }
    }
    let principal = tx.ensure_principal(PrincipalKind::User, DEV_PRINCIPAL).await?;
    let issued = tx
        .issue_token(NewToken {
            principal_id: principal.id,
            name: "dev".into(),
            scopes: vec!["*".parse()?],
            vault_id: None,
            expires_at: None,
        })
        .await?;
    tx.commit().await?;
    write_private(&token_file, &issued.plaintext)?;
    Ok(issued.plaintext)
}

fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).with_context(|| format!("writing {}", path.display()))?;
    file.write_all(text.as_bytes())?;
    Ok(())
}

fn print_client_config(addr: &str, token: &str, vault: &str, dir: &Path) {
    let url = format!("http://{addr}/mcp");
    let config = serde_json::json!({
        "mcpServers": {
            "obsidian-tc": {
                "type": "http",
                "url": url,
                "headers": { "Authorization": format!("Bearer {token}") }
            }
        }
    });
    println!("obsidian-tc dev: serving vault {vault:?} from {}", dir.display());
    println!("  health:  http://{addr}/readyz");
    println!("  token:   {token}   (tenant {DEV_TENANT}, all scopes; kept in the data folder)");
    println!("  MCP client configuration (e.g. .mcp.json):");
    println!("{}", serde_json::to_string_pretty(&config).expect("static JSON"));
    println!(
        "  Claude Code: claude mcp add --transport http obsidian-tc {url} --header \"Authorization: Bearer {token}\""
    );
}
