use super::*;

fn targets(note: &Note, kind: LinkKind) -> Vec<String> {
    note.links.iter().filter(|l| l.kind == kind).map(|l| l.target.clone()).collect()
}

#[test]
fn wikilinks_embeds_and_their_parts() {
    let text = "See [[Alpha]], [[Beta|the beta]], [[Gamma#Intro]], [[Delta#^abc123]] and ![[pic.png]].\n| a | [[Table\\|alias]] |\n[[#Local heading]]\n";
    let note = parse(text);
    let body: Vec<&Link> = note.links.iter().filter(|l| l.kind == LinkKind::Body).collect();
    assert_eq!(
        body.iter().map(|l| l.target.as_str()).collect::<Vec<_>>(),
        ["Alpha", "Beta", "Gamma", "Delta", "Table", ""]
    );
    assert_eq!(body[1].alias.as_deref(), Some("the beta"));
    assert_eq!(body[2].subpath, Some(Subpath::Heading("Intro".into())));
    assert_eq!(body[3].subpath, Some(Subpath::Block("abc123".into())));
    assert_eq!(body[4].alias.as_deref(), Some("alias"), "the table-escaped pipe");
    assert_eq!(body[5].subpath, Some(Subpath::Heading("Local heading".into())));
    assert_eq!(targets(&note, LinkKind::Embed), ["pic.png"]);
    // Spans splice exactly.
    for link in &note.links {
        assert_eq!(&text[link.span.range()], link.raw);
    }
    let alpha = &note.links[0];
    assert_eq!((alpha.span.start.line, alpha.span.start.col), (0, 4));
}

#[test]
fn markdown_links_decode_and_skip_external() {
    let text = "[One](Folder/My%20Note.md) [Two](<Other Note.md#Part>) ![img](a%20b.png) [web](https://x.org/a) [mail](mailto:a@b.c)\n";
    let note = parse(text);
    assert_eq!(targets(&note, LinkKind::Body), ["Folder/My Note.md", "Other Note.md"]);
    assert_eq!(targets(&note, LinkKind::Embed), ["a b.png"]);
    assert_eq!(note.links[1].subpath, Some(Subpath::Heading("Part".into())));
    assert_eq!(note.links[0].alias.as_deref(), Some("One"));
    assert!(note.links.iter().all(|l| !l.wiki));
}

#[test]
fn autolinks_are_not_links() {
    // Obsidian opens an autolink as a URL or an address; it is never a link to a note.
    let text = "Mail <name@example.com> or <first.last+x@mail.example.org>, see <https://x.org/a#b>, \
                <mailto:a@b.c>, <obsidian://open?vault=V&file=Note> and <ftp://h:21/f.md>.\n\
                [One](One.md) <a@b.c> [Two <c@d.e>](Two.md) [<https://y.org>](Three.md)\n\
                [x <https://z.org/](Four.md)> ![img](pic.png)\n";
    let note = parse(text);
    assert_eq!(targets(&note, LinkKind::Body), ["One.md", "Two.md", "Three.md"]);
    assert_eq!(targets(&note, LinkKind::Embed), ["pic.png"]);
    let two = note.links.iter().find(|l| l.target == "Two.md").unwrap();
    assert_eq!(two.alias.as_deref(), Some("Two c@d.e"));
    assert_eq!(two.raw, "[Two <c@d.e>](Two.md)");
    for link in &note.links {
        assert_eq!(&text[link.span.range()], link.raw);
    }
    assert!(note.tags.is_empty(), "{:?}", note.tags);
}

#[test]
fn code_comments_and_html_comments_hold_nothing() {
    let text = "```\n[[InFence]] #fencetag\n- [ ] fenced task\n```\n`[[InCode]]` <!-- [[InHtml]] -->\n%%\n[[InBlockComment]] #commenttag\n- [ ] hidden task\n%%\n<!--\n\n- [ ] #task in a long html comment\n\n-->\n\n    [[Indented]]\n\n[[Real]] #real\n";
    let note = parse(text);
    assert_eq!(targets(&note, LinkKind::Body), ["Real"]);
    let tags: Vec<&str> = note.tags.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tags, ["real"]);
    assert!(note.tasks.is_empty());
}

#[test]
fn a_comment_within_one_line_does_not_hide_its_content() {
    // As Obsidian's metadata cache does (the obsidian-tasks test vault records it).
    let text = "- [ ] task %% #kept [[Kept]] %% and <!-- #gone [[Gone]] -->\n";
    let note = parse(text);
    assert_eq!(targets(&note, LinkKind::Body), ["Kept"]);
    let tags: Vec<&str> = note.tags.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tags, ["kept"]);
}

#[test]
fn markdown_links_with_code_or_an_image_inside() {
    let text = "![Result of `show tree`](../images/tree.png) and [![badge](b.png)](Target.md)\n";
    let note = parse(text);
    assert_eq!(targets(&note, LinkKind::Embed), ["../images/tree.png", "b.png"]);
    assert_eq!(targets(&note, LinkKind::Body), ["Target.md"]);
}

#[test]
fn tags_inline_nested_and_not_in_urls_or_headings() {
    let text = "# Heading\n#top and #nested/deep/tag, (#paren) not#inline http://x.org/#anchor #123 #2024-review #über [[Note#Head]]\n";
    let note = parse(text);
    let tags: Vec<&str> = note.tags.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tags, ["top", "nested/deep/tag", "2024-review", "über"]);
    let first = note.tags[0].span.unwrap();
    assert_eq!(&text[first.range()], "#top");
}

#[test]
fn headings_sections_and_block_ids() {
    let text = "# A\nintro ^intro-1\n## B\nb text\n### C\nc\n## D\nd ^d2\n# E\n";
    let note = parse(text);
    let names: Vec<(&str, u8)> = note.headings.iter().map(|h| (h.text.as_str(), h.level)).collect();
    assert_eq!(names, [("A", 1), ("B", 2), ("C", 3), ("D", 2), ("E", 1)]);
    let b = &note.headings[1];
    assert_eq!(&text[b.section.clone()], "## B\nb text\n### C\nc\n", "B's subtree ends at D");
    let a = &note.headings[0];
    assert_eq!(&text[a.section.clone()], "# A\nintro ^intro-1\n## B\nb text\n### C\nc\n## D\nd ^d2\n");
    let ids: Vec<&str> = note.blocks.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(ids, ["intro-1", "d2"]);
    assert_eq!(&text[note.blocks[0].span.range()], "^intro-1");
}

#[test]
fn tasks_with_custom_statuses() {
    let text = "- [ ] open\n- [x] done\n* [X] also done\n1. [?] question\n  - [-] cancelled nested\n- [] not a task\n- [ ]no space is fine? no\n> - [ ] quoted\n";
    let note = parse(text);
    let found: Vec<(char, &str)> = note.tasks.iter().map(|t| (t.status, t.text.as_str())).collect();
    assert_eq!(
        found,
        [
            (' ', "open"),
            ('x', "done"),
            ('X', "also done"),
            ('?', "question"),
            ('-', "cancelled nested"),
            (' ', "quoted")
        ]
    );
    assert!(note.tasks[1].done() && !note.tasks[0].done());
}

#[test]
fn property_links_follow_obsidian() {
    let text = "---\nauthor: \"[[Douglas Adams]]\"\nrelated:\n  - \"[[The Hitchhiker's Guide]]\"\n  - \"[[Dirk Gently|Dirk]]\"\nunquoted: [[Not A Link]]\nnested:\n  inner:\n    deep: 'see [[Deep#Part]]'\ncount: 3\ntags: [one, \"#two\"]\naliases: First, Second\n---\nBody [[Body Link]]\n";
    let note = parse(text);
    let props: Vec<(&str, Option<&str>)> = note
        .links
        .iter()
        .filter(|l| l.kind == LinkKind::Property)
        .map(|l| (l.target.as_str(), l.property.as_deref()))
        .collect();
    assert_eq!(
        props,
        [
            ("Douglas Adams", Some("author")),
            ("The Hitchhiker's Guide", Some("related")),
            ("Dirk Gently", Some("related")),
            ("Deep", Some("nested")),
        ]
    );
    for link in note.links.iter().filter(|l| l.kind == LinkKind::Property) {
        assert_eq!(&text[link.span.range()], link.raw, "positions are in the file");
    }
    assert_eq!(note.links.iter().find(|l| l.target == "Dirk Gently").unwrap().alias.as_deref(), Some("Dirk"));
    assert_eq!(targets(&note, LinkKind::Body), ["Body Link"]);
    let fm: Vec<&str> =
        note.tags.iter().filter(|t| t.source == TagSource::Frontmatter).map(|t| t.name.as_str()).collect();
    assert_eq!(fm, ["one", "two"]);
    assert_eq!(note.aliases, ["First", "Second"]);
    let value = note.frontmatter.as_ref().unwrap().value.as_ref().unwrap();
    assert_eq!(value["count"], 3);
    assert_eq!(value["nested"]["inner"]["deep"], "see [[Deep#Part]]");
    assert_eq!(&text[note.body_start..], "Body [[Body Link]]\n");
}

#[test]
fn malformed_yaml_keeps_body_links_and_warns() {
    let text = "---\nkey: [unclosed\nother: \"[[Lost]]\"\n---\n[[Kept]]\n";
    let note = parse(text);
    assert!(note.frontmatter.as_ref().unwrap().value.is_none());
    assert_eq!(note.warnings.len(), 1);
    assert!(note.links.iter().all(|l| l.kind != LinkKind::Property));
    assert_eq!(targets(&note, LinkKind::Body), ["Kept"]);
}

#[test]
fn no_frontmatter_and_unclosed_frontmatter() {
    assert!(parse("[[A]]\n").frontmatter.is_none());
    let open = parse("---\ntitle: x\n[[A]]\n");
    assert!(open.frontmatter.is_none(), "an unclosed block is body text");
    assert_eq!(targets(&open, LinkKind::Body), ["A"]);
    let crlf = parse("---\r\ntags: a\r\n---\r\n[[B]]\r\n");
    assert_eq!(crlf.tags[0].name, "a");
    assert_eq!(targets(&crlf, LinkKind::Body), ["B"]);
    for text in
        ["[[A]]\n", "---\ntitle: x\n[[A]]\n", "---\r\ntags: a\r\n---\r\n[[B]]\r\n", "---\nkey: [unclosed\n---\nx"]
    {
        assert_eq!(crate::parse_head(text), parse(text).head(), "{text:?}");
    }
}

/// Every note of every corpus vault parses, every span splices back to its raw text, and
/// reading the frontmatter alone agrees with the whole parse.
#[test]
fn the_whole_corpus_parses_and_every_span_splices() {
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../corpus"));
    assert!(root.is_dir(), "the corpus is expected at {}", root.display());
    let mut stack = vec![root.to_path_buf()];
    let mut notes = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let text = std::fs::read_to_string(&path).unwrap();
                let note = parse(&text);
                assert_eq!(crate::parse_head(&text), note.head(), "{}", path.display());
                for link in &note.links {
                    assert_eq!(&text[link.span.range()], link.raw, "{}", path.display());
                }
                for tag in note.tags.iter().filter_map(|t| t.span) {
                    assert!(text[tag.range()].starts_with('#'), "{}", path.display());
                }
                notes += 1;
            }
        }
    }
    assert!(notes > 500, "{notes}");
}

/// Splicing one wikilink's target leaves everything else found in the note identical (only
/// shifted by the length difference): over every wikilink of every corpus note.
#[test]
fn splicing_one_link_leaves_the_rest_identical() {
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../corpus"));
    let mut stack = vec![root.to_path_buf()];
    let mut spliced = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "md") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let before = parse(&text);
            for (i, link) in before.links.iter().enumerate() {
                if !link.wiki || link.target.is_empty() || link.target.contains("Zz") {
                    continue;
                }
                let Some(at) = link.raw.find(&link.target) else { continue };
                let new_raw = format!("{}Zz Renamed{}", &link.raw[..at], &link.raw[at + link.target.len()..]);
                let range = link.span.range();
                let new_text = format!("{}{new_raw}{}", &text[..range.start], &text[range.end..]);
                let delta = new_raw.len() as isize - link.raw.len() as isize;
                let after = parse(&new_text);
                let where_ = format!("{} link {i} ({})", path.display(), link.raw);
                assert_eq!(after.links.len(), before.links.len(), "{where_}");
                for (j, (a, b)) in after.links.iter().zip(&before.links).enumerate() {
                    if j == i {
                        assert_eq!(a.target, "Zz Renamed", "{where_}");
                        assert_eq!(
                            (&a.subpath, &a.alias, a.kind, &a.property),
                            (&b.subpath, &b.alias, b.kind, &b.property),
                            "{where_}"
                        );
                        continue;
                    }
                    assert_eq!(
                        (&a.raw, &a.target, &a.subpath, &a.alias, a.kind),
                        (&b.raw, &b.target, &b.subpath, &b.alias, b.kind),
                        "{where_}"
                    );
                    let shift = if b.span.start.offset > range.start { delta } else { 0 };
                    assert_eq!(a.span.start.offset as isize, b.span.start.offset as isize + shift, "{where_}");
                }
                // A heading that holds the link itself changes with it; every other stays.
                let line = link.span.start.line;
                let names = |n: &Note| {
                    n.headings.iter().filter(|h| h.span.start.line != line).map(|h| h.text.clone()).collect::<Vec<_>>()
                };
                assert_eq!(names(&after), names(&before), "{where_}");
                assert_eq!(after.headings.len(), before.headings.len(), "{where_}");
                let tags = |n: &Note| n.tags.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
                assert_eq!(tags(&after), tags(&before), "{where_}");
                assert_eq!(after.tasks.len(), before.tasks.len(), "{where_}");
                assert_eq!(after.blocks.len(), before.blocks.len(), "{where_}");
                spliced += 1;
            }
        }
    }
    assert!(spliced > 1000, "{spliced}");
}
