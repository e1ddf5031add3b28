use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::links::outgoing::{LinkView, Warning, view, warnings};
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::not_found;
use otc_kernel::{CallContext, Tool};

pub struct GetOutgoingLinks;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// Include ![[embeds]] (default true).
    #[serde(default)]
    pub include_embeds: Option<bool>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    pub counts: Counts,
    /// In file order: property links first (they sit in the frontmatter), then the body's.
    pub links: Vec<LinkView>,
    /// Present when the note's frontmatter does not parse.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<Warning>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Counts {
    pub total: usize,
    pub resolved: usize,
    pub unresolved: usize,
}

impl Tool for GetOutgoingLinks {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        essentials: true,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "get_outgoing_links",
            "Links from a note",
            "Lists a note's outgoing links (body, embeds, properties), each with where Obsidian would resolve it.",
            Domain::Links,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view_ = ctx.view(&input.vault).await?;
        view_.readable_path(&input.path)?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let mut tx = ctx.begin().await?;
        let meta =
            tx.note_meta(view_.vault.id, &input.path, view_.readable()).await?.ok_or_else(|| not_found(&input.path))?;
        let links: Vec<_> = tx
            .outgoing_links(view_.vault.id, &input.path)
            .await?
            .into_iter()
            .filter(|l| input.include_embeds != Some(false) || l.kind != "embed")
            .collect();
        // Every file each name could mean, for the candidates of ambiguous links.
        let keys: Vec<String> = links
            .iter()
            .flat_map(|l| otc_vault::links::lookup_keys(&l.target))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let named = tx.paths_named(view_.vault.id, &keys).await?;
        tx.commit().await?;
        let resolver = otc_vault::links::Resolver::new(named.into_iter().filter(|p| view_.can_read(p)));
        let mut out = Vec::with_capacity(links.len());
        let mut resolved = 0;
        for link in &links {
            let mut v = view(link, meta.body_line, detailed);
            v.target = Some(link.target.clone());
            // Under a restricted view, resolve among the files the caller can read, as if the
            // hidden ones were absent (a hidden root note must not shadow a readable one).
            let target_path = if view_.readable().is_some() && !link.target.is_empty() {
                resolver.resolve(&link.target, &input.path).map(str::to_string)
            } else {
                link.resolved_path.clone().filter(|p| view_.can_read(p))
            };
            v.resolved = Some(target_path.is_some());
            if target_path.is_some() {
                resolved += 1;
            }
            if !link.target.is_empty() {
                let candidates = resolver.candidates(&link.target, &input.path);
                if candidates.len() > 1 {
                    v.candidates = Some(candidates.into_iter().map(str::to_string).collect());
                }
            }
            v.target_path = target_path;
            out.push(v);
        }
        let failures = meta.frontmatter_error.map(|e| vec![(input.path.clone(), e)]).unwrap_or_default();
        Ok(Output {
            vault: view_.vault.name.clone(),
            path: input.path,
            counts: Counts { total: out.len(), resolved, unresolved: out.len() - resolved },
            links: out,
            warnings: warnings(failures),
        })
    }
}
