//! obsidian_list_notes: the files and folders under a vault folder, walked depth-first to a
//! bounded depth, at most 1000 entries.

use std::collections::BTreeMap;

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{check_segments, refuse};
use otc_kernel::{CallContext, Tool};

pub struct ObsidianListNotes;

/// The most entries one call lists.
pub const ENTRY_CAP: usize = 1000;
/// The most files one walk reads from the index.
const FILES_READ: i64 = 500_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The vault (filled in when you can reach only one).
    pub vault: String,
    /// The folder, vault-relative (default: the vault root).
    #[serde(default)]
    pub path: Option<String>,
    /// Only files with this extension ("md" or ".md"); folders are always listed.
    #[serde(default)]
    pub extension: Option<String>,
    /// A regular expression each entry's name must match (at most 256 characters); a folder that
    /// does not match is not entered.
    #[serde(default, rename = "nameRegex")]
    pub name_regex: Option<String>,
    /// How many levels to walk: 1 lists the folder itself (default 2, at most 20).
    #[serde(default)]
    #[schemars(range(min = 1, max = 20))]
    pub depth: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    /// The folder listed ("" for the root).
    pub path: String,
    /// Depth-first: each folder is followed by what it holds.
    pub entries: Vec<Entry>,
    pub totals: Totals,
    pub applied_filters: Filters,
    /// Present when the walk stopped at the entry cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded: Option<Excluded>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Entry {
    pub path: String,
    /// file or directory.
    #[serde(rename = "type")]
    pub kind: String,
    /// A folder the depth limit kept the walk out of.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Totals {
    pub entries: usize,
    pub files: usize,
    pub directories: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Filters {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extension: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_regex: Option<String>,
    pub depth: u32,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Excluded {
    pub reason: String,
    pub cap: usize,
    pub hint: String,
}

/// A folder of the walk: its files and subfolders by name.
#[derive(Default)]
struct Dir {
    dirs: BTreeMap<String, Dir>,
    files: Vec<String>,
}

impl Tool for ObsidianListNotes {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Fixed { why: super::FIXED },
        ..ToolSpec::base(
            "obsidian_list_notes",
            "List Obsidian notes and folders",
            "Lists the files and folders under a vault folder (default the root), depth-first to depth levels \
             (default 2), at most 1000 entries; extension and nameRegex narrow it. A folder marked truncated holds \
             more below the depth.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let folder = input.path.as_deref().unwrap_or("").trim().trim_matches('/').to_string();
        check_segments(&folder)?;
        let depth = input.depth.unwrap_or(2).clamp(1, 20);
        let extension = input
            .extension
            .as_deref()
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(|e| format!(".{}", e.trim_start_matches('.').to_lowercase()));
        let regex = input.name_regex.as_deref().map(|r| safe_regex(r, 256, "nameRegex")).transpose()?;

        let view = ctx.view(&input.vault).await?;
        let prefix = view.folder_prefix(Some(&folder))?;
        let mut tx = ctx.begin().await?;
        let rows = tx.list_files(view.vault.id, &prefix, true, None, view.readable(), None, FILES_READ).await?;
        tx.commit().await?;
        if rows.is_empty() && !folder.is_empty() {
            let file = otc_kernel::writing::current(ctx, view.vault.id, &folder).await?;
            return Err(if file.is_some() && view.can_read(&folder) {
                refuse(ErrorCode::InvalidInput, "path_is_file", "the path names a file, not a folder")
                    .echo("path", &folder)
                    .detail("field", "path")
            } else {
                refuse(ErrorCode::NotFound, "directory_missing", "no folder with files at this path")
                    .echo("path", &folder)
                    .detail("field", "path")
            });
        }

        let mut root = Dir::default();
        for row in rows {
            let rel = &row.path[prefix.len()..];
            let mut dir = &mut root;
            let mut parts = rel.split('/').peekable();
            while let Some(part) = parts.next() {
                if parts.peek().is_none() {
                    dir.files.push(part.to_string());
                } else {
                    dir = dir.dirs.entry(part.to_string()).or_default();
                }
            }
        }
        let mut walk =
            Walk { entries: Vec::new(), capped: false, extension: extension.as_deref(), regex: regex.as_ref() };
        walk.dir(&root, &prefix, 1, depth);
        let (entries, capped) = (walk.entries, walk.capped);
        let files = entries.iter().filter(|e| e.kind == "file").count();
        let totals = Totals { entries: entries.len(), files, directories: entries.len() - files };
        Ok(Output {
            path: folder,
            entries,
            totals,
            applied_filters: Filters { extension, name_regex: input.name_regex, depth },
            excluded: capped.then(|| Excluded {
                reason: "entry_cap".into(),
                cap: ENTRY_CAP,
                hint: "Narrow the listing: a deeper path, a smaller depth, extension or nameRegex.".into(),
            }),
        })
    }
}

struct Walk<'a> {
    entries: Vec<Entry>,
    capped: bool,
    extension: Option<&'a str>,
    regex: Option<&'a regex::Regex>,
}

impl Walk<'_> {
    fn push(&mut self, entry: Entry) -> bool {
        if self.entries.len() >= ENTRY_CAP {
            self.capped = true;
            return false;
        }
        self.entries.push(entry);
        true
    }

    /// Lists `dir` (at `prefix`, on level `level`): folders and files by name, each folder
    /// followed by its own listing while the depth allows.
    fn dir(&mut self, dir: &Dir, prefix: &str, level: u32, depth: u32) {
        let mut names: Vec<(&str, Option<&Dir>)> = dir.dirs.iter().map(|(n, d)| (n.as_str(), Some(d))).collect();
        names.extend(dir.files.iter().map(|f| (f.as_str(), None)));
        names.sort_by(|a, b| a.0.to_lowercase().cmp(&b.0.to_lowercase()).then(a.0.cmp(b.0)));
        for (name, sub) in names {
            if self.capped || self.regex.is_some_and(|r| !r.is_match(name)) {
                continue;
            }
            let path = format!("{prefix}{name}");
            match sub {
                Some(sub) => {
                    let truncated = level >= depth;
                    if !self.push(Entry { path: path.clone(), kind: "directory".into(), truncated }) {
                        return;
                    }
                    if !truncated {
                        self.dir(sub, &format!("{path}/"), level + 1, depth);
                    }
                }
                None => {
                    if self.extension.is_some_and(|e| !name.to_lowercase().ends_with(e)) {
                        continue;
                    }
                    if !self.push(Entry { path, kind: "file".into(), truncated: false }) {
                        return;
                    }
                }
            }
        }
    }
}

/// A caller's regular expression, refused as the other server refuses one: longer than `max`
/// characters or with a nested quantifier (`regex_unsafe`), or not compiling (`regex_invalid`).
pub fn safe_regex(pattern: &str, max: usize, field: &'static str) -> Result<regex::Regex, ToolError> {
    let unsafe_ = |why: &str| {
        refuse(ErrorCode::InvalidInput, "regex_unsafe", format!("unsafe {field}: {why}")).detail("field", field)
    };
    if pattern.chars().count() > max {
        return Err(unsafe_(&format!("the pattern exceeds {max} characters")));
    }
    let bytes = pattern.as_bytes();
    if bytes
        .windows(3)
        .any(|w| matches!(w[0], b'+' | b'*' | b'}') && w[1] == b')' && matches!(w[2], b'*' | b'+' | b'{'))
    {
        return Err(unsafe_("it nests quantifiers"));
    }
    regex::RegexBuilder::new(pattern).size_limit(1 << 20).build().map_err(|e| {
        refuse(ErrorCode::InvalidInput, "regex_invalid", format!("{field} does not compile: {e}"))
            .detail("field", field)
    })
}
