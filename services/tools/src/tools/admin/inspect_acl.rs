use otc_auth::Scope;
use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_vault::acl::{Audience, Op as AclOp, Verdict};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::vault::get_vault::RuleOut;
use otc_kernel::reading::View;
use otc_kernel::{CallContext, Tool, caller_vault};

pub struct InspectAcl;

#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Read,
    Write,
    Delete,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    pub op: Op,
    /// Also check these scopes (default: yours, when asking about yourself).
    #[serde(default)]
    pub scopes: Option<Vec<String>>,
    /// Name or id in your tenant (default: you).
    #[serde(default)]
    pub principal: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub allowed: bool,
    pub vault: String,
    pub path: String,
    pub op: Op,
    pub principal: PrincipalOut,
    /// hidden_folder, unrestricted, allowed_by_rules, denied_by_rules, immutable_folder (a
    /// wiki's raw sources) or missing_scope.
    pub decided_by: &'static str,
    /// The deciding rules: for an allowed path the one of each layer that grants it; for a
    /// denied one every rule of the layer that refuses it.
    pub rules: Vec<RuleOut>,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<ScopeOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PrincipalOut {
    pub id: String,
    pub name: String,
    pub groups: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ScopeOut {
    pub required: &'static str,
    pub granted: bool,
}

impl Tool for InspectAcl {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["admin:acl"],
        scope_class: ScopeClass::Admin,
        response_format: Format::Fixed { why: "the one allow or deny verdict with its rule is the payload" },
        ..ToolSpec::base(
            "inspect_acl",
            "Inspect folder ACL",
            "Says whether a principal may read, write or delete a vault path, and which rule decides (the \
             deployment's floor or a tenant rule).",
            Domain::Admin,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        otc_vault::check_path(&input.path).map_err(|e| e.detail("field", "path"))?;
        let services = ctx.services();
        let vault = caller_vault(ctx, &input.vault).await?;
        let mut tx = ctx.begin().await?;
        let mut subject = ctx.caller.clone();
        if let Some(who) = &input.principal {
            let found = tx.find_principal(who).await?.ok_or_else(|| {
                ToolError::with_message(ErrorCode::NotFound, "no principal of that name or id in your tenant")
                    .echo("principal", who)
            })?;
            if found.id != ctx.caller.principal_id {
                subject.access = tx.access(found.id).await?;
                subject.principal_id = found.id;
                subject.principal_name = found.name;
                subject.scopes = Vec::new();
            }
        }
        let view = View::for_caller(services, &subject, vault, Audience::Tools, &mut tx).await?;
        tx.commit().await?;

        let (op, required) = match input.op {
            Op::Read => (AclOp::Read, "read:notes"),
            Op::Write => (AclOp::Write, "write:notes"),
            Op::Delete => (AclOp::Delete, "delete:notes"),
        };
        let scopes = match &input.scopes {
            Some(list) => Some(
                list.iter()
                    .map(|s| {
                        s.parse::<Scope>().map_err(|e| {
                            ToolError::with_message(ErrorCode::InvalidInput, format!("{}: scopes: {e}", ctx.tool))
                                .detail("field", "scopes")
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            None if subject.principal_id == ctx.caller.principal_id => Some(ctx.caller.scopes.clone()),
            None => None,
        };
        let scope = scopes.map(|s| ScopeOut { required, granted: s.iter().any(|g| g.grants(required)) });

        let verdict = view.acl().explain(op, &input.path);
        let (mut decided_by, rules, mut reason) = match &verdict {
            Verdict::Hidden(folder) => {
                ("hidden_folder", vec![], format!("{folder} is never reachable through the tools, whatever the rules"))
            }
            Verdict::Unrestricted => ("unrestricted", vec![], "no rule restricts this vault".to_string()),
            Verdict::Allowed(by) => (
                "allowed_by_rules",
                by.iter().map(|r| RuleOut::of(r)).collect(),
                format!(
                    "allowed by {}",
                    by.iter()
                        .map(|r| format!("the {} rule for {}", r.layer().as_str(), r.subject()))
                        .collect::<Vec<_>>()
                        .join(" and ")
                ),
            ),
            Verdict::Immutable(folder) => {
                ("immutable_folder", vec![], format!("{folder} holds the wiki's raw sources, which no tool may change"))
            }
            Verdict::ScopeRequired(scope) => (
                "scope_required",
                vec![],
                format!("this file is closed to a caller without {scope}, whatever the rules"),
            ),
            Verdict::Denied(layer, rules) => (
                "denied_by_rules",
                rules.iter().map(|r| RuleOut::of(r)).collect(),
                format!("no {} rule for this principal grants {} here", layer.as_str(), op.as_str()),
            ),
        };
        let mut allowed = verdict.allowed();
        if let Some(s) = &scope
            && !s.granted
        {
            if allowed {
                decided_by = "missing_scope";
                reason = format!("the folder ACL allows it, but the scopes lack {}", s.required);
            }
            allowed = false;
        }
        let principal = PrincipalOut {
            id: subject.principal_id.to_string(),
            name: subject.principal_name.clone(),
            groups: subject.access.groups.clone(),
        };
        Ok(Output {
            allowed,
            vault: view.vault.name.clone(),
            path: input.path,
            op: input.op,
            principal,
            decided_by,
            rules,
            reason,
            scope,
        })
    }
}
