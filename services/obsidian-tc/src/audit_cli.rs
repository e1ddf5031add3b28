//! `obsidian-tc audit show|export|retention`: a tenant's audit trail, as a table or as JSON
//! lines, and how long it is kept.

use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use otc_config::Sources;
use otc_store::AuditFilter;

use crate::app;
use crate::token::parse_duration;

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// The newest records, one line each.
    Show(Query),
    /// The records as JSON lines (newest first), for another system to keep.
    Export(Query),
    /// Show or set how many days the tenant's records are kept.
    Retention {
        tenant: String,
        /// Keep records this many days (1 to 3650).
        #[arg(long, conflicts_with = "default")]
        days: Option<i32>,
        /// Go back to the deployment's audit.retention_days.
        #[arg(long)]
        default: bool,
    },
}

#[derive(Args, Debug)]
pub struct Query {
    /// Slug or id.
    tenant: String,
    /// Only records this recent: a duration (30m, 24h, 7d) or an RFC 3339 time.
    #[arg(long)]
    since: Option<String>,
    /// Only records before this: a duration ago or an RFC 3339 time.
    #[arg(long)]
    until: Option<String>,
    /// A principal's name or id.
    #[arg(long)]
    principal: Option<String>,
    /// A tool's name, or a /v1 route such as "PUT /v1/acl".
    #[arg(long)]
    action: Option<String>,
    /// ok, or an error code.
    #[arg(long)]
    outcome: Option<String>,
    #[arg(long)]
    vault: Option<String>,
    /// Most records (default 100 for show, every one for export).
    #[arg(long)]
    limit: Option<i64>,
}

fn instant(text: &str) -> anyhow::Result<chrono::DateTime<chrono::Utc>> {
    match chrono::DateTime::parse_from_rfc3339(text) {
        Ok(t) => Ok(t.with_timezone(&chrono::Utc)),
        Err(_) => Ok(chrono::Utc::now() - parse_duration(text)?),
    }
}

/// Records per page read from Postgres.
const PAGE: i64 = 1000;

pub async fn run(sources: Sources, command: AuditCommand) -> anyhow::Result<ExitCode> {
    let store = app::store_only(&sources)?;
    let (query, json) = match command {
        AuditCommand::Show(q) => (q, false),
        AuditCommand::Export(q) => (q, true),
        AuditCommand::Retention { tenant, days, default } => {
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            if let Some(d) = days {
                anyhow::ensure!((1..=3650).contains(&d), "--days must be from 1 to 3650");
            }
            let mut tx = store.begin(id).await?;
            if days.is_some() || default {
                tx.set_audit_retention(days).await?;
            }
            let own = tx.audit_retention().await?;
            tx.commit().await?;
            let deployment = app::load(&sources)?.config.audit.retention_days;
            match own {
                Some(d) => println!("{d} days (tenant)"),
                None => println!("{deployment} days (default)"),
            }
            return Ok(ExitCode::SUCCESS);
        }
    };
    let id = store.resolve_tenant(&query.tenant).await.context("finding the tenant")?;
    let mut filter = AuditFilter {
        since: query.since.as_deref().map(instant).transpose()?,
        until: query.until.as_deref().map(instant).transpose()?,
        principal: query.principal,
        action: query.action,
        outcome: query.outcome,
        vault: query.vault,
        before: None,
        limit: PAGE,
        without_forgotten: false,
    };
    let mut left = query.limit.unwrap_or(if json { i64::MAX } else { 100 });
    let mut out = std::io::stdout().lock();
    use std::io::Write;
    while left > 0 {
        filter.limit = left.min(PAGE);
        let mut tx = store.begin(id).await?;
        let page = tx.audit(&filter).await?;
        tx.commit().await?;
        for r in &page {
            if json {
                writeln!(out, "{}", serde_json::to_string(r)?)?;
            } else {
                writeln!(
                    out,
                    "{}  {:<16} {:<28} {:<18} {:>8.1} ms  {}{}",
                    r.at.format("%Y-%m-%d %H:%M:%S%.3f"),
                    r.principal_name.as_deref().unwrap_or("-"),
                    r.action,
                    r.outcome,
                    r.duration_us as f64 / 1000.0,
                    r.vault.as_deref().map(|v| format!("{v}: ")).unwrap_or_default(),
                    r.paths.join(", ")
                )?;
            }
        }
        left -= page.len() as i64;
        match page.last() {
            Some(last) if page.len() as i64 == filter.limit => filter.before = Some(last.id),
            _ => break,
        }
    }
    Ok(ExitCode::SUCCESS)
}
