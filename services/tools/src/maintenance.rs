//! Periodic upkeep the workers' leader runs (spec: maintenance.wikiLint, maintenance.wikiPages):
//! the scheduled lint, which runs lint_wiki over every vault and logs one summary line per vault
//! (it persists nothing, so it changes no note), and the scheduled regeneration of the wikis'
//! generated pages (`wiki_pages::queue_all`).

use crate::tools::knowledge::lint_wiki::{Input, LintWiki};
use crate::{Dispatcher, ResponseFormat, Tool, wiki_pages};

/// What the scheduled lint did over every tenant.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LintRun {
    pub vaults: usize,
    pub failed: usize,
}

/// Lints every vault of every tenant (its wiki folder, else the whole vault) as a reader with
/// no rule of its own, `max_notes` pages at most for the pairwise checks, judging near
/// duplicates when `judge` (up to `judge_max_calls` in the whole run).
pub async fn lint_all(
    dispatcher: &Dispatcher,
    max_notes: u32,
    judge: bool,
    judge_max_calls: u32,
) -> Result<LintRun, otc_store::StoreError> {
    let services = &dispatcher.services;
    let mut run = LintRun::default();
    let judging = judge && services.judge.as_ref().is_some_and(|j| j.settings().lint_enabled);
    let mut judge_calls = judge_max_calls;
    for tenant in services.store.tenant_ids().await? {
        let caller = wiki_pages::system_caller(&services.store, tenant).await?;
        let mut tx = services.store.begin(tenant).await?;
        let vaults = tx.list_vaults().await?;
        tx.commit().await?;
        let ctx = wiki_pages::system_context(dispatcher, &caller);
        for vault in vaults {
            let input = Input {
                vault: vault.id.to_string(),
                folder: None,
                checks: None,
                judge: Some(judging && judge_calls > 0),
                limit_per_check: Some(1),
                max_judge_calls: Some(judge_calls.max(1)),
                max_notes: Some(max_notes),
                min_similarity: None,
                response_format: Some(ResponseFormat::Concise),
                verbosity: None,
            };
            let started = std::time::Instant::now();
            match LintWiki::call(&ctx, input).await {
                Ok(out) => {
                    run.vaults += 1;
                    judge_calls = judge_calls.saturating_sub(out.judge_verdicts.values().sum::<usize>() as u32);
                    let skipped: Vec<&str> = out.skipped.iter().map(|s| s.check).collect();
                    tracing::info!(
                        %tenant,
                        vault = %vault.name,
                        folder = %out.folder,
                        pages = out.pages,
                        counts = ?out.counts,
                        judge_verdicts = ?out.judge_verdicts,
                        truncated = out.truncated,
                        skipped = ?skipped,
                        ms = started.elapsed().as_millis() as u64,
                        "scheduled wiki lint"
                    );
                }
                Err(e) => {
                    run.failed += 1;
                    tracing::warn!(
                        %tenant,
                        vault = %vault.name,
                        code = e.code.as_str(),
                        error = %e.message,
                        "scheduled wiki lint failed"
                    );
                }
            }
        }
    }
    Ok(run)
}
