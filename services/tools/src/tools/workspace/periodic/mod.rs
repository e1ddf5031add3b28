//! What the periodic-note tools (and read_note's `period`) share: the period argument, where a
//! vault keeps the note of a period (its Daily notes or Periodic Notes settings, or Obsidian's
//! own default for daily notes: the vault's root, YYYY-MM-DD), and the text a new one starts
//! with (its template, filled in as the core Templates plugin does).
//!
//! Settings files live under `.obsidian/`, which no tool shows a caller: the server reads them
//! to find paths and templates and never returns their content.

pub mod append_to_periodic_note;
pub mod create_periodic_note;
pub mod find_or_create_periodic_note;
pub mod get_periodic_note;
pub mod list_periodic_notes;
pub mod resolve_daily_note;

use std::collections::BTreeMap;

use chrono::{NaiveDate, NaiveDateTime};
use otc_errors::{ErrorCode, ToolError};
use otc_vault::periodic::{DAILY_NOTES, PERIODIC_NOTES, Period, Settings};
use otc_vault::templates::{self, TEMPLATES, TemplateSettings};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::CallContext;
use otc_kernel::reading::View;
use otc_kernel::writing::{self, Planned};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PeriodArg {
    Daily,
    Weekly,
    Monthly,
    Quarterly,
    Yearly,
}

impl PeriodArg {
    pub fn period(self) -> Period {
        match self {
            PeriodArg::Daily => Period::Daily,
            PeriodArg::Weekly => Period::Weekly,
            PeriodArg::Monthly => Period::Monthly,
            PeriodArg::Quarterly => Period::Quarterly,
            PeriodArg::Yearly => Period::Yearly,
        }
    }
}

/// A `YYYY-MM-DD` argument named `field`, or today (UTC) when left out.
pub fn date_arg(text: Option<&str>, field: &str) -> Result<NaiveDate, ToolError> {
    match text {
        Some(text) => NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d").map_err(|_| {
            ToolError::with_message(ErrorCode::InvalidInput, format!("{field} is a date written YYYY-MM-DD"))
                .detail("field", field.to_string())
        }),
        None => Ok(chrono::Utc::now().date_naive()),
    }
}

/// The bytes of a settings file (a path under `.obsidian/`), when the vault has one. No
/// visibility check: settings are read by the server, never shown.
pub async fn settings_file(ctx: &CallContext<'_>, view: &View, path: &str) -> Result<Option<Vec<u8>>, ToolError> {
    match writing::current(ctx, view.vault.id, path).await? {
        Some(entry) => Ok(Some(writing::blob(ctx, &entry.hash).await?.to_vec())),
        None => Ok(None),
    }
}

/// Where `period`'s notes live in the vault: its Periodic Notes settings, its Daily notes
/// settings for daily notes, else Obsidian's defaults for daily notes; another period with no
/// settings is refused.
pub async fn settings(ctx: &CallContext<'_>, view: &View, period: Period) -> Result<Settings, ToolError> {
    let periodic = settings_file(ctx, view, PERIODIC_NOTES).await?;
    let daily = if period == Period::Daily { settings_file(ctx, view, DAILY_NOTES).await? } else { None };
    if let Some(found) = otc_vault::periodic::settings(period, periodic.as_deref(), daily.as_deref()) {
        return Ok(found);
    }
    if period == Period::Daily {
        return Ok(Settings { folder: String::new(), format: "YYYY-MM-DD".into(), template: None });
    }
    Err(ToolError::with_message(
        ErrorCode::InvalidInput,
        format!("the vault has no {} notes: the Periodic Notes plugin's settings do not enable them", period.key()),
    )
    .detail("field", "period"))
}

/// The note of one period: its first day, its path and where such notes live.
pub struct Resolved {
    /// The first day of the period holding the date asked for.
    pub date: NaiveDate,
    pub path: String,
    pub settings: Settings,
}

/// The note of `period` for `date` (default today).
pub async fn resolve(
    ctx: &CallContext<'_>,
    view: &View,
    period: PeriodArg,
    date: Option<&str>,
) -> Result<Resolved, ToolError> {
    let period = period.period();
    let asked = date_arg(date, "date")?;
    let settings = settings(ctx, view, period).await?;
    let date = period.start(asked, &settings.format);
    Ok(Resolved { date, path: settings.path_for(asked), settings })
}

/// The text a new note starts with, and what was used to make it (default: empty, from no
/// template).
#[derive(Default)]
pub struct Started {
    pub text: String,
    /// The template's vault path, when there was one.
    pub template: Option<String>,
    /// Whether its variables were filled in.
    pub expanded: bool,
    /// Variables the template held that nothing filled in (left as written).
    pub unknown: Vec<String>,
}

/// The templates plugin's settings.
pub async fn template_settings(ctx: &CallContext<'_>, view: &View) -> Result<TemplateSettings, ToolError> {
    Ok(templates::settings(settings_file(ctx, view, TEMPLATES).await?.as_deref()))
}

/// The template `name` names: a vault path (".md" optional), or a note of the templates
/// folder. It must be a note the caller can read; anything else is refused naming `field`.
pub async fn find_template(
    ctx: &CallContext<'_>,
    view: &View,
    folder: Option<&str>,
    name: &str,
    field: &str,
) -> Result<(String, String), ToolError> {
    let name = name.trim().trim_start_matches('/');
    let with_md = |p: &str| if p.to_lowercase().ends_with(".md") { p.to_string() } else { format!("{p}.md") };
    let mut candidates = vec![with_md(name)];
    if let Some(folder) = folder {
        candidates.push(format!("{folder}/{}", with_md(name)));
    }
    for path in candidates {
        if otc_vault::check_path(&path).is_err() || !view.can_read(&path) {
            continue;
        }
        if let Some((_, text)) = writing::current_text(ctx, view.vault.id, &path).await? {
            return Ok((path, text));
        }
    }
    Err(ToolError::with_message(ErrorCode::InvalidInput, "no template note by that name")
        .detail("field", field.to_string())
        .echo("template", name))
}

/// Fills in a template for a note at `path`: `{{date}}` is `at`. Templater's commands cannot
/// run here, so a template holding them is refused unless `expand` is off (then it is copied as
/// it is).
pub fn fill_template(
    tool: &str,
    template: &str,
    path: &str,
    at: NaiveDateTime,
    settings: &TemplateSettings,
    values: &BTreeMap<String, String>,
    expand: bool,
) -> Result<(String, Vec<String>), ToolError> {
    if !expand {
        return Ok((template.to_string(), Vec::new()));
    }
    if templates::templater_syntax(template) {
        return Err(ToolError::with_message(
            ErrorCode::PluginUnavailable,
            format!("{tool}: the template holds Templater commands (<% %>), which only run inside Obsidian"),
        )
        .detail("needs", "the Templater plugin")
        .with_hints(TEMPLATER_HINTS));
    }
    let title = path.rsplit('/').next().unwrap_or(path);
    let title = title.strip_suffix(".md").unwrap_or(title);
    let filled = templates::fill(template, &templates::Fill { title, at, settings, values });
    Ok((filled.text, filled.unknown))
}

const TEMPLATER_HINTS: &[otc_errors::Hint] = &[otc_errors::Hint {
    text: "Send expand_template: false to copy the template as it is, or use a template written with the core \
           Templates variables ({{title}}, {{date}}, {{time}}).",
    tools: &[],
}];

/// The start of a new periodic note: its template (the override, else the settings'), filled
/// in for the period's first day at the current time of day; empty without a template.
pub async fn start_periodic(
    ctx: &CallContext<'_>,
    view: &View,
    resolved: &Resolved,
    template_override: Option<&str>,
    expand: bool,
) -> Result<Started, ToolError> {
    let tool = ctx.tool;
    let (name, field) = match template_override {
        Some(t) => (Some(t), "template_override"),
        None => (resolved.settings.template.as_deref(), "period"),
    };
    let Some(name) = name else {
        return Ok(Started::default());
    };
    let settings = template_settings(ctx, view).await?;
    let (template, text) = find_template(ctx, view, settings.folder.as_deref(), name, field).await?;
    let at = resolved.date.and_time(chrono::Utc::now().time());
    let (text, unknown) = fill_template(tool, &text, &resolved.path, at, &settings, &BTreeMap::new(), expand)?;
    Ok(Started { text, template: Some(template), expanded: expand, unknown })
}

/// A periodic note made sure of: created from its template when missing.
pub struct Ensured {
    pub text: String,
    pub content_hash: otc_store::Hash,
    pub size: i64,
    /// Set when this call created the note.
    pub started: Option<Started>,
}

/// The note `resolved` names, created from its template when it is missing, then edited by
/// `edit` (given its text; return it unchanged to leave the note as it is), all as one
/// compare-and-swap write. `expand` says whether a template's variables are filled in.
pub async fn ensure<F>(
    ctx: &CallContext<'_>,
    view: &View,
    resolved: &Resolved,
    template_override: Option<&str>,
    expand: bool,
    edit: F,
) -> Result<Ensured, ToolError>
where
    F: Fn(&str) -> Result<String, ToolError>,
{
    writing::check_write(view, &resolved.path, "period")?;
    let exists = writing::current(ctx, view.vault.id, &resolved.path).await?.is_some();
    let started = if exists {
        None
    } else {
        writing::check_new_name(ctx, view, &resolved.path, "period").await?;
        Some(start_periodic(ctx, view, resolved, template_override, expand).await?)
    };
    let edited = writing::edit_note(ctx, view, &resolved.path, None, None, |now, _| {
        let (base, created) = match (now, &started) {
            (Some(text), _) => (text.to_string(), false),
            (None, Some(started)) => (started.text.clone(), true),
            // Deleted since it was looked at: start from nothing rather than guess a template.
            (None, None) => (String::new(), true),
        };
        let text = edit(&base)?;
        Ok(Planned { text: text.clone(), extra: (text, created), trash_old: false })
    })
    .await?;
    let (text, created) = edited.extra;
    let started = created.then(|| started.unwrap_or_default());
    Ok(Ensured { text, content_hash: edited.content_hash, size: edited.size, started })
}
