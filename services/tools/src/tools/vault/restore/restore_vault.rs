use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::vault::restore::{self, RestoreAt};
use otc_kernel::{CallContext, Tool, writing};

pub struct RestoreVault;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// A change-log seq (get_provenance's) or an RFC 3339 time.
    pub at: String,
    #[serde(default)]
    pub folder: Option<String>,
    #[serde(default)]
    pub dry_run: Option<bool>,
    #[serde(default)]
    pub elicit_token: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub dry_run: bool,
    /// The sequence restored to.
    pub seq: i64,
    /// The vault's sequence after the restore (before it, on a dry run).
    pub head: i64,
    pub restored: usize,
    pub deleted: usize,
    pub unchanged: usize,
    /// Up to 100 of the paths that change.
    pub sample: Vec<String>,
}

impl Tool for RestoreVault {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Bulk),
        scopes: &["admin:vault"],
        scope_class: otc_catalog::ScopeClass::Admin,
        destructive: Sometimes::OnSomeCalls,
        hitl: Sometimes::Always,
        core: false,
        response_format: Format::Fixed { why: "counts and a sample of the paths" },
        ..ToolSpec::base(
            "restore_vault",
            "Restore a vault to a point in time",
            "Restores a vault or one folder to its state at a change-log point, as one new, undoable change. \
             Needs confirmation.",
            Domain::Vault,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let at = RestoreAt::parse(&input.at).ok_or_else(restore::bad_at)?;
        let view = ctx.view(&input.vault).await?;
        let folder = view.folder_prefix(input.folder.as_deref())?;
        let services = ctx.services();
        // Only what the caller can see is restored (or named); what it can see but not change
        // refuses the whole restore.
        let readable = |path: &str| view.can_read(path);
        let plan = restore::plan(&services.store, ctx.caller.tenant_id, view.vault.id, at, &folder, &readable)
            .await
            .map_err(|e| e.into_tool(ctx.tool))?;
        for path in &plan.restored {
            writing::check_write(&view, path, "at").map_err(|e| e.detail("path", path.clone()))?;
        }
        for path in &plan.deleted {
            writing::check_delete(&view, path, "at").map_err(|e| e.detail("path", path.clone()))?;
        }
        let dry = input.dry_run.unwrap_or(false);
        let mut head = plan.head;
        if !dry {
            writing::confirm(ctx, !plan.changes.is_empty(), "it changes every file that differs from then").await?;
            // A hold put on while the confirmation waited stops the restore (it commits outside
            // writing::commit_at, which asks the same).
            services.read_only.check_write(&services.store, ctx.caller.tenant_id, Some(&view.vault.name)).await?;
            let who = writing::provenance(ctx, None);
            head = restore::apply(
                &services.store,
                &services.kv,
                &services.indexer,
                ctx.caller.tenant_id,
                view.vault.id,
                &plan,
                &who,
            )
            .await
            .map_err(|e| e.into_tool(ctx.tool))?;
        }
        Ok(Output {
            vault: view.vault.name.clone(),
            dry_run: dry,
            seq: plan.seq,
            head,
            restored: plan.restored.len(),
            deleted: plan.deleted.len(),
            unchanged: plan.unchanged,
            sample: plan.restored.iter().chain(plan.deleted.iter()).take(100).cloned().collect(),
        })
    }
}
