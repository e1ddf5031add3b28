//! Vault paths. Every path is vault-relative, uses `/`, and stays inside the vault; names that
//! Windows cannot hold are refused, so a vault always syncs to every desktop. A NEW name must
//! also be able to live inside a wikilink; an existing file with such a name stays readable,
//! updatable and movable away (the caller decides which check applies).

use otc_errors::{ErrorCode, ToolError};

/// Longest path, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// Longest segment, in bytes (most file systems' limit).
pub const MAX_SEGMENT_BYTES: usize = 255;

const WINDOWS_HOSTILE: [char; 7] = ['<', '>', ':', '"', '\\', '?', '*'];
const WINDOWS_RESERVED: [&str; 22] = [
    "CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8", "COM9", "LPT1", "LPT2",
    "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9",
];

fn invalid(reason: &str) -> ToolError {
    ToolError::with_message(ErrorCode::PathInvalid, format!("path is invalid: {reason}"))
        .detail("reason", reason.to_string())
}

/// Checks that `path` is a well-formed vault path; the error never repeats the path.
pub fn check_path(path: &str) -> Result<(), ToolError> {
    if path.is_empty() {
        return Err(invalid("empty"));
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(invalid("longer than 1024 bytes"));
    }
    if path.starts_with('/') || path.starts_with('~') || path.as_bytes().get(1) == Some(&b':') {
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
        if segment.len() > MAX_SEGMENT_BYTES {
            return Err(invalid("a segment is longer than 255 bytes"));
        }
        if let Some(c) = segment.chars().find(|c| WINDOWS_HOSTILE.contains(c)) {
            return Err(invalid(&format!("contains {c:?}, which Windows cannot store")));
        }
        if segment.ends_with('.') || segment.ends_with(' ') {
            return Err(invalid("a segment ends with a dot or a space, which Windows cannot store"));
        }
        let stem = segment.split('.').next().unwrap_or("").trim_end();
        if WINDOWS_RESERVED.iter().any(|r| r.eq_ignore_ascii_case(stem)) {
            return Err(invalid("a segment is a name Windows reserves (CON, NUL, COM1 ...)"));
        }
    }
    Ok(())
}

/// Checks a name a file is about to get (create, move, rename, copy): well-formed, and free of
/// link syntax, so a wikilink can always point at it. The message names the characters, never
/// the name.
pub fn check_new_name(path: &str) -> Result<(), ToolError> {
    check_path(path)?;
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
            "C:/x.md",
            "~/x.md",
            "../x.md",
            "a/../../x.md",
            "a/./b.md",
            "a//b.md",
            "a/",
            "a\0b.md",
            "a\nb.md",
            "a:b.md",
            "a?.md",
            "a*.md",
            "a<b.md",
            "a\\b.md",
            "dots./x.md",
            "space /x.md",
            "CON.md",
            "nul",
            "Folder/com1.txt",
            "a\"b.md",
        ] {
            let err = check_path(p).expect_err(p);
            assert_eq!(err.code, ErrorCode::PathInvalid, "{p:?}");
            if !p.is_empty() {
                assert!(!err.message.contains(p), "{p:?}: {}", err.message);
            }
        }
        assert_eq!(check_path(&"a".repeat(1025)).unwrap_err().code, ErrorCode::PathInvalid);
        assert_eq!(check_path(&format!("{}.md", "a".repeat(256))).unwrap_err().code, ErrorCode::PathInvalid);
    }

    #[test]
    fn link_syntax_in_a_new_name_is_invalid_input_naming_the_characters() {
        let err = check_new_name("Notes/C# and [draft] %%x%%.md").unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput);
        assert_eq!(err.details["characters"], serde_json_free(&["[", "]", "#", "%%"]));
        assert!(!err.message.contains("Notes/"));
        for p in ["a^b.md", "a|b.md"] {
            assert_eq!(check_new_name(p).unwrap_err().code, ErrorCode::InvalidInput, "{p}");
            assert!(check_path(p).is_ok(), "{p}: an existing file with this name stays usable");
        }
    }

    fn serde_json_free(items: &[&str]) -> otc_errors::Value {
        otc_errors::Value::Array(items.iter().map(|s| otc_errors::Value::String(s.to_string())).collect())
    }
}
