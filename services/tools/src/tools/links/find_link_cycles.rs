use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_graph::CycleSearch;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::graphing::{self, compute};
use otc_kernel::reading::bounded;
use otc_kernel::{CallContext, Tool};

pub struct FindLinkCycles;

/// Edge visits the search may spend (well under a second); past it the counts are lower bounds.
const SEARCH_BUDGET: usize = 20_000_000;
/// Cycles kept to choose the answer's shortest from.
const KEEP: usize = 50_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// 1 to 100 (default 10).
    #[serde(default)]
    pub limit: Option<u32>,
    /// Fewest links in a cycle, 2 to 20 (default 3).
    #[serde(default)]
    pub min_length: Option<u32>,
    /// 2 to 20 (default 10).
    #[serde(default)]
    pub max_length: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// Each cycle as its notes in link order, starting from the one first in path order (the
    /// last links back to the first); shortest first.
    pub cycles: Vec<Vec<String>>,
    /// Cycles of min_length to max_length links.
    pub total: usize,
    /// Cycles shorter than min_length.
    pub skipped_shorter: usize,
    /// Cycles of max_length + 1 links (longer ones are not searched): raise max_length to see them.
    pub skipped_longer: usize,
    /// The search stopped at its work limit: the counts are lower bounds.
    pub truncated: bool,
}

impl Tool for FindLinkCycles {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Graph),
        scopes: &["read:notes"],
        core: false,
        response_format: Format::Fixed { why: "the path lists are the payload; the rest is a count or a flag" },
        ..ToolSpec::base(
            "find_link_cycles",
            "Link cycles",
            "Finds link cycles (circular chains: A links B links C links A), shortest first.",
            Domain::Links,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let limit = bounded(input.limit, 10, 1..=100, "limit")?;
        let min_len = bounded(input.min_length, 3, 2..=20, "min_length")?;
        let max_len = bounded(input.max_length, 10, 2..=20, "max_length")?;
        if min_len > max_len {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "min_length is more than max_length")
                .detail("field", "min_length"));
        }
        let loaded = graphing::load(ctx, &view).await?;
        let search = CycleSearch { min_len, max_len, keep: KEEP, budget: SEARCH_BUDGET };
        let found = compute(ctx.tool, move || {
            let g = &loaded.graph;
            let c = otc_graph::find_cycles(g, search);
            let cycles: Vec<Vec<String>> = c
                .found
                .iter()
                .take(limit)
                .map(|cycle| cycle.iter().map(|&n| g.name(n).to_string()).collect())
                .collect();
            (cycles, c)
        })
        .await?;
        let (cycles, c) = found;
        Ok(Output {
            vault: view.vault.name.clone(),
            cycles,
            total: c.total,
            skipped_shorter: c.shorter,
            skipped_longer: c.longer,
            truncated: c.truncated,
        })
    }
}
