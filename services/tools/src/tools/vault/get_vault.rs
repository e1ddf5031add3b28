use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_vault::acl::Rule;

use otc_kernel::{CallContext, Tool};

pub struct GetVault;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub name: String,
    pub id: String,
    /// The folder ACL you work under: a path must pass every layer (the deployment's, then your
    /// tenant's), and within a layer any one rule. No rules: unrestricted.
    pub acl: AclOut,
    pub index: IndexOut,
    /// Set while writes to the vault are refused: what is on hold (server, tenant or vault),
    /// since when and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only: Option<HoldOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct HoldOut {
    pub scope: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AclOut {
    pub rules: Vec<RuleOut>,
}

/// One rule: globs per action (a list that is absent is unrestricted).
#[derive(Debug, Serialize, JsonSchema)]
pub struct RuleOut {
    /// deployment or tenant.
    pub layer: &'static str,
    /// Whom it is for ("group eng", "everyone", …).
    pub subject: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_paths: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_paths: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete_paths: Option<Vec<String>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

impl RuleOut {
    pub fn of(rule: &Rule) -> Self {
        Self {
            layer: rule.layer().as_str(),
            subject: rule.subject().to_string(),
            read_paths: rule.read_paths(),
            write_paths: rule.write_paths(),
            delete_paths: rule.delete_paths(),
            read_only: rule.read_only(),
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct IndexOut {
    /// Notes you can read (per the folder ACL).
    pub notes: i64,
    /// The vault's latest change, and the latest the index reflects.
    pub head_seq: i64,
    pub indexed_seq: i64,
}

impl Tool for GetVault {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:vault"],
        response_format: Format::Fixed {
            why: "one vault's configuration; the ACL path lists are safety signals and the rest is one short block",
        },
        ..ToolSpec::base(
            "get_vault",
            "Describe a vault",
            "Describes a vault: its id, your folder ACL, notes you can read, index freshness and any read-only hold.",
            Domain::Vault,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let v = ctx.view(&input.vault).await?;
        let mut tx = ctx.begin().await?;
        let (head_seq, indexed_seq) = tx.index_progress(v.vault.id).await?;
        let notes = tx.note_count(v.vault.id, v.readable()).await?;
        tx.commit().await?;
        let services = ctx.services();
        let on_hold = services.read_only.hold_on(&services.store, ctx.caller.tenant_id, Some(&v.vault.name)).await?;
        Ok(Output {
            name: v.vault.name.clone(),
            id: v.vault.id.to_string(),
            acl: AclOut { rules: v.acl().rules().map(RuleOut::of).collect() },
            index: IndexOut { notes, head_seq, indexed_seq },
            read_only: on_hold.map(|on| HoldOut {
                scope: on.scope.as_str(),
                since: on.hold.as_ref().map(|h| h.since.to_rfc3339()),
                reason: on.hold.and_then(|h| h.reason),
            }),
        })
    }
}
