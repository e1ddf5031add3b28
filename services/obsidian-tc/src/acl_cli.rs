//! `obsidian-tc acl list|set|remove|groups`: a tenant's folder-ACL rules and its principals'
//! groups, managed from the command line. Every gateway obeys a change before the command
//! returns (the change moves the tenant's token generation; see `otc_tools::tools::admin::acl_rules`).

use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use otc_config::Sources;
use otc_tools::tools::admin::acl_rules::{self, Changed, RuleRequest, SubjectName};

use crate::app;

#[derive(Subcommand, Debug)]
pub enum AclCommand {
    /// List the tenant's rules (of one vault, or all).
    List {
        /// Slug or id.
        tenant: String,
        #[arg(long)]
        vault: Option<String>,
    },
    /// Set the rule for one vault and subject, replacing the one it had. A list left out is
    /// unrestricted; the most specific subject decides (the principal's own rule, else its
    /// groups' rules, any of which grants, else the rule for everyone), and the deployment's
    /// `[[acl]]` entry stays a floor no rule can widen.
    Set {
        tenant: String,
        /// Vault name or id.
        #[arg(long)]
        vault: String,
        #[command(flatten)]
        target: Target,
        /// A glob the subject may read (`*`, `**`, `?`); repeatable.
        #[arg(long = "read", value_name = "GLOB")]
        read: Vec<String>,
        /// A glob the subject may write; repeatable.
        #[arg(long = "write", value_name = "GLOB")]
        write: Vec<String>,
        /// A glob the subject may delete in; repeatable.
        #[arg(long = "delete", value_name = "GLOB")]
        delete: Vec<String>,
        /// Read nothing (an empty read list).
        #[arg(long, conflicts_with = "read")]
        no_read: bool,
        /// Write nothing.
        #[arg(long, conflicts_with = "write")]
        no_write: bool,
        /// Delete nothing.
        #[arg(long, conflicts_with = "delete")]
        no_delete: bool,
        /// Read only: no writes and no deletes anywhere in the vault.
        #[arg(long)]
        read_only: bool,
    },
    /// Drop the rule for one vault and subject.
    Remove {
        tenant: String,
        /// Vault name or id.
        #[arg(long)]
        vault: String,
        #[command(flatten)]
        target: Target,
    },
    /// Show a principal's groups, adding and removing some first.
    Groups {
        tenant: String,
        /// The principal's name or id.
        principal: String,
        #[arg(long = "add", value_name = "GROUP")]
        add: Vec<String>,
        #[arg(long = "remove", value_name = "GROUP")]
        remove: Vec<String>,
    },
}

/// Whom one rule is for.
#[derive(Args, Debug)]
#[group(id = "subject", required = true, multiple = false)]
pub struct Target {
    /// For one principal (name or id).
    #[arg(long)]
    principal: Option<String>,
    /// For the members of a group.
    #[arg(long)]
    group: Option<String>,
    /// For everyone in the tenant.
    #[arg(long)]
    everyone: bool,
}

impl Target {
    fn subject(&self) -> SubjectName {
        match (&self.principal, &self.group) {
            (Some(p), _) => SubjectName::Principal(p.clone()),
            (_, Some(g)) => SubjectName::Group(g.clone()),
            _ => SubjectName::Everyone,
        }
    }
}

fn list(given: Vec<String>, none: bool) -> Option<Vec<String>> {
    if none {
        Some(vec![])
    } else if given.is_empty() {
        None
    } else {
        Some(given)
    }
}

fn paths(list: &Option<Vec<String>>) -> String {
    match list {
        None => "any".to_string(),
        Some(l) if l.is_empty() => "none".to_string(),
        Some(l) => l.join(", "),
    }
}

fn print_rule(r: &otc_store::AclRuleRow) {
    println!(
        "{}  {:<24} read: {}  write: {}  delete: {}{}",
        r.vault_name,
        r.subject_label(),
        paths(&r.read_paths),
        paths(&r.write_paths),
        paths(&r.delete_paths),
        if r.read_only { "  (read-only)" } else { "" }
    );
}

fn told<T>(changed: &Changed<T>, config: &otc_config::Config) {
    if !changed.gateways_told {
        eprintln!(
            "warning: could not tell the gateways through Redis; they apply the change within {} ms",
            config.server.auth_cache_ttl_ms
        );
    }
}

pub async fn run(sources: Sources, command: AclCommand) -> anyhow::Result<ExitCode> {
    let (store, kv, config) = app::store_and_kv(&sources)?;
    match command {
        AclCommand::List { tenant, vault } => {
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let rules = acl_rules::rules(&store, id, vault.as_deref(), None).await?;
            if rules.is_empty() {
                println!("no rules: only the deployment's [[acl]] entries apply");
            }
            rules.iter().for_each(print_rule);
        }
        AclCommand::Set { tenant, vault, target, read, write, delete, no_read, no_write, no_delete, read_only } => {
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let request = RuleRequest {
                vault,
                bound: None,
                subject: target.subject(),
                read_paths: list(read, no_read),
                write_paths: list(write, no_write),
                delete_paths: list(delete, no_delete),
                read_only,
            };
            let changed = acl_rules::set_rule(&store, &kv, id, &request).await?;
            told(&changed, &config);
            print_rule(&changed.value);
        }
        AclCommand::Remove { tenant, vault, target } => {
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let changed = acl_rules::remove_rule(&store, &kv, id, &vault, None, &target.subject()).await?;
            told(&changed, &config);
            if !changed.value {
                anyhow::bail!("no such rule");
            }
            println!("removed");
        }
        AclCommand::Groups { tenant, principal, add, remove } => {
            let id = store.resolve_tenant(&tenant).await.context("finding the tenant")?;
            let changed = acl_rules::change_groups(&store, &kv, id, &principal, &add, &remove).await?;
            told(&changed, &config);
            let (who, groups) = changed.value;
            println!(
                "{} ({}): {}",
                who.name,
                who.id,
                if groups.is_empty() { "no groups".into() } else { groups.join(", ") }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
