//! Keeps `shared/formats` tidy: no function in `src/**/*.rs` (tests included) runs over
//! `MAX_LINES` lines, counted from its `fn` line to its closing brace (doc comments and
//! attributes above it do not count). The scanner blanks comments and string and character
//! literals, then matches braces, which is enough for this crate's code.

use std::fs;
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 150;

/// One function found by the scanner: where it starts and how many lines it spans.
#[derive(Debug)]
struct Function {
    file: PathBuf,
    name: String,
    line: usize,
    lines: usize,
}

/// The `.rs` files under `dir`, sorted so the report is stable.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> =
        fs::read_dir(dir).expect("read src").map(|e| e.expect("dir entry").path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text with comments and the contents of string, raw string and character literals
/// replaced by spaces (newlines kept), so braces and `fn` inside them are not seen.
fn blank_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let prev_ident = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if (c == 'r' || (c == 'b' && next == Some('r'))) && !prev_ident && raw_string_at(&chars, i) {
            let start = if c == 'b' { i + 2 } else { i + 1 };
            let hashes = chars[start..].iter().take_while(|&&h| h == '#').count();
            out.extend(std::iter::repeat_n(' ', start + hashes + 1 - i));
            i = start + hashes + 1;
            while i < chars.len() {
                if chars[i] == '"' && chars[i + 1..].iter().take(hashes).filter(|&&h| h == '#').count() == hashes {
                    out.extend(std::iter::repeat_n(' ', hashes + 1));
                    i += hashes + 1;
                    break;
                }
                out.push(blank(chars[i]));
                i += 1;
            }
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A character literal ('x', '\n', '\'', '\u{..}'); a lifetime has no closing quote.
            out.push(' ');
            i += 1;
            if chars.get(i) == Some(&'\\') {
                out.push(' ');
                i += 1;
            }
            while i < chars.len() && chars[i] != '\'' {
                out.push(' ');
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Whether a raw string (`r"`, `r#"`, `br"`...) starts at `i`.
fn raw_string_at(chars: &[char], i: usize) -> bool {
    let start = if chars[i] == 'b' { i + 2 } else { i + 1 };
    let hashes = chars.get(start..).map_or(0, |rest| rest.iter().take_while(|&&h| h == '#').count());
    chars.get(start + hashes) == Some(&'"')
}

/// Every function with a body in `text`, with its first line and length in lines.
fn functions(file: &Path, text: &str) -> Vec<Function> {
    let clean = blank_literals(text);
    let lines: Vec<&str> = clean.lines().collect();
    let fn_re = regex::Regex::new(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)").expect("regex");
    let mut found = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        for cap in fn_re.captures_iter(line) {
            let column = cap.get(0).expect("match").end();
            if let Some(end) = body_end(&lines, index, column) {
                found.push(Function {
                    file: file.to_path_buf(),
                    name: cap[1].to_string(),
                    line: index + 1,
                    lines: end - index + 1,
                });
            }
        }
    }
    found
}

/// The index of the line holding the closing brace of the body of the function whose name
/// ends at `column` of line `start`, or `None` for a declaration without a body (`fn f();`).
fn body_end(lines: &[&str], start: usize, column: usize) -> Option<usize> {
    let mut nesting = 0i32; // parentheses and brackets of the signature
    let mut depth = 0i32; // braces once the body has opened
    let mut opened = false;
    for (index, line) in lines.iter().enumerate().skip(start) {
        let from = if index == start { column } else { 0 };
        for c in line[from..].chars() {
            match c {
                '(' | '[' if !opened => nesting += 1,
                ')' | ']' if !opened => nesting -= 1,
                ';' if !opened && nesting == 0 => return None,
                '{' => {
                    opened = true;
                    depth += 1;
                }
                '}' if opened => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(index);
                    }
                }
                _ => {}
            }
        }
    }
    None
}

#[test]
fn no_function_is_longer_than_the_limit() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(!files.is_empty(), "no source files under {}", src.display());
    let mut too_long: Vec<Function> = Vec::new();
    let mut count = 0;
    for file in &files {
        let text = fs::read_to_string(file).expect("read source");
        let found = functions(file, &text);
        count += found.len();
        too_long.extend(found.into_iter().filter(|f| f.lines > MAX_LINES));
    }
    assert!(count > 100, "the scanner found only {count} functions");
    let report: Vec<String> = too_long
        .iter()
        .map(|f| format!("{}:{} fn {} is {} lines", f.file.display(), f.line, f.name, f.lines))
        .collect();
    assert!(report.is_empty(), "functions over {MAX_LINES} lines:\n{}", report.join("\n"));
}

#[test]
fn the_scanner_ignores_braces_in_literals_and_comments() {
    let text = "fn a() {\n    let s = \"{ // }\";\n    let c = '{';\n    // }\n    /* } */\n    let r = r#\"}\"#;\n    x::<'static>();\n}\nfn b();\nfn c() { }\n";
    let found = functions(Path::new("t.rs"), text);
    let summary: Vec<(String, usize, usize)> = found.into_iter().map(|f| (f.name, f.line, f.lines)).collect();
    assert_eq!(summary, vec![("a".to_string(), 1, 8), ("c".to_string(), 10, 1)]);
}
