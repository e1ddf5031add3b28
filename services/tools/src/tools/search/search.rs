use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use otc_fts::Query;
use otc_fts::search::{snippet, top};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::search::search_vault::query_error;
use otc_kernel::citations::{note_title, note_uri, result_id};
use otc_kernel::reading::bounded;
use otc_kernel::searching::{Corpus, Scope, note_texts};
use otc_kernel::{CallContext, Tool};

/// The knowledge-connector search (ChatGPT deep research and company knowledge call tools by
/// the names search and fetch, with these fixed shapes).
pub struct Search;

const DEFAULT_RESULTS: usize = 10;
const MAX_RESULTS: u32 = 50;
const SNIPPET_BYTES: usize = 400;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub query: String,
    /// 1 to 50 (default 10).
    #[serde(default)]
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub results: Vec<Citation>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Citation {
    /// Pass to fetch for the whole note.
    pub id: String,
    pub title: String,
    pub url: String,
    /// The best-matching passage.
    pub text: String,
}

impl Tool for Search {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Fixed { why: "the connector contract fixes the shape" },
        essentials: true,
        advertise_output_schema: false,
        ..ToolSpec::base("search", "Search notes", "Ranked search over notes; fetch reads a hit whole.", Domain::Search)
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let limit = bounded(input.limit, DEFAULT_RESULTS, 1..=MAX_RESULTS, "limit")?;
        let query = Query::parse(&input.query).map_err(query_error)?;
        let view = ctx.view(&input.vault).await?;
        let scope = Scope { root: None, path_contains: &query.paths, tags: &query.tags };
        let corpus = Corpus::open(ctx, &view, &scope).await?;
        let hits = corpus.rank(&query);
        let hits = top(hits, |h| h.score, |h| corpus.path(h.part, h.path), None, limit);
        let paths: Vec<String> = hits.iter().map(|h| corpus.path(h.part, h.path).to_string()).collect();
        let texts = note_texts(ctx, view.vault.id, &paths).await?;
        let vault = &view.vault.name;
        let results = hits
            .iter()
            .zip(&paths)
            .zip(texts)
            .map(|((h, path), text)| {
                let chunk = text.as_ref().map_or("", |c| corpus.chunk(h.part, h.doc, &c.text));
                Citation {
                    id: result_id(vault, path),
                    title: note_title(path).to_string(),
                    url: note_uri(vault, path),
                    text: snippet(chunk, &query.words, SNIPPET_BYTES),
                }
            })
            .collect();
        Ok(Output { results })
    }
}
