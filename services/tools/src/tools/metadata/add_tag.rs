use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_edit::frontmatter::{TagLocation, normalize_tag};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::reading::not_found;
use otc_kernel::writing::{self, Planned};
use otc_kernel::{CallContext, Tool};

pub struct AddTag;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// With or without #; nested as project/alpha.
    pub tag: String,
    /// frontmatter (default), body (a #tag line at the end) or both.
    #[serde(default)]
    pub location: Option<Location>,
    #[serde(default)]
    pub prev_hash: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Location {
    Frontmatter,
    Body,
    Both,
}

impl Location {
    pub fn edit(self) -> TagLocation {
        match self {
            Location::Frontmatter => TagLocation::Frontmatter,
            Location::Body => TagLocation::Body,
            Location::Both => TagLocation::Both,
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    /// The tag as written, without #.
    pub tag: String,
    /// False when the note already had it there.
    pub added: bool,
    pub content_hash: String,
}

impl Tool for AddTag {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: otc_catalog::ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: the tag, whether it was added, the hash" },
        ..ToolSpec::base(
            "add_tag",
            "Add a tag",
            "Adds a tag to a note's frontmatter tags or its body.",
            Domain::Metadata,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let tag = normalize_tag(&input.tag)?;
        let view = ctx.view(&input.vault).await?;
        writing::check_write(&view, &input.path, "path")?;
        let prev = writing::parse_prev_hash(input.prev_hash.as_deref())?;
        let location = input.location.unwrap_or(Location::Frontmatter).edit();
        let edited = writing::edit_note(ctx, &view, &input.path, prev, None, |now, _| {
            let text = now.ok_or_else(|| not_found(&input.path))?;
            let edit = otc_edit::frontmatter::add_tag(text, &tag, location)?;
            Ok(Planned { text: edit.text, extra: (), trash_old: false })
        })
        .await?;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            tag,
            added: edited.changed,
            content_hash: hex::encode(edited.content_hash),
        })
    }
}
