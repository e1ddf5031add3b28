use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_vault::acl::glob_regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::page_limit;
use otc_kernel::{CallContext, Tool};

pub struct AuditProvenance;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Source property (default "source").
    #[serde(default)]
    pub field: Option<String>,
    /// Globs (* one segment, ** any depth).
    #[serde(default)]
    pub include: Option<Vec<String>>,
    #[serde(default)]
    pub exclude: Option<Vec<String>>,
    /// Default 100, max 1000.
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Notes audited.
    pub notes: i64,
    /// Notes whose field has a value (detailed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub with_provenance: Option<i64>,
    /// Share of audited notes that cite a source, 0 to 1.
    pub coverage: f64,
    /// The notes without one, in path order (up to limit).
    pub missing: Vec<String>,
    /// More notes are missing than are listed.
    pub truncated: bool,
}

impl Tool for AuditProvenance {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "audit_provenance",
            "Audit source citations",
            "Lists notes whose frontmatter cites no source, and the provenance coverage.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let field = input.field.unwrap_or_else(|| "source".into());
        if field.trim().is_empty() {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "field is empty").detail("field", "field"));
        }
        let limit = page_limit(input.limit)?;
        let view = ctx.view(&input.vault).await?;
        let globs = |list: Option<Vec<String>>| list.map(|l| l.iter().map(|g| glob_regex(g)).collect::<Vec<_>>());
        let (include, mut exclude) = (globs(input.include), globs(input.exclude));
        // A wiki's generated pages cite nothing by design: never reported as missing a source.
        let generated = view.wiki_generated_paths();
        if !generated.is_empty() {
            exclude.get_or_insert_with(Vec::new).extend(generated.iter().map(|p| glob_regex(p)));
        }
        let mut tx = ctx.begin().await?;
        let (notes, cited, missing) = tx
            .property_coverage(
                view.vault.id,
                &field,
                "",
                view.readable(),
                include.as_deref(),
                exclude.as_deref(),
                limit as i64 + 1,
            )
            .await?;
        tx.commit().await?;
        let truncated = missing.len() > limit;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        Ok(Output {
            vault: view.vault.name.clone(),
            field: detailed.then_some(field),
            notes,
            with_provenance: detailed.then_some(cited),
            coverage: if notes == 0 { 1.0 } else { cited as f64 / notes as f64 },
            missing: missing.into_iter().take(limit).collect(),
            truncated,
        })
    }
}
