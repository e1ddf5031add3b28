//! How a note is named outside a vault: the resource URI `obsidian-tc://<vault>/<path>`, which
//! is also the id a search result carries and fetch takes, and its display title. The vault is
//! one percent-encoded segment and the path keeps its `/` separators with every segment
//! percent-encoded (everything but ASCII letters, digits and `-._~`), so any name a vault holds
//! (`a:b.md`, `What? #1.md`, spaces, non-ASCII) round-trips.

use otc_errors::{ErrorCode, ToolError};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// The scheme of note resources.
pub const SCHEME: &str = "obsidian-tc://";

/// Everything but the unreserved characters of RFC 3986.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// The resource URI of a note: `obsidian-tc://<vault>/<path>`.
pub fn note_uri(vault: &str, path: &str) -> String {
    let mut uri = String::with_capacity(SCHEME.len() + vault.len() + path.len() + 8);
    uri.push_str(SCHEME);
    uri.extend(utf8_percent_encode(vault, SEGMENT));
    for segment in path.split('/') {
        uri.push('/');
        uri.extend(utf8_percent_encode(segment, SEGMENT));
    }
    uri
}

/// The id of a note in search results and fetch: its resource URI.
pub fn result_id(vault: &str, path: &str) -> String {
    note_uri(vault, path)
}

/// A resource URI (or result id) as (vault, path). Percent-escapes are decoded; anything else
/// is taken as written, so a hand-made `obsidian-tc://Notes/My note.md` works too. The path is
/// not checked here: readers check it as they check any path argument.
pub fn parse_note_uri(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix(SCHEME)?;
    let (vault, path) = rest.split_once('/')?;
    let decode = |s: &str| percent_decode_str(s).decode_utf8().ok().map(|c| c.into_owned());
    let (vault, path) = (decode(vault)?, decode(path)?);
    (!vault.is_empty() && !path.is_empty()).then_some((vault, path))
}

/// A result id as (vault, path), or invalid_input naming `field`.
pub fn parse_result_id(id: &str) -> Result<(String, String), ToolError> {
    parse_note_uri(id).ok_or_else(|| {
        ToolError::with_message(
            ErrorCode::InvalidInput,
            "id is the id a search result carries: obsidian-tc://<vault>/<path>",
        )
        .detail("field", "id")
    })
}

/// A note's display title: its file name without the folder and the `.md` extension.
pub fn note_title(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.len().checked_sub(3) {
        Some(at) if name.is_char_boundary(at) && name[at..].eq_ignore_ascii_case(".md") && at > 0 => &name[..at],
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_real_name_round_trips() {
        let names = [
            ("Notes", "Plain.md"),
            ("My Vault", "Folder/Sub folder/Note with spaces.md"),
            ("v", "a:b.md"),
            ("v", "What? #1.md"),
            ("v", "100% done & more+plus=eq;semi,comma@at.md"),
            ("v", "日本語/ノート.md"),
            ("v", "Ünïcödé 🎉.md"),
            ("v", "emoji/../dots.md"),
            ("v", "a%20b.md"),
            ("v", "trailing ~tilde_-.md"),
            ("v", "[[brackets]] ^caret|pipe.md"),
        ];
        for (vault, path) in names {
            let uri = note_uri(vault, path);
            assert!(uri.is_ascii(), "{uri}");
            assert!(!uri[SCHEME.len()..].contains([' ', '#', '?', ':']), "{uri}");
            assert_eq!(parse_note_uri(&uri), Some((vault.to_string(), path.to_string())), "{uri}");
            assert_eq!(parse_result_id(&result_id(vault, path)).unwrap(), (vault.to_string(), path.to_string()));
        }
        assert_eq!(note_uri("My Vault", "A/B c.md"), "obsidian-tc://My%20Vault/A/B%20c.md");
    }

    #[test]
    fn hand_made_and_bad_uris() {
        assert_eq!(parse_note_uri("obsidian-tc://Notes/My note.md"), Some(("Notes".into(), "My note.md".into())));
        for bad in
            ["", "Notes/A.md", "obsidian-tc://Notes", "obsidian-tc://Notes/", "obsidian-tc:///A.md", "file:///A.md"]
        {
            assert_eq!(parse_note_uri(bad), None, "{bad}");
        }
        assert_eq!(parse_note_uri("obsidian-tc://v/%FF.md"), None, "not UTF-8");
        let err = parse_result_id("A.md").unwrap_err();
        assert_eq!((err.code, err.details["field"].as_str()), (ErrorCode::InvalidInput, Some("id")));
    }

    #[test]
    fn titles() {
        assert_eq!(note_title("Folder/My Note.md"), "My Note");
        assert_eq!(note_title("Top.MD"), "Top");
        assert_eq!(note_title("canvas.canvas"), "canvas.canvas");
        assert_eq!(note_title(".md"), ".md");
        assert_eq!(note_title("日本.md"), "日本");
    }
}
