//! knowledge_get_critical: the docs corpus's critical documents.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::tools::knowledge::work;
use otc_kernel::format::{ResponseFormat, Verbosity};
use otc_kernel::{CallContext, Tool};

pub struct KnowledgeGetCritical;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Only documents whose `source` property is this.
    #[serde(default)]
    pub source: Option<String>,
    /// Default 50.
    #[serde(default)]
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub corpus: String,
    /// In path order.
    pub documents: Vec<Document>,
    /// More matched than limit.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Document {
    pub path: String,
    /// The title property, else the file name.
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Detailed only: the note's properties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<Map<String, Value>>,
}

impl Tool for KnowledgeGetCritical {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:docs", "read:notes"],
        response_format: Format::Takes,
        essentials: true,
        ..ToolSpec::base(
            "knowledge_get_critical",
            "List critical docs",
            "Lists the docs corpus's documents (the docs folder) marked `severity: critical`.",
            Domain::Docs,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let detailed = work::detailed(ctx, input.response_format, input.verbosity);
        let limit = otc_kernel::reading::bounded(input.limit, 50, 1..=500, "limit")?;
        let view = ctx.view(&input.vault).await?;
        let corpus = super::docs_folder(ctx, &view)?;
        let args = json!({"vault": view.vault.name, "key": "severity", "value": "critical", "folder": corpus,
                          "limit": 1000, "response_format": "concise"});
        let found = ctx.call_part_json("find_notes_by_property", args).await?;
        let paths: Vec<String> = found["matches"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["path"].as_str().map(str::to_string))
            .collect();
        let texts = otc_kernel::searching::note_texts(ctx, view.vault.id, &paths).await?;
        let want = input.source.as_deref().map(str::trim).filter(|s| !s.is_empty());
        let mut documents = Vec::new();
        let mut truncated = found["truncated"] == true;
        for (path, text) in paths.into_iter().zip(texts) {
            let Some(text) = text else { continue };
            let props = otc_kernel::reading::frontmatter_map(&text.text).unwrap_or_default();
            let field = |key: &str| props.get(key).and_then(Value::as_str).map(str::to_string);
            let source = field("source");
            if want.is_some_and(|w| source.as_deref() != Some(w)) {
                continue;
            }
            if documents.len() >= limit {
                truncated = true;
                break;
            }
            let stem = path.rsplit('/').next().unwrap_or(&path).trim_end_matches(".md").to_string();
            documents.push(Document {
                title: field("title").unwrap_or(stem),
                category: field("category"),
                source,
                properties: detailed.then(|| props.clone()),
                path,
            });
        }
        Ok(Output { vault: view.vault.name.clone(), corpus, documents, truncated })
    }
}
