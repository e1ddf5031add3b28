//! The parser takes any text without panicking, and everything it finds splices back exactly.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let note = otc_parser::parse(text);
    for link in &note.links {
        assert_eq!(&text[link.span.range()], link.raw);
        assert!(link.span.start.offset <= link.span.end.offset);
    }
    for tag in note.tags.iter().filter_map(|t| t.span) {
        assert!(text[tag.range()].starts_with('#'));
    }
    for heading in &note.headings {
        assert!(heading.section.start <= heading.section.end && heading.section.end <= text.len());
    }
    for block in &note.blocks {
        assert!(text[block.span.range()].starts_with('^'));
    }
    assert!(note.body_start <= text.len());
});
