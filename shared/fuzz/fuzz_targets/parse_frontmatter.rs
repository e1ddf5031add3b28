//! Any YAML between `---` lines: no panic, no stack overflow (nesting is bounded before the
//! recursive loader sees it), no blow-up (aliases are bounded), and every property link splices.
//! Run with a larger `-max_len` and a short `-timeout` to look for inputs that parse slowly.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|yaml: &str| {
    let text = format!("---\n{yaml}\n---\nbody [[Link]]\n");
    let note = otc_parser::parse(&text);
    let fm = note.frontmatter.as_ref().expect("the block is closed");
    assert!(fm.value.is_some() != fm.error.is_some());
    for link in &note.links {
        assert_eq!(&text[link.span.range()], link.raw);
    }
    if let Some(value) = &fm.value {
        // What the index stores must read back (serde_json's nesting limit is 128).
        let json = serde_json::to_string(value).unwrap();
        let _: serde_json::Value = serde_json::from_str(&json).unwrap();
    }
});
