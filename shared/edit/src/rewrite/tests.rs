use super::*;

/// Runs `plan_note` for a note at `source` (moved to `source_after`, or staying) in a vault
/// holding `paths`, with `moves` applied, and checks the invariant and the byte rule on success.
fn plan_moved(text: &str, source: &str, paths: &[&str], moves: &[(&str, &str)]) -> Result<Option<Rewrite>, Refusal> {
    let moves: Vec<Moved> = moves.iter().map(|(from, to)| Moved { from, to }).collect();
    let map = |p: &str| -> String { moves.iter().find(|m| m.from == p).map_or(p.to_string(), |m| m.to.to_string()) };
    let source_after = map(source);
    let before = Resolver::new(paths.iter().copied());
    let after = Resolver::new(paths.iter().map(|p| map(p)));
    let result = plan_note(text, source, &source_after, &before, &after, &moves);
    if let Ok(Some(rewrite)) = &result {
        // The invariant: every link that resolved before resolves to where its file went.
        let old = parse(text);
        let new = parse(&rewrite.text);
        assert_eq!(old.links.len(), new.links.len());
        for (was, now) in old.links.iter().zip(&new.links) {
            if was.target.is_empty() {
                continue;
            }
            if let Some(p) = before.resolve(&was.target, source) {
                assert_eq!(
                    after.resolve(&now.target, &source_after),
                    Some(map(p).as_str()),
                    "{} became {}",
                    was.raw,
                    now.raw
                );
            }
        }
        assert_only_links_changed(text, rewrite);
    }
    result
}

fn plan(text: &str, source: &str, paths: &[&str], moves: &[(&str, &str)]) -> Option<Rewrite> {
    plan_moved(text, source, paths, moves).unwrap_or_else(|r| panic!("refused: {r:?}"))
}

/// The new text is the old one with each changed link's raw text replaced, and nothing else.
fn assert_only_links_changed(text: &str, rewrite: &Rewrite) {
    let old = parse(text);
    let mut expected = String::new();
    let mut at = 0;
    let mut changes = rewrite.links.iter().peekable();
    for link in &old.links {
        let Some(change) = changes.peek() else { break };
        if change.line == link.span.start.line && change.before == link.raw {
            // A link inside one already replaced (`[![img](x.png)](y.md)`) changed with it.
            if link.span.start.offset >= at {
                expected.push_str(&text[at..link.span.start.offset]);
                expected.push_str(&change.after);
                at = link.span.end.offset;
            }
            changes.next();
        }
    }
    assert!(changes.next().is_none(), "every change matches a link");
    expected.push_str(&text[at..]);
    assert_eq!(expected, rewrite.text);
}

fn new_text(text: &str, source: &str, paths: &[&str], moves: &[(&str, &str)]) -> String {
    plan(text, source, paths, moves).expect("something changes").text
}

#[test]
fn wikilinks_bare_alias_heading_block_and_embed_keep_everything_but_the_target() {
    let text = "See [[Old]], [[old|the old one]], [[Old#Intro]], [[Old#^abc-1]], ![[Old]] and [[ Old | spaced ]].\n";
    let paths = ["A/Old.md", "Other.md", "n.md"];
    let rewrite = plan(text, "n.md", &paths, &[("A/Old.md", "A/New.md")]).unwrap();
    assert_eq!(
        rewrite.text,
        "See [[New]], [[New|the old one]], [[New#Intro]], [[New#^abc-1]], ![[New]] and [[ New | spaced ]].\n"
    );
    assert_eq!(rewrite.links.len(), 6);
    assert_eq!(
        rewrite.links[0],
        ChangedLink { line: 0, before: "[[Old]]".into(), after: "[[New]]".into(), kind: LinkKind::Body }
    );
    assert_eq!(rewrite.links[4].kind, LinkKind::Embed);
    assert_eq!(rewrite.links[4].after, "![[New]]");
}

#[test]
fn path_links_keep_their_path_form_and_extension_style() {
    let text = "[[A/Old]] [[A/Old.md|x]] [[/A/Old#H]] [[Old.md]]\n";
    let paths = ["A/Old.md", "n.md"];
    assert_eq!(
        new_text(text, "n.md", &paths, &[("A/Old.md", "B/New.md")]),
        "[[B/New]] [[B/New.md|x]] [[/B/New#H]] [[New.md]]\n"
    );
}

#[test]
fn a_relative_wikilink_stays_relative() {
    let text = "[[../A/Old]] and [[./Near]]\n";
    let paths = ["A/Old.md", "Z/Near.md", "Z/n.md"];
    assert_eq!(
        new_text(text, "Z/n.md", &paths, &[("A/Old.md", "B/C/New.md"), ("Z/Near.md", "Z/Far.md")]),
        "[[../B/C/New]] and [[./Far]]\n"
    );
}

#[test]
fn a_table_escaped_pipe_is_kept() {
    let text = "| col | link |\n| --- | --- |\n| a | [[Old\\|alias]] |\n| b | ![[pic.png\\|100]] |\n";
    let paths = ["Old.md", "img/pic.png", "n.md"];
    let rewrite = plan(text, "n.md", &paths, &[("Old.md", "Dir/New.md"), ("img/pic.png", "img/photo.png")]).unwrap();
    assert_eq!(rewrite.text, "| col | link |\n| --- | --- |\n| a | [[New\\|alias]] |\n| b | ![[photo.png\\|100]] |\n");
    assert_eq!(rewrite.links[0].line, 2);
}

#[test]
fn attachments_keep_their_extension_and_size_alias() {
    let text = "![[pic.png|100]] ![[img/pic.png]] [[doc.pdf#page=3]]\n";
    let paths = ["img/pic.png", "doc.pdf", "n.md"];
    assert_eq!(
        new_text(text, "n.md", &paths, &[("img/pic.png", "media/photo.png"), ("doc.pdf", "files/doc.pdf")]),
        "![[photo.png|100]] ![[media/photo.png]] [[doc.pdf#page=3]]\n",
        "doc.pdf still resolves by name, so that link is left alone"
    );
}

#[test]
fn markdown_links_are_percent_encoded_and_keep_their_heading() {
    let text = "[one](A/My%20Old.md) [two](A/My%20Old.md#Some%20Head) ![img](img/a%20b.png) [three](A/My%20Old)\n";
    let paths = ["A/My Old.md", "img/a b.png", "n.md"];
    assert_eq!(
        new_text(text, "n.md", &paths, &[("A/My Old.md", "B/My New 100%.md"), ("img/a b.png", "img/c d.png")]),
        "[one](B/My%20New%20100%25.md) [two](B/My%20New%20100%25.md#Some%20Head) ![img](img/c%20d.png) [three](B/My%20New%20100%25)\n"
    );
}

#[test]
fn markdown_links_in_angle_brackets_and_with_titles() {
    let text = "[a](<A/My Old.md>) [b](A/Old.md \"title (x)\") [c](A/Old.md 'single')\n";
    let paths = ["A/My Old.md", "A/Old.md", "n.md"];
    assert_eq!(
        new_text(text, "n.md", &paths, &[("A/My Old.md", "B/Mine.md"), ("A/Old.md", "B/New (draft.md")]),
        "[a](<B/Mine.md>) [b](B/New%20%28draft.md \"title (x)\") [c](B/New%20%28draft.md 'single')\n"
    );
}

#[test]
fn a_relative_markdown_link_is_written_relative_to_the_note() {
    let text = "[up](../A/Old.md) [here](./Sib.md#Part)\n";
    let paths = ["A/Old.md", "Z/Sib.md", "Z/n.md"];
    assert_eq!(
        new_text(text, "Z/n.md", &paths, &[("A/Old.md", "A/B/New.md"), ("Z/Sib.md", "Y/Sib.md")]),
        "[up](../A/B/New.md) [here](../Y/Sib.md#Part)\n"
    );
}

#[test]
fn the_moved_notes_own_relative_links_follow_it() {
    let text = "[root](../Other.md) [sib](./Sib.md) [[Sib]] [[#Local]] [[Old#Self]]\n";
    let paths = ["A/Old.md", "A/Sib.md", "Other.md"];
    let rewrite = plan(text, "A/Old.md", &paths, &[("A/Old.md", "A/B/New.md")]).unwrap();
    assert_eq!(rewrite.text, "[root](../../Other.md) [sib](../Sib.md) [[Sib]] [[#Local]] [[New#Self]]\n");
    assert_eq!(rewrite.links.len(), 3);
}

#[test]
fn a_nested_image_link_can_change_inside_and_out() {
    let text = "[![badge](A/pic.png)](A/Old.md) after\n";
    let paths = ["A/pic.png", "A/Old.md", "n.md"];
    assert_eq!(
        new_text(text, "n.md", &paths, &[("A/pic.png", "B/pic2.png"), ("A/Old.md", "B/New.md")]),
        "[![badge](B/pic2.png)](B/New.md) after\n"
    );
    // Only the inner one.
    assert_eq!(
        new_text(text, "n.md", &paths, &[("A/pic.png", "B/pic2.png")]),
        "[![badge](B/pic2.png)](A/Old.md) after\n"
    );
}

#[test]
fn property_links_keep_their_quotes_alias_and_heading() {
    let text = "---\nauthor: \"[[Old]]\"\nrelated:\n  - \"[[Old|Alias]]\"\n  - '[[A/Old#Head]]'\nnested:\n  deep: \"x [[Old]] y\"\nplain: see [[Old|x]]\ntags: [a]\n---\nBody [[Old]]\n";
    let paths = ["A/Old.md", "n.md"];
    let rewrite = plan(text, "n.md", &paths, &[("A/Old.md", "B/New.md")]).unwrap();
    assert_eq!(
        rewrite.text,
        "---\nauthor: \"[[New]]\"\nrelated:\n  - \"[[New|Alias]]\"\n  - '[[B/New#Head]]'\nnested:\n  deep: \"x [[New]] y\"\nplain: see [[New|x]]\ntags: [a]\n---\nBody [[New]]\n"
    );
    let kinds: Vec<LinkKind> = rewrite.links.iter().map(|l| l.kind).collect();
    assert_eq!(kinds[..5], [LinkKind::Property; 5]);
    assert_eq!(kinds[5], LinkKind::Body);
    assert_eq!(rewrite.links[2].line, 4);
}

#[test]
fn property_links_refuse_what_would_break_their_yaml_quoting() {
    let paths = ["A/Old.md", "n.md"];
    let moves = [("A/Old.md", "B/Hitchhiker's Guide.md")];
    // Double quotes hold an apostrophe; single quotes do not.
    let ok = "---\nrelated: \"[[Old]]\"\n---\n";
    assert_eq!(new_text(ok, "n.md", &paths, &moves), "---\nrelated: \"[[Hitchhiker's Guide]]\"\n---\n");
    let single = "---\nrelated: '[[Old]]'\n---\n";
    let refusal = plan_moved(single, "n.md", &paths, &moves).unwrap_err();
    assert_eq!(refusal.target, "Hitchhiker's Guide");
    assert_eq!(refusal.line, 1);
    assert!(refusal.reason.contains("YAML"), "{}", refusal.reason);
    // A plain scalar is judged conservatively: a comma could end it in a flow list.
    let plain = "---\nrelated: see [[Old]]\n---\n";
    let refusal = plan_moved(plain, "n.md", &paths, &[("A/Old.md", "B/Smith, John.md")]).unwrap_err();
    assert!(refusal.reason.contains("YAML"), "{}", refusal.reason);
    // Non-ASCII before the link does not confuse where the scalar starts.
    let unicode = "---\nnäme: ünïcødé\nrelated: '[[Old]]'\n---\n";
    assert!(plan_moved(unicode, "n.md", &paths, &moves).is_err());
    assert_eq!(
        new_text(unicode, "n.md", &paths, &[("A/Old.md", "B/New.md")]),
        "---\nnäme: ünïcødé\nrelated: '[[New]]'\n---\n"
    );
}

#[test]
fn a_move_that_would_capture_a_bare_link_rewrites_it_to_its_path() {
    // [[Name]] meant X/Name.md; a note moved to the root as Name.md would win the bare name.
    let text = "[[Name]] and [[Other]] and [[Name|n]]\n";
    let paths = ["X/Name.md", "Y/Other.md", "Notes/n.md"];
    let rewrite = plan(text, "Notes/n.md", &paths, &[("Y/Other.md", "Name.md")]).unwrap();
    assert_eq!(rewrite.text, "[[X/Name]] and [[Name]] and [[X/Name|n]]\n");
}

#[test]
fn a_path_through_a_folder_with_a_hash_falls_back_to_the_unique_name() {
    let text = "[[A/Old]] [[A/Old#Part]]\n";
    let paths = ["A/Old.md", "C#/x.md", "n.md"];
    assert_eq!(new_text(text, "n.md", &paths, &[("A/Old.md", "C#/Note.md")]), "[[Note]] [[Note#Part]]\n");
    // When the name is not unique, nothing can be written: refused.
    let paths = ["A/Old.md", "C#/x.md", "Z/Note.md", "n.md"];
    let refusal = plan_moved(text, "n.md", &paths, &[("A/Old.md", "C#/Note.md")]).unwrap_err();
    assert_eq!(refusal.target, "C#/Note");
    assert!(refusal.reason.contains('#'), "{}", refusal.reason);
}

#[test]
fn a_close_paren_refuses_a_markdown_link_but_not_a_wikilink() {
    let paths = ["Report.md", "n.md"];
    let moves = [("Report.md", "Report (final).md")];
    assert_eq!(
        new_text("[[Report]] ![[Report#Sum]]\n", "n.md", &paths, &moves),
        "[[Report (final)]] ![[Report (final)#Sum]]\n"
    );
    let refusal = plan_moved("[[Report]]\n\n[the report](Report.md)\n", "n.md", &paths, &moves).unwrap_err();
    assert_eq!(refusal.target, "Report (final).md");
    assert_eq!(refusal.line, 2);
    assert!(refusal.reason.contains("')'"), "{}", refusal.reason);
}

#[test]
fn a_reference_style_markdown_link_is_refused() {
    let text = "See [the note][ref].\n\n[ref]: A/Old.md\n";
    let paths = ["A/Old.md", "n.md"];
    let refusal = plan_moved(text, "n.md", &paths, &[("A/Old.md", "B/New.md")]).unwrap_err();
    assert!(refusal.reason.contains("reference-style"), "{}", refusal.reason);
}

#[test]
fn unresolved_same_note_and_unaffected_links_are_left_alone() {
    let text = "[[Missing]] [[#Heading]] [x](#local) [[Keep]] [[Old]] [web](https://x.org/Old.md)\n";
    let paths = ["Keep.md", "A/Old.md", "n.md"];
    // Old moves folder but keeps its name: the bare link still reaches it.
    assert_eq!(plan(text, "n.md", &paths, &[("A/Old.md", "B/Old.md")]), None);
    // A link to a file the move does not concern.
    assert_eq!(plan("[[Keep]]\n", "n.md", &paths, &[("A/Old.md", "B/New.md")]), None);
    // A link that only resolves after the move (to the moved note) stays as written.
    let paths = ["A/Old.md", "n.md"];
    assert_eq!(plan("[[New]]\n", "n.md", &paths, &[("A/Old.md", "B/New.md")]), None);
}

#[test]
fn links_in_code_and_comments_are_not_touched() {
    let text =
        "```\n[[Old]]\n```\n`[[Old]]` <!-- [[Old]] -->\n%%\n[[Old]]\n%%\n\n    [[Old]]\n\n[[Old]] %% [[Old]] %%\n";
    let paths = ["Old.md", "n.md"];
    let rewrite = plan(text, "n.md", &paths, &[("Old.md", "New.md")]).unwrap();
    assert_eq!(
        rewrite.text,
        "```\n[[Old]]\n```\n`[[Old]]` <!-- [[Old]] -->\n%%\n[[Old]]\n%%\n\n    [[Old]]\n\n[[New]] %% [[New]] %%\n"
    );
    assert_eq!(rewrite.links.iter().map(|l| l.line).collect::<Vec<_>>(), [10, 10]);
}

#[test]
fn crlf_and_unicode_text_around_links_is_kept() {
    let text = "---\r\nup: \"[[Old]]\"\r\n---\r\nÄrger 🙂 [[Old]]\r\n[x](Old.md) ünïcødé\r\n";
    let paths = ["Old.md", "n.md"];
    assert_eq!(
        new_text(text, "n.md", &paths, &[("Old.md", "Neu Ä.md")]),
        "---\r\nup: \"[[Neu Ä]]\"\r\n---\r\nÄrger 🙂 [[Neu Ä]]\r\n[x](Neu%20Ä.md) ünïcødé\r\n"
    );
}

#[test]
fn a_note_named_like_a_file_with_an_extension_keeps_md() {
    // "v1.2" alone would look for a file called v1.2 first.
    let text = "[[v1.1]]\n";
    let paths = ["v1.1.md", "v1.2", "n.md"];
    assert_eq!(new_text(text, "n.md", &paths, &[("v1.1.md", "v1.2.md")]), "[[v1.2.md]]\n");
}

#[test]
fn many_links_in_one_note_are_planned_in_one_pass() {
    let mut text = String::from("---\nrelated:\n");
    for i in 0..200 {
        text.push_str(&format!("  - \"[[Old|{i}]]\"\n"));
    }
    text.push_str("---\n");
    for i in 0..2000 {
        text.push_str(&format!("Line {i}: [[Old#H{i}]] and [x](Old.md) and [[Keep]]\n"));
    }
    let paths = ["Old.md", "Keep.md", "n.md"];
    let rewrite = plan(&text, "n.md", &paths, &[("Old.md", "Dir/New.md")]).unwrap();
    assert_eq!(rewrite.links.len(), 200 + 4000);
    let tail = &rewrite.text[rewrite.text.len() - 80..];
    assert!(tail.ends_with("Line 1999: [[New#H1999]] and [x](Dir/New.md) and [[Keep]]\n"), "{tail}");
}

// --- retarget_note ---

#[test]
fn retarget_rewrites_matching_links_keeping_alias_and_heading() {
    let text = "[[Old]] [[old.md|alias]] [[Old#Sec]] ![[Old]] [t](Old.md#Part) [[Other]] | [[Old\\|x]] |\n";
    let rewrite = retarget_note(text, "n.md", "Old", "Projects/New", false).unwrap().unwrap();
    assert_eq!(
        rewrite.text,
        "[[Projects/New]] [[Projects/New|alias]] [[Projects/New#Sec]] ![[Old]] [t](Projects/New.md#Part) [[Other]] | [[Projects/New\\|x]] |\n"
    );
    assert_only_links_changed(text, &rewrite);
    let with_embeds = retarget_note(text, "n.md", "old.md", "New", true).unwrap().unwrap();
    assert!(with_embeds.text.contains("![[New]]"));
}

#[test]
fn retarget_with_a_heading_replaces_the_subpath() {
    let text = "[[Old]] [[Old#Sec|a]] [t](Old.md#Part)\n";
    let rewrite = retarget_note(text, "n.md", "Old", "New Note#Intro Part", false).unwrap().unwrap();
    assert_eq!(rewrite.text, "[[New Note#Intro Part]] [[New Note#Intro Part|a]] [t](New%20Note.md#Intro%20Part)\n");
    // A subpath on from_target narrows the match.
    let rewrite = retarget_note(text, "n.md", "Old#Sec", "New", false).unwrap().unwrap();
    assert_eq!(rewrite.text, "[[Old]] [[New#Sec|a]] [t](Old.md#Part)\n");
}

#[test]
fn retarget_refuses_targets_that_are_link_syntax() {
    let text = "Intro\n[[Old]]\n";
    for bad in ["x]]\ntext", "a|b", "x]] [[y", "a%%b", "a]", "#Only"] {
        let refusal = retarget_note(text, "n.md", "Old", bad, false).unwrap_err();
        assert_eq!(refusal.line, 1, "{bad:?}");
        assert_eq!(refusal.target, bad.trim(), "{bad:?}");
    }
    // Nothing matches: nothing to refuse.
    assert_eq!(retarget_note(text, "n.md", "Missing", "a|b", false).unwrap(), None);
    // A markdown link cannot carry ')'.
    let refusal = retarget_note("[t](Old.md)\n", "n.md", "Old", "Report (final)", false).unwrap_err();
    assert!(refusal.reason.contains("')'"));
}

#[test]
fn retarget_keeps_property_quotes_and_refuses_what_breaks_them() {
    let text = "---\nup: \"[[Old|Boss]]\"\nlist:\n  - '[[Old]]'\n---\n[[Old]]\n";
    let rewrite = retarget_note(text, "n.md", "Old", "People/New", false).unwrap().unwrap();
    assert_eq!(rewrite.text, "---\nup: \"[[People/New|Boss]]\"\nlist:\n  - '[[People/New]]'\n---\n[[People/New]]\n");
    let refusal = retarget_note(text, "n.md", "Old", "O'Brien", false).unwrap_err();
    assert_eq!(refusal.line, 3);
    let refusal = retarget_note(text, "n.md", "Old", "Say \"hi\"", false).unwrap_err();
    assert_eq!(refusal.line, 1);
}

#[test]
fn retarget_with_the_same_text_changes_nothing() {
    assert_eq!(
        retarget_note("[[Old]] [[old.md]]\n", "n.md", "Old", "Old", false).unwrap().map(|r| r.text),
        Some("[[Old]] [[Old]]\n".into())
    );
    assert_eq!(retarget_note("[[Old]]\n", "n.md", "old", "Old", false).unwrap(), None);
}

#[test]
fn a_refusal_becomes_invalid_input_naming_note_target_and_line() {
    let refusal =
        Refusal { target: "Report (final).md".into(), line: 4, reason: "a markdown link cannot carry ')'".into() };
    let error = refusal.clone().into_error(Some("Notes/a.md"));
    assert_eq!(error.code, ErrorCode::InvalidInput);
    assert!(error.message.contains("cannot carry ')'"));
    assert_eq!(error.details["note"], "Notes/a.md");
    assert_eq!(error.details["target"], "Report (final).md");
    assert_eq!(error.details["line"], 4);
    assert!(!refusal.into_error(None).details.contains_key("note"));
}

// --- internals ---

#[test]
fn markdown_destinations_are_found_in_raw_links() {
    let dest = |raw: &str| markdown_destination(raw).map(|r| raw[r].to_string());
    assert_eq!(dest("[a](b.md)").as_deref(), Some("b.md"));
    assert_eq!(dest("![a](b.png \"t\")").as_deref(), Some("b.png"));
    assert_eq!(dest("[![x](i.png)](N.md)").as_deref(), Some("N.md"));
    assert_eq!(dest("[a](<b c.md>)").as_deref(), Some("b c.md"));
    assert_eq!(dest("[a](N(1).md)").as_deref(), Some("N(1).md"));
    assert_eq!(dest("[a](b.md (title))").as_deref(), Some("b.md"));
    assert_eq!(dest("[a][ref]"), None);
}

#[test]
fn relative_paths_and_encoding() {
    assert_eq!(relative("", "A/x.md"), "./A/x.md");
    assert_eq!(relative("A", "A/x.md"), "./x.md");
    assert_eq!(relative("A/B", "A/x.md"), "../x.md");
    assert_eq!(relative("A/B", "C/D/x.md"), "../../C/D/x.md");
    assert_eq!(encode("a b%c<d>(e)`f\\g&amp;h&i"), "a%20b%25c%3Cd%3E%28e)%60f%5Cg%26amp;h&i");
    assert_eq!(subpath_start("a%20b.md#x"), 8);
    assert_eq!(subpath_start("a.md%23x"), 4);
    assert_eq!(subpath_start("a.md"), 4);
}

/// An edit of link `link`'s target text, bypassing `place`'s checks, to test the proof alone.
fn raw_edit(text: &str, note: &Note, link: usize, written: &str, target: &str) -> Edit {
    let l = &note.links[link];
    let parts = wiki_parts(&l.raw).unwrap();
    let at = l.span.start.offset;
    let _ = text;
    Edit {
        link,
        range: at + parts.target.start..at + parts.target.end,
        text: written.to_string(),
        target: target.to_string(),
        subpath: l.subpath.clone(),
        resolves_to: None,
        shown: written.to_string(),
    }
}

#[test]
fn the_proof_refuses_what_the_checks_let_through() {
    let text = "a [[Old|x]] b [[Keep]]\n";
    let note = parse(text);
    // A good edit is proven.
    let ok = prove(text, &note, vec![raw_edit(text, &note, 0, "New", "New")], None).unwrap().unwrap();
    assert_eq!(ok.text, "a [[New|x]] b [[Keep]]\n");
    // One that ends the link early, adds a link, or changes the alias is refused.
    for (written, target) in [("x]] [[y", "x]] [[y"), ("a|b", "a|b"), ("x]]\ntext", "x]]\ntext"), ("New", "Other")] {
        let refusal = prove(text, &note, vec![raw_edit(text, &note, 0, written, target)], None).unwrap_err();
        assert_eq!((refusal.line, refusal.target.as_str()), (0, written), "{written:?}: {}", refusal.reason);
    }
    // One that opens a comment hiding the next link.
    let text = "[[Old]]\n%%\n[[Keep]]\n";
    let note = parse(text);
    let refusal = prove(text, &note, vec![raw_edit(text, &note, 0, "%%x", "%%x")], None).unwrap_err();
    assert!(refusal.reason.contains("link"), "{}", refusal.reason);
    // One whose target no longer resolves where it must.
    let text = "[[Old]]\n";
    let note = parse(text);
    let after = Resolver::new(["New.md", "Other.md"]);
    let mut edit = raw_edit(text, &note, 0, "Other", "Other");
    edit.resolves_to = Some("New.md".into());
    let refusal = prove(text, &note, vec![edit], Some((&after, "n.md"))).unwrap_err();
    assert!(refusal.reason.contains("resolve"), "{}", refusal.reason);
}

#[test]
fn a_thousand_backlinks_are_planned_quickly() {
    let mut paths: Vec<String> = (0..1000).map(|i| format!("Notes/n{i}.md")).collect();
    paths.push("A/Old.md".into());
    let before = Resolver::new(paths.iter().cloned());
    let after = Resolver::new(paths.iter().map(|p| if p == "A/Old.md" { "B/New.md".to_string() } else { p.clone() }));
    let moves = [Moved { from: "A/Old.md", to: "B/New.md" }];
    let mut body = String::from("---\nup: \"[[Old]]\"\n---\n# Title\n\n");
    for i in 0..40 {
        body.push_str(&format!("Paragraph {i} with [[n{i}]], some *text* and `code` and [[Old#H{i}]].\n\n"));
    }
    let started = std::time::Instant::now();
    for source in &paths[..1000] {
        let rewrite = plan_note(&body, source, source, &before, &after, &moves).unwrap().unwrap();
        assert_eq!(rewrite.links.len(), 41);
    }
    let took = started.elapsed();
    eprintln!("1000 notes planned in {took:?}");
    // Generous for an unoptimised build on a busy machine; a release build is far quicker.
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");
}
