//! `obsidian-tc tenant create|show|limits|quotas|llm|policy|domains|export|import|usage|...`

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
        /// Invite this person as its first admin (see `tenant invite`).
        #[arg(long, value_name = "EMAIL")]
        invite: Option<String>,
    },
    /// Invite a person to administer the tenant: prints a single-use code, valid for --days,
    /// which they accept at POST /v1/invitations/accept for an admin token of their own.
    Invite {
        /// Slug or id.
        tenant: String,
        email: String,
        #[arg(long, default_value_t = 7)]
        days: u32,
    },
    /// Delete a tenant: every token stops now, and a worker erases every row, object and
    /// key of it after the grace period (`lifecycle.deletion_grace_hours`).
    Delete {
        /// Slug or id.
        tenant: String,
        /// Hours until it is erased (default: lifecycle.deletion_grace_hours).
        #[arg(long)]
        grace_hours: Option<u64>,
    },
    /// The tenant's usage per day (UTC): calls by rate-limit class and outcome, throttled
    /// calls, uploads, embedded texts and tokens, model tokens and cost; and what it holds now.
    Usage {
        /// Slug or id.
        tenant: String,
        /// Days back, today included.
        #[arg(long, default_value_t = 30)]
        days: u32,
        /// As JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Export the tenant (or one vault) as a tar archive: every file as stored, an index with
    /// each file's SHA-256, the change-log heads, ACL rules, memory, sessions, goals, episodes
    /// and the audit trail. Written to OUT.partial, renamed to OUT once whole.
    Export {
        /// Slug or id.
        tenant: String,
        /// The archive to write.
        #[arg(long)]
        out: std::path::PathBuf,
        /// Only this vault (name or id).
        #[arg(long)]
        vault: Option<String>,
    },
    /// Import an export (`tenant export`, or a vault's from the admin API) into the tenant: a
    /// vault's archive as a new vault (--vault, or its own name), a tenant's archive as a new
    /// vault per vault it holds, with their files, ACLs, memory and trail. Nothing is left of
    /// an import that fails.
    Import {
        /// Slug or id.
        tenant: String,
        /// The archive to read.
        #[arg(long)]
        archive: std::path::PathBuf,
        /// The new vault's name (a vault's archive only).
        #[arg(long)]
        vault: Option<String>,
    },
    /// Bring back a deleted tenant, as it was, before it is erased.
    Undelete {
        /// Slug or id.
        tenant: String,
    },
    /// Erase a deleted tenant now instead of at the end of its grace period.
    Purge {
        /// Slug or id.
        tenant: String,
    },
    /// Show one tenant and its vaults.
    Show {
        /// Slug or id.
        tenant: String,
    },
    /// Show, set or reset the tenant's rate-limit tiers (calls a minute and burst per class of
    /// call: bulk, execute, admin, delete, write, read, and sync for the /v1 API). A class the tenant has no tier for
    /// takes the deployment's (rate_limits.tiers). Every gateway applies a change before this
    /// command returns.
    Limits {
        /// Slug or id.
        tenant: String,
        /// CLASS=PER_MINUTE/BURST, e.g. `write=120/40`; repeatable.
        #[arg(long = "set", value_name = "CLASS=PER_MINUTE/BURST")]
        set: Vec<String>,
        /// A class to give back the deployment's tier; repeatable.
        #[arg(long = "reset", value_name = "CLASS")]
        reset: Vec<String>,
    },
    /// Show, set or reset the tenant's quotas (storage_bytes, notes, concurrent_uploads,
    /// upload_bytes_in_flight) with what it uses. A quota the tenant has none of its own for
    /// takes the deployment's (quotas.*).
    Quotas {
        /// Slug or id.
        tenant: String,
        /// QUOTA=N, e.g. `notes=50000`; repeatable.
        #[arg(long = "set", value_name = "QUOTA=N")]
        set: Vec<String>,
        /// A quota to give back the deployment's; repeatable.
        #[arg(long = "reset", value_name = "QUOTA")]
        reset: Vec<String>,
    },
    /// Show or set the tenant's own OpenAI-compatible chat endpoint for the model-backed tools
    /// (reflect, knowledge_challenge, the contradiction detector), with the last week's calls and
    /// costs. Without one those tools answer plugin_unavailable.
    Llm {
        /// Slug or id.
        tenant: String,
        /// The API base, before /chat/completions (e.g. https://api.openai.com/v1).
        #[arg(long)]
        base_url: Option<String>,
        #[arg(long)]
        model: Option<String>,
        /// The environment variable holding the API key (sealed under oauth.secret_key).
        #[arg(long, value_name = "VAR")]
        api_key_env: Option<String>,
        /// Calls a day at most, over every purpose (default 200).
        #[arg(long)]
        daily_cap: Option<i32>,
        /// US dollars per million prompt tokens, for the cost counters.
        #[arg(long)]
        prompt_cost: Option<f64>,
        /// US dollars per million completion tokens.
        #[arg(long)]
        completion_cost: Option<f64>,
        /// Remove the tenant's endpoint.
        #[arg(long, conflicts_with_all = ["base_url", "model", "api_key_env"])]
        clear: bool,
    },
    /// Show or set the tenant's policies: the OAuth clients (client_id) whose own person may
    /// confirm a destructive call in the client (off for every client unless named here or
    /// mcp.confirm_in_client is on). Tenant admins set the same with `PUT /v1/policies`.
    Policy {
        /// Slug or id.
        tenant: String,
        /// A client_id whose person may confirm in the client; repeatable. Replaces the list.
        #[arg(long = "confirm-in-client", value_name = "CLIENT_ID")]
        confirm_in_client: Vec<String>,
        /// Let no client confirm in the client.
        #[arg(long, conflicts_with = "confirm_in_client")]
        no_confirm_in_client: bool,
        /// A glob of notes whose text is never sent to a model (embeddings, the wiki judge, the
        /// chat endpoint); repeatable. Replaces the tenant's list.
        #[arg(long = "egress-exclude", value_name = "GLOB")]
        egress_exclude: Vec<String>,
        /// Exclude nothing of the tenant's own (the deployment's egress.exclude_paths stay).
        #[arg(long, conflicts_with = "egress_exclude")]
        no_egress_exclude: bool,
    },
    /// Show, add or remove the tenant's email domains: a directory (SCIM) provisions only people
    /// whose email is in one of them, and a domain belongs to one tenant at most.
    Domains {
        /// Slug or id.
        tenant: String,
        /// A domain to add (e.g. acme.com); repeatable.
        #[arg(long = "add", value_name = "DOMAIN")]
        add: Vec<String>,
        /// A domain to remove; repeatable.
        #[arg(long = "remove", value_name = "DOMAIN")]
        remove: Vec<String>,
    },
}

const QUOTAS: [&str; 4] = ["storage_bytes", "notes", "concurrent_uploads", "upload_bytes_in_flight"];

fn quota_field<'a>(quotas: &'a mut otc_store::Quotas, name: &str) -> anyhow::Result<&'a mut Option<i64>> {
    Ok(match name.trim() {
        "storage_bytes" => &mut quotas.storage_bytes,
        "notes" => &mut quotas.notes,
        "concurrent_uploads" => &mut quotas.concurrent_uploads,
        "upload_bytes_in_flight" => &mut quotas.upload_bytes_in_flight,
        other => anyhow::bail!("unknown quota {other:?}: one of {}", QUOTAS.join(", ")),
    })
}

/// `write=120/40` as a tier.
fn parse_tier(text: &str) -> anyhow::Result<otc_store::RateTier> {
    let bad = || anyhow::anyhow!("expected CLASS=PER_MINUTE/BURST (e.g. write=120/40), got {text:?}");
    let (class, numbers) = text.split_once('=').ok_or_else(bad)?;
    let (per_minute, burst) = numbers.split_once('/').ok_or_else(bad)?;
    let class = known_class(class)?;
    let number = |n: &str| match n.trim().parse::<u32>() {
        Ok(v @ 1..=1_000_000) => Ok(v),
        _ => anyhow::bail!("{n:?} in {text:?}: a whole number from 1 to 1000000"),
    };
    Ok(otc_store::RateTier { class, per_minute: number(per_minute)?, burst: number(burst)? })
}

fn known_class(class: &str) -> anyhow::Result<String> {
    let class = class.trim();
    anyhow::ensure!(
        otc_config::RateTiers::CLASSES.contains(&class),
        "unknown class {class:?}: one of {}",
        otc_config::RateTiers::CLASSES.join(", ")
    );
    Ok(class.to_string())
}

/// Makes an invitation for `email` and prints its code and where to accept it.
/// Prints an invitation made for `email`, with how to accept it.
fn print_invitation(
    sources: &Sources,
    email: &str,
    issued: &otc_store::invitations::IssuedInvitation,
) -> anyhow::Result<()> {
    let base = app::load(sources)?.config.mcp.public_url.unwrap_or_else(|| "https://<this server>".into());
    println!("invited {email} (until {}); give them this code, shown once:", issued.expires_at.to_rfc3339());
    println!("{}", issued.code);
    println!(
        "they accept it with: curl -X POST {base}/v1/invitations/accept -H 'content-type: application/json' -d '{{\"code\": \"<code>\"}}'"
    );
    Ok(())
}

pub async fn run(sources: Sources, command: TenantCommand) -> anyhow::Result<ExitCode> {
    let store = app::store_only(&sources)?;
    match command {
        TenantCommand::Invite { tenant, email, days } => {
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let issued = otc_kernel::lifecycle::invite(&store, id, &email, days).await.map_err(|e| match e {
                otc_kernel::lifecycle::CreateError::BadDays => anyhow::anyhow!("--days: 1 to 90"),
                other => other.into(),
            })?;
            print_invitation(&sources, &email, &issued)?;
        }
        TenantCommand::Create { slug, name, invite: invited } => {
            let name = name.unwrap_or_else(|| slug.clone());
            let first_admin = invited.as_deref().map(|email| (email, 7));
            let (tenant, invitation) = otc_kernel::lifecycle::create_tenant(&store, &slug, &name, first_admin)
                .await
                .map_err(|e| match e {
                    otc_kernel::lifecycle::CreateError::Taken(_) => anyhow::anyhow!("tenant {slug:?} already exists"),
                    otc_kernel::lifecycle::CreateError::BadSlug => anyhow::anyhow!(
                        "invalid tenant slug {slug:?}: use 1-63 lowercase letters, digits and dashes, starting with a letter or digit"
                    ),
                    other => anyhow::Error::from(other).context("creating the tenant"),
                })?;
            println!("created tenant {} ({})", tenant.slug, tenant.id);
            if let (Some(email), Some(issued)) = (invited, invitation) {
                print_invitation(&sources, &email, &issued)?;
            }
        }
        TenantCommand::Delete { tenant, grace_hours } => {
            let config = app::load(&sources)?.config;
            let deps = app::Deps::new(&config)?;
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let grace = grace_hours
                .map(|h| std::time::Duration::from_secs(h.saturating_mul(3600)))
                .unwrap_or_else(|| config.lifecycle.deletion_grace());
            let deletion = otc_kernel::lifecycle::delete_tenant(&deps.store, &deps.kv, id, grace).await?;
            println!(
                "deleted tenant {tenant} ({id}); erased after {} unless `obsidian-tc tenant undelete {tenant}` first",
                deletion.purge_after.to_rfc3339()
            );
        }
        TenantCommand::Usage { tenant, days, json } => {
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let mut tx = store.begin(id).await?;
            let report = tx.usage_report(days).await?;
            tx.commit().await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
                return Ok(ExitCode::SUCCESS);
            }
            println!("tenant {tenant}: {} stored bytes, {} notes", report.storage_bytes, report.notes);
            println!("day         calls  throttled  uploads  embedded(tokens)  model tokens (USD)  by class:outcome");
            for day in &report.days {
                let calls: i64 = day.calls.values().flat_map(|o| o.values()).sum();
                let by: Vec<String> = day
                    .calls
                    .iter()
                    .flat_map(|(class, outcomes)| outcomes.iter().map(move |(o, n)| format!("{class}:{o}={n}")))
                    .collect();
                println!(
                    "{}  {calls:>6}  {:>9}  {:>7}  {:>8}({:>7})  {:>12} ({:.4})  {}",
                    day.day,
                    day.throttled,
                    day.uploads,
                    day.embedding_texts,
                    day.embedding_tokens,
                    day.model_tokens,
                    day.model_cost_usd,
                    by.join(" ")
                );
            }
        }
        TenantCommand::Import { tenant, archive, vault } => {
            let config = app::load(&sources)?.config;
            let deps = app::Deps::new(&config)?;
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let file =
                tokio::fs::File::open(&archive).await.with_context(|| format!("opening {}", archive.display()))?;
            let import = otc_kernel::export::import::Deps {
                store: &deps.store,
                blobs: &deps.blobs,
                indexer: &deps.indexer,
                kv: &deps.kv,
                max_file_bytes: config.sync.max_blob_bytes as u64,
            };
            let reader = tokio::io::BufReader::with_capacity(1 << 20, file);
            let done = otc_kernel::export::import::import(&import, id, reader, vault.as_deref())
                .await
                .with_context(|| format!("importing {} (nothing was imported)", archive.display()))?;
            println!(
                "imported into tenant {tenant}: vault(s) {}; {} files ({} bytes); {} rows",
                done.vaults.join(", "),
                done.files,
                done.bytes,
                done.rows.values().sum::<u64>()
            );
            for (table, n) in &done.skipped {
                println!(
                    "  {table}: {n} row(s) left out (their ids are taken, or they name a principal this tenant does not have)"
                );
            }
        }
        TenantCommand::Export { tenant, out, vault } => {
            let deps = app::Deps::new(&app::load(&sources)?.config)?;
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let vault = match vault {
                Some(name) => {
                    let mut tx = store.begin(id).await?;
                    let found = tx.vault_by_name_or_id(&name).await?;
                    tx.commit().await?;
                    Some(found.with_context(|| format!("no vault {name:?} in tenant {tenant}"))?)
                }
                None => None,
            };
            let (sink, mut chunks) = otc_kernel::export::Sink::new(8);
            let (store2, blobs) = (deps.store.clone(), deps.blobs.clone());
            let export = tokio::spawn(async move {
                let done = match &vault {
                    Some(vault) => otc_kernel::export::export_vault(&store2, &blobs, id, vault, &sink).await,
                    None => otc_kernel::export::export_tenant(&store2, &blobs, id, &sink).await,
                };
                if let Err(e) = &done {
                    sink.fail(e.to_string()).await;
                }
                done
            });
            let partial = out.with_extension("partial");
            let mut file =
                tokio::fs::File::create(&partial).await.with_context(|| format!("creating {}", partial.display()))?;
            let mut written = 0u64;
            while let Some(chunk) = chunks.recv().await {
                let chunk = chunk.map_err(|why| anyhow::anyhow!("the export stopped short: {why}"))?;
                tokio::io::AsyncWriteExt::write_all(&mut file, &chunk).await?;
                written += chunk.len() as u64;
            }
            tokio::io::AsyncWriteExt::flush(&mut file).await?;
            let carried = export.await??;
            tokio::fs::rename(&partial, &out).await?;
            println!(
                "exported tenant {tenant} to {}: {} files ({} bytes of content), {} rows, {written} bytes of archive",
                out.display(),
                carried.files,
                carried.bytes,
                carried.rows.values().sum::<u64>()
            );
        }
        TenantCommand::Undelete { tenant } => {
            let deps = app::Deps::new(&app::load(&sources)?.config)?;
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            match otc_kernel::lifecycle::undelete_tenant(&deps.store, &deps.kv, id).await {
                Err(StoreError::NotFound(_)) => anyhow::bail!("tenant {tenant} is not deleted"),
                other => other?,
            }
            println!("restored tenant {tenant} ({id})");
        }
        TenantCommand::Purge { tenant } => {
            let deps = app::Deps::new(&app::load(&sources)?.config)?;
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            match otc_kernel::lifecycle::purge_tenant(&deps.store, id).await {
                Err(StoreError::NotFound(_)) => anyhow::bail!("tenant {tenant} is not deleted: delete it first"),
                other => other?,
            }
            let report = otc_worker::erasure::erase_due(&deps.store, &deps.blobs, &deps.kv, id, None)
                .await
                .map_err(anyhow::Error::from_boxed)?;
            println!(
                "erased tenant {tenant} ({id}): {} rows, {} objects, {} Redis keys",
                report.rows, report.objects, report.keys
            );
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
        TenantCommand::Limits { tenant, set, reset } => {
            let set = set.iter().map(|t| parse_tier(t)).collect::<anyhow::Result<Vec<_>>>()?;
            let reset = reset.iter().map(|c| known_class(c)).collect::<anyhow::Result<Vec<_>>>()?;
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let mut tx = store.begin(id).await?;
            for tier in &set {
                tx.set_rate_tier(tier).await?;
            }
            for class in &reset {
                tx.clear_rate_tier(class).await?;
            }
            let own = tx.rate_tiers().await?;
            tx.commit().await?;
            if !set.is_empty() || !reset.is_empty() {
                // The tiers travel with each checked token: gateways drop what they checked.
                tell_gateways(&sources, id).await?;
            }
            let defaults = app::load(&sources)?.config.rate_limits.tiers;
            for class in otc_config::RateTiers::CLASSES {
                match own.iter().find(|t| t.class == class) {
                    Some(t) => println!("{class:<8} {:>7}/min  burst {:<6} (tenant)", t.per_minute, t.burst),
                    None => {
                        let t = defaults.get(class).expect("a known class");
                        println!("{class:<8} {:>7}/min  burst {:<6} (default)", t.per_minute, t.burst)
                    }
                }
            }
        }
        TenantCommand::Quotas { tenant, set, reset } => {
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let mut tx = store.begin(id).await?;
            let mut own = tx.own_quotas().await?;
            for item in &set {
                let (name, value) = item
                    .split_once('=')
                    .ok_or_else(|| anyhow::anyhow!("expected QUOTA=N (e.g. notes=50000), got {item:?}"))?;
                let value: i64 = match value.trim().parse() {
                    Ok(v) if v > 0 => v,
                    _ => anyhow::bail!("{value:?} in {item:?}: a whole number above 0"),
                };
                *quota_field(&mut own, name)? = Some(value);
            }
            for name in &reset {
                *quota_field(&mut own, name)? = None;
            }
            if !set.is_empty() || !reset.is_empty() {
                tx.set_quotas(&own).await?;
            }
            let usage = tx.usage().await?;
            tx.commit().await?;
            let defaults = app::quotas(&app::load(&sources)?.config.quotas);
            let shown = |v: Option<i64>| v.map_or("no limit".to_string(), |v| v.to_string());
            for name in QUOTAS {
                let (mine, default) =
                    (*quota_field(&mut own.clone(), name)?, *quota_field(&mut defaults.clone(), name)?);
                let used = match name {
                    "storage_bytes" => format!("  ({} used)", usage.storage_bytes),
                    "notes" => format!("  ({} used)", usage.notes),
                    _ => String::new(),
                };
                match mine {
                    Some(v) => println!("{name:<24} {v:>14} (tenant){used}"),
                    None => println!("{name:<24} {:>14} (default){used}", shown(default)),
                }
            }
        }
        TenantCommand::Llm { tenant, base_url, model, api_key_env, daily_cap, prompt_cost, completion_cost, clear } => {
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let mut tx = store.begin(id).await?;
            if clear {
                let had = tx.clear_tenant_llm().await?;
                println!("{}", if had { "removed the chat endpoint" } else { "the tenant had no chat endpoint" });
            } else if base_url.is_some()
                || model.is_some()
                || api_key_env.is_some()
                || daily_cap.is_some()
                || prompt_cost.is_some()
                || completion_cost.is_some()
            {
                tx.commit().await?;
                let config = app::load(&sources)?.config;
                let api_key = match api_key_env {
                    Some(var) => Some(std::env::var(&var).with_context(|| format!("reading the API key from ${var}"))?),
                    None => None,
                };
                let sealer = match config.oauth.secret_key.as_ref() {
                    Some(secret) => Some(
                        otc_auth::seal::Sealer::from_base64(secret.expose())
                            .map_err(|e| anyhow::anyhow!("oauth.secret_key: {e}"))?,
                    ),
                    None => None,
                };
                let settings = otc_kernel::chat::ChatSettings {
                    base_url,
                    model,
                    api_key,
                    daily_cap,
                    prompt_cost_per_mtok: prompt_cost,
                    completion_cost_per_mtok: completion_cost,
                };
                let configured = otc_kernel::chat::configure(&store, &config, sealer.as_ref(), id, settings)
                    .await
                    .map_err(|e| match e {
                        otc_kernel::chat::SettingsError::Invalid { field, message } => {
                            let flag = match field {
                                "api_key" => "api-key-env",
                                "prompt_cost_per_mtok" => "prompt-cost",
                                "completion_cost_per_mtok" => "completion-cost",
                                other => &other.replace('_', "-"),
                            };
                            anyhow::anyhow!("--{flag}: {message}")
                        }
                        other => other.into(),
                    })?;
                if configured.key_dropped {
                    eprintln!(
                        "the base URL changed: the stored API key was dropped (give --api-key-env for the new host)"
                    );
                }
                tx = store.begin(id).await?;
            }
            let now = tx.tenant_llm().await?;
            let usage = tx.llm_usage(chrono::Utc::now().date_naive() - chrono::Duration::days(6)).await?;
            tx.commit().await?;
            match now {
                None => println!("chat endpoint: none"),
                Some(l) => println!(
                    "chat endpoint: {} model {} key {} daily cap {} cost ${}/${} per million tokens (prompt/completion)",
                    l.base_url,
                    l.model,
                    if l.sealed_api_key.is_some() { "set" } else { "none" },
                    l.daily_cap,
                    l.prompt_cost_per_mtok,
                    l.completion_cost_per_mtok
                ),
            }
            for u in usage {
                println!(
                    "{} {:<20} calls {:>5} failed {:>4} tokens {:>8}/{:<8} ${:.4}",
                    u.day, u.purpose, u.calls, u.failed, u.prompt_tokens, u.completion_tokens, u.cost_usd
                );
            }
        }
        TenantCommand::Policy {
            tenant,
            confirm_in_client,
            no_confirm_in_client,
            egress_exclude,
            no_egress_exclude,
        } => {
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let mut tx = store.begin(id).await?;
            if no_egress_exclude || !egress_exclude.is_empty() {
                otc_vault::egress::Exclusion::new(egress_exclude.iter().map(String::as_str))
                    .map_err(|e| anyhow::anyhow!("--egress-exclude: {e}"))?;
                tx.set_egress_exclude_paths(&egress_exclude).await.map_err(|e| match e {
                    StoreError::Invalid { .. } => {
                        anyhow::anyhow!("--egress-exclude: at most 100 globs of 1 to 1000 bytes")
                    }
                    other => other.into(),
                })?;
            }
            let changed = no_confirm_in_client || !confirm_in_client.is_empty();
            if changed {
                tx.set_confirm_in_client_clients(&confirm_in_client).await.map_err(|e| match e {
                    StoreError::Invalid { .. } => anyhow::anyhow!("--confirm-in-client: at most 50 client ids"),
                    other => other.into(),
                })?;
            }
            let clients = tx.confirm_in_client_clients().await?;
            let egress = tx.egress_exclude_paths().await?;
            tx.commit().await?;
            if changed {
                // Each checked token carries whether its client may confirm: gateways drop them.
                tell_gateways(&sources, id).await?;
            }
            match clients.is_empty() {
                true => println!("confirm in client: no client"),
                false => println!("confirm in client: {}", clients.join(", ")),
            }
            match egress.is_empty() {
                true => println!("egress exclusion (the tenant's own): none"),
                false => println!("egress exclusion (the tenant's own): {}", egress.join(", ")),
            }
        }
        TenantCommand::Domains { tenant, add, remove } => {
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let mut tx = store.begin(id).await?;
            for domain in &add {
                let domain = domain.trim().trim_end_matches('.').to_ascii_lowercase();
                match tx.add_tenant_domain(&domain, "operator").await {
                    Ok(()) => {}
                    Err(StoreError::Conflict { .. }) => anyhow::bail!("{domain} belongs to another tenant"),
                    Err(StoreError::Invalid { .. }) => anyhow::bail!("{domain:?} is not a domain name"),
                    Err(e) => return Err(e.into()),
                }
            }
            for domain in &remove {
                if !tx.remove_tenant_domain(&domain.trim().to_ascii_lowercase()).await? {
                    eprintln!("{domain} was not one of the tenant's domains");
                }
            }
            let domains = tx.tenant_domains().await?;
            tx.commit().await?;
            for d in &domains {
                println!("{:<40} {:<9} {}", d.domain, d.via, d.added_at.format("%Y-%m-%d"));
            }
            if domains.is_empty() {
                println!("no email domains: a directory can provision nobody");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Moves the tenant's token generation on, so every gateway drops the checks it holds (they
/// carry the tenant's tiers and policies); warns when Redis cannot be told.
async fn tell_gateways(sources: &Sources, tenant: uuid::Uuid) -> anyhow::Result<()> {
    let (_, kv, config) = app::store_and_kv(sources)?;
    if let Err(e) = otc_gateway::auth_cache::revoked(&kv, tenant).await {
        eprintln!(
            "warning: could not tell the gateways through Redis ({}); they apply the change within {} ms",
            otc_gateway::error_chain(&e),
            config.server.auth_cache_ttl_ms
        );
    }
    Ok(())
}
