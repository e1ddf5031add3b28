//! obsidian_replace_in_note: search-and-replace inside one note, literal or by regular
//! expression, in the body (default), the frontmatter or both.

use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use regex::{NoExpand, Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::list_notes::safe_regex;
use super::{Target, edit_existing, refuse, resolve_target};
use otc_kernel::{CallContext, Tool};

pub struct ObsidianReplaceInNote;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    #[default]
    Body,
    Frontmatter,
    Both,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Replacement {
    #[schemars(length(min = 1))]
    pub search: String,
    /// What each match becomes ("" deletes it); with useRegex, $1 and $& refer to the match.
    pub replace: String,
    /// search is a regular expression (at most 1024 characters).
    #[serde(default, rename = "useRegex")]
    pub use_regex: Option<bool>,
    /// Default true.
    #[serde(default, rename = "caseSensitive")]
    pub case_sensitive: Option<bool>,
    /// Only whole words.
    #[serde(default, rename = "wholeWord")]
    pub whole_word: Option<bool>,
    /// Literal search: any run of whitespace in search matches any run in the note.
    #[serde(default, rename = "flexibleWhitespace")]
    pub flexible_whitespace: Option<bool>,
    /// Default true; false replaces only the first match.
    #[serde(default, rename = "replaceAll")]
    pub replace_all: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The vault (filled in when you can reach only one).
    pub vault: String,
    pub target: Target,
    /// body (default; the frontmatter stays byte for byte), frontmatter or both.
    #[serde(default)]
    pub scope: Option<Scope>,
    /// Applied in order, each to the text the previous left.
    #[schemars(length(min = 1))]
    pub replacements: Vec<Replacement>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    pub path: String,
    pub total_replacements: usize,
    pub per_replacement: Vec<Count>,
    pub previous_size_in_bytes: i64,
    pub current_size_in_bytes: i64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Count {
    pub search: String,
    pub count: usize,
    pub body_count: usize,
    pub frontmatter_count: usize,
}

impl Tool for ObsidianReplaceInNote {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: otc_catalog::ScopeClass::Write,
        destructive: Sometimes::OnSomeCalls,
        response_format: Format::Fixed { why: super::FIXED },
        ..ToolSpec::base(
            "obsidian_replace_in_note",
            "Replace text in an Obsidian note",
            "Finds and replaces in one note, in order: each replacement literal or a regex (useRegex), \
             caseSensitive (default true), wholeWord, flexibleWhitespace, replaceAll (default true). scope body \
             (default) leaves the frontmatter byte for byte. Reports the count per replacement; no match writes \
             nothing.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let path = resolve_target(ctx, &input.vault, &input.target).await?;
        let scope = input.scope.unwrap_or_default();
        let compiled: Vec<(Regex, &Replacement)> =
            input.replacements.iter().map(|r| Ok((pattern(r)?, r))).collect::<Result<_, ToolError>>()?;
        let edit =
            edit_existing(ctx, "write_note", &input.vault, &path, |text| replace(text, scope, &compiled)).await?;
        let counts = edit.extra;
        Ok(Output {
            path: edit.path,
            total_replacements: counts.iter().map(|c| c.count).sum(),
            per_replacement: counts,
            previous_size_in_bytes: edit.previous_size,
            current_size_in_bytes: edit.current_size,
        })
    }
}

/// The regular expression a replacement searches with.
fn pattern(r: &Replacement) -> Result<Regex, ToolError> {
    if r.search.is_empty() {
        return Err(refuse(ErrorCode::ValidationError, "invalid_arguments", "search may not be empty")
            .detail("field", "replacements.search"));
    }
    let regex_mode = r.use_regex.unwrap_or(false);
    let mut source = if regex_mode {
        safe_regex(&r.search, 1024, "search")?;
        r.search.clone()
    } else if r.flexible_whitespace.unwrap_or(false) {
        flexible(&r.search)
    } else {
        regex::escape(&r.search)
    };
    if r.whole_word.unwrap_or(false) {
        source = format!(r"\b(?:{source})\b");
    }
    RegexBuilder::new(&source).case_insensitive(!r.case_sensitive.unwrap_or(true)).size_limit(1 << 22).build().map_err(
        |e| {
            refuse(ErrorCode::InvalidInput, "regex_invalid", format!("search does not compile: {e}"))
                .detail("field", "replacements.search")
        },
    )
}

/// `text` with the replacements made, and the count of each.
fn replace(text: &str, scope: Scope, compiled: &[(Regex, &Replacement)]) -> Result<(String, Vec<Count>), ToolError> {
    // The YAML between the fences, and the body after them: the fences are never matched.
    let head = otc_parser::parse_head(text);
    let (yaml, body_start) = match &head.frontmatter {
        Some(front) => {
            let block = front.span.range();
            let inner_start = text[block.clone()].find('\n').map_or(block.end, |i| block.start + i + 1);
            let closing = text[..block.end].trim_end_matches(['\n', '\r']).rfind('\n').map_or(inner_start, |i| i + 1);
            (Some(inner_start..closing.max(inner_start)), head.body_start)
        }
        None => (None, 0),
    };
    let mut front = yaml.as_ref().map(|r| text[r.clone()].to_string());
    let mut body = text[body_start..].to_string();
    let mut counts = Vec::new();
    for (regex, r) in compiled {
        let all = r.replace_all.unwrap_or(true);
        let mut count = Count { search: r.search.clone(), count: 0, body_count: 0, frontmatter_count: 0 };
        if scope != Scope::Body
            && let Some(yaml) = &mut front
        {
            let (new, n) = substitute(regex, yaml, r, all);
            *yaml = new;
            count.frontmatter_count = n;
        }
        if scope != Scope::Frontmatter && (all || count.frontmatter_count == 0) {
            let (new, n) = substitute(regex, &body, r, all);
            body = new;
            count.body_count = n;
        }
        count.count = count.frontmatter_count + count.body_count;
        counts.push(count);
    }
    let new = match (&yaml, &front) {
        (Some(range), Some(yaml)) => format!("{}{yaml}{}", &text[..range.start], &text[range.end..body_start]) + &body,
        _ => body,
    };
    let yaml_changed = yaml.as_ref().zip(front.as_ref()).is_some_and(|(range, now)| text[range.clone()] != **now);
    if yaml_changed {
        let parsed = otc_parser::parse_head(&new);
        if parsed.frontmatter.as_ref().is_some_and(|f| !matches!(f.value, Some(serde_json::Value::Object(_)))) {
            return Err(refuse(
                ErrorCode::InvalidInput,
                "frontmatter_invalid",
                "the replacements would leave frontmatter that does not parse as properties; nothing was written",
            ));
        }
    }
    Ok((new, counts))
}

/// `text` with `regex`'s matches replaced (all, or the first), and how many were.
fn substitute(regex: &Regex, text: &str, r: &Replacement, all: bool) -> (String, usize) {
    let found = regex.find_iter(text).count();
    if found == 0 {
        return (text.to_string(), 0);
    }
    let limit = if all { 0 } else { 1 };
    let new = if r.use_regex.unwrap_or(false) {
        regex.replacen(text, limit, template(&r.replace).as_str()).into_owned()
    } else {
        regex.replacen(text, limit, NoExpand(&r.replace)).into_owned()
    };
    (new, if all { found } else { 1 })
}

/// A literal search whose every run of whitespace (leading and trailing ones too) matches any
/// run of whitespace.
fn flexible(search: &str) -> String {
    let mut out = String::new();
    let mut in_space = false;
    for c in search.chars() {
        if c.is_whitespace() {
            if !in_space {
                out.push_str(r"\s+");
            }
            in_space = true;
        } else {
            out.push_str(&regex::escape(c.encode_utf8(&mut [0; 4])));
            in_space = false;
        }
    }
    out
}

/// A JavaScript replacement template in this regex engine's terms: `$&` is the whole match,
/// `$1`..`$99` a group however the text goes on after it (`$1a` is group 1 then "a"), `$<name>`
/// a named group and `$$` a dollar sign; any other `$` stands for itself.
fn template(js: &str) -> String {
    let mut out = String::new();
    let mut rest = js;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).take(2).count();
        if let Some(tail) = after.strip_prefix('$') {
            out.push_str("$$");
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('&') {
            out.push_str("${0}");
            rest = tail;
        } else if digits > 0 {
            out.push_str(&format!("${{{}}}", &after[..digits]));
            rest = &after[digits..];
        } else if let Some(name) = after.strip_prefix('<').and_then(|a| a.split_once('>')).map(|(n, _)| n) {
            out.push_str(&format!("${{{name}}}"));
            rest = &after[name.len() + 2..];
        } else {
            out.push_str("$$");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn javascript_templates_and_flexible_whitespace() {
        assert_eq!(super::template("$2 $1a [$&] $$ $<w> $x"), "${2} ${1}a [${0}] $$ ${w} $$x");
        let re = regex::Regex::new(&super::flexible(" a  b ")).unwrap();
        assert!(re.is_match("x\ta\n b\ty") && !re.is_match("ab"));
        assert_eq!(super::flexible("   "), r"\s+");
    }
}
