//! Inline fields: reading `key:: value` fields from a note's text and typing their values the
//! way Dataview does.

use serde_json::Value;

use super::lexer::{
    is_emoji, read_date, read_duration, read_link, read_number, read_string, read_tag, skip_ws, starts_with_at,
};
use super::value::{V, to_json};

/// The inline fields of a note's text, in order, as raw `(key, value)` pairs: bracketed
/// `[key:: value]` and `(key:: value)` anywhere in a line, or else a whole-line `key:: value`
/// (leading list markers, quotes and Markdown emphasis around the key dropped). Frontmatter and
/// fenced code blocks are skipped; type the values with [`field_value`].
pub fn inline_fields(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines().peekable();
    if lines.peek().is_some_and(|l| l.trim_end() == "---") {
        lines.next();
        for line in lines.by_ref() {
            let l = line.trim_end();
            if l == "---" || l == "..." {
                break;
            }
        }
    }
    let mut fence: Option<(char, usize)> = None;
    for line in lines {
        let trimmed = line.trim_start();
        let fence_char = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        if let Some(fc) = fence_char {
            let run = trimmed.chars().take_while(|c| *c == fc).count();
            if run >= 3 {
                match fence {
                    Some((open, len)) if open == fc && run >= len && trimmed[run..].trim().is_empty() => fence = None,
                    Some(_) => {}
                    None => fence = Some((fc, run)),
                }
                continue;
            }
        }
        if fence.is_some() || !line.contains("::") {
            continue;
        }
        let line = line.trim();
        let bracketed = bracketed_fields(line);
        if !bracketed.is_empty() {
            out.extend(bracketed);
        } else if let Some(field) = full_line_field(line) {
            out.push(field);
        }
    }
    out
}

fn bracketed_fields(line: &str) -> Vec<(String, String)> {
    let s: Vec<char> = line.chars().collect();
    let mut found: Vec<(usize, String, String)> = Vec::new();
    for (open, close) in [('[', ']'), ('(', ')')] {
        let mut i = 0;
        while i < s.len() {
            if s[i] != open {
                i += 1;
                continue;
            }
            match bracketed_at(&s, i, open, close) {
                Some((key, value, end)) => {
                    found.push((i, key, value));
                    i = end;
                }
                None => i += 1,
            }
        }
    }
    found.sort_by_key(|(start, _, _)| *start);
    found.into_iter().filter(|(_, k, _)| !k.is_empty()).map(|(_, k, v)| (k, v)).collect()
}

fn bracketed_at(s: &[char], start: usize, open: char, close: char) -> Option<(String, String, usize)> {
    let sep = (start + 1..s.len().saturating_sub(1)).find(|&j| s[j] == ':' && s[j + 1] == ':')?;
    let key: String = s[start + 1..sep].iter().collect();
    if key.contains(['[', ']', '(', ')']) {
        return None;
    }
    let mut nesting = 0i32;
    let mut escaped = false;
    for j in sep + 2..s.len() {
        let c = s[j];
        if c == '\\' {
            escaped = !escaped;
            continue;
        }
        if escaped {
            escaped = false;
            continue;
        }
        if c == open {
            nesting += 1;
        } else if c == close {
            nesting -= 1;
        }
        if nesting < 0 {
            let value: String = s[sep + 2..j].iter().collect();
            return Some((key.trim().to_string(), value.trim().to_string(), j + 1));
        }
    }
    None
}

fn full_line_field(line: &str) -> Option<(String, String)> {
    let (raw_key, value) = line.split_once("::")?;
    let raw_key = raw_key.trim();
    let start = raw_key.find(|c: char| c.is_alphanumeric() || c == '_' || is_emoji(c))?;
    let rest = &raw_key[start..];
    let key_end = rest
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || c.is_whitespace() || "_/-".contains(*c) || is_emoji(*c)))
        .map_or(rest.len(), |(i, _)| i);
    if !rest[key_end..].chars().all(|c| "_*~`".contains(c)) {
        return None;
    }
    let key = rest[..key_end].trim();
    (!key.is_empty()).then(|| (key.to_string(), value.trim().to_string()))
}

/// An inline field's raw value typed as Dataview types it: empty is null; a date
/// (`2024-01-05`, `2024-01-05T10:30`) becomes an ISO string; a duration (`3 hours`) its
/// normalized text (`3 hours`); `true`/`false`, numbers and `null` their JSON values; a
/// `"quoted"` string its content; a `[[link]]` stays `[[link]]`; a `#tag` stays text.
/// Comma-separated values become a list only when every item is one of those literals
/// (`1, 2, 3` or `[[a]], [[b]]`, as Dataview does); anything else (`apples, pears`) stays the
/// whole string.
pub fn field_value(raw: &str) -> Value {
    let text = raw.trim();
    if text.is_empty() {
        return Value::Null;
    }
    let s: Vec<char> = text.chars().collect();
    let Some((first, mut i)) = inline_atom(&s, 0) else { return Value::String(text.to_string()) };
    let mut items = vec![first];
    let sep = |i: usize| {
        let j = skip_ws(&s, i);
        (s.get(j) == Some(&',')).then(|| skip_ws(&s, j + 1))
    };
    if let Some(after) = sep(i) {
        i = after;
        if let Some((next, end)) = inline_atom(&s, i) {
            items.push(next);
            i = end;
            while let Some(after) = sep(i) {
                match inline_atom(&s, after) {
                    Some((next, end)) => {
                        items.push(next);
                        i = end;
                    }
                    None => break,
                }
            }
        }
    }
    if i != s.len() {
        return Value::String(text.to_string());
    }
    let json = |v: &V| match v {
        V::Link(l) => Value::String(l.markdown(false)),
        other => to_json(other),
    };
    if items.len() == 1 && sep(i).is_none() && !text.ends_with(',') {
        json(&items[0])
    } else {
        Value::Array(items.iter().map(json).collect())
    }
}

fn inline_atom(s: &[char], i: usize) -> Option<(V, usize)> {
    if let Some((d, end)) = read_date(s, i) {
        return Some((V::Date(d), end));
    }
    if let Some((d, end)) = read_duration(s, i) {
        return Some((V::Dur(d.normalize()), end));
    }
    if let Some((text, end)) = read_string(s, i) {
        return Some((V::Str(text), end));
    }
    if let Some((tag, end)) = read_tag(s, i) {
        return Some((V::Str(tag), end));
    }
    let (embed, at) = if s.get(i) == Some(&'!') { (true, i + 1) } else { (false, i) };
    if let Some((mut link, end)) = read_link(s, at) {
        link.embed = embed;
        return Some((V::Link(link), end));
    }
    for (word, value) in [("true", true), ("True", true), ("false", false), ("False", false)] {
        if starts_with_at(s, i, word) {
            return Some((V::Bool(value), i + word.len()));
        }
    }
    if let Some((n, end)) = read_number(s, i) {
        return Some((V::Num(n), end));
    }
    if starts_with_at(s, i, "null") {
        return Some((V::Null, i + 4));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dql::eval_field;
    use crate::dql::testing::*;
    use serde_json::json;

    #[test]
    fn inline_fields_are_read_from_text() {
        let text = "---\nstatus:: ignored\n---\n# Title\nStatus:: active\n- **Owner**:: [[Bob]]\nA line with [due:: 2024-01-05] and (hidden:: yes) fields.\n```\ncode:: no\n```\n- [ ] Task [priority:: high] [[link]]\nplain text\nurl: http://x\n";
        assert_eq!(
            inline_fields(text),
            [
                ("Status".to_string(), "active".to_string()),
                ("Owner".to_string(), "[[Bob]]".to_string()),
                ("due".to_string(), "2024-01-05".to_string()),
                ("hidden".to_string(), "yes".to_string()),
                ("priority".to_string(), "high".to_string()),
            ]
        );
        assert_eq!(inline_fields("[a:: [nested] value]"), [("a".to_string(), "[nested] value".to_string())]);
    }

    #[test]
    fn field_values_are_typed() {
        assert_eq!(field_value(""), Value::Null);
        assert_eq!(field_value(" 42 "), json!(42));
        assert_eq!(field_value("-1.5"), json!(-1.5));
        assert_eq!(field_value("true"), json!(true));
        assert_eq!(field_value("null"), Value::Null);
        assert_eq!(field_value("2024-01-05"), json!("2024-01-05"));
        assert_eq!(field_value("2024-01-05T14:30"), json!("2024-01-05T14:30:00Z"));
        assert_eq!(field_value("3 hours"), json!("3 hours"));
        assert_eq!(field_value("90 min"), json!("1 hour, 30 minutes"));
        assert_eq!(field_value("[[Bob|Robert]]"), json!("[[Bob|Robert]]"));
        assert_eq!(field_value("\"quoted, text\""), json!("quoted, text"));
        assert_eq!(field_value("#tag"), json!("#tag"));
        assert_eq!(field_value("1, 2, 3"), json!([1, 2, 3]));
        assert_eq!(field_value("[[a]], [[b]]"), json!(["[[a]]", "[[b]]"]));
        assert_eq!(field_value("apples, pears"), json!("apples, pears"));
        assert_eq!(field_value("10 apples"), json!("10 apples"));
        assert_eq!(field_value("2024-13-01"), json!("2024-13-01"));
        // Typed values read back the same way in a query.
        let mut p = vault().remove(5);
        p.fields.insert("when".into(), field_value("2024-01-05"));
        p.fields.insert("spent".into(), field_value("90 min"));
        assert_eq!(eval_field("when + spent", &p, today(), now()).unwrap(), json!("2024-01-05T01:30:00Z"));
    }
}
