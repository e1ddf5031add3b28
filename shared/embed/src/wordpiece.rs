//! BERT's uncased WordPiece tokeniser, as a Hugging Face `tokenizer.json` of type WordPiece with
//! the BertNormalizer and BertPreTokenizer describes it: clean the text (drop control
//! characters, whitespace to spaces), put spaces around CJK ideographs, lower-case and strip
//! accents (NFD, marks dropped), split on whitespace and punctuation, then split each word into
//! the longest vocabulary pieces from the left (`##` before a continuation), `[UNK]` for a word
//! that cannot be split or is longer than the model allows.

use std::collections::HashMap;

use serde::Deserialize;
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use crate::EmbedError;

pub struct WordPiece {
    vocab: HashMap<String, i64>,
    unk: i64,
    cls: i64,
    sep: i64,
    max_word_chars: usize,
}

#[derive(Deserialize)]
struct File {
    model: Model,
}

#[derive(Deserialize)]
struct Model {
    #[serde(rename = "type")]
    kind: String,
    vocab: HashMap<String, i64>,
    unk_token: String,
    #[serde(default = "default_max_chars")]
    max_input_chars_per_word: usize,
}

fn default_max_chars() -> usize {
    100
}

impl WordPiece {
    /// Reads a `tokenizer.json` whose model is WordPiece.
    pub fn from_json(bytes: &[u8]) -> Result<WordPiece, EmbedError> {
        let file: File =
            serde_json::from_slice(bytes).map_err(|e| EmbedError::Model(format!("tokenizer.json: {e}")))?;
        let model = file.model;
        if model.kind != "WordPiece" {
            return Err(EmbedError::Model(format!("tokenizer.json: model type {} is not WordPiece", model.kind)));
        }
        let id = |token: &str| {
            model
                .vocab
                .get(token)
                .copied()
                .ok_or_else(|| EmbedError::Model(format!("tokenizer.json: no {token} in the vocabulary")))
        };
        Ok(WordPiece {
            unk: id(&model.unk_token)?,
            cls: id("[CLS]")?,
            sep: id("[SEP]")?,
            max_word_chars: model.max_input_chars_per_word,
            vocab: model.vocab,
        })
    }

    /// The ids of `[CLS] text [SEP]`, at most `max_len` of them (the text's end is cut).
    pub fn encode(&self, text: &str, max_len: usize) -> Vec<i64> {
        let mut ids = vec![self.cls];
        let room = max_len.saturating_sub(2);
        'words: for word in pre_tokenize(&normalize(text)) {
            for id in self.pieces(&word) {
                if ids.len() > room {
                    break 'words;
                }
                ids.push(id);
            }
        }
        ids.push(self.sep);
        ids
    }

    fn pieces(&self, word: &str) -> Vec<i64> {
        let chars: Vec<(usize, char)> = word.char_indices().collect();
        if chars.len() > self.max_word_chars {
            return vec![self.unk];
        }
        let mut out = Vec::new();
        let mut start = 0;
        let mut piece = String::new();
        while start < chars.len() {
            let mut end = chars.len();
            let mut found = None;
            while start < end {
                piece.clear();
                if start > 0 {
                    piece.push_str("##");
                }
                let from = chars[start].0;
                let to = chars.get(end).map_or(word.len(), |c| c.0);
                piece.push_str(&word[from..to]);
                if let Some(&id) = self.vocab.get(piece.as_str()) {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => out.push(id),
                None => return vec![self.unk],
            }
            start = end;
        }
        out
    }
}

/// BertNormalizer: clean, space out CJK ideographs, lower-case, strip accents.
fn normalize(text: &str) -> String {
    let mut cleaned = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\0' || c == '\u{fffd}' || (c.is_control() && !c.is_whitespace()) {
            continue;
        }
        if is_cjk(c) {
            cleaned.push(' ');
            cleaned.push(c);
            cleaned.push(' ');
        } else if c.is_whitespace() {
            cleaned.push(' ');
        } else {
            cleaned.push(c);
        }
    }
    cleaned.to_lowercase().nfd().filter(|c| !is_combining_mark(*c)).collect()
}

/// BertPreTokenizer: words split on whitespace, each punctuation character a word of its own.
fn pre_tokenize(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_whitespace() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
        } else if is_punctuation(c) {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            words.push(c.to_string());
        } else {
            word.push(c);
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// ASCII symbols count as punctuation for BERT, as do Unicode's punctuation categories.
fn is_punctuation(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_punctuation();
    }
    // Unicode's punctuation categories (P*) where text holds them: Latin-1, general
    // punctuation, CJK and fullwidth forms.
    matches!(c,
        '\u{00A1}' | '\u{00A7}' | '\u{00AB}' | '\u{00B6}' | '\u{00B7}' | '\u{00BB}' | '\u{00BF}'
        | '\u{2010}'..='\u{2027}' | '\u{2030}'..='\u{205E}' | '\u{3001}'..='\u{3003}' | '\u{3008}'..='\u{3011}'
        | '\u{3014}'..='\u{301F}' | '\u{FF01}'..='\u{FF0F}' | '\u{FF1A}'..='\u{FF20}' | '\u{FF3B}'..='\u{FF40}'
        | '\u{FF5B}'..='\u{FF65}')
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F | 0x2B740..=0x2B81F
        | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> WordPiece {
        let vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "hello", ",", "world", "cafe", "!"];
        let vocab: HashMap<String, i64> = vocab.iter().enumerate().map(|(i, t)| (t.to_string(), i as i64)).collect();
        let json = serde_json::json!({"model": {"type": "WordPiece", "vocab": vocab, "unk_token": "[UNK]"}});
        WordPiece::from_json(json.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn splits_words_into_the_longest_pieces() {
        let wp = tiny();
        // [CLS] un ##aff ##able [SEP]
        assert_eq!(wp.encode("Unaffable", 16), vec![2, 4, 5, 6, 3]);
        // Punctuation is a word; accents and case go; an unknown word is [UNK].
        assert_eq!(wp.encode("Hello, Café world! zzz", 16), vec![2, 7, 8, 10, 9, 11, 1, 3]);
    }

    #[test]
    fn cuts_at_the_length_keeping_the_separator() {
        let wp = tiny();
        assert_eq!(wp.encode("hello hello hello hello", 4), vec![2, 7, 7, 3]);
        assert_eq!(wp.encode("", 4), vec![2, 3]);
    }
}
