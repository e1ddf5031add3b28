use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::writing::Anchor;
use otc_kernel::writing::{self, AnchorAt, Origin, Planned};
use otc_kernel::{CallContext, Tool};

pub struct WriteNote;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// With anchor, the part's new text (a frontmatter field takes JSON or plain text).
    pub content: String,
    /// create (default) refuses an existing note, overwrite needs one, upsert takes either.
    /// Ignored with anchor.
    #[serde(default)]
    pub mode: Option<Mode>,
    /// A heading's own line is kept.
    #[serde(default)]
    pub anchor: Option<Anchor>,
    #[serde(default)]
    pub prev_hash: Option<String>,
    #[serde(default)]
    pub provenance: Option<Origin>,
    #[serde(default)]
    pub elicit_token: Option<String>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Create,
    Overwrite,
    Upsert,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    /// The note's new hash: the prev_hash of your next write.
    pub content_hash: String,
    /// Whether the call brought the note into existence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<bool>,
    /// create, overwrite or section.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode_used: Option<String>,
    /// The hash before the write (absent when it created the note).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prev_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_size: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_size: Option<i64>,
}

impl Tool for WriteNote {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: otc_catalog::ScopeClass::Write,
        destructive: Sometimes::OnSomeCalls,
        hitl: Sometimes::OnSomeCalls,
        essentials: true,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "write_note",
            "Write a note",
            "Creates or replaces a whole note (to edit in place: append_note, patch_note); with anchor, only a \
             heading's subtree, a block or a frontmatter field.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let path = input.path.clone();
        writing::check_write(&view, &path, "path")?;
        let prev = writing::parse_prev_hash(input.prev_hash.as_deref())?;
        let anchor = input.anchor.as_ref().map(AnchorAt::of).transpose()?;
        let mode = input.mode.unwrap_or(Mode::Create);
        // Without an anchor: a new name must be link-safe and clash with no existing one, and
        // replacing existing content needs a person's confirmation (a create asks nothing).
        // The row read here is the one the edit first plans from.
        let mut read = None;
        if anchor.is_none() {
            let now = writing::current(ctx, view.vault.id, &path).await?;
            if now.is_none() && mode != Mode::Overwrite {
                writing::check_new_name(ctx, &view, &path, "path").await?;
            }
            if mode != Mode::Create {
                writing::confirm(ctx, now.as_ref().is_some_and(|e| e.size > 0), "it replaces the whole note").await?;
            }
            read = Some(now);
        }
        let content = input.content.as_str();
        let origin = input.provenance.map(Origin::as_str);
        let edited = writing::edit_read_note(ctx, &view, &path, prev, origin, read, |now, _| match (&anchor, now) {
            (None, None) if mode == Mode::Overwrite => Err(otc_kernel::reading::not_found(&path)
                .detail("hint", "mode overwrite replaces an existing note; use create or upsert")),
            (None, Some(_)) if mode == Mode::Create => Err(ToolError::with_message(
                ErrorCode::NoteExists,
                "a note already exists at that path; use append_note or patch_note to edit it in place, or \
                     mode overwrite to replace it",
            )
            .detail("path", path.clone())),
            (None, now) => Ok(Planned { text: content.to_string(), extra: now.is_none(), trash_old: now.is_some() }),
            (Some(_), None) => Err(otc_kernel::reading::not_found(&path)),
            (Some(AnchorAt::Text(target)), Some(text)) => {
                let note = otc_kernel::memory::parse_note(text)?;
                let patched = otc_edit::anchor::patch(text, &note, target, otc_edit::anchor::Op::Replace(content))?;
                Ok(Planned { text: patched.text, extra: false, trash_old: false })
            }
            (Some(AnchorAt::Field(field)), Some(text)) => {
                let value = writing::field_value(content);
                let op = otc_edit::frontmatter::FrontmatterOp::Set { key: field, value: &value, nested: false };
                let edited = otc_edit::frontmatter::edit_frontmatter(text, op)?;
                Ok(Planned { text: edited.text, extra: false, trash_old: false })
            }
        })
        .await?;
        let mode_used = match (&anchor, edited.extra) {
            (Some(_), _) => "section",
            (None, true) => "create",
            (None, false) => "overwrite",
        };
        let mut out = Output {
            vault: view.vault.name.clone(),
            path,
            content_hash: hex::encode(edited.content_hash),
            created: None,
            mode_used: None,
            prev_hash: None,
            previous_size: None,
            current_size: None,
        };
        if format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed {
            out.created = Some(edited.extra);
            out.mode_used = Some(mode_used.into());
            out.prev_hash = edited.before.as_ref().map(|e| hex::encode(e.hash));
            out.previous_size = Some(edited.before.as_ref().map_or(0, |e| e.size));
            out.current_size = Some(edited.size);
        }
        Ok(out)
    }
}
