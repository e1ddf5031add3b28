use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::wiki;
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::bounded;
use otc_kernel::{CallContext, Tool};

pub struct FindExistingPage;

/// Cosine similarity from which a note is a semantic candidate (the spec's calibrated floor
/// was 0.708 for bge-m3; treat it as a starting point on another model).
pub const DEFAULT_MIN_SIMILARITY: f32 = 0.7;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub topic: String,
    #[serde(default)]
    pub folder: Option<String>,
    /// Ask a judge model on soft evidence.
    #[serde(default)]
    pub judge: Option<bool>,
    /// 1 to 50 (default 5).
    #[serde(default)]
    pub limit: Option<u32>,
    /// Cosine floor (default 0.7).
    #[serde(default)]
    pub min_similarity: Option<f32>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub topic: String,
    /// exists (identity evidence names exactly one page), ambiguous (several do, or only soft
    /// evidence exists) or new.
    pub verdict: &'static str,
    pub suggested_action: &'static str,
    /// Identity matches first, then soft ones by score.
    pub candidates: Vec<wiki::Candidate>,
    /// Notes that link the topic's text to no page: it is wanted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wanted_by: Option<wiki::Wanted>,
    /// Set when the judge decided the verdict (exists: the first path; new: every candidate
    /// is about something else).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged_by: Option<wiki::JudgedBy>,
    /// Checks that could not run, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<wiki::Skipped>,
}

impl Tool for FindExistingPage {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        core: false,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "find_existing_page",
            "Find an existing page",
            "Before writing a wiki page, checks if one on the topic exists (by name, alias, QID, title, H1): \
             exists, ambiguous or new.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let limit = bounded(input.limit, 5, 1..=50, "limit")?;
        let min = wiki::min_similarity(input.min_similarity, DEFAULT_MIN_SIMILARITY)?;
        let prefix = view.folder_prefix(input.folder.as_deref())?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let found = wiki::find(ctx, &view, &input.topic, &prefix, min, input.judge).await?;
        let mut out = Output {
            vault: view.vault.name.clone(),
            topic: input.topic.clone(),
            verdict: found.verdict,
            suggested_action: found.suggested_action(),
            candidates: found.candidates,
            wanted_by: found.wanted_by,
            judged_by: found.judged_by,
            skipped: found.skipped,
        };
        out.candidates.truncate(limit);
        if !detailed {
            for c in &mut out.candidates {
                c.evidence.iter_mut().for_each(|e| e.detail = None);
            }
        }
        Ok(out)
    }
}
