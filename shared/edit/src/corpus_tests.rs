//! The edits over every note of every corpus vault (the repository's `corpus/`): each changes
//! exactly the part it names and leaves every other byte as it was.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::anchor::{Op, Target, patch};
use crate::frontmatter::{FrontmatterOp, TagLocation, add_tag, edit_frontmatter, remove_tag};

fn notes() -> Vec<(PathBuf, String)> {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../corpus"));
    assert!(root.is_dir(), "the corpus is expected at {}", root.display());
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md")
                && let Ok(text) = std::fs::read_to_string(&path)
            {
                out.push((path, text));
            }
        }
    }
    assert!(out.len() > 500, "the corpus holds its notes: {}", out.len());
    out
}

/// `new` is `old` with one contiguous piece inserted: the piece.
fn inserted<'a>(old: &str, new: &'a str) -> &'a str {
    let prefix = old.bytes().zip(new.bytes()).take_while(|(a, b)| a == b).count();
    let suffix = old.bytes().rev().zip(new.bytes().rev()).take_while(|(a, b)| a == b).count();
    assert!(prefix + suffix >= old.len(), "more than one insertion:\n--- old\n{old}\n--- new\n{new}");
    let start = prefix.min(old.len());
    let end = new.len() - (old.len() - start);
    &new[start..end]
}

#[test]
fn a_property_set_then_removed_gives_back_every_byte() {
    let (mut edited, mut refused) = (0, 0);
    let value = json!({"nested": ["a", "b: c"], "n": 1});
    for (path, text) in notes() {
        let set = edit_frontmatter(&text, FrontmatterOp::Set { key: "otc_probe", value: &value, nested: false });
        let set = match set {
            Ok(set) => set,
            Err(e) => {
                assert_eq!(e.details["reason"], "frontmatter_unparseable", "{}: {e:?}", path.display());
                refused += 1;
                continue;
            }
        };
        assert!(set.changed, "{}", path.display());
        let head = otc_parser::parse_head(&text);
        let flow = text.lines().nth(1).is_some_and(|l| l.trim_start().starts_with('{'));
        if flow {
            // A block written as one flow mapping ({...}) cannot take a line: it is written
            // again in block style. The body stays, and every property reads the same.
            let after = otc_parser::parse_head(&set.text);
            assert_eq!(&text[head.body_start..], &set.text[after.body_start..], "{}", path.display());
            let mut was = head.frontmatter.and_then(|f| f.value).unwrap();
            was.as_object_mut().unwrap().insert("otc_probe".into(), value.clone());
            assert_eq!(after.frontmatter.and_then(|f| f.value), Some(was), "{}", path.display());
            edited += 1;
            continue;
        }
        // Only the new key's lines were added (after the last key, or in a new block).
        let piece = inserted(&text, &set.text);
        assert!(piece.contains("otc_probe:"), "{}: {piece:?}", path.display());
        let back = edit_frontmatter(&set.text, FrontmatterOp::Remove { key: "otc_probe", nested: false }).unwrap();
        // Removing the last property removes the block, as Obsidian does: a note whose block was
        // empty to begin with comes back without it.
        let empty = head
            .frontmatter
            .as_ref()
            .is_some_and(|f| f.value.as_ref().is_none_or(|v| v.as_object().is_some_and(|m| m.is_empty())));
        let expected = if empty { &text[head.body_start..] } else { text.as_str() };
        assert_eq!(back.text, expected, "{}: set then remove is the identity", path.display());
        edited += 1;
    }
    assert!(edited > 500 && refused < 20, "{edited} edited, {refused} refused");
}

#[test]
fn an_append_under_every_heading_inserts_and_changes_nothing_else() {
    let mut checked = 0;
    for (path, text) in notes() {
        let note = otc_parser::parse(&text);
        let mut seen = std::collections::HashSet::new();
        for (i, heading) in note.headings.iter().enumerate() {
            if !seen.insert(heading.text.to_lowercase()) || heading.text.contains(" > ") {
                continue;
            }
            let occurrence =
                note.headings[..i].iter().filter(|h| h.text.to_lowercase() == heading.text.to_lowercase()).count();
            let target = Target::Heading { heading: heading.text.clone(), occurrence: Some(occurrence as u32 + 1) };
            let out = patch(&text, &note, &target, Op::Append("otc probe line")).unwrap();
            let piece = inserted(&text, &out.text);
            assert!(piece.contains("otc probe line"), "{} # {}: {piece:?}", path.display(), heading.text);
            let again = otc_parser::parse(&out.text);
            assert_eq!(again.headings.len(), note.headings.len(), "{}: no heading gained or lost", path.display());
            checked += 1;
        }
    }
    assert!(checked > 1000, "{checked} headings");
}

#[test]
fn a_tag_added_then_removed_leaves_the_body_and_other_keys_as_they_were() {
    let mut checked = 0;
    for (path, text) in notes() {
        let Ok(added) = add_tag(&text, "otc-probe", TagLocation::Frontmatter) else { continue };
        assert!(added.changed, "{}", path.display());
        let head = otc_parser::parse_head(&text);
        let after = otc_parser::parse_head(&added.text);
        assert_eq!(&text[head.body_start..], &added.text[after.body_start..], "{}: body untouched", path.display());
        let removed = remove_tag(&added.text, "otc-probe", TagLocation::Frontmatter).unwrap();
        let back = otc_parser::parse_head(&removed.text);
        assert_eq!(&removed.text[back.body_start..], &text[head.body_start..], "{}", path.display());
        let (was, now) = (head.frontmatter.and_then(|f| f.value), back.frontmatter.and_then(|f| f.value));
        let strip = |v: Option<serde_json::Value>| {
            let mut map = v.and_then(|v| v.as_object().cloned()).unwrap_or_default();
            map.retain(|k, _| !k.eq_ignore_ascii_case("tags") && !k.eq_ignore_ascii_case("tag"));
            map
        };
        assert_eq!(strip(was), strip(now), "{}: other properties as they were", path.display());
        // Body tags: one added at the end, then removed again.
        match add_tag(&text, "otc-probe", TagLocation::Body) {
            Ok(body) => {
                let piece = inserted(&text, &body.text);
                assert!(piece.contains("#otc-probe"), "{}", path.display());
            }
            // A note that ends inside a code block: a tag appended there would not count.
            Err(e) => assert_eq!(e.details["reason"], "tag_would_be_hidden", "{}: {e:?}", path.display()),
        }
        checked += 1;
    }
    assert!(checked > 500, "{checked}");
}
