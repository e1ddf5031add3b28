//! Writing YAML in Obsidian's style, keeping the bytes of unchanged sections and the quoting of
//! unchanged values.

use serde_json::{Map, Value};
use yaml_rust2::{Yaml, YamlLoader};

use super::patch::{Ctx, build, overlay};
use super::yaml::{Key, Node, Scalar, Source, Style, same};
use super::{Base, MAX_JSON_DEPTH};

/// Writes the base as a `.base` file: the typed fields (`filters`, `formulas`, `properties`,
/// `views`) over `raw` (which supplies everything else), in the layout it was read with. An
/// unchanged base renders byte for byte as its file was.
pub fn render(base: &Base) -> String {
    let source = base.layout.source.as_ref();
    let guide = source.map(|s| &s.root);
    let raw = match &base.raw {
        Value::Object(_) => base.raw.clone(),
        _ => Value::Object(Map::new()),
    };
    let Node::Map(mut entries) = build(&raw, guide, Ctx::Root, 0) else {
        return String::new();
    };
    overlay(&mut entries, base);
    write(source, &Node::Map(entries))
}

/// Writes any JSON value as YAML in Obsidian's style (a base's sections in Obsidian's order).
pub fn to_yaml(value: &Value) -> String {
    write(None, &build(value, None, Ctx::Root, 0))
}

fn eol_of(text: &str) -> &'static str {
    match text.find('\n') {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

fn join(lines: &[String], eol: &str) -> String {
    let mut out = String::new();
    for line in lines {
        out.push_str(line);
        out.push_str(eol);
    }
    out
}

/// The document: the old text when nothing changed, else the old text's unchanged top-level
/// sections with the others written anew, else all of it written anew.
pub(super) fn write(old: Option<&Source>, root: &Node) -> String {
    let eol = old.map_or("\n", |s| eol_of(&s.text));
    if let Some(source) = old {
        if same(&source.root, root) {
            return source.text.clone();
        }
        if let (Some((preamble, ranges)), Node::Map(old_entries), Node::Map(entries)) =
            (&source.regions, &source.root, root)
            && ranges.len() == old_entries.len()
        {
            let mut out = source.text[..*preamble].to_string();
            for (key, node) in entries {
                let kept = old_entries.iter().position(|(k, v)| k == key && v == node);
                match kept.and_then(|i| source.text.get(ranges[i].clone())) {
                    Some(piece) => {
                        if !out.is_empty() && !out.ends_with('\n') {
                            out.push_str(eol);
                        }
                        out.push_str(piece);
                    }
                    None => {
                        if !out.is_empty() && !out.ends_with('\n') {
                            out.push_str(eol);
                        }
                        let mut lines = Vec::new();
                        emit_entry(&mut lines, 0, key, node, 0);
                        out.push_str(&join(&lines, eol));
                    }
                }
            }
            return out;
        }
    }
    let mut lines = Vec::new();
    match root {
        Node::Map(entries) => {
            for (k, v) in entries {
                emit_entry(&mut lines, 0, k, v, 0);
            }
        }
        Node::Seq(items) if !items.is_empty() => {
            for item in items {
                emit_item(&mut lines, 0, item, 0);
            }
        }
        Node::Seq(_) => lines.push("[]".to_string()),
        Node::Scalar(s) => match scalar_out(s) {
            Out::Inline(t) => lines.push(if t.is_empty() { "null".to_string() } else { t }),
            Out::Block(header, body) => {
                lines.push(header);
                lines.extend(body.into_iter().map(|l| if l.is_empty() { l } else { format!("  {l}") }));
            }
        },
    }
    join(&lines, eol)
}

enum Out {
    Inline(String),
    /// A block scalar: its header (`|-`) and its lines, unindented.
    Block(String, Vec<String>),
}

fn emit_entry(out: &mut Vec<String>, indent: usize, key: &Key, node: &Node, depth: usize) {
    let pad = " ".repeat(indent);
    let k = key_text(key);
    match node {
        _ if depth > MAX_JSON_DEPTH => out.push(format!("{pad}{k}: null")),
        Node::Seq(items) if !items.is_empty() => {
            out.push(format!("{pad}{k}:"));
            for item in items {
                emit_item(out, indent + 2, item, depth + 1);
            }
        }
        Node::Map(entries) if !entries.is_empty() => {
            out.push(format!("{pad}{k}:"));
            for (k2, v2) in entries {
                emit_entry(out, indent + 2, k2, v2, depth + 1);
            }
        }
        Node::Seq(_) => out.push(format!("{pad}{k}: []")),
        Node::Map(_) => out.push(format!("{pad}{k}: {{}}")),
        Node::Scalar(s) => match scalar_out(s) {
            Out::Inline(t) if t.is_empty() => out.push(format!("{pad}{k}:")),
            Out::Inline(t) => out.push(format!("{pad}{k}: {t}")),
            Out::Block(header, body) => {
                out.push(format!("{pad}{k}: {header}"));
                out.extend(body.into_iter().map(|l| if l.is_empty() { l } else { format!("{pad}  {l}") }));
            }
        },
    }
}

fn emit_item(out: &mut Vec<String>, indent: usize, node: &Node, depth: usize) {
    let pad = " ".repeat(indent);
    let from = out.len();
    match node {
        _ if depth > MAX_JSON_DEPTH => {
            out.push(format!("{pad}- null"));
            return;
        }
        Node::Seq(items) if !items.is_empty() => {
            for item in items {
                emit_item(out, indent + 2, item, depth + 1);
            }
        }
        Node::Map(entries) if !entries.is_empty() => {
            for (k, v) in entries {
                emit_entry(out, indent + 2, k, v, depth + 1);
            }
        }
        Node::Seq(_) => {
            out.push(format!("{pad}- []"));
            return;
        }
        Node::Map(_) => {
            out.push(format!("{pad}- {{}}"));
            return;
        }
        Node::Scalar(s) => {
            match scalar_out(s) {
                Out::Inline(t) if t.is_empty() => out.push(format!("{pad}-")),
                Out::Inline(t) => out.push(format!("{pad}- {t}")),
                Out::Block(header, body) => {
                    out.push(format!("{pad}- {header}"));
                    out.extend(body.into_iter().map(|l| if l.is_empty() { l } else { format!("{pad}  {l}") }));
                }
            }
            return;
        }
    }
    if let Some(first) = out.get_mut(from) {
        let rest = first.get(indent + 2..).unwrap_or("").to_string();
        *first = format!("{pad}- {rest}");
    }
}

fn scalar_out(s: &Scalar) -> Out {
    let text = match &s.value {
        Value::String(text) => text,
        other => {
            return Out::Inline(match &s.style {
                Style::Plain(src) => src.clone(),
                _ => other.to_string(),
            });
        }
    };
    let multiline = text.contains('\n');
    let controls = text.chars().any(|c| (c.is_control() && c != '\n' && c != '\t') || is_special(c));
    match &s.style {
        Style::Plain(_) | Style::New if !multiline && plain_ok(text, false) => return Out::Inline(text.clone()),
        Style::Single if !multiline && !controls => return Out::Inline(single(text)),
        Style::Double => return Out::Inline(double(text)),
        Style::Folded if !multiline && !controls && !text.is_empty() && !text.starts_with(' ') => {
            return Out::Block(">-".to_string(), vec![text.clone()]);
        }
        _ => {}
    }
    let body = text.trim_end_matches('\n');
    if multiline && !controls && !body.is_empty() && !body.starts_with([' ', '\t']) {
        let trailing = text.len() - body.len();
        let header = match trailing {
            0 => "|-",
            1 => "|",
            _ => "|+",
        };
        let mut lines: Vec<String> = body.split('\n').map(str::to_string).collect();
        lines.extend(std::iter::repeat_n(String::new(), trailing.saturating_sub(1)));
        return Out::Block(header.to_string(), lines);
    }
    if !multiline && !controls && text.contains('"') && !text.contains('\'') {
        Out::Inline(single(text))
    } else {
        Out::Inline(double(text))
    }
}

fn key_text(key: &Key) -> String {
    match &key.style {
        Style::Plain(src) => src.clone(),
        Style::Single if !key.name.contains('\n') => single(&key.name),
        Style::Double => double(&key.name),
        _ if plain_ok(&key.name, true) => key.name.clone(),
        _ if key.name.contains('"') && !key.name.contains('\'') && !key.name.chars().any(char::is_control) => {
            single(&key.name)
        }
        _ => double(&key.name),
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{85}')
}

/// Words that some YAML reader takes for a boolean or null.
const RESERVED: &[&str] = &["true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"];

/// Whether `s` may be written plain (as a value, or as a key): conservative, and proven by
/// reading it back.
fn plain_ok(s: &str, key: bool) -> bool {
    let Some(first) = s.chars().next() else { return false };
    if s.trim() != s
        || "-?:,[]{}#&*!|>'\"%@`".contains(first)
        || s.chars().any(|c| c.is_control() || is_special(c))
        || s.contains(": ")
        || s.contains(" #")
        || s.ends_with(':')
        || s == "<<"
    {
        return false;
    }
    let lower = s.to_lowercase();
    if RESERVED.contains(&lower.as_str()) || matches!(lower.trim_start_matches(['+', '-']), ".inf" | ".nan") {
        return false;
    }
    let numeric = s.starts_with(|c: char| c.is_ascii_digit() || c == '+' || c == '.')
        && s.chars().all(|c| c.is_ascii_hexdigit() || "xXoO_.+-:".contains(c));
    if numeric {
        return false;
    }
    let doc = if key { format!("{s}: v\n") } else { format!("k: {s}\n") };
    match YamlLoader::load_from_str(&doc).as_deref() {
        Ok([Yaml::Hash(map)]) if map.len() == 1 => {
            if key {
                map.contains_key(&Yaml::String(s.to_string()))
            } else {
                matches!(map.get(&Yaml::String("k".to_string())), Some(Yaml::String(got)) if got == s)
            }
        }
        _ => false,
    }
}

fn single(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

pub(super) fn double(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || is_special(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bases::testing::*;
    use crate::bases::{Filter, View, parse};
    use serde_json::json;

    #[test]
    fn round_trips_byte_for_byte() {
        let base = parse(PROJECTS).unwrap();
        assert_eq!(render(&base), PROJECTS);
        // Written anew from the tree (not copied), the same bytes come out.
        let source = base.layout.source.as_ref().unwrap();
        assert_eq!(write(None, &source.root), PROJECTS);
        let quoted = "filters: 'status == \"done\"'\nformulas:\n  a: \"price * 2\"\n  b: |-\n    line one\n    line two\nviews:\n  - type: list\n    name: \"My list\"\n    limit: 10\n    order: []\n";
        let base = parse(quoted).unwrap();
        assert_eq!(write(None, &base.layout.source.as_ref().unwrap().root), quoted);
        assert_eq!(render(&base), quoted);
        // A hand-written file with comments and flow style comes back as it was, too.
        let odd = "# my base\nviews: [{type: table, name: X}]   # one view\n";
        assert_eq!(render(&parse(odd).unwrap()), odd);
        assert_eq!(render(&parse("").unwrap()), "");
    }

    #[test]
    fn renders_typed_changes() {
        let mut base = parse(PROJECTS).unwrap();
        base.views[0].limit = Some(5);
        base.views[1].sort[0].1 = true;
        let want = PROJECTS
            .replace("limit: 3", "limit: 5")
            .replace("property: due\n        direction: ASC", "property: due\n        direction: DESC");
        assert_eq!(render(&base), want);

        base.formulas.push(("margin".into(), "price - cost".into()));
        base.views.push(View {
            kind: "list".into(),
            name: "All".into(),
            order: vec!["file.name".into()],
            ..View::default()
        });
        let text = render(&base);
        assert!(text.contains("  due_in: 'if(due, ((date(due) - today()) / 86400000).round(0), \"\")'\n  margin: price - cost\nproperties:"), "{text}");
        assert!(text.ends_with("  - type: list\n    name: All\n    order:\n      - file.name\n"), "{text}");
        let again = parse(&text).unwrap();
        assert_eq!(again.views, base.views);
        assert_eq!(again.formulas, base.formulas);

        let fresh = Base {
            filters: Some(Filter::Not(vec![Filter::Expr("file.hasTag(\"x\")".into())])),
            views: vec![View { kind: "table".into(), name: "T".into(), limit: Some(2), ..View::default() }],
            ..Base::default()
        };
        assert_eq!(
            render(&fresh),
            "filters:\n  not:\n    - file.hasTag(\"x\")\nviews:\n  - type: table\n    name: T\n    limit: 2\n"
        );
    }

    #[test]
    fn writes_json_as_obsidian_yaml() {
        let value = json!({
            "views": [{"order": ["file.name"], "name": "T", "type": "table", "columnSize": {"file.name": 200}}],
            "filters": {"and": ["file.hasTag(\"x\")", "!done", "a: b", "it's \"q\"", "'both' \"q\""]},
            "properties": {},
            "summaries": {"s": "values.mean()"}
        });
        assert_eq!(
            to_yaml(&value),
            "filters:\n  and:\n    - file.hasTag(\"x\")\n    - \"!done\"\n    - \"a: b\"\n    - it's \"q\"\n    - \"'both' \\\"q\\\"\"\nproperties: {}\nsummaries:\n  s: values.mean()\nviews:\n  - type: table\n    name: T\n    order:\n      - file.name\n    columnSize:\n      file.name: 200\n"
        );
        assert_eq!(
            to_yaml(&json!({"a": "multi\nline\n", "b": [], "c": null, "d": "123", "e": true})),
            "a: |\n  multi\n  line\nb: []\nc: null\nd: \"123\"\ne: true\n"
        );
    }
}
