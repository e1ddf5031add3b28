//! Vault paths. Every path is vault-relative, uses `/`, and stays inside the vault.
//!
//! Two rules, for two kinds of name:
//!
//! - [`check_path`]: what ANY file may be called, including the files a user already has and
//!   imports or syncs: well-formed (relative, no traversal, no empty segments), no NUL or control
//!   character, within the length limits. Nothing else: a vault from Linux or macOS may hold
//!   `a:b.md` or `What? Why*.md`, and it is stored as it is.
//! - [`check_new_name`]: what a name the tools CREATE (create, move, rename, copy) may be: a
//!   well-formed path that every desktop can store (no character Windows refuses, no name it
//!   reserves, no segment ending in a dot or a space), free of invisible and bidirectional-control
//!   characters (a name must read as what it is), and free of link syntax, so a wikilink can
//!   always point at it.
//!
//! [`windows_problem`] and [`invisible_characters`] are the parts of the new-name rule the sync
//! client uses to warn about existing names (and a Windows client to skip what it cannot store).
//! [`clash_key`] says which names one case-insensitive, normalization-insensitive file system
//! (macOS, Windows) cannot hold side by side.

use otc_errors::{ErrorCode, ToolError};
use unicode_normalization::UnicodeNormalization;

/// Longest path, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// Longest segment, in bytes (most file systems' limit).
pub const MAX_SEGMENT_BYTES: usize = 255;

const WINDOWS_HOSTILE: [char; 8] = ['<', '>', ':', '"', '\\', '|', '?', '*'];
const WINDOWS_RESERVED: [&str; 22] = [
    "CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8", "COM9", "LPT1", "LPT2",
    "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9",
];

fn invalid(reason: &str) -> ToolError {
    ToolError::with_message(ErrorCode::PathInvalid, format!("path is invalid: {reason}"))
        .detail("reason", reason.to_string())
}

/// Checks that `path` is a well-formed vault path, as any existing file's may be; the error
/// never repeats the path.
pub fn check_path(path: &str) -> Result<(), ToolError> {
    if path.is_empty() {
        return Err(invalid("empty"));
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(invalid("longer than 1024 bytes"));
    }
    let bytes = path.as_bytes();
    let drive = bytes.len() >= 2
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && matches!(bytes.get(2), None | Some(b'/') | Some(b'\\'));
    if path.starts_with('/') || path.starts_with('\\') || path == "~" || path.starts_with("~/") || drive {
        return Err(invalid("absolute; paths are relative to the vault"));
    }
    if path.chars().any(|c| c.is_control()) {
        return Err(invalid("contains a NUL or control character"));
    }
    for segment in path.split('/') {
        match segment {
            "" => return Err(invalid("empty segment (a doubled or trailing /)")),
            "." | ".." => return Err(invalid("'.' and '..' segments are not allowed")),
            _ => {}
        }
        // A backslash is an ordinary character here, but a separator on Windows: it may not
        // spell a traversal there either.
        if segment.split('\\').any(|part| part == "." || part == "..") {
            return Err(invalid("'.' and '..' segments are not allowed (also between backslashes)"));
        }
        if segment.len() > MAX_SEGMENT_BYTES {
            return Err(invalid("a segment is longer than 255 bytes"));
        }
    }
    Ok(())
}

/// Why Windows cannot store `path` (a character it refuses, a name it reserves, a segment ending
/// in a dot or a space), or None. The reason names the character, never the path.
pub fn windows_problem(path: &str) -> Option<String> {
    for segment in path.split('/') {
        if let Some(c) = segment.chars().find(|c| WINDOWS_HOSTILE.contains(c)) {
            return Some(format!("contains {c:?}, which Windows cannot store"));
        }
        if segment.ends_with('.') || segment.ends_with(' ') {
            return Some("a segment ends with a dot or a space, which Windows cannot store".into());
        }
        let stem = segment.split('.').next().unwrap_or("").trim_end();
        if WINDOWS_RESERVED.iter().any(|r| r.eq_ignore_ascii_case(stem)) {
            return Some("a segment is a name Windows reserves (CON, NUL, COM1 ...)".into());
        }
    }
    None
}

/// Characters that render as nothing, or reorder the text around them: two names that differ
/// only by them look the same, and a bidi override makes a name read as another. Zero-width
/// joiner and non-joiner have real uses (emoji sequences, Persian and Indic spelling): they
/// count only where they join nothing visible (see [`invisible_characters`]); emoji tag
/// characters count only outside a tag sequence.
fn always_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}' // soft hyphen
            | '\u{034F}' // combining grapheme joiner
            | '\u{061C}' // Arabic letter mark
            | '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' // Hangul fillers
            | '\u{17B4}' | '\u{17B5}' // Khmer inherent vowels
            | '\u{180E}' // Mongolian vowel separator
            | '\u{200B}' // zero width space
            | '\u{200E}' | '\u{200F}' // left-to-right and right-to-left marks
            | '\u{202A}'..='\u{202E}' // bidi embeddings and overrides
            | '\u{2060}'..='\u{2064}' // word joiner, invisible operators
            | '\u{2066}'..='\u{2069}' // bidi isolates
            | '\u{206A}'..='\u{206F}' // deprecated format characters
            | '\u{FEFF}' // zero width no-break space (byte order mark)
            | '\u{FFF9}'..='\u{FFFB}' // interlinear annotation
            | '\u{1D173}'..='\u{1D17A}' // musical formatting
            | '\u{E0001}' // language tag
    )
}

fn is_joiner(c: char) -> bool {
    matches!(c, '\u{200C}' | '\u{200D}')
}

fn is_tag(c: char) -> bool {
    matches!(c, '\u{E0020}'..='\u{E007F}')
}

/// The invisible and bidirectional-control characters in `path`, each once, in order of first
/// appearance. A zero-width joiner or non-joiner counts when it does not stand between two
/// visible non-ASCII characters (it then joins nothing a reader could see); an emoji tag
/// character counts when it does not follow a black flag or another tag.
pub fn invisible_characters(path: &str) -> Vec<char> {
    let chars: Vec<char> = path.chars().collect();
    let visible_non_ascii = |c: Option<&char>| {
        c.is_some_and(|c| !c.is_ascii() && !c.is_whitespace() && !always_invisible(*c) && !is_joiner(*c))
    };
    let mut found = Vec::new();
    for (i, &c) in chars.iter().enumerate() {
        let counts = if always_invisible(c) {
            true
        } else if is_joiner(c) {
            !(visible_non_ascii(i.checked_sub(1).and_then(|j| chars.get(j))) && visible_non_ascii(chars.get(i + 1)))
        } else if is_tag(c) {
            !matches!(i.checked_sub(1).and_then(|j| chars.get(j)), Some('\u{1F3F4}') | Some('\u{E0020}'..='\u{E007F}'))
        } else {
            false
        };
        if counts && !found.contains(&c) {
            found.push(c);
        }
    }
    found
}

/// Checks a name a file is about to get (create, move, rename, copy): well-formed, storable on
/// Windows, free of invisible and bidi-control characters (all path_invalid), and free of link
/// syntax, so a wikilink can always point at it (invalid_input). The message names the
/// characters, never the name.
pub fn check_new_name(path: &str) -> Result<(), ToolError> {
    check_path(path)?;
    if let Some(reason) = windows_problem(path) {
        return Err(invalid(&reason));
    }
    let invisible = invisible_characters(path);
    if !invisible.is_empty() {
        let names: Vec<String> = invisible.iter().map(|c| format!("U+{:04X}", *c as u32)).collect();
        return Err(invalid(&format!(
            "contains {}, an invisible or bidirectional-control character: the name would not read as what it is",
            names.join(" ")
        ))
        .detail("characters", names));
    }
    let mut found: Vec<&str> = Vec::new();
    for (needle, label) in [("[", "["), ("]", "]"), ("#", "#"), ("^", "^"), ("|", "|"), ("%%", "%%")] {
        if path.contains(needle) {
            found.push(label);
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    Err(ToolError::with_message(
        ErrorCode::InvalidInput,
        format!("a new name may not contain {} (they are link syntax in Obsidian)", found.join(" ")),
    )
    .detail("characters", found.iter().map(|s| s.to_string()).collect::<Vec<_>>()))
}

/// The name `path` has on a case-insensitive, normalization-insensitive file system (macOS,
/// Windows): NFC, then Unicode simple case folding, character by character. Two different paths
/// with the same key cannot live side by side there.
///
/// The server computes the same key in SQL, as
/// `casefold(normalize(path, NFC) COLLATE pg_c_utf8)` (Postgres's builtin C.UTF-8 collation does
/// simple case folding); a test compares the two over every character. Simple folding maps
/// letters one to one (`Å`→`å`, `Σ` and `ς`→`σ`, `K` (Kelvin)→`k`, `ſ`→`s`) and leaves what
/// only full folding changes (`ß` stays `ß`, `İ` stays `İ`), as file systems do.
pub fn clash_key(path: &str) -> String {
    path.nfc().map(simple_fold).collect()
}

/// `text` in Unicode normalization form C (composed: `é` as one character, as macOS's NFD `e`
/// plus a combining accent is not).
pub fn nfc(text: &str) -> String {
    text.nfc().collect()
}

/// Unicode simple case folding (CaseFolding.txt, statuses C and S) of one character: its
/// lowercase mapping, but for the characters whose folding is not their lowercase.
fn simple_fold(c: char) -> char {
    match c {
        // No simple folding: only full (and Turkic) folding changes it.
        '\u{0130}' => c,
        '\u{00B5}' => '\u{03BC}',
        '\u{017F}' => 's',
        '\u{0345}' | '\u{1FBE}' => '\u{03B9}',
        '\u{03C2}' => '\u{03C3}',
        '\u{03D0}' => '\u{03B2}',
        '\u{03D1}' => '\u{03B8}',
        '\u{03D5}' => '\u{03C6}',
        '\u{03D6}' => '\u{03C0}',
        '\u{03F0}' => '\u{03BA}',
        '\u{03F1}' => '\u{03C1}',
        '\u{03F5}' => '\u{03B5}',
        '\u{1E9B}' => '\u{1E61}',
        '\u{FB05}' => '\u{FB06}',
        '\u{1C80}' => '\u{0432}',
        '\u{1C81}' => '\u{0434}',
        '\u{1C82}' => '\u{043E}',
        '\u{1C83}' => '\u{0441}',
        '\u{1C84}' | '\u{1C85}' => '\u{0442}',
        '\u{1C86}' => '\u{044A}',
        '\u{1C87}' => '\u{0463}',
        '\u{1C88}' => '\u{A64B}',
        // Cherokee folds to its capitals (the older letters), not to its small letters.
        '\u{13A0}'..='\u{13F5}' => c,
        '\u{13F8}'..='\u{13FD}' => char::from_u32(c as u32 - 8).unwrap_or(c),
        '\u{AB70}'..='\u{ABBF}' => char::from_u32(c as u32 - 0xAB70 + 0x13A0).unwrap_or(c),
        _ => {
            let mut lower = c.to_lowercase();
            match (lower.next(), lower.next()) {
                (Some(one), None) => one,
                _ => c,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_paths_pass() {
        for p in [
            "Note.md",
            "Folder/Sub folder/Note (1).md",
            "Daily/2026-11-29.md",
            ".obsidian/app.json",
            "a/b.c/d.md",
            "Ünïcødé/ノート.md",
            "Family 👨\u{200D}👩\u{200D}👧.md",
            "می\u{200C}خواهم.md",
            "Flag 🏴\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}.md",
            "~notes.md",
        ] {
            check_path(p).unwrap_or_else(|e| panic!("{p}: {e}"));
            check_new_name(p).unwrap_or_else(|e| panic!("{p}: {e}"));
        }
    }

    #[test]
    fn bad_paths_are_path_invalid_and_never_echo_the_path() {
        for p in [
            "",
            "/etc/passwd",
            "\\server\\x.md",
            "C:/x.md",
            "c:\\x.md",
            "C:",
            "~/x.md",
            "../x.md",
            "a/../../x.md",
            "a/./b.md",
            "a\\..\\..\\x.md",
            "..\\x.md",
            "a//b.md",
            "a/",
            "a\0b.md",
            "a\nb.md",
            "a\u{7f}b.md",
        ] {
            let err = check_path(p).expect_err(p);
            assert_eq!(err.code, ErrorCode::PathInvalid, "{p:?}");
            if !p.is_empty() {
                assert!(!err.message.contains(p), "{p:?}: {}", err.message);
            }
            assert_eq!(check_new_name(p).unwrap_err().code, ErrorCode::PathInvalid, "{p:?}");
        }
        assert_eq!(check_path(&"a".repeat(1025)).unwrap_err().code, ErrorCode::PathInvalid);
        assert_eq!(check_path(&format!("{}.md", "a".repeat(256))).unwrap_err().code, ErrorCode::PathInvalid);
    }

    #[test]
    fn names_windows_cannot_store_are_existing_paths_but_not_new_names() {
        for p in [
            "a:b.md",
            "What? Why*.md",
            "a<b.md",
            "a\\b.md",
            "a\"b.md",
            "dots./x.md",
            "space /x.md",
            "CON.md",
            "nul",
            "Folder/com1.txt",
            "Talk: 2024-01-02.md",
        ] {
            check_path(p).unwrap_or_else(|e| panic!("{p:?} is a path an existing file may have: {e}"));
            let reason = windows_problem(p).unwrap_or_else(|| panic!("{p:?}: Windows cannot store it"));
            assert!(!reason.contains(p), "{p:?}: {reason}");
            let err = check_new_name(p).expect_err(p);
            assert_eq!(err.code, ErrorCode::PathInvalid, "{p:?}");
            assert!(!err.message.contains(p), "{p:?}: {}", err.message);
        }
        assert_eq!(windows_problem("a|b.md").as_deref(), Some("contains '|', which Windows cannot store"));
        for p in ["Note.md", "a/b.c/d.md", "Console.md", "COM10.md", "x.con"] {
            assert_eq!(windows_problem(p), None, "{p}");
        }
    }

    #[test]
    fn invisible_and_bidi_characters_are_refused_in_new_names_only() {
        for (p, c) in [
            ("No\u{200B}te.md", '\u{200B}'),
            ("\u{FEFF}Note.md", '\u{FEFF}'),
            ("Note\u{00AD}s.md", '\u{00AD}'),
            ("invoice\u{202E}fdp.md", '\u{202E}'),
            ("a\u{2066}b\u{2069}.md", '\u{2066}'),
            ("Left\u{200E}.md", '\u{200E}'),
            ("Word\u{2060}joiner.md", '\u{2060}'),
            ("No\u{200D}te.md", '\u{200D}'),
            ("\u{200C}Note.md", '\u{200C}'),
            ("👨\u{200D}.md", '\u{200D}'),
            ("tag\u{E0041}.md", '\u{E0041}'),
        ] {
            check_path(p).unwrap_or_else(|e| panic!("{p:?} is a path an existing file may have: {e}"));
            assert_eq!(invisible_characters(p).first(), Some(&c), "{p:?}");
            let err = check_new_name(p).expect_err(p);
            assert_eq!(err.code, ErrorCode::PathInvalid, "{p:?}");
            assert_eq!(err.details["characters"][0], format!("U+{:04X}", c as u32), "{p:?}");
        }
        assert_eq!(invisible_characters("a\u{200B}b\u{200B}c\u{202E}"), ['\u{200B}', '\u{202E}']);
    }

    #[test]
    fn link_syntax_in_a_new_name_is_invalid_input_naming_the_characters() {
        let err = check_new_name("Notes/C# and [draft] %%x%%.md").unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput);
        assert_eq!(err.details["characters"], serde_json_free(&["[", "]", "#", "%%"]));
        assert!(!err.message.contains("Notes/"));
        assert_eq!(check_new_name("a^b.md").unwrap_err().code, ErrorCode::InvalidInput);
        assert_eq!(check_new_name("a|b.md").unwrap_err().code, ErrorCode::PathInvalid, "Windows refuses | too");
        for p in ["a^b.md", "a|b.md", "C# notes [draft].md"] {
            assert!(check_path(p).is_ok(), "{p}: an existing file with this name stays usable");
        }
    }

    #[test]
    fn clash_keys_fold_case_and_normalization() {
        let same = [
            ("Notes/café.md", "Notes/cafe\u{301}.md"),
            ("Case.md", "case.md"),
            ("NOTES/x.md", "Notes/x.md"),
            ("ÅSA.md", "åsa.md"),
            ("\u{212B}.md", "å.md"),
            ("ΟΔΟΣ.md", "οδος.md"),
            ("Kelvin \u{212A}.md", "kelvin k.md"),
            ("ſ.md", "S.md"),
        ];
        for (a, b) in same {
            assert_eq!(clash_key(a), clash_key(b), "{a:?} and {b:?} clash");
        }
        for (a, b) in [("Straße.md", "Strasse.md"), ("İ.md", "i.md"), ("a.md", "a .md"), ("x/y.md", "x-y.md")] {
            assert_ne!(clash_key(a), clash_key(b), "{a:?} and {b:?} can live side by side");
        }
        assert_eq!(clash_key("Notes/Café.md"), "notes/café.md");
    }

    fn serde_json_free(items: &[&str]) -> otc_errors::Value {
        otc_errors::Value::Array(items.iter().map(|s| otc_errors::Value::String(s.to_string())).collect())
    }
}
