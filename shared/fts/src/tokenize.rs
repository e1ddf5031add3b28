//! The one tokeniser, for documents and queries alike.
//!
//! A token is a run of letters, digits and the combining marks that follow them, folded: lower
//! case (Unicode), diacritics removed (`Café` and `cafe` are the same token). Every other
//! character separates tokens. Scripts written without spaces (Han, Hiragana, Katakana) give a
//! token per character, so a phrase of them is found as consecutive tokens. A token is cut to
//! [`MAX_TOKEN_BYTES`] after folding, so a base64 blob does not swell the dictionary.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// The longest token kept, in bytes of its folded text.
pub const MAX_TOKEN_BYTES: usize = 64;

/// One token: its folded text and where it sits in the original text (byte offsets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub text: String,
    pub start: usize,
    pub end: usize,
}

/// Whether `c` is written without spaces between words: each such character is a token.
fn is_unspaced(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x2FA1F) // CJK Extensions B-F, compatibility supplement
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric()
}

/// The tokens of `text`, in order, with their byte offsets.
pub fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    for_each_token(text, |start, end| {
        let text = fold(&text[start..end]);
        if !text.is_empty() {
            out.push(Token { text, start, end });
        }
    });
    out
}

/// The folded tokens of `text`, without offsets.
pub fn terms(text: &str) -> Vec<String> {
    tokens(text).into_iter().map(|t| t.text).collect()
}

/// Calls `f(start, end)` for every token's byte range.
pub fn for_each_token(text: &str, mut f: impl FnMut(usize, usize)) {
    let mut start: Option<usize> = None;
    for (i, c) in text.char_indices() {
        if is_unspaced(c) {
            if let Some(s) = start.take() {
                f(s, i);
            }
            f(i, i + c.len_utf8());
        } else if is_word(c) || (start.is_some() && is_combining_mark(c)) {
            if start.is_none() {
                start = Some(i);
            }
        } else if let Some(s) = start.take() {
            f(s, i);
        }
    }
    if let Some(s) = start {
        f(s, text.len());
    }
}

/// A token's folded form: lower case, diacritics removed, cut to [`MAX_TOKEN_BYTES`].
pub fn fold(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    fold_into(word, &mut out);
    out
}

/// [`fold`] into `out` (cleared first), reusing its allocation.
pub fn fold_into(word: &str, out: &mut String) {
    out.clear();
    if word.is_ascii() {
        for b in word.bytes() {
            out.push(b.to_ascii_lowercase() as char);
        }
    } else {
        // Decompose, drop the marks, compose again (Hangul syllables decompose too).
        for c in word.nfd().filter(|c| !is_combining_mark(*c)).nfc() {
            out.extend(c.to_lowercase());
        }
    }
    if out.len() > MAX_TOKEN_BYTES {
        out.truncate(out.floor_char_boundary(MAX_TOKEN_BYTES));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_fold_case_and_diacritics() {
        assert_eq!(terms("Café au LAIT, naïve-ish"), ["cafe", "au", "lait", "naive", "ish"]);
        // Decomposed input folds the same as composed.
        assert_eq!(terms("Cafe\u{301}"), ["cafe"]);
        assert_eq!(terms("Straße ÉCOLE"), ["straße", "ecole"]);
    }

    #[test]
    fn separators_and_offsets() {
        let t = tokens("  [[Note A]] #tag/sub x_y 2024-01-05");
        let words: Vec<_> = t.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(words, ["note", "a", "tag", "sub", "x", "y", "2024", "01", "05"]);
        assert_eq!(&"  [[Note A]]"[t[0].start..t[0].end], "Note");
    }

    #[test]
    fn han_and_kana_are_a_token_per_character() {
        assert_eq!(terms("東京タワーへ行く"), ["東", "京", "タ", "ワ", "ー", "へ", "行", "く"]);
        assert_eq!(terms("abc東京def"), ["abc", "東", "京", "def"]);
        // Hangul is spaced: words stay whole.
        assert_eq!(terms("한국어 문서"), ["한국어", "문서"]);
    }

    #[test]
    fn long_tokens_are_cut() {
        let long = "a".repeat(500);
        assert_eq!(terms(&long)[0].len(), MAX_TOKEN_BYTES);
        let wide = "é".repeat(100);
        assert!(terms(&wide)[0].len() <= MAX_TOKEN_BYTES);
    }
}
