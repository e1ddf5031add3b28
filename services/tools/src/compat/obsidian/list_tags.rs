//! obsidian_list_tags: the vault's tags with how often each is used, most used first.

use std::collections::HashMap;

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::call;
use super::list_notes::safe_regex;
use otc_kernel::{CallContext, Tool};

pub struct ObsidianListTags;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The vault (filled in when you can reach only one).
    pub vault: String,
    /// A regular expression the tag name (without #) must match.
    #[serde(default, rename = "nameRegex")]
    pub name_regex: Option<String>,
    /// Only tags used at least this often.
    #[serde(default, rename = "minCount")]
    pub min_count: Option<u32>,
    /// The most tags listed (default 200, at most 10000).
    #[serde(default)]
    #[schemars(range(min = 1, max = 10000))]
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    pub tags: Vec<TagCount>,
    pub applied_filters: Filters,
    /// Present when the limit held tags back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TagCount {
    /// Without #.
    pub name: String,
    pub count: i64,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Filters {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_regex: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_count: Option<u32>,
    pub limit: usize,
}

impl Tool for ObsidianListTags {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Fixed { why: super::FIXED },
        ..ToolSpec::base(
            "obsidian_list_tags",
            "List Obsidian tags",
            "Lists the vault's tags with their use counts, most used first (a nested tag also counts for its \
             parents); nameRegex and minCount filter, limit caps (default 200). Find the notes carrying a tag with \
             obsidian_search_notes in jsonlogic mode.",
            Domain::Metadata,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let regex = input.name_regex.as_deref().map(|r| safe_regex(r, 256, "nameRegex")).transpose()?;
        let limit = input.limit.unwrap_or(200).clamp(1, 10_000) as usize;
        let listed = call(ctx, "list_tags", json!({"vault": input.vault, "max_notes": 100_000})).await?;
        // By lower-cased name (Obsidian's tags ignore case), the first spelling shown.
        let mut counts: HashMap<String, (String, i64)> = HashMap::new();
        let mut add = |name: &str, count: i64| {
            counts.entry(name.to_lowercase()).or_insert_with(|| (name.to_string(), 0)).1 += count;
        };
        for row in listed["tags"].as_array().into_iter().flatten() {
            let (Some(name), Some(count)) = (row["name"].as_str(), row["count"].as_i64()) else { continue };
            // A nested tag counts for each of its parents too, as Obsidian's tag pane counts.
            let mut at = 0;
            while let Some(slash) = name[at..].find('/') {
                add(&name[..at + slash], count);
                at += slash + 1;
            }
            add(name, count);
        }
        let min = i64::from(input.min_count.unwrap_or(0));
        let mut tags: Vec<TagCount> = counts
            .into_values()
            .filter(|(name, count)| *count >= min && regex.as_ref().is_none_or(|r| r.is_match(name)))
            .map(|(name, count)| TagCount { name, count })
            .collect();
        tags.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
                .then_with(|| a.name.cmp(&b.name))
        });
        let matching = tags.len();
        tags.truncate(limit);
        let truncated = matching > limit;
        let notice = if truncated {
            Some(format!(
                "Showing the {limit} most-used of {matching} matching tags; raise limit (at most 10000) for more."
            ))
        } else if tags.is_empty() {
            Some(if regex.is_some() || min > 0 { "No tags matched the filters." } else { "No tags found." }.to_string())
        } else {
            None
        };
        Ok(Output {
            applied_filters: Filters {
                name_regex: input.name_regex,
                min_count: input.min_count.filter(|m| *m > 0),
                limit,
            },
            truncated: truncated.then_some(true),
            shown: truncated.then_some(tags.len()),
            cap: truncated.then_some(limit),
            notice,
            tags,
        })
    }
}
