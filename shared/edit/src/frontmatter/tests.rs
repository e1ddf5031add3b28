use serde_json::json;

use super::*;

fn set(text: &str, key: &str, value: Value) -> Edited {
    edit_frontmatter(text, FrontmatterOp::Set { key, value: &value, nested: false }).unwrap()
}

fn set_nested(text: &str, key: &str, value: Value) -> Result<Edited, ToolError> {
    edit_frontmatter(text, FrontmatterOp::Set { key, value: &value, nested: true })
}

fn remove(text: &str, key: &str) -> Edited {
    edit_frontmatter(text, FrontmatterOp::Remove { key, nested: false }).unwrap()
}

fn map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => panic!("not an object"),
    }
}

fn reason(err: &ToolError) -> Option<&str> {
    err.details.get("reason").and_then(Value::as_str)
}

const NOTE: &str = "---\n\
# leading comment\n\
title: 'Single quoted'   # keep me\n\
date: 2024-01-05\n\
status: draft\n\
aliases: [\"A\", 'B']\n\
---\n\
Body with #tag and [[Link]].\n";

// ---- set -------------------------------------------------------------------------------------

#[test]
fn set_existing_key_replaces_only_its_line() {
    let out = set(NOTE, "status", json!("done"));
    assert!(out.changed);
    assert_eq!(out.text, NOTE.replace("status: draft", "status: done"));
    assert_eq!(out.frontmatter.unwrap()["status"], "done");
}

#[test]
fn set_missing_key_appends_before_the_closing_line() {
    let out = set(NOTE, "rating", json!(4));
    assert_eq!(out.text, NOTE.replace("'B']\n---", "'B']\nrating: 4\n---"));
}

#[test]
fn set_to_the_same_value_is_a_no_op() {
    let out = set(NOTE, "status", json!("draft"));
    assert!(!out.changed);
    assert_eq!(out.text, NOTE);
    assert_eq!(out.frontmatter.unwrap()["title"], "Single quoted");
}

#[test]
fn keys_compare_case_sensitively() {
    let out = set(NOTE, "Status", json!("x"));
    assert!(out.text.contains("status: draft\n"));
    assert!(out.text.contains("Status: x\n---"));
}

#[test]
fn crlf_notes_stay_crlf() {
    let crlf = NOTE.replace('\n', "\r\n");
    let out = set(&crlf, "status", json!("done"));
    assert_eq!(out.text, crlf.replace("status: draft", "status: done"));
    let out = set(&crlf, "tags", json!(["a", "b"]));
    assert_eq!(out.text, crlf.replace("'B']\r\n---", "'B']\r\ntags:\r\n  - a\r\n  - b\r\n---"));
    assert!(!out.text.replace("\r\n", "").contains('\n'));
    let out = remove(&crlf, "date");
    assert_eq!(out.text, crlf.replace("date: 2024-01-05\r\n", ""));
}

#[test]
fn set_replaces_a_multi_line_value_with_blank_lines_inside() {
    let text = "---\na: |\n  one\n\n  two\n\n# about b\nb: 2\n---\nbody\n";
    let out = set(text, "a", json!("short"));
    assert_eq!(out.text, "---\na: short\n\n# about b\nb: 2\n---\nbody\n");
}

#[test]
fn values_are_written_as_yaml_and_read_back_the_same() {
    let values = [
        json!(["a", "b c", "[[Note]]"]),
        json!({"x": 1, "y": {"z": [true, null]}}),
        json!([[1, 2], {"k": "v", "l": []}, {}]),
        json!(42),
        json!(-7),
        json!(1.5),
        json!(1e100),
        json!(true),
        json!(null),
        json!([]),
        json!({}),
    ];
    for value in values {
        let out = set("---\na: 1\n---\n", "v", value.clone());
        assert_eq!(out.frontmatter.unwrap()["v"], value, "{}", out.text);
    }
    let strings = [
        "yes",
        "No",
        "ON",
        "y",
        "~",
        "null",
        "Null",
        "true",
        "False",
        "123",
        "-5",
        "+5",
        "1.5",
        ".5",
        "0x1F",
        "0o17",
        "1e3",
        "12:30",
        ".inf",
        "-.Inf",
        ".NaN",
        "",
        " lead",
        "trail ",
        "a: b",
        "a #b",
        "a:",
        "#x",
        "[[Note]]",
        "[x]",
        "{x}",
        "&a",
        "*a",
        "!t",
        "|",
        ">",
        "'q",
        "\"q",
        "%p",
        "@at",
        "`b",
        "-dash",
        "?q",
        ":c",
        ",c",
        "multi\nline",
        "tab\there",
        "cr\rx",
        "back\\slash",
        "quo\"te",
        "nul\u{0}x",
        "nel\u{85}x",
        "ls\u{2028}x",
        "bom\u{feff}x",
        "<<",
        "=",
        "plain text",
        "it's",
        "2024-01-05",
        "2024-01-05T10:30",
        "C# and F#",
        "a,b",
        "1st",
        "🚀 launch",
        "über",
    ];
    for s in strings {
        let out = set("---\na: 1\n---\n", "v", json!(s));
        assert_eq!(out.frontmatter.unwrap()["v"], s, "{:?} written as {}", s, out.text);
    }
}

#[test]
fn strings_are_plain_only_when_safe() {
    let line = |s: &str| {
        let out = set("", "v", json!(s));
        out.text.lines().nth(1).unwrap().to_string()
    };
    assert_eq!(line("plain text"), "v: plain text");
    assert_eq!(line("2024-01-05"), "v: 2024-01-05");
    assert_eq!(line("yes"), "v: \"yes\"");
    assert_eq!(line("123"), "v: \"123\"");
    assert_eq!(line("true"), "v: \"true\"");
    assert_eq!(line("null"), "v: \"null\"");
    assert_eq!(line(""), "v: \"\"");
    assert_eq!(line("a: b"), "v: \"a: b\"");
    assert_eq!(line("a #b"), "v: \"a #b\"");
    assert_eq!(line("[[Note]]"), "v: \"[[Note]]\"");
    assert_eq!(line(" x"), "v: \" x\"");
    assert_eq!(line("two\nlines"), "v: \"two\\nlines\"");
    assert_eq!(line("say \"hi\""), "v: say \"hi\"");
    assert_eq!(line("-x"), "v: \"-x\"");
}

#[test]
fn keys_that_need_quoting_are_quoted() {
    let out = set("", "my key", json!(1));
    assert_eq!(out.text, "---\nmy key: 1\n---\n");
    for key in ["a: b", "#k", "true", "123", "- k", "k:", "[k]", "\"k\""] {
        let out = set("", key, json!(1));
        assert!(out.text.starts_with("---\n\""), "{key:?}: {}", out.text);
        assert_eq!(out.frontmatter.unwrap()[key], 1);
    }
}

#[test]
fn empty_keys_and_huge_integers_are_refused() {
    let err = edit_frontmatter(NOTE, FrontmatterOp::Set { key: "", value: &json!(1), nested: false }).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    let err = set_nested(NOTE, "a..b", json!(1)).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    let err =
        edit_frontmatter(NOTE, FrontmatterOp::Set { key: "n", value: &json!(u64::MAX), nested: false }).unwrap_err();
    assert_eq!(reason(&err), Some("number_out_of_range"));
    let out = set(NOTE, "n", json!(i64::MAX));
    assert_eq!(out.frontmatter.unwrap()["n"], i64::MAX);
}

// ---- nested ----------------------------------------------------------------------------------

#[test]
fn nested_set_creates_the_intermediate_mappings() {
    let out = set_nested(NOTE, "meta.author.name", json!("Ann")).unwrap();
    assert_eq!(out.text, NOTE.replace("'B']\n---", "'B']\nmeta:\n  author:\n    name: Ann\n---"));
    assert_eq!(out.frontmatter.unwrap()["meta"], json!({"author": {"name": "Ann"}}));
}

#[test]
fn nested_set_edits_a_block_mapping_in_place() {
    let text = "---\nmeta:\n  # who wrote it\n  author:   Bob  # first\n  year: 2020\n  # trailing\nnext: 1\n---\n";
    let out = set_nested(text, "meta.author", json!("Ann")).unwrap();
    assert_eq!(out.text, text.replace("author:   Bob  # first", "author: Ann"));
    let out = set_nested(text, "meta.place", json!("Oslo")).unwrap();
    assert_eq!(out.text, text.replace("year: 2020\n", "year: 2020\n  place: Oslo\n"));
    let out = set_nested(text, "meta.extra.deep", json!(true)).unwrap();
    assert_eq!(out.text, text.replace("year: 2020\n", "year: 2020\n  extra:\n    deep: true\n"));
}

#[test]
fn nested_set_rewrites_a_flow_mapping_and_fills_a_null() {
    let text = "---\nmeta: {a: 1}\nb: 2\n---\n";
    let out = set_nested(text, "meta.c", json!("x")).unwrap();
    assert_eq!(out.text, "---\nmeta:\n  a: 1\n  c: x\nb: 2\n---\n");
    let text = "---\nmeta:\nb: 2\n---\n";
    let out = set_nested(text, "meta.c", json!("x")).unwrap();
    assert_eq!(out.text, "---\nmeta:\n  c: x\nb: 2\n---\n");
}

#[test]
fn nested_set_through_a_string_is_refused() {
    let err = set_nested(NOTE, "status.x", json!(1)).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert_eq!(reason(&err), Some("not_a_mapping"));
}

#[test]
fn nested_remove() {
    let text = "---\nmeta:\n  a: 1 # one\n  b: 2\nnext: 1\n---\n";
    let out = edit_frontmatter(text, FrontmatterOp::Remove { key: "meta.b", nested: true }).unwrap();
    assert_eq!(out.text, "---\nmeta:\n  a: 1 # one\nnext: 1\n---\n");
    let out = edit_frontmatter(&out.text, FrontmatterOp::Remove { key: "meta.a", nested: true }).unwrap();
    assert_eq!(out.text, "---\nmeta: {}\nnext: 1\n---\n");
    let out = edit_frontmatter(text, FrontmatterOp::Remove { key: "meta.zz", nested: true }).unwrap();
    assert!(!out.changed);
    let out = edit_frontmatter(text, FrontmatterOp::Remove { key: "next.zz", nested: true }).unwrap();
    assert!(!out.changed);
}

#[test]
fn a_dotted_key_is_literal_without_nested() {
    let out = set(NOTE, "a.b", json!(1));
    assert!(out.text.contains("\na.b: 1\n"));
    assert_eq!(out.frontmatter.unwrap()["a.b"], 1);
}

// ---- remove ----------------------------------------------------------------------------------

#[test]
fn remove_a_middle_key_with_a_multi_line_list() {
    let text = "---\na: 1\ntags:\n  - x\n  # old\n  - y\n\n# about b\nb: 2\n---\nbody\n";
    let out = remove(text, "tags");
    assert_eq!(out.text, "---\na: 1\n\n# about b\nb: 2\n---\nbody\n");
    let text = "---\na: 1\nlist:\n- x\n- y\nb: 2\n---\n";
    let out = remove(text, "list");
    assert_eq!(out.text, "---\na: 1\nb: 2\n---\n");
}

#[test]
fn removing_a_missing_key_changes_nothing() {
    let out = remove(NOTE, "nope");
    assert!(!out.changed);
    assert_eq!(out.text, NOTE);
    let out = remove("just a body\n", "nope");
    assert!(!out.changed);
    assert_eq!(out.frontmatter, None);
}

#[test]
fn removing_the_last_key_removes_the_block() {
    let out = remove("---\na: 1\n---\nbody\n", "a");
    assert_eq!(out.text, "body\n");
    assert_eq!(out.frontmatter, None);
    // The body's own `---` block must not become the frontmatter.
    let out = remove("---\na: 1\n---\n---\nb: 2\n---\n", "a");
    assert_eq!(out.text, "---\n---\n---\nb: 2\n---\n");
    assert_eq!(out.frontmatter, Some(Map::new()));
}

// ---- merge and replace -----------------------------------------------------------------------

#[test]
fn merge_sets_each_key_in_order() {
    let props = map(json!({"alpha": "a", "beta": [1, 2], "status": "done", "title": "Single quoted"}));
    let out = edit_frontmatter(NOTE, FrontmatterOp::Merge { properties: &props }).unwrap();
    let expected =
        NOTE.replace("status: draft", "status: done").replace("'B']\n---", "'B']\nalpha: a\nbeta:\n  - 1\n  - 2\n---");
    assert_eq!(out.text, expected);
    // `title` was equal, so its quoting and comment stayed.
    assert!(out.text.contains("title: 'Single quoted'   # keep me\n"));
}

#[test]
fn replace_keeps_equal_keys_and_drops_the_rest() {
    let props = map(json!({"date": "2024-01-05", "status": "done", "zeta": 1}));
    let out = edit_frontmatter(NOTE, FrontmatterOp::Replace { properties: &props }).unwrap();
    assert_eq!(
        out.text,
        "---\n# leading comment\ndate: 2024-01-05\nstatus: done\nzeta: 1\n---\nBody with #tag and [[Link]].\n"
    );
    assert_eq!(out.frontmatter, Some(props));
    let out = edit_frontmatter(NOTE, FrontmatterOp::Replace { properties: &Map::new() }).unwrap();
    assert_eq!(out.text, "Body with #tag and [[Link]].\n");
}

// ---- creating and refusing -------------------------------------------------------------------

#[test]
fn a_note_without_frontmatter_gets_a_block_on_top() {
    let out = set("# Title\nbody\n", "a", json!("x"));
    assert_eq!(out.text, "---\na: x\n---\n# Title\nbody\n");
    let out = set("# Title\r\nbody\r\n", "a", json!("x"));
    assert_eq!(out.text, "---\r\na: x\r\n---\r\n# Title\r\nbody\r\n");
    let out = set("", "a", json!(1));
    assert_eq!(out.text, "---\na: 1\n---\n");
    // An unclosed `---` is body, kept after the new block.
    let out = set("---\nnot closed\n", "a", json!(1));
    assert_eq!(out.text, "---\na: 1\n---\n---\nnot closed\n");
    let props = map(json!({"a": 1, "b": 2}));
    let out = edit_frontmatter("body", FrontmatterOp::Merge { properties: &props }).unwrap();
    assert_eq!(out.text, "---\na: 1\nb: 2\n---\nbody");
}

#[test]
fn an_empty_block_gets_its_first_key() {
    let out = set("---\n---\nbody\n", "a", json!(1));
    assert_eq!(out.text, "---\na: 1\n---\nbody\n");
    let out = set("---\n# only a comment\n---\nbody\n", "a", json!(1));
    assert_eq!(out.text, "---\n# only a comment\na: 1\n---\nbody\n");
}

#[test]
fn unparseable_frontmatter_is_refused() {
    for text in [
        "---\na: [1, 2\n---\nbody\n",
        "---\na: 1\na: 2\n---\n",
        "---\n- a\n- b\n---\n",
        "---\njust a string\n---\n",
        "---\na: b: c\n---\n",
    ] {
        let err = edit_frontmatter(text, FrontmatterOp::Set { key: "x", value: &json!(1), nested: false }).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput, "{text:?}");
        assert_eq!(reason(&err), Some("frontmatter_unparseable"), "{text:?}");
        let err = edit_frontmatter(text, FrontmatterOp::Remove { key: "a", nested: false }).unwrap_err();
        assert_eq!(reason(&err), Some("frontmatter_unparseable"));
        let err = add_tag(text, "t", TagLocation::Frontmatter).unwrap_err();
        assert_eq!(reason(&err), Some("frontmatter_unparseable"));
        let err = remove_tag(text, "t", TagLocation::Both).unwrap_err();
        assert_eq!(reason(&err), Some("frontmatter_unparseable"));
    }
}

#[test]
fn a_flow_style_block_is_rewritten_whole() {
    let out = set("---\n{a: 1, b: [x]}\n---\nbody\n", "c", json!(true));
    assert_eq!(out.text, "---\na: 1\nb:\n  - x\nc: true\n---\nbody\n");
}

#[test]
fn the_closing_dots_and_a_missing_final_newline_are_kept() {
    let out = set("---\na: 1\n...\nbody", "b", json!(2));
    assert_eq!(out.text, "---\na: 1\nb: 2\n...\nbody");
    let out = set("---\na: 1\n---", "b", json!(2));
    assert_eq!(out.text, "---\na: 1\nb: 2\n---");
}

#[test]
fn non_ascii_keys_and_values() {
    let text = "---\nnäme: \"Zoë\"\nété: [à, b]\n---\n";
    let out = set(text, "été", json!(["à", "ç"]));
    assert_eq!(out.text, "---\nnäme: \"Zoë\"\nété:\n  - à\n  - ç\n---\n");
    let out = add_tag(text, "ñ", TagLocation::Frontmatter).unwrap();
    assert_eq!(out.text, "---\nnäme: \"Zoë\"\nété: [à, b]\ntags:\n  - ñ\n---\n");
}

// ---- tags: normalize -------------------------------------------------------------------------

#[test]
fn normalize_tag_rules() {
    assert_eq!(normalize_tag("#Project/Alpha").unwrap(), "Project/Alpha");
    assert_eq!(normalize_tag("  tag_1-x ").unwrap(), "tag_1-x");
    assert_eq!(normalize_tag("été").unwrap(), "été");
    assert_eq!(normalize_tag("🚀").unwrap(), "🚀");
    assert_eq!(normalize_tag("y2024").unwrap(), "y2024");
    for bad in ["", "#", "  ", "two words", "1234", "#1234", "/lead", "trail/", "a.b", "a#b", "##x", "a,b", "a!", "# x"]
    {
        let err = normalize_tag(bad).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput, "{bad:?}");
        assert_eq!(err.details["field"], "tag");
    }
}

// ---- tags: frontmatter add -------------------------------------------------------------------

fn add_fm(text: &str, tag: &str) -> TagEdit {
    add_tag(text, tag, TagLocation::Frontmatter).unwrap()
}

fn remove_fm(text: &str, tag: &str) -> TagEdit {
    remove_tag(text, tag, TagLocation::Frontmatter).unwrap()
}

#[test]
fn add_to_an_indented_block_list() {
    let text = "---\ntitle: x\ntags:\n  - a\n  - b # second\nnext: 1\n---\nbody\n";
    let out = add_fm(text, "#new");
    assert!(out.changed && out.frontmatter_changed);
    assert_eq!(out.body_changed, 0);
    assert_eq!(out.text, text.replace("  - b # second\n", "  - b # second\n  - new\n"));
}

#[test]
fn add_to_a_column_zero_block_list() {
    let text = "---\ntags:\n- a\n-   b\n---\n";
    let out = add_fm(text, "c");
    assert_eq!(out.text, "---\ntags:\n- a\n-   b\n-   c\n---\n");
}

#[test]
fn add_to_a_flow_list() {
    assert_eq!(add_fm("---\ntags: [a, b]\n---\n", "c").text, "---\ntags: [a, b, c]\n---\n");
    assert_eq!(add_fm("---\ntags: [ a, b ]\nx: 1\n---\n", "c").text, "---\ntags: [ a, b, c ]\nx: 1\n---\n");
    assert_eq!(add_fm("---\ntags: [a, b,]\n---\n", "c").text, "---\ntags: [a, b, c]\n---\n");
    assert_eq!(add_fm("---\ntags: [\"a\"]\n---\n", "-x").text, "---\ntags: [\"a\", \"-x\"]\n---\n");
}

#[test]
fn add_to_a_string_value_makes_a_block_list() {
    let text = "---\ntags: \"a, #b\"\nafter: 1\n---\n";
    assert_eq!(add_fm(text, "c").text, "---\ntags:\n  - a\n  - b\n  - c\nafter: 1\n---\n");
    assert_eq!(add_fm("---\ntags: a b\n---\n", "c").text, "---\ntags:\n  - a\n  - b\n  - c\n---\n");
}

#[test]
fn add_uses_the_key_that_is_there() {
    assert_eq!(add_fm("---\ntag: a\n---\n", "b").text, "---\ntag:\n  - a\n  - b\n---\n");
    assert_eq!(add_fm("---\nTags:\n  - a\n---\n", "b").text, "---\nTags:\n  - a\n  - b\n---\n");
}

#[test]
fn add_to_a_missing_or_empty_value() {
    assert_eq!(add_fm("---\ntitle: x\n---\nbody\n", "a").text, "---\ntitle: x\ntags:\n  - a\n---\nbody\n");
    assert_eq!(add_fm("---\ntags:\nx: 1\n---\n", "a").text, "---\ntags:\n  - a\nx: 1\n---\n");
    assert_eq!(add_fm("---\ntags: []\n---\n", "a").text, "---\ntags:\n  - a\n---\n");
    assert_eq!(add_fm("---\ntags: \"\"\n---\n", "a").text, "---\ntags:\n  - a\n---\n");
    assert_eq!(add_fm("body\n", "a").text, "---\ntags:\n  - a\n---\nbody\n");
    let both = add_tag("body\n", "a", TagLocation::Both).unwrap();
    assert_eq!(both.text, "---\ntags:\n  - a\n---\nbody\n");
}

#[test]
fn adding_a_tag_already_there_is_a_no_op() {
    for text in ["---\ntags: [Foo]\n---\n", "---\ntags:\n  - \"#foo\"\n---\n", "---\ntag: foo bar\n---\n"] {
        let out = add_fm(text, "FOO");
        assert!(!out.changed, "{text}");
        assert_eq!(out.text, text);
    }
}

#[test]
fn add_refuses_a_tags_value_that_is_not_a_list() {
    let err = add_tag("---\ntags: {a: 1}\n---\n", "x", TagLocation::Frontmatter).unwrap_err();
    assert_eq!(reason(&err), Some("tags_not_a_list"));
}

#[test]
fn add_in_crlf() {
    let text = "---\r\ntags:\r\n  - a\r\n---\r\nbody\r\n";
    assert_eq!(add_fm(text, "b").text, "---\r\ntags:\r\n  - a\r\n  - b\r\n---\r\nbody\r\n");
}

// ---- tags: frontmatter remove ----------------------------------------------------------------

#[test]
fn remove_from_a_block_list() {
    let text = "---\ntags:\n  - a\n  - \"#B\"\n  - c\nx: 1\n---\nbody #b\n";
    let out = remove_fm(text, "b");
    assert!(out.frontmatter_changed);
    assert_eq!(out.body_changed, 0);
    assert_eq!(out.text, "---\ntags:\n  - a\n  - c\nx: 1\n---\nbody #b\n");
    let text = "---\ntags:\n- a\n- b\n---\n";
    assert_eq!(remove_fm(text, "a").text, "---\ntags:\n- b\n---\n");
}

#[test]
fn remove_from_a_flow_list() {
    assert_eq!(remove_fm("---\ntags: [a, b, c]\n---\n", "a").text, "---\ntags: [b, c]\n---\n");
    assert_eq!(remove_fm("---\ntags: [a, b, c]\n---\n", "b").text, "---\ntags: [a, c]\n---\n");
    assert_eq!(remove_fm("---\ntags: [a, b, c]\n---\n", "C").text, "---\ntags: [a, b]\n---\n");
    assert_eq!(remove_fm("---\ntags: [ a, \"b\" ]\n---\n", "b").text, "---\ntags: [ a ]\n---\n");
    assert_eq!(remove_fm("---\ntags: [b, a, B]\n---\n", "b").text, "---\ntags: [a]\n---\n");
}

#[test]
fn remove_from_a_string_value() {
    assert_eq!(remove_fm("---\ntags: a, b, c\n---\n", "b").text, "---\ntags:\n  - a\n  - c\n---\n");
}

#[test]
fn removing_the_last_tag_removes_the_key() {
    assert_eq!(remove_fm("---\ntags: [a]\nx: 1\n---\nbody\n", "a").text, "---\nx: 1\n---\nbody\n");
    assert_eq!(remove_fm("---\nx: 1\ntag: a\n---\nbody\n", "a").text, "---\nx: 1\n---\nbody\n");
    // ...and the block when it was the only key.
    assert_eq!(remove_fm("---\ntags:\n  - a\n---\nbody\n", "a").text, "body\n");
}

#[test]
fn remove_from_every_tags_key() {
    let text = "---\ntag: a\nTags: [a, b]\n---\n";
    let out = remove_fm(text, "A");
    assert_eq!(out.text, "---\nTags: [b]\n---\n");
}

#[test]
fn removing_a_tag_that_is_not_there_changes_nothing() {
    let text = "---\ntags: [a]\n---\nbody #b\n";
    let out = remove_fm(text, "b");
    assert!(!out.changed);
    assert_eq!(out.text, text);
}

// ---- tags: body ------------------------------------------------------------------------------

#[test]
fn add_to_the_body_appends_a_line() {
    let out = add_tag("---\na: 1\n---\ntext\n", "new", TagLocation::Body).unwrap();
    assert_eq!(out.text, "---\na: 1\n---\ntext\n#new\n");
    assert_eq!((out.changed, out.frontmatter_changed, out.body_changed), (true, false, 1));
    assert_eq!(add_tag("text", "new", TagLocation::Body).unwrap().text, "text\n#new");
    assert_eq!(add_tag("text\r\n", "new", TagLocation::Body).unwrap().text, "text\r\n#new\r\n");
    assert_eq!(add_tag("", "new", TagLocation::Body).unwrap().text, "#new\n");
    assert_eq!(add_tag("---\na: 1\n---", "new", TagLocation::Body).unwrap().text, "---\na: 1\n---\n#new");
}

#[test]
fn add_to_the_body_is_a_no_op_when_the_tag_is_inline() {
    let out = add_tag("text #New\n", "new", TagLocation::Body).unwrap();
    assert!(!out.changed);
    assert_eq!(out.body_changed, 0);
}

#[test]
fn add_to_the_body_refuses_a_note_ending_in_code() {
    let err = add_tag("text\n```\ncode\n", "new", TagLocation::Body).unwrap_err();
    assert_eq!(reason(&err), Some("tag_would_be_hidden"));
}

#[test]
fn body_edits_work_when_the_yaml_does_not() {
    let text = "---\na: [1\n---\ntext #old\n";
    let out = add_tag(text, "new", TagLocation::Body).unwrap();
    assert_eq!(out.text, "---\na: [1\n---\ntext #old\n#new\n");
    let out = remove_tag(text, "old", TagLocation::Body).unwrap();
    assert_eq!(out.text, "---\na: [1\n---\ntext\n");
}

#[test]
fn remove_from_the_body_leaves_code_nested_and_longer_tags() {
    let text = "\
Intro #tag here.
#tag
- item #tag #other
```
#tag in code
```
Some `#tag` inline code and #tag/child and #tagger and #TAG.
<!-- #tag in a comment -->
[[Note#tag]] and x#tag
";
    let out = remove_tag(text, "tag", TagLocation::Body).unwrap();
    assert_eq!(
        out.text,
        "\
Intro here.
- item #other
```
#tag in code
```
Some `#tag` inline code and #tag/child and #tagger and.
<!-- #tag in a comment -->
[[Note#tag]] and x#tag
"
    );
    assert_eq!(out.body_changed, 4);
    assert!(!out.frontmatter_changed);
}

#[test]
fn remove_from_the_body_handles_line_starts_crlf_and_repeats() {
    let out = remove_tag("#tag first\r\n  #tag  \r\nlast #tag", "tag", TagLocation::Body).unwrap();
    assert_eq!(out.text, "first\r\nlast");
    let out = remove_tag("a #t #T b\n", "t", TagLocation::Body).unwrap();
    assert_eq!(out.text, "a b\n");
    assert_eq!(out.body_changed, 2);
    let out = remove_tag("# Heading #t\ntext\n", "t", TagLocation::Body).unwrap();
    assert_eq!(out.text, "# Heading\ntext\n");
}

#[test]
fn remove_both_places() {
    let text = "---\ntags: [a, b]\n---\ntext #a\n";
    let out = remove_tag(text, "#a", TagLocation::Both).unwrap();
    assert_eq!(out.text, "---\ntags: [b]\n---\ntext\n");
    assert_eq!((out.changed, out.frontmatter_changed, out.body_changed), (true, true, 1));
}

#[test]
fn tag_edits_leave_the_other_keys_byte_for_byte() {
    let text = "---\n# c1\ntitle:   \"x\"  # c2\ntags: [a]\nlinks: \"[[Other]]\"\n---\n";
    let out = add_fm(text, "b");
    assert_eq!(out.text, "---\n# c1\ntitle:   \"x\"  # c2\ntags: [a, b]\nlinks: \"[[Other]]\"\n---\n");
    let out = remove_fm(&out.text, "a");
    assert_eq!(out.text, "---\n# c1\ntitle:   \"x\"  # c2\ntags: [b]\nlinks: \"[[Other]]\"\n---\n");
}

// ---- fallbacks and proof ---------------------------------------------------------------------

#[test]
fn an_edit_that_breaks_an_alias_re_emits_the_block() {
    let text = "---\nbase: &b 1\nother: *b\n---\nbody\n";
    let out = remove(text, "base");
    assert_eq!(out.text, "---\nother: 1\n---\nbody\n");
    assert_eq!(out.frontmatter.unwrap(), map(json!({"other": 1})));
}

#[test]
fn keys_the_parser_cannot_place_re_emit_the_block() {
    // An anchor before a key puts its mark after the line's start.
    let text = "---\n&k a: 1\nb: 2\n---\n";
    let out = set(text, "c", json!(3));
    assert_eq!(out.text, "---\na: 1\nb: 2\nc: 3\n---\n");
    let text = "---\n? complex\n: 1\n---\n";
    let out = set(text, "c", json!(3));
    assert_eq!(out.frontmatter.unwrap(), map(json!({"complex": 1, "c": 3})));
}

#[test]
fn the_proof_refuses_a_text_that_reads_otherwise() {
    let old = "---\na: 1\n---\nbody\n";
    let start = parse_head(old).body_start;
    let err = prove(old, start, "---\na: 2\n---\nbody\n".to_string(), &map(json!({"a": 1}))).unwrap_err();
    assert_eq!(err.code, ErrorCode::InternalError);
    let err = prove(old, start, "---\na: 1\n---\nBODY\n".to_string(), &map(json!({"a": 1}))).unwrap_err();
    assert_eq!(err.code, ErrorCode::InternalError);
    let err = prove(old, start, "---\na: [1\n---\nbody\n".to_string(), &map(json!({"a": 1}))).unwrap_err();
    assert_eq!(err.code, ErrorCode::InternalError);
    assert!(prove(old, start, "---\na:   1 # x\n---\nbody\n".to_string(), &map(json!({"a": 1}))).is_ok());
}

#[test]
fn nested_values_are_emitted_in_block_style() {
    let value = json!({"list": [{"a": 1, "b": "x y"}, [1, 2], []], "empty": {}});
    let out = set("", "v", value.clone());
    assert_eq!(
        out.text,
        "---\nv:\n  empty: {}\n  list:\n    - a: 1\n      b: x y\n    - - 1\n      - 2\n    - []\n---\n"
    );
    assert_eq!(out.frontmatter.unwrap()["v"], value);
}

#[test]
fn removing_the_last_key_drops_the_comments_with_the_block() {
    let out = remove("---\n# about a\na: 1\n# end\n---\nbody", "a");
    assert_eq!(out.text, "body");
}

#[test]
fn replace_on_a_note_without_frontmatter_creates_one() {
    let props = map(json!({"a": [1], "b": "two"}));
    let out = edit_frontmatter("body\n", FrontmatterOp::Replace { properties: &props }).unwrap();
    assert_eq!(out.text, "---\na:\n  - 1\nb: two\n---\nbody\n");
    let out = edit_frontmatter("body\n", FrontmatterOp::Replace { properties: &Map::new() }).unwrap();
    assert!(!out.changed);
}

#[test]
fn a_key_line_comment_goes_with_the_value_it_described() {
    let text = "---\na: 1 # old value\nb: 2 # stays\n---\n";
    let out = set(text, "a", json!(5));
    assert_eq!(out.text, "---\na: 5\nb: 2 # stays\n---\n");
}

#[test]
fn multi_line_plain_and_quoted_values_are_one_region() {
    let text = "---\na: one\n  two\nq: \"x\n  y\"\nz: 1\n---\n";
    let out = remove(text, "a");
    assert_eq!(out.text, "---\nq: \"x\n  y\"\nz: 1\n---\n");
    let out = set(text, "q", json!("new"));
    assert_eq!(out.text, "---\na: one\n  two\nq: new\nz: 1\n---\n");
}

#[test]
fn indented_top_level_keys_keep_their_indentation() {
    let text = "---\n  a: 1\n  b: 2\n---\n";
    let out = set(text, "c", json!(3));
    assert_eq!(out.text, "---\n  a: 1\n  b: 2\n  c: 3\n---\n");
}

// ---- sweep -----------------------------------------------------------------------------------

const OBSIDIAN: &str = "---
# properties
aliases:
  - One
  - \"Two: 2\"
tags:
  - a
  - b/c
created: 2024-01-05T10:30
cssclasses: []
rating: 4.5
published: true
link: \"[[Other]]\"
desc: >-
  folded
  text

# nested
meta:
  a: 1
  b:
    c: [x, y]
  # inner
list:
- 1
- 2
# trailing
---
# Heading
Body #a with [[Link]] and a ^block

- [ ] task #b/c
";

#[test]
fn every_key_can_be_set_and_removed_in_place() {
    let crlf = OBSIDIAN.replace('\n', "\r\n");
    for text in [OBSIDIAN, crlf.as_str(), NOTE] {
        let comments: Vec<&str> = text.lines().filter(|l| l.starts_with('#') && !l.starts_with("# Heading")).collect();
        let keys: Vec<String> =
            parse_head(text).frontmatter.unwrap().value.unwrap().as_object().unwrap().keys().cloned().collect();
        let values = [json!("new value"), json!([1, "two"]), json!({"k": "v"}), json!(null), json!("[[X]]")];
        for key in keys.iter().map(String::as_str).chain(["missing", "meta.a", "meta.b.c", "meta.z.y"]) {
            let nested = key.contains('.');
            for value in &values {
                let out = edit_frontmatter(text, FrontmatterOp::Set { key, value, nested })
                    .unwrap_or_else(|e| panic!("set {key}: {e}"));
                for comment in &comments {
                    assert!(out.text.contains(comment), "set {key} lost {comment:?}:\n{}", out.text);
                }
                assert!(!out.text.replace("\r\n", "").contains('\r'));
                if text.contains("\r\n") {
                    assert!(!out.text.replace("\r\n", "").contains('\n'), "set {key} mixed line endings");
                }
            }
            let out = edit_frontmatter(text, FrontmatterOp::Remove { key, nested })
                .unwrap_or_else(|e| panic!("remove {key}: {e}"));
            for comment in &comments {
                assert!(out.text.contains(comment), "remove {key} lost {comment:?}:\n{}", out.text);
            }
        }
        for (tag, location) in [("a", TagLocation::Both), ("b/c", TagLocation::Both), ("new", TagLocation::Frontmatter)]
        {
            let out = remove_tag(text, tag, location).unwrap();
            for comment in &comments {
                assert!(out.text.contains(comment), "remove tag {tag} lost {comment:?}:\n{}", out.text);
            }
            let out = add_tag(text, tag, location).unwrap();
            for comment in &comments {
                assert!(out.text.contains(comment), "add tag {tag} lost {comment:?}:\n{}", out.text);
            }
            add_tag(text, tag, TagLocation::Body).unwrap();
        }
    }
}

#[test]
fn obsidian_tags_add_and_remove_exactly() {
    let out = add_tag(OBSIDIAN, "new", TagLocation::Frontmatter).unwrap();
    assert_eq!(out.text, OBSIDIAN.replace("  - b/c\n", "  - b/c\n  - new\n"));
    let out = remove_tag(OBSIDIAN, "A", TagLocation::Both).unwrap();
    assert_eq!(out.text, OBSIDIAN.replace("  - a\n", "").replace("Body #a with", "Body with"));
    assert_eq!((out.frontmatter_changed, out.body_changed), (true, 1));
    let out = remove_tag(OBSIDIAN, "b/c", TagLocation::Body).unwrap();
    assert_eq!(out.text, OBSIDIAN.replace("- [ ] task #b/c", "- [ ] task"));
}
