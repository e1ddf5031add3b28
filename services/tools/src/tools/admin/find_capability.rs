use otc_catalog::facade::{self, hit_summary};
use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec, bm25};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::{CallContext, Tool};

pub struct FindCapability;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    #[schemars(length(min = 1, max = 500))]
    pub query: String,
    #[schemars(range(min = 1, max = 50))]
    #[serde(default)]
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub query: String,
    /// Best first.
    pub results: Vec<Hit>,
    /// Tools that match but are hidden by the core profile: named, so core never reads as
    /// "these are all the tools".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden_by_profile: Option<HiddenByProfile>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Hit {
    pub name: String,
    pub title: String,
    /// The first sentence of the tool's description.
    pub summary: String,
    pub domain: String,
    pub score: f64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct HiddenByProfile {
    pub count: usize,
    pub names: Vec<String>,
    /// The setting that hides them.
    pub setting: String,
    pub note: String,
}

/// The searchable text of a tool: name, title, description, tags and domain.
fn document(tool: &otc_catalog::Registered) -> bm25::Doc<'_> {
    let tags: Vec<&str> = tool.tags.iter().map(String::as_str).collect();
    bm25::Doc::new(
        tool.name(),
        &format!(
            "{} {} {} {} {}",
            tool.name(),
            tool.spec.title,
            tool.spec.description,
            tags.join(" "),
            tool.spec.domain
        ),
    )
}

impl Tool for FindCapability {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        essentials: true,
        advertise_output_schema: false,
        response_format: Format::Fixed { why: "facade meta-tool: the hit list is already minimal" },
        ..ToolSpec::base("find_capability", "Find capability", "Finds tools for a task, best first.", Domain::Admin)
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let limit = input.limit.unwrap_or(10) as usize;
        let visible = facade::listed(ctx.registry(), ctx.settings(), Some(&ctx.caller.scopes));
        let docs: Vec<bm25::Doc<'_>> = visible.iter().map(|t| document(t)).collect();
        let results = bm25::rank(&docs, &input.query)
            .into_iter()
            .take(limit)
            .filter_map(|(name, score)| {
                let tool = ctx.registry().get(name)?;
                Some(Hit {
                    name: name.to_string(),
                    title: tool.spec.title.to_string(),
                    summary: hit_summary(tool),
                    domain: tool.spec.domain.to_string(),
                    score: (score * 1000.0).round() / 1000.0,
                })
            })
            .collect();
        let hidden = ctx.dispatcher.profile_hidden(ctx.caller);
        let hidden_docs: Vec<bm25::Doc<'_>> = hidden.iter().map(|t| document(t)).collect();
        let hidden_hits: Vec<String> =
            bm25::rank(&hidden_docs, &input.query).into_iter().take(limit).map(|(n, _)| n.to_string()).collect();
        let hidden_by_profile = (!hidden_hits.is_empty()).then(|| HiddenByProfile {
            count: hidden_hits.len(),
            note: format!(
                "{} more tool(s) match but are hidden by tool_facade.profile = \"core\"; set tool_facade.profile = \"full\" to use them",
                hidden_hits.len()
            ),
            names: hidden_hits,
            setting: "tool_facade.profile".into(),
        });
        Ok(Output { query: input.query, results, hidden_by_profile })
    }
}
