//! What written text is screened for before a wiki commit stores it: instructions aimed at an
//! AI reader (prompt injection) and secrets. An explicit attempt to take over a reader's
//! instructions refuses the write (`refused`); a weaker sign is reported (`suspects`); a secret
//! is replaced by `[REDACTED:<kind>]` in the returned text before anything is stored.
//!
//! # Pipeline
//!
//! The returned `text` is always the original with secrets redacted; the patterns run on
//! normalised *views* of it, never on the raw bytes alone:
//!
//! 1. **raw**: invisible characters *inside words* (zero-width space, word joiner, ZWJ/ZWNJ
//!    between Latin/Greek/Cyrillic letters, bidi overrides, tag characters outside a flag emoji,
//!    runs of variation selectors, three or more invisibles in a row) are a suspect sign
//!    (`hidden_characters`). Tag characters and variation-selector runs that smuggle bytes are
//!    decoded and screened as a payload.
//! 2. **clean**: NFKC (fullwidth, mathematical and circled letters become ASCII) with every
//!    invisible/format character removed (zero-width, bidi controls, soft hyphen, tag
//!    characters, variation selectors). The decoders below read this view (case matters there).
//! 3. **native**: `clean`, lowercased, diacritics stripped (combining marks removed, then NFC, so
//!    kana and Hangul stay whole). Russian, Chinese, Japanese and Korean patterns run here.
//! 4. **latin**: `native` with confusables folded to ASCII (a compact table: Cyrillic, Greek,
//!    small capitals, IPA/Latin lookalikes, regional-indicator and enclosed letters),
//!    letter-spaced runs collapsed (`i g n o r e`, `i.g.n.o.r.e`, `i-g-n…`: four or more single
//!    letters with the same one-to-three-character separator become one word; a different
//!    separator is a word break), leetspeak digits mapped inside words (`1gn0r3`), `*` dropped
//!    and blanks squeezed. The English and other Latin-script patterns run here; the override
//!    patterns run on a copy with soft line breaks joined (a phrase broken over lines).
//! 5. **squashed**: `latin` with everything but ASCII letters removed, for the few core phrases
//!    (`ignoreallpreviousinstructions`) split by spacing, hyphens or dots; consulted only for a
//!    kind the readable views did not find (so quoting in a discussion still only makes a
//!    suspect).
//! 6. **decoded**: base64 (standard or URL-safe, runs of ≥ 16 characters), hex (≥ 16 digits,
//!    or ≥ 8 spaced pairs), `\xNN`, `\uNNNN`, `&#NN;`, URL `%NN` and 8-bit binary runs are
//!    replaced by what they decode to when that is mostly printable UTF-8, and the whole result
//!    is screened again (nested up to [`MAX_DEPTH`] levels). When the text mentions ROT13 or
//!    reading backwards, its ROT13 and its reversal are screened too. Anything found only in a
//!    decoded view adds the suspect `encoded_instructions`; a request to "decode … and follow"
//!    next to a payload that decodes is refused as `encoded_instructions`.
//! 7. **hidden**: HTML comments (`<!-- -->`), Obsidian comments (`%% %%`), markdown link-label
//!    comments (`[//]: # (…)`) and elements styled invisible (`display:none`, …) are screened on
//!    their own: addressed to an AI/agent/assistant/LLM they are at least `hidden_comment`
//!    suspects, and refused as `hidden_comment` when they also instruct it.
//!
//! # What is refused, what is suspect
//!
//! Refused kinds, in the order one is chosen when several match: `instruction_override`
//! (ignore/forget/disregard previous instructions, in English, French, Spanish, German,
//! Portuguese, Italian, Dutch, Polish, Turkish, Russian, Chinese, Japanese and Korean),
//! `chat_template` (`<|im_start|>`, `<|…|>`, `[INST]`, `<<SYS>>`, …), `role_injection` (fake
//! `<system>` tags, `[system]`, `### System:`, `System: you …` lines, claims to speak for the
//! developers), `role_reassignment` (you are now DAN, developer mode, act as an unrestricted
//! AI), `prompt_leak` (reveal/print your system prompt), `exfiltration` (send the user's
//! notes/keys/conversation to a URL or address, markdown images whose query carries a
//! placeholder), `hidden_comment`, `addresses_the_model` (a note to the AI that tells it to do
//! something) and `encoded_instructions`. The other kinds found are listed in `suspects`, with
//! the weaker signs: `addresses_the_model` (as an AI language model, jailbreak, text addressed
//! to an AI without an order, "from now on you…"), `hidden_characters`, `hidden_comment`,
//! `encoded_instructions` (a "decode and follow" with nothing that decodes), `exfiltration`
//! (the user's data with no destination), `prompt_leak` (asking what its instructions are),
//! `role_reassignment` (the "my late grandmother" role-play, "no refusals"), `role_injection`
//! (a bare `[system]` or `### Instruction:` line) and `instruction_override` (quoted in a
//! discussion, or "prior guidance is obsolete" without saying whose).
//!
//! An override or chat-template match that sits inside quotes or a code block of a text that is
//! visibly *about* prompt injection (attack, payload, example, filter, …), or that refers to a
//! document ("ignore the previous instructions in the README"), is only suspect: notes that
//! discuss injections are kept but reported. This is a deliberate trade: an attacker who quotes
//! an injection and calls it an example is reported, not refused.
//!
//! # Bounds
//!
//! Every regex is compiled once (`LazyLock`) by the `regex` crate, which matches in time linear
//! in the input. A text longer than [`MAX_SCREENED_BYTES`] is screened on its first
//! [`HEAD_BYTES`] and last [`TAIL_BYTES`] only (redaction still covers all of it). Each view is
//! built in one pass. Decoding is capped: at most [`MAX_PAYLOADS`] payloads per level, each
//! decoded from at most [`MAX_PAYLOAD_BYTES`] of input, [`MAX_DEPTH`] nested levels, at most
//! [`MAX_COMMENTS`] hidden comments of at most [`MAX_COMMENT_BYTES`] each, and at most 16
//! matches of one rule are examined. Each level derives at most four texts to screen (the
//! decoded view, text smuggled in tag characters or variation selectors, and the ROT13 and the
//! reversal when the text announces them), so one call screens at most 1 + 4 + 16 = 21 texts,
//! each bounded as above: a constant times the bounded input. The test `large_texts_are_bounded`
//! and `adversarial_inputs_stay_bounded` time a 1.2 MB note and inputs built to be slow (one
//! huge letter-spaced run, thousands of comments, fences, payloads, invisible characters).
//!
//! # Measuring
//!
//! `testdata/injections.txt` and `testdata/benign.txt` hold a labelled set (one sample a line,
//! `\n` written as the two characters `\n`). The test `labelled_set_error_rates` prints the
//! missed-injection, benign-refused and benign-flagged rates and every miss, and asserts ≤ 5 %,
//! ≤ 1 % and ≤ 5 %:
//!
//! ```text
//! cargo test -p otc-screen --test labelled -- --nocapture
//! ```
//!
//! The patterns were tuned on that set, so its rates are a regression test, not an estimate of
//! how the screen does on text it has not seen. Four batches of new samples (40 to 60 injections
//! and 50 to 77 benign notes each, each written after the previous round of tuning and measured
//! before any change for it) missed 28 %, 25 %, 40 % and 48 % of their injections, while refusing
//! 0 to 4 % and flagging 0 to 8 % of their benign notes; those batches are now part of the set.
//! Expect new phrasings, and injections that read like ordinary requests, to get through: this is
//! a screen for the common and the obfuscated forms, one layer of defence and not the only one.

use std::borrow::Cow;
use std::sync::LazyLock;

use base64::Engine;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use regex::{Regex, RegexBuilder};
use unicode_normalization::UnicodeNormalization;

/// A text longer than this is screened on its head and tail only.
pub const MAX_SCREENED_BYTES: usize = 256 * 1024;
/// The head screened of a longer text.
pub const HEAD_BYTES: usize = 192 * 1024;
/// The tail screened of a longer text.
pub const TAIL_BYTES: usize = 64 * 1024;
/// Encoded payloads decoded per level.
pub const MAX_PAYLOADS: usize = 32;
/// Encoded input decoded per payload (a longer run is decoded on its first bytes).
pub const MAX_PAYLOAD_BYTES: usize = 8 * 1024;
/// Decoded views screened inside one another (base64 of base64 is two).
pub const MAX_DEPTH: usize = 2;
/// Hidden comments screened on their own.
pub const MAX_COMMENTS: usize = 64;
/// The part of one hidden comment screened on its own.
pub const MAX_COMMENT_BYTES: usize = 4 * 1024;
/// Matches of one rule examined for quoting, negation and the like.
const MAX_MATCHES: usize = 16;

/// What the screen found in one text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Screened {
    /// The text with every secret replaced.
    pub text: String,
    /// Why the text is refused, when it is.
    pub refused: Option<&'static str>,
    /// Signs worth a look.
    pub suspects: Vec<&'static str>,
    /// The kinds of secret replaced, once each.
    pub redacted: Vec<&'static str>,
}

/// Screens `text`: see the crate documentation for the views, decoders and bounds.
pub fn screen(text: &str) -> Screened {
    let mut found = Findings::default();
    analyse(text, 0, &mut found);
    let (refused, suspects) = found.verdict();
    let mut out = text.to_string();
    let mut redacted = Vec::new();
    for (kind, re) in SECRETS.iter() {
        if re.is_match(&out) {
            out = re.replace_all(&out, format!("[REDACTED:{kind}]").as_str()).into_owned();
            redacted.push(*kind);
        }
    }
    Screened { text: out, refused, suspects, redacted }
}

/// Secrets, replaced by `[REDACTED:<kind>]`.
static SECRETS: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    [
        ("private_key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
        ("aws_access_key", r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"),
        ("github_token", r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"),
        ("openai_key", r"\bsk-(proj-)?[A-Za-z0-9_-]{20,}\b"),
        ("slack_token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),
        ("obsidian_tc_token", r"\botc[e]?_[A-Za-z0-9_-]{30,}\b"),
    ]
    .into_iter()
    .map(|(kind, re)| (kind, Regex::new(re).expect("a valid pattern")))
    .collect()
});

// ---------------------------------------------------------------------------------------------
// Findings

/// The refused kinds, best reason first.
const PRIORITY: [&str; 9] = [
    "instruction_override",
    "chat_template",
    "role_injection",
    "role_reassignment",
    "prompt_leak",
    "exfiltration",
    "hidden_comment",
    "addresses_the_model",
    "encoded_instructions",
];

#[derive(Debug, Default, Clone)]
struct Findings {
    refused: Vec<&'static str>,
    suspects: Vec<&'static str>,
}

impl Findings {
    fn refuse(&mut self, kind: &'static str) {
        if !self.refused.contains(&kind) {
            self.refused.push(kind);
        }
    }

    fn suspect(&mut self, kind: &'static str) {
        if !self.suspects.contains(&kind) {
            self.suspects.push(kind);
        }
    }

    fn has(&self, kind: &str) -> bool {
        self.refused.contains(&kind) || self.suspects.contains(&kind)
    }

    /// Takes in what a decoded view found; true when it found something new.
    fn absorb_decoded(&mut self, sub: Findings) -> bool {
        let mut new = false;
        for kind in sub.refused {
            new |= !self.refused.contains(&kind);
            self.refuse(kind);
        }
        for kind in sub.suspects {
            new |= !self.has(kind);
            self.suspect(kind);
        }
        new
    }

    /// The reason refused (by [`PRIORITY`]) and every other kind found, once each.
    fn verdict(self) -> (Option<&'static str>, Vec<&'static str>) {
        let refused = PRIORITY.iter().copied().find(|k| self.refused.contains(k));
        let mut suspects = Vec::new();
        for kind in self.refused.iter().chain(&self.suspects) {
            if Some(*kind) != refused && !suspects.contains(kind) {
                suspects.push(*kind);
            }
        }
        (refused, suspects)
    }
}

// ---------------------------------------------------------------------------------------------
// Analysis

fn analyse(text: &str, depth: usize, found: &mut Findings) {
    let text = bounded(text);
    let text = text.as_ref();

    let (hidden, smuggled) = hidden_characters(text);
    if hidden {
        found.suspect("hidden_characters");
    }

    let clean: String = text.nfkc().filter(|c| !invisible(*c)).collect();
    let native = nativise(&clean);
    let folded = fold(&native);
    let views = Views { latin: &folded.latin, joined: &folded.joined, native: &native, squashed: &folded.squashed };
    scan(&views, found);
    hidden_comments(&native, found);

    if depth >= MAX_DEPTH {
        return;
    }
    let mut payloads: Vec<String> = smuggled.into_iter().collect();
    let decoded = decode_view(&clean);
    let decoded_any = decoded.is_some();
    payloads.extend(decoded);
    if ROT13_CUE.is_match(&native) {
        payloads.push(clean.chars().map(rot13).collect());
    }
    if REVERSED_CUE.is_match(&native) {
        payloads.push(clean.chars().rev().collect());
    }
    let mut encoded = false;
    for payload in payloads {
        let mut sub = Findings::default();
        analyse(&payload, depth + 1, &mut sub);
        encoded |= found.absorb_decoded(sub);
    }
    if encoded {
        found.suspect("encoded_instructions");
    }
    if DECODE_CUE.is_match(&folded.latin) {
        if decoded_any {
            found.refuse("encoded_instructions");
        } else {
            found.suspect("encoded_instructions");
        }
    }
}

/// The text screened: all of it, or its head and tail when it is long.
fn bounded(text: &str) -> Cow<'_, str> {
    if text.len() <= MAX_SCREENED_BYTES {
        return Cow::Borrowed(text);
    }
    let mut head = HEAD_BYTES;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - TAIL_BYTES;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    Cow::Owned(format!("{}\n{}", &text[..head], &text[tail..]))
}

struct Views<'a> {
    latin: &'a str,
    joined: &'a str,
    native: &'a str,
    squashed: &'a str,
}

fn scan(views: &Views<'_>, found: &mut Findings) {
    let discussion = DISCUSSION.is_match(views.native);
    let fences = |hay: &str| -> Vec<usize> { hay.match_indices("```").map(|(i, _)| i).collect() };
    let mut fence_cache: Vec<(*const u8, Vec<usize>)> = Vec::new();
    let mut matched: Vec<&'static str> = Vec::new();
    for rule in RULES.iter() {
        let hay = match rule.view {
            View::Latin => views.latin,
            View::Joined => views.joined,
            View::Native => views.native,
            // Letters only, for what the readable views did not match at all (a negated or
            // quoted match there is not overruled here).
            View::Squashed if !found.has(rule.kind) && !matched.contains(&rule.kind) => views.squashed,
            View::Squashed => continue,
        };
        if !rule.re.is_match(hay) {
            continue;
        }
        if !matched.contains(&rule.kind) {
            matched.push(rule.kind);
        }
        // None: every match was excused; Some(false): suspect; Some(true): refused.
        let mut outcome = None;
        for m in rule.re.find_iter(hay).take(MAX_MATCHES) {
            if rule.negatable && negated(hay, m.start()) {
                continue;
            }
            if rule.veto.is_some_and(|veto| veto(hay, m.start(), m.end())) {
                continue;
            }
            if rule.level == Level::Suspect {
                outcome = Some(false);
                break;
            }
            let mut coded = || {
                let at = match fence_cache.iter().position(|(p, _)| *p == hay.as_ptr()) {
                    Some(at) => at,
                    None => {
                        fence_cache.push((hay.as_ptr(), fences(hay)));
                        fence_cache.len() - 1
                    }
                };
                in_code(&fence_cache[at].1, m.start())
            };
            if rule.soft
                && ((discussion && (in_quotes(hay, m.start()) || coded())) || refers_to_a_document(&hay[m.end()..]))
            {
                outcome = Some(false);
                continue;
            }
            outcome = Some(true);
            break;
        }
        match outcome {
            Some(true) => found.refuse(rule.kind),
            Some(false) => found.suspect(rule.kind),
            None => {}
        }
    }
}

/// A negation right before a match ("do not ignore", "n'oubliez", "不要忽略").
fn negated(hay: &str, start: usize) -> bool {
    let mut from = start.saturating_sub(24);
    while !hay.is_char_boundary(from) {
        from -= 1;
    }
    NEGATION.is_match(&hay[from..start])
}

/// Whether `pos` is inside a quotation on its line (looking back at most 2 KiB).
fn in_quotes(hay: &str, pos: usize) -> bool {
    let mut from = pos.saturating_sub(2048);
    while !hay.is_char_boundary(from) {
        from += 1;
    }
    let line = &hay[hay[from..pos].rfind('\n').map_or(from, |i| from + i + 1)..pos];
    let count = |set: &[char]| line.chars().filter(|c| set.contains(c)).count();
    // A single quote between two letters is an apostrophe ("don't"), not a quotation mark.
    let chars: Vec<char> = line.chars().collect();
    let singles = (0..chars.len())
        .filter(|&i| {
            chars[i] == '\''
                && !(i > 0 && chars[i - 1].is_alphanumeric() && chars.get(i + 1).is_some_and(|c| c.is_alphanumeric()))
        })
        .count();
    count(&['"']) % 2 == 1
        || count(&['`']) % 2 == 1
        || singles % 2 == 1
        || count(&['“', '„', '«', '「', '『', '‹']) > count(&['”', '»', '」', '』', '›'])
}

/// Whether `pos` is inside a fenced code block, given the fences' offsets.
fn in_code(fences: &[usize], pos: usize) -> bool {
    fences.partition_point(|&f| f < pos) % 2 == 1
}

fn refers_to_a_document(after: &str) -> bool {
    let mut end = after.len().min(64);
    while !after.is_char_boundary(end) {
        end -= 1;
    }
    DOCUMENT_REFERENCE.is_match(&after[..end])
}

// ---------------------------------------------------------------------------------------------
// Views

/// Invisible and format characters: removed from every view.
fn invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFA0}'
        | '\u{1BCA0}'..='\u{1BCA3}' | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E0FFF}')
}

/// Combining marks stripped for matching (not kana voicing marks, which NFC puts back).
fn is_mark(c: char) -> bool {
    matches!(c, '\u{0300}'..='\u{036F}' | '\u{1AB0}'..='\u{1AFF}' | '\u{1DC0}'..='\u{1DFF}'
        | '\u{20D0}'..='\u{20FF}' | '\u{FE20}'..='\u{FE2F}')
}

/// Lowercased, diacritics stripped, recomposed.
fn nativise(clean: &str) -> String {
    clean.chars().flat_map(char::to_lowercase).nfkd().filter(|c| !is_mark(*c) && !invisible(*c)).nfc().collect()
}

/// Lookalikes of ASCII letters (after lowercasing), and punctuation variants.
fn confusable(c: char) -> Option<&'static str> {
    Some(match c {
        // Cyrillic
        'а' | 'ӑ' | 'ӓ' => "a",
        'в' | 'ь' => "b",
        'е' | 'ё' | 'є' | 'ҽ' => "e",
        'к' | 'ќ' => "k",
        'м' => "m",
        'н' | 'һ' | 'ћ' => "h",
        'о' | 'ө' | 'ӧ' => "o",
        'п' => "n",
        'р' => "p",
        'с' | 'ҫ' => "c",
        'т' => "t",
        'у' | 'ү' | 'ұ' | 'ў' => "y",
        'х' | 'ҳ' => "x",
        'ѕ' => "s",
        'і' | 'ї' => "i",
        'ј' => "j",
        'ԁ' => "d",
        'ԛ' => "q",
        'ԝ' => "w",
        'ӏ' => "l",
        'ɡ' | 'ԍ' => "g",
        // Greek
        'α' | 'ά' => "a",
        'β' => "b",
        'γ' => "y",
        'ε' | 'έ' | 'ϵ' => "e",
        'η' | 'ή' => "n",
        'ι' | 'ί' | 'ϊ' | 'ΐ' => "i",
        'κ' => "k",
        'μ' => "u",
        'ν' => "v",
        'ο' | 'ό' => "o",
        'ρ' => "p",
        'τ' => "t",
        'υ' | 'ύ' | 'ϋ' => "u",
        'χ' => "x",
        'ω' | 'ώ' => "w",
        'ϲ' => "c",
        'ϳ' => "j",
        // Armenian
        'օ' => "o",
        'ս' => "u",
        'ո' => "n",
        'հ' => "h",
        // Latin lookalikes, small capitals, IPA
        'ı' | 'ɩ' | 'ɪ' => "i",
        'ȷ' | 'ᴊ' => "j",
        'ɑ' | 'ᴀ' => "a",
        'ʙ' | 'ƀ' => "b",
        'ᴄ' => "c",
        'ᴅ' | 'đ' => "d",
        'ᴇ' => "e",
        'ғ' | 'ƒ' => "f",
        'ɢ' => "g",
        'ʜ' | 'ħ' => "h",
        'ᴋ' | 'ĸ' => "k",
        'ʟ' | 'ł' | 'ŀ' => "l",
        'ᴍ' => "m",
        'ɴ' => "n",
        'ᴏ' | 'ø' | 'ɵ' => "o",
        'ᴘ' => "p",
        'ǫ' => "q",
        'ʀ' => "r",
        'ꜱ' => "s",
        'ᴛ' | 'ŧ' => "t",
        'ᴜ' => "u",
        'ᴠ' => "v",
        'ᴡ' => "w",
        'ʏ' => "y",
        'ᴢ' => "z",
        'ß' => "ss",
        'æ' => "ae",
        'œ' => "oe",
        // punctuation
        '‘' | '’' | '‛' | '′' => "'",
        '‐' | '‑' | '‒' | '–' | '—' | '―' | '−' => "-",
        '·' | '•' | '∙' | '⋅' => ".",
        _ => {
            let n = c as u32;
            // Regional indicators, negative circled and negative squared letters.
            let base = match n {
                0x1F1E6..=0x1F1FF => 0x1F1E6,
                0x1F150..=0x1F169 => 0x1F150,
                0x1F170..=0x1F189 => 0x1F170,
                _ => return None,
            };
            return Some(&"abcdefghijklmnopqrstuvwxyz"[(n - base) as usize..][..1]);
        }
    })
}

struct Folded {
    latin: String,
    joined: String,
    squashed: String,
}

fn fold(native: &str) -> Folded {
    let mut chars: Vec<char> = Vec::with_capacity(native.len());
    for c in native.chars() {
        match confusable(c) {
            Some(s) => chars.extend(s.chars()),
            None if c == '*' => {}
            None => chars.push(c),
        }
    }
    let mut chars = collapse_spacing(chars);
    unleet(&mut chars);
    let mut latin = String::with_capacity(chars.len());
    let mut blank = false;
    for c in chars {
        match c {
            ' ' | '\t' => {
                if !blank {
                    latin.push(' ');
                }
                blank = true;
            }
            '\r' => {}
            _ => {
                latin.push(c);
                blank = false;
            }
        }
    }
    // Letters only: words split by spacing, hyphens or dots ("ig-nore pre-vious") join up. Only
    // the few core phrases are matched here, and only when the readable views missed them.
    let squashed = latin.chars().filter(char::is_ascii_lowercase).collect();
    let joined = join_lines(&latin);
    Folded { latin, joined, squashed }
}

/// `latin` with soft line breaks (inside a sentence, not before a list item or heading) turned
/// into spaces, so that a phrase broken over lines still matches.
fn join_lines(latin: &str) -> String {
    let mut out = String::with_capacity(latin.len());
    // Blank lines are skipped over: "ignore all previous\n\ninstructions" still joins.
    let mut last_text: Option<&str> = None;
    let mut breaks = 0;
    for line in latin.split('\n') {
        let text = line.trim_start();
        if text.is_empty() {
            breaks += 1;
            continue;
        }
        if let Some(last) = last_text {
            let soft = last.trim_end().chars().last().is_some_and(|c| !".!?:;|>)]}".contains(c))
                && !text.starts_with(['-', '#', '>', '|', '+', '<', '[', '`', '%'])
                && !text.chars().next().is_some_and(|c| c.is_ascii_digit());
            if soft {
                out.push(' ');
            } else {
                out.extend(std::iter::repeat_n('\n', breaks.max(1)));
            }
        } else {
            out.extend(std::iter::repeat_n('\n', breaks));
        }
        out.push_str(line);
        last_text = Some(line);
        breaks = 1;
    }
    out
}

fn is_spacing(c: char) -> bool {
    matches!(c, ' ' | '\t' | '.' | '-' | '_' | '|' | '/' | ',' | '+' | '~')
}

/// Joins runs of four or more single letters ("i g n o r e", "i.g.n.o.r.e"); a separator other
/// than the run's usual one is a word break.
fn collapse_spacing(chars: Vec<char>) -> Vec<char> {
    let single = |i: usize| {
        chars[i].is_alphanumeric()
            && (i == 0 || !chars[i - 1].is_alphanumeric())
            && chars.get(i + 1).is_none_or(|c| !c.is_alphanumeric())
    };
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    while i < chars.len() {
        if !single(i) {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let mut letters = vec![i];
        let mut seps: Vec<&[char]> = Vec::new();
        let mut j = i + 1;
        loop {
            let mut k = j;
            while k < chars.len() && k - j < 4 && is_spacing(chars[k]) {
                k += 1;
            }
            if k > j && k - j <= 3 && k < chars.len() && single(k) {
                seps.push(&chars[j..k]);
                letters.push(k);
                j = k + 1;
            } else {
                break;
            }
        }
        if letters.len() < 4 {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        // The run's letter separator: the most common one, the shortest on a tie.
        let mut counts: std::collections::HashMap<&[char], usize> = std::collections::HashMap::new();
        for sep in &seps {
            *counts.entry(sep).or_default() += 1;
        }
        let usual = counts
            .iter()
            .max_by_key(|(sep, n)| (**n, std::cmp::Reverse(sep.len()), sep.to_vec()))
            .map(|(sep, _)| *sep)
            .expect("a run has separators");
        for (n, &at) in letters.iter().enumerate() {
            if n > 0 && seps[n - 1] != usual {
                out.push(' ');
            }
            out.push(chars[at]);
        }
        i = letters[letters.len() - 1] + 1;
    }
    out
}

/// Leetspeak digits inside words of letters and digits ("1gn0r3" → "ignore").
fn unleet(chars: &mut [char]) {
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && chars[i].is_ascii_alphanumeric() {
            i += 1;
        }
        let word = &mut chars[start..i];
        if word.len() >= 3 && word.iter().any(char::is_ascii_alphabetic) && word.iter().any(char::is_ascii_digit) {
            for c in word.iter_mut() {
                *c = match *c {
                    '0' => 'o',
                    '1' => 'i',
                    '3' => 'e',
                    '4' => 'a',
                    '5' => 's',
                    '7' => 't',
                    '8' => 'b',
                    '9' => 'g',
                    other => other,
                };
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Invisible characters

/// Whether invisible characters sit where text should not have them, and the text smuggled in
/// tag characters or variation selectors.
fn hidden_characters(text: &str) -> (bool, Option<String>) {
    let chars: Vec<char> = text.chars().collect();
    let latinish = |c: Option<&char>| c.is_some_and(|c| c.is_alphabetic() && (*c as u32) < 0x0530);
    let letter = |c: Option<&char>| c.is_some_and(|c| c.is_alphabetic());
    let mut flagged = false;
    let mut smuggled = String::new();
    let mut run = 0; // invisibles in a row (the old rule: three or more)
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let prev = i.checked_sub(1).and_then(|p| chars.get(p));
        let next = chars.get(i + 1);
        match c {
            '\u{200B}'
            | '\u{2060}'
            | '\u{180E}'
            | '\u{2061}'..='\u{2064}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{3164}'
            | '\u{FFA0}'
            | '\u{034F}'
                if letter(prev) && letter(next) =>
            {
                flagged = true
            }
            '\u{FEFF}' if i > 0 && letter(prev) && letter(next) => flagged = true,
            '\u{200C}' | '\u{200D}' if latinish(prev) && latinish(next) => flagged = true,
            '\u{202D}' | '\u{202E}' => flagged = true,
            _ => {}
        }
        // Tag characters: a flag emoji's are fine; any other run hides ASCII text.
        if ('\u{E0000}'..='\u{E007F}').contains(&c) {
            let start = i;
            while i < chars.len() && ('\u{E0000}'..='\u{E007F}').contains(&chars[i]) {
                i += 1;
            }
            let flag = start > 0 && chars[start - 1] == '\u{1F3F4}';
            if !flag {
                flagged = true;
                smuggled.extend(chars[start..i].iter().filter_map(|c| {
                    let b = *c as u32 - 0xE0000;
                    (0x20..0x7F).contains(&b).then(|| char::from(b as u8))
                }));
                smuggled.push('\n');
            }
            run = 0;
            continue;
        }
        // Variation selectors: one after an emoji is fine; a run of them encodes bytes.
        let selector = |c: char| match c {
            '\u{FE00}'..='\u{FE0F}' => Some(c as u32 - 0xFE00),
            '\u{E0100}'..='\u{E01EF}' => Some(c as u32 - 0xE0100 + 16),
            _ => None,
        };
        if selector(c).is_some() {
            let start = i;
            while i < chars.len() && selector(chars[i]).is_some() {
                i += 1;
            }
            if i - start >= 4 {
                flagged = true;
                let bytes: Vec<u8> = chars[start..i].iter().filter_map(|c| selector(*c).map(|b| b as u8)).collect();
                smuggled.push_str(&String::from_utf8_lossy(&bytes));
                smuggled.push('\n');
            }
            run = 0;
            continue;
        }
        if matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}') {
            run += 1;
            flagged |= run >= 3;
        } else {
            run = 0;
        }
        i += 1;
    }
    let smuggled = smuggled.trim();
    (flagged, (!smuggled.is_empty()).then(|| smuggled.to_string()))
}

// ---------------------------------------------------------------------------------------------
// Decoders

/// Escapes and encoded runs worth decoding, in the clean view (case kept).
static ENCODED: LazyLock<Regex> = LazyLock::new(|| {
    compile_raw(concat!(
        r"(?:\\x[0-9A-Fa-f]{2}){3,}",
        r"|(?:\\u[0-9A-Fa-f]{4}|\\u\{[0-9A-Fa-f]{1,6}\}){3,}",
        r"|(?:&#(?:[0-9]{1,7}|[xX][0-9A-Fa-f]{1,6});){3,}",
        r"|[^\s%]*(?:%[0-9A-Fa-f]{2}[^\s%]*){3,}",
        r"|(?:[01]{8}[ ,]?){4,}",
        r"|(?:[0-9A-Fa-f]{2}[ :]){7,}[0-9A-Fa-f]{2}",
        r"|[A-Za-z0-9+/_-]{16,}={0,2}",
    ))
});

/// The clean view with every decodable run replaced by what it decodes to; None when nothing
/// decoded.
fn decode_view(clean: &str) -> Option<String> {
    let mut out = String::new();
    let mut last = 0;
    let mut payloads = 0;
    for m in ENCODED.find_iter(clean).take(MAX_PAYLOADS * 8) {
        if payloads >= MAX_PAYLOADS {
            break;
        }
        let Some(decoded) = decode(m.as_str()) else { continue };
        out.push_str(&clean[last..m.start()]);
        out.push(' ');
        out.push_str(&decoded);
        out.push(' ');
        last = m.end();
        payloads += 1;
    }
    if payloads == 0 {
        return None;
    }
    out.push_str(&clean[last..]);
    Some(out)
}

fn decode(run: &str) -> Option<String> {
    let mut end = run.len().min(MAX_PAYLOAD_BYTES);
    while !run.is_char_boundary(end) {
        end -= 1;
    }
    let run = &run[..end];
    let hex = |s: &str| u8::from_str_radix(s, 16).ok();
    if let Some(rest) = run.strip_prefix("\\x") {
        let bytes: Vec<u8> = rest.split("\\x").filter_map(|h| hex(h.get(..2)?)).collect();
        return Some(String::from_utf8_lossy(&bytes).into_owned());
    }
    if run.starts_with("\\u") {
        let text: String = run
            .split("\\u")
            .filter(|s| !s.is_empty())
            .filter_map(|s| u32::from_str_radix(s.trim_matches(|c| c == '{' || c == '}'), 16).ok())
            .filter_map(char::from_u32)
            .collect();
        return Some(text);
    }
    if run.starts_with("&#") {
        let text: String = run
            .split(';')
            .filter_map(|e| {
                let e = e.strip_prefix("&#")?;
                match e.strip_prefix(['x', 'X']) {
                    Some(h) => u32::from_str_radix(h, 16).ok(),
                    None => e.parse().ok(),
                }
            })
            .filter_map(char::from_u32)
            .collect();
        return Some(text);
    }
    if run.contains('%') {
        let raw = run.as_bytes();
        let mut bytes = Vec::with_capacity(raw.len());
        let mut i = 0;
        while i < raw.len() {
            let pair = raw.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).and_then(hex);
            match (raw[i], pair) {
                (b'%', Some(b)) => {
                    bytes.push(b);
                    i += 3;
                    continue;
                }
                (b'+', _) => bytes.push(b' '),
                (b, _) => bytes.push(b),
            }
            i += 1;
        }
        return Some(String::from_utf8_lossy(&bytes).into_owned());
    }
    let compact: String = run.chars().filter(|c| !matches!(c, ' ' | ':' | ',')).collect();
    if compact.len() >= 32 && compact.len().is_multiple_of(8) && compact.bytes().all(|b| b == b'0' || b == b'1') {
        let bytes: Vec<u8> =
            compact.as_bytes().chunks(8).map(|c| c.iter().fold(0u8, |acc, b| acc << 1 | (b - b'0'))).collect();
        if let Some(text) = printable(bytes) {
            return Some(text);
        }
    }
    if compact.len() >= 16 && compact.len().is_multiple_of(2) && compact.bytes().all(|b| b.is_ascii_hexdigit()) {
        let bytes: Vec<u8> = (0..compact.len()).step_by(2).filter_map(|i| hex(&compact[i..i + 2])).collect();
        if let Some(text) = printable(bytes) {
            return Some(text);
        }
    }
    if run.contains(' ') || run.contains(':') {
        return None;
    }
    let body = run.trim_end_matches('=');
    let url_safe = body.contains(['-', '_']);
    if url_safe && body.contains(['+', '/']) {
        return None;
    }
    let body = if body.len() % 4 == 1 { &body[..body.len() - 1] } else { body };
    let config = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    let engine = GeneralPurpose::new(if url_safe { &alphabet::URL_SAFE } else { &alphabet::STANDARD }, config);
    printable(engine.decode(body).ok()?)
}

/// The bytes as text when they are valid UTF-8 and mostly letters and digits.
fn printable(bytes: Vec<u8>) -> Option<String> {
    let text = String::from_utf8(bytes).ok()?;
    let mut visible = 0usize;
    let mut alnum = 0usize;
    let mut letters = 0usize;
    for c in text.chars() {
        if c.is_control() && !matches!(c, '\n' | '\r' | '\t') {
            return None;
        }
        if !c.is_whitespace() {
            visible += 1;
            alnum += usize::from(c.is_alphanumeric());
            letters += usize::from(c.is_alphabetic());
        }
    }
    (visible >= 4 && letters > 0 && alnum * 10 >= visible * 6).then_some(text)
}

fn rot13(c: char) -> char {
    match c {
        'a'..='z' => (((c as u8 - b'a') + 13) % 26 + b'a') as char,
        'A'..='Z' => (((c as u8 - b'A') + 13) % 26 + b'A') as char,
        _ => c,
    }
}

// ---------------------------------------------------------------------------------------------
// Hidden comments

static COMMENTS: LazyLock<Regex> = LazyLock::new(|| {
    compile(concat!(
        r"<!--|%%",
        r#"|\[(?://|comment)\]:\s*#\s*[("]"#,
        r#"|<[a-z]+\b[^>]{0,200}?\bstyle\s*=\s*["'][^"'>]{0,200}?(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0|opacity\s*:\s*0|color\s*:\s*(?:white|#fff\b|#ffffff|transparent))[^>]{0,200}>"#,
        r"|<[a-z]+\b[^>]{0,200}?\bhidden\b[^>]{0,200}>",
    ))
});

fn hidden_comments(native: &str, found: &mut Findings) {
    let mut pos = 0;
    for _ in 0..MAX_COMMENTS {
        let Some(open) = COMMENTS.find_at(native, pos) else { return };
        let rest = &native[open.end()..];
        let close = match open.as_str() {
            "<!--" => "-->",
            "%%" => "%%",
            o if o.starts_with('[') => {
                if o.ends_with('"') {
                    "\""
                } else {
                    ")"
                }
            }
            _ => "</",
        };
        let (end, skip) = match rest.find(close) {
            Some(at) if at <= MAX_COMMENT_BYTES => (at, at + close.len()),
            _ => {
                let mut end = rest.len().min(MAX_COMMENT_BYTES);
                while !rest.is_char_boundary(end) {
                    end -= 1;
                }
                (end, end)
            }
        };
        let content = &rest[..end];
        pos = open.end() + skip;
        let folded = fold(content);
        let addressed = ADDRESSED.is_match(&folded.latin) || ADDRESSED_NATIVE.is_match(content);
        let mut inside = Findings::default();
        let views = Views { latin: &folded.latin, joined: &folded.joined, native: content, squashed: &folded.squashed };
        scan(&views, &mut inside);
        let ordered = addressed && ORDER.is_match(&folded.latin);
        if ordered || (!inside.refused.is_empty() && (addressed || inside.refused.contains(&"addresses_the_model"))) {
            found.refuse("hidden_comment");
        } else if addressed || !inside.refused.is_empty() {
            found.suspect("hidden_comment");
        }
        if pos >= native.len() {
            return;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Rules

#[derive(Clone, Copy, PartialEq, Eq)]
enum View {
    Latin,
    /// `latin` with soft line breaks joined: the override rules.
    Joined,
    Native,
    Squashed,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Refuse,
    Suspect,
}

type Veto = fn(&str, usize, usize) -> bool;

struct Rule {
    kind: &'static str,
    level: Level,
    view: View,
    /// Only suspect when quoted in a text about injections, or when it names a document.
    soft: bool,
    /// Excused when a negation comes right before it.
    negatable: bool,
    veto: Option<Veto>,
    re: Regex,
}

/// Compiles a pattern written for the views: diacritics stripped as in the views, `\b` made an
/// ASCII word boundary (which keeps the fast engines on non-ASCII text), a space meaning one or
/// more blanks (" ?": any number).
fn compile(pattern: &str) -> Regex {
    let stripped: String = pattern.nfkd().filter(|c| !is_mark(*c)).nfc().collect();
    let mut out = String::with_capacity(stripped.len() * 2);
    let (mut in_class, mut escaped) = (false, false);
    let mut chars = stripped.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            _ if escaped => {
                escaped = false;
                if c == 'b' && !in_class {
                    out.pop();
                    out.push_str(r"(?-u:\b)");
                } else {
                    out.push(c);
                }
            }
            '\\' => {
                escaped = true;
                out.push(c);
            }
            '[' => {
                in_class = true;
                out.push(c);
            }
            ']' => {
                in_class = false;
                out.push(c);
            }
            ' ' if !in_class && chars.peek() == Some(&'?') => {
                chars.next();
                out.push_str(r"\s*");
            }
            ' ' if !in_class => out.push_str(r"\s+"),
            _ => out.push(c),
        }
    }
    compile_raw(&out)
}

fn compile_raw(pattern: &str) -> Regex {
    RegexBuilder::new(pattern)
        .size_limit(64 << 20)
        .dfa_size_limit(16 << 20)
        .build()
        .unwrap_or_else(|e| panic!("a valid pattern: {e}"))
}

const NEG: u8 = 1;
const SOFT: u8 = 2;

fn rule(kind: &'static str, level: Level, view: View, flags: u8, alternatives: &[&str]) -> Rule {
    let joined = alternatives.iter().map(|a| format!("(?:{a})")).collect::<Vec<_>>().join("|");
    Rule { kind, level, view, soft: flags & SOFT != 0, negatable: flags & NEG != 0, veto: None, re: compile(&joined) }
}

fn with_veto(mut rule: Rule, veto: Veto) -> Rule {
    rule.veto = Some(veto);
    rule
}

// Building blocks (lowercase, diacritics stripped, as the latin view is).
const IGNORE_EN: &str = r"(?:stop paying attention to|ignor(?:e|ing)|disregard(?:ing)?|forget(?:ting)?|overrid(?:e|ing)|overrule|bypass|discard|drop|abandon|neglect|dismiss|scrap|nullify|cancel|void|revoke|erase|wipe|clear|reset|throw (?:out|away)|set aside|put aside|pay no (?:attention|heed|mind) to|skip)";
const MOD_EN: &str = r"(?:previous|previously|prior|preceding|above|earlier|former|foregoing|original|initial|old|existing|current|system|developer|safety|default|hidden|pre-?set|all|any|every|whatever|your)";
const MOD_STRICT_EN: &str =
    r"(?:previous|prior|preceding|above|earlier|former|foregoing|original|initial|system|developer|safety|your)";
const STRONG_EN: &str =
    r"(?:instructions?|prompts?|directives?|guidelines|programming|guardrails|constraints|system (?:prompt|message)s?)";
const WEAK_EN: &str = r"(?:rules?|directions|commands?|orders|guidance|messages|context|polic(?:y|ies)|restrictions|limitations|filters|safeguards|conditioning)";
/// The verbs that make even a weak noun an override ("ignore the previous rules").
const IGNORE_CORE_EN: &str = r"(?:ignor(?:e|ing)|disregard(?:ing)?|forget(?:ting)?|overrid(?:e|ing)|overrule|bypass|discard|abandon|neglect|dismiss|pay no (?:attention|heed|mind) to|stop paying attention to|set aside|put aside)";
const GAP: &str = r"[^.\n]{0,40}?";
const SHORT: &str = r"[^.\n]{0,25}?";

/// Text addressed to an AI reader (English).
const ADDRESS_EN: &[&str] = &[
    r"\b(?:note|message|instructions?|attention|important(?: message)?|notice|reminder|hint|psa|memo|directive|request|warning|info(?:rmation)?|text|comment|step \d+|task|todo|action|job|orders?|commands?)s? (?:to|for) (?:the |any |all |every |an? )?(?:[\w-]+ )?(?:ai|a\.i\.|llm|large language model|language model|ai (?:assistant|agent|model|system|reader|summari[sz]er|screener|crawler|scraper)|assistant|agent|automated (?:agent|system|reader|assistant|tool)|chatbot|gpt|chatgpt|claude|gemini|copilot|summari[sz]er|screener|crawler|scraper)s?\b",
    r"\b(?:if|when|while) (?:you are|you're|u r) (?:an? |the )?(?:ai|llm|large language model|language model|assistant|agent|bot|chatbot|model|automated \w+|gpt|chatgpt|ai (?:assistant|agent|model|system|summari[sz]er|screener))\b",
    r"\b(?:ai|llm|a\.i\.)s? ?(?:agents?|assistants?|models?|systems?|crawlers?|scrapers?|summari[sz]ers?|tools?|readers?|screeners?|bots?)? (?:reading|processing|summari[sz]ing|parsing|indexing|analy[sz]ing|reviewing|seeing|crawling|scanning) (?:this|these|the)\b",
    r"\b(?:large |ai )?(?:language )?(?:models?|llms?) (?:reading|processing|summari[sz]ing|parsing) (?:this|these)\b",
    r"\bto (?:the|an?|any|all|every) (?:ai|llm|agent|assistant|model|language model|summari[sz]er|bot|chatbot|screener|crawler)s?(?: \w+){0,3} ?[:,]",
    r"\b(?:as|for) (?:the|an?|any|all|every) (?:ai|llm|agent|assistant|model|language model|summari[sz]er|bot|chatbot|screener|crawler)s? (?:that is |who is )?(?:reading|processing|summari[sz]ing|parsing|indexing|analy[sz]ing|reviewing) (?:this|these|the)(?: \w+)? ?[:,]",
    r"\b(?:ai|llm|gpt|chatgpt|language model|ai (?:assistant|agent|model))s? (?:instructions?|directives?|notes?|orders|commands|tasks?|memo) ?:",
    r"(?:^|[.!?;(\[]\s*|<!--\s*|%%\s*)for (?:all |any |the )?(?:ai|llms?|language models?|ai (?:assistants?|agents?|models?|tools?|systems?)|gpts?|chatgpt|assistants?|agents?|models?|bots?)(?: only| alone| eyes only)? ?:",
    r"\b(?:when|if|once|whenever) (?:an?|the|any) (?:ai|assistant|agent|model|llm|bot|chatbot|language model)s? (?:reads?|processes|sees|summari[sz]es|parses|is reading|is processing|reaches|finds) this\b",
    r"\b(?:if|when|while) (?:this|the) (?:text|note|page|document|message|file|content|email) is (?:being )?(?:processed|read|summari[sz]ed|parsed|analy[sz]ed|ingested|seen|handled|indexed) by (?:an?|the|any) (?:ai|llm|language model|model|assistant|agent|bot|machine)\b",
    r"\b(?:ai|llm|gpt) (?:[\w-]+ )?(?:graders?|reviewers?|screeners?|recruiters?|evaluators?|judges?|readers?|summari[sz]ers?|crawlers?|scrapers?|indexers?)\b ?:",
    r"\b(?:todo|fixme|note|hack|xxx)\((?:ai|llm|copilot|claude|agent|assistant|bot|gpt|chatgpt)\) ?:",
    r"(?:^|[.!?;]\s*)(?:[\w-]+ ){0,2}(?:ais|llms|ai agents|ai assistants|ai models|language models|ai tools|ai systems|ai crawlers|ai scrapers|chatbots|summari[sz]er (?:bots|tools|agents)|summari[sz]ers) ?:",
    r"\bany (?:ai|llm|language model|model|assistant|agent|chatbot|bot)s? (?:that |which |who )?(?:is )?(?:processes|processing|reads|reading|summari[sz]es|summari[sz]ing|parses|parsing|sees|indexes|indexing) this\b",
    r"\b(?:whoever|whatever|any (?:system|program|tool|software|ai)) (?:is )?(?:processes|processing|parses|parsing|summari[sz]es|summari[sz]ing|ingests|indexes|reads?) this (?:text|page|note|document|file)\b",
];
/// Text that may be addressed to an automated reader, or to people ("agents processing this
/// claim"): only a suspect sign.
const ADDRESS_WEAK_EN: &str = r"\b(?:agents?|assistants?|bots?|models?|llms?|crawlers?|scrapers?) (?:reading|processing|summari[sz]ing|parsing|indexing|crawling|scanning) (?:this|these)\b";
/// A vocative at the start of a sentence naming an AI ("Dear LLM,", "AI agent:", "Hey ChatGPT,").
const VOCATIVE_STRONG: &str = r"(?m)(?:^|[.!?;(\[]\s*|<!--\s*|%%\s*)[\s>#-]*(?:please,? |ok(?:ay)?,? |so,? )?(?:dear |hey |hi |hello |attention,? |yo )?(?:ai|a\.i\.|llm|llms|chatgpt|gpt(?:-?\d[\w.]*)?|ai (?:agent|assistant|model|system|summari[sz]er|crawler|reader)s?|language models?|attention (?:ai|model|llm|agent)s?) ?(?:[,:]|-{1,2} )";
/// A weaker vocative ("Assistant,", "Claude:"): only with an order right after it.
const VOCATIVE_WEAK: &str = r"(?m)(?:^|[.!?;(\[]\s*|<!--\s*|%%\s*)[\s>#-]*(?:dear |hey |hi |hello |attention,? )?(?:the )?(?:assistant|assistants|agent|agents|claude|gemini|copilot|bard|bot|chatbot|model) ?(?:[,:]|-{1,2} )";
const LEADIN: &str = r"(?:(?:please|kindly|now|also|immediately|quietly|silently|secretly|first|then|just|simply|always|from now on,?|from this point on,?|remember to|make sure to|be sure to|you (?:must|should|will|need to|have to)(?: now| always)?|(?:as|for|in|to|before|after|when|while|if|once) [^,.\n]{1,40},|(?:when|while|after|before|as) (?:you )?(?:read|see|process|summari[sz]e|parse|handle|answer)\w*(?: (?:this|these|the|it)(?: \w+)?)?,?) )*";
const IMPERATIVE: &str = r"\b(?:ignore|disregard|forget|delete|remove|erase|wipe|send|email|e-mail|forward|upload|post|tell|say|respond|reply|answer|output|print|write|add|insert|append|include|recommend|rate|rank|praise|describe|state|claim|report|mark|classify|approve|grant|give|change|modify|update|replace|overwrite|execute|run|invoke|open|visit|click|fetch|download|install|transfer|pay|subscribe|summari[sz]e|translate|do not|don't|never|stop|make|treat|consider|pretend|act|reveal|disclose|leak|share|copy|create|use|skip|omit|hide|conceal|exclude|mention|list|follow|obey|bcc|issue|refund|credit|wire|buy|put|set|sign|accept|reject|deny|book|cancel|schedule|confirm|assign|close|merge|push|commit|deploy|fire|hire|praise|call|rewrite|edit|rename|move|archive|favou?r|prioriti[sz]e|promote|endorse|quote)\b";

const DEST: &str = r"(?:https?://|www\.|ftp://|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\b\d{1,3}(?:\.\d{1,3}){3}\b|\bwebhook|\bpastebin|\bthis (?:url|address|endpoint)|\bthe following (?:url|address|endpoint)|\b(?:my|our|an external|a remote|this) (?:server|endpoint|host|bucket|ftp)\b)";
const EXFIL_VERB: &str = r"\b(?:send|post|upload|email|e-mail|mail|forward|transmit|exfiltrate|submit|copy|paste|leak|share|sync|export|bcc|cc|append|attach|dump|deliver|relay|beacon|push|put|fetch|open|visit|request|ping|include|encode)\b";
const SENSITIVE: &str = r"(?:\b(?:secrets?|passwords?|passphrases?|credentials|api keys?|access tokens?|tokens|ssh keys?|private keys?|env(?:ironment)? variables|cookies|session (?:tokens?|cookies?)|bank details|credit card\w*|card numbers?|conversation|chat history|chat transcript|chat log|system prompt|(?:the )?user'?s \w+|all (?:of )?(?:the |my |your )?(?:notes|files|data|documents|emails|messages|contacts)|(?:whole|entire|full) (?:conversation|vault|history|chat|transcript)|(?:the|this) (?:whole |entire )?vault|contents of (?:the|this|my|your) vault|(?:this|the) (?:whole |entire |full )?(?:thread|conversation|chat|inbox|mailbox)|(?:their|his|her|your|my) (?:whole |entire )?(?:inbox|mailbox)|everything (?:you know )?about (?:the|this) user|(?:all )?(?:information|info|data|details) about (?:the|this) user)\b|\.env\b)";

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    use Level::{Refuse, Suspect};
    use View::{Latin, Native, Squashed};
    let gap = GAP;
    let s = SHORT;
    let mut rules = vec![
        // --- instruction override, English
        rule(
            "instruction_override",
            Refuse,
            Latin,
            NEG | SOFT,
            &[
                &format!(r"\b{IGNORE_EN}\b{gap}\b{MOD_EN}\b{s}\b{STRONG_EN}\b"),
                &format!(r"\b{IGNORE_CORE_EN}\b{gap}\b{MOD_STRICT_EN}\b{s}\b{WEAK_EN}\b"),
                &format!(
                    r"\b{IGNORE_CORE_EN}\b{gap}\b(?:{STRONG_EN}|{WEAK_EN}|tasks?|assignment) (?:that )?(?:you (?:were|have been|'ve been) (?:given|set up with|configured with|programmed with|told|trained (?:on|with))|you (?:received|got|have)|given to you|from (?:your|the) (?:operator|developer|creator|admin\w*|system|owner)s?)\b"
                ),
                &format!(
                    r"\b{IGNORE_CORE_EN}\b{gap}\b(?:{STRONG_EN}|{WEAK_EN}) (?:above|before this|so far|up to (?:here|now|this point))\b"
                ),
                r"\b(?:ignore|disregard|forget)\b (?:everything|anything|all that|what) (?:above|before|prior|previously|you (?:were|have been|'ve been) told|i (?:said|told you)|(?:was )?said (?:before|above|earlier)|(?:that )?came before|up to (?:this|now)|so far)\b",
                r"\b(?:ignore|disregard|forget)\b (?:everything |all |anything )?(?:what|that) (?:the (?:developer|system|operator|admin\w*|owner|creator)s?|your (?:developer|creator|operator|owner)s?|they|openai|anthropic|google) (?:told|said to|instructed|asked|programmed) you\b",
                r"\b(?:ignore|disregard|forget)\b (?:all (?:of )?)?(?:the (?:text |content |message )?)?above\b[^\n]{0,12}?\b(?:and|then|instead)\b",
            ],
        ),
        rule(
            "instruction_override",
            Refuse,
            Latin,
            SOFT,
            &[
                &format!(
                    r"\b(?:do not|don't|never|stop|no longer|cease to) (?:follow|obey|heed|listen to|adhere to|comply with|respect)(?:ing)?\b{s}\b(?:{MOD_STRICT_EN}\b{s}\b{STRONG_EN}\b|{STRONG_EN} (?:that )?you (?:were given|received|got|have|had)\b)"
                ),
                &format!(
                    r"\b(?:your (?:previous |prior |earlier |original |initial |old |above |system |existing )?|all (?:of )?(?:the |your )?(?:previous|prior|earlier|original|initial|old|above|system|existing) )(?:{STRONG_EN}|{WEAK_EN})\b{s}\b(?:are|were|have been|is|has been) (?:now |hereby |officially )?(?:void|null|cancel+ed|revoked|obsolete|invalid|overridden|superseded|replaced|lifted|suspended|deprecated|no longer (?:valid|in effect|apply|applicable|relevant|active))\b"
                ),
                r"\b(?:instructions|rules|guidelines) (?:that )?you (?:were|have been) given (?:before|earlier|previously)?[^.\n]{0,20}?\bno longer (?:apply|matter|count|hold)\b",
                r"\byour (?:new|real|actual|true|updated|revised|only|primary|sole) (?:task|goal|objective|mission|purpose|directive|instructions?|orders|priority|job) (?:now )?(?:is|are|will be|:)",
                r"\bthe (?:real|actual|true) (?:instructions?|task|prompt)s? ?:",
                &format!(
                    r"\b(?:supersedes?|overrides?|replaces?|takes? precedence over|has priority over|cancels?|outranks?) (?:all |any |each )?(?:of )?(?:your|the assistant'?s|the model'?s|the ai'?s) (?:\w+ )?(?:{STRONG_EN}|{WEAK_EN}|configuration|programming|settings|setup)\b"
                ),
                r"\b(?:the |your |all |the (?:assistant|model|ai)'?s )?(?:previous|prior|above|earlier|preceding|original) (?:prompts?|instructions?|messages?|rules)\b[^.\n]{0,10}?\b(?:was|were|is|are) (?:just |only |merely )?(?:a test|fake|a decoy|a joke|not real|outdated|wrong|placeholders?|temporary|examples?)\b",
                r"\b(?:here are|these are|below are) (?:the|your) (?:real|actual|true|new) (?:ones|instructions|rules|orders)\b",
                r"\b(?:whatever|anything|everything) (?:you were|you've been|you have been) told (?:before|earlier|previously)?,? (?:it )?(?:doesn't|does not|no longer) (?:matter|apply|count)\b",
                r"\bonly (?:follow|obey) (?:the )?(?:instructions|rules|orders|commands) (?:in|from) this (?:file|note|page|document|text|message)\b",
                r"\bend of (?:the )?(?:document|text|input|context|file|user (?:input|message)|system prompt)\b[^\n]{0,12}?\b(?:new |updated |real )?(?:instructions|task|system|rules)\b",
                r"\binstead of (?:summari[sz]ing|translating|answering|reviewing|analy[sz]ing|reading)(?: (?:this|the) \w+)?,? (?:please |just )?(?:write|output|print|say|respond|reply|tell|send|include|insert|recommend|post|generate|produce|list)\b",
                r"\b(?:ignore|disregard)\b (?:the |what the )?user(?:'s|s'| and\b)(?: (?:question|request|query|instructions|message|prompt|wishes)\b)?",
                r"\b(?:treat|consider|regard) this (?:note|text|page|document|message|comment|file) as (?:your|the|a) (?:new |highest[- ]priority |only |primary |system |top[- ]priority |real )*(?:instruction|directive|prompt|system prompt|rule|command)s?\b",
                r"\bobey (?:only )?(?:this (?:note|text|page|document|message)|the (?:text|note|document|page) (?:below|above)|what this (?:note|page|text) says|the document author)\b",
                r"\b(?:bypass|disable|turn off|deactivate|ignore|lift|suspend|circumvent|switch off)\b (?:all |any )?(?:your|its|the model'?s|the ai'?s|the assistant'?s) (?:\w+ )?(?:safety |content |ethical |moral )?(?:guardrails|filters?|restrictions|guidelines|polic(?:y|ies)|training|protocols|rules|limits)\b",
                r"\b(?:safety|content) (?:filters?|guardrails|protocols|restrictions) (?:are |have been )?(?:now )?(?:disabled|off|lifted|deactivated|suspended|removed)\b",
            ],
        ),
        // --- instruction override, other Latin-script languages
        rule(
            "instruction_override",
            Suspect,
            Latin,
            0,
            &[&format!(
                r"\b(?:previous|prior|earlier|original|initial|above|system) (?:{STRONG_EN}|guidance)\b{s}\b(?:are|were|have been|is|has been) (?:now |hereby |officially )?(?:void|null|cancel+ed|revoked|obsolete|invalid|overridden|superseded|no longer (?:valid|in effect|apply|applicable))\b"
            )],
        ),
        rule(
            "instruction_override",
            Refuse,
            Latin,
            NEG | SOFT,
            &[
                // French
                r"\b(?:ignore[zrs]?|oublie[zrs]?|neglige[zr]?|ne (?:tiens|tenez|pas tenir) pas compte|ne pas tenir compte|fai(?:s|tes) abstraction|passe[zr]? outre|laisse[zr]? tomber|abandonne[zr]?|annule[zr]?|efface[zr]?)\b[^.\n]{0,40}?(?:\b(?:toutes?|tes|vos|les precedentes|l'ensemble des)\b[^.\n]{0,20}?\b(?:instructions?|consignes?|directives?|regles|indications|ordres|commandes|prompts?)\b|\b(?:instructions?|consignes?|directives?|regles|indications|ordres|commandes|prompts?)\b[^.\n]{0,15}?(?:\b(?:precedente?s?|anterieure?s?|initiale?s?|d'origine|du systeme|systeme|d'avant)\b|ci-dessus))",
                // Spanish
                r"\b(?:ignora|ignore|ignoren|ignorar|olvida|olvide|olviden|olvidar|omite|omita|omitan|omitir|descarta|descarte|descartar|haz caso omiso|haga caso omiso|hagan caso omiso|no hagas caso|no tengas en cuenta|desatiende|pasa por alto|deja de lado)\b[^.\n]{0,40}?(?:\b(?:todas|todos|tus|sus)\b[^.\n]{0,20}?\b(?:instrucciones|instruccion|indicaciones|reglas|ordenes|directrices|normas|consignas|prompts?|comandos)\b|\b(?:instrucciones|instruccion|indicaciones|reglas|ordenes|directrices|normas|consignas|prompts?|comandos)\b[^.\n]{0,15}?\b(?:anteriores|previas|previos|de arriba|iniciales|originales|del sistema|precedentes|que te (?:dieron|han dado|dio|di)|que recibiste)\b)",
                // Portuguese
                r"\b(?:ignore|ignora|ignorem|ignorar|esqueca|esquece|esquecam|esquecer|desconsidere|desconsidera|despreze|despreza|descarte|descarta|nao siga|deixe de lado)\b[^.\n]{0,40}?(?:\b(?:todas|todos|tuas|suas)\b[^.\n]{0,20}?\b(?:instrucoes|instrucao|regras|ordens|orientacoes|diretrizes|comandos|indicacoes)\b|\b(?:instrucoes|instrucao|regras|ordens|orientacoes|diretrizes|comandos|indicacoes)\b[^.\n]{0,15}?\b(?:anteriores|previas|acima|iniciais|originais|do sistema|precedentes|que te (?:deram|deu|foram dadas)|que (?:lhe|te) deram|que recebeste|que recebeu)\b)",
                // Italian
                r"\b(?:ignora|ignorate|ignori|ignorare|dimentica|dimenticate|dimenticare|trascura|trascurate|tralascia|non considerare|non tenere conto|non tenete conto|scarta|scartate|lascia perdere)\b[^.\n]{0,40}?(?:\b(?:tutte|tutti|le tue|tue|vostre)\b[^.\n]{0,20}?\b(?:istruzioni|indicazioni|regole|direttive|ordini|comandi|prompt)\b|\b(?:istruzioni|indicazioni|regole|direttive|ordini|comandi|prompt)\b[^.\n]{0,15}?\b(?:precedenti|di prima|sopra|iniziali|originali|del sistema|anteriori)\b)",
                // Dutch
                r"\b(?:negeer|negeert|negeren|vergeet|vergeten|veronachtzaam|sla)\b[^.\n]{0,30}?(?:\b(?:alle|je|jouw|uw|eerdere|vorige|voorgaande|bovenstaande|oorspronkelijke)\b[^.\n]{0,20}?\b(?:\w*instructies|aanwijzingen|\w*regels|opdrachten|richtlijnen|prompts?|bevelen)\b|\b(?:instructies|aanwijzingen|regels|opdrachten|richtlijnen|prompts?|bevelen)\b[^.\n]{0,10}?\b(?:hierboven|van eerder|van hiervoor|van het systeem)\b)",
                // German (both word orders)
                r"\b(?:ignorier(?:e|t|en)?|vergiss|vergesst|vergessen|missacht(?:e|et|en)|ubergeh(?:e|t|en)|verwirf|verwerft|verwerfen|beachte nicht|beachten sie nicht)\b[^.\n]{0,40}?\b(?:vorherigen?|vorigen?|bisherigen?|obigen?|fruheren?|vorangegangenen?|vorhergehenden?|alle|deine|ihre|ursprunglichen?)\b[^.\n]{0,20}?\b(?:\w*anweisungen|\w*anweisung|\w*instruktionen|befehle|\w*regeln|\w*vorgaben|\w*richtlinien|anordnungen|prompts?|systemprompt)\b",
                r"\b(?:alle|deine|ihre)? ?(?:vorherigen|vorigen|bisherigen|obigen|fruheren|vorangegangenen|ursprunglichen) (?:anweisungen|instruktionen|befehle|regeln|vorgaben|richtlinien) (?:sofort |bitte )?(?:ignorieren|vergessen|missachten|ubergehen|verwerfen)\b",
                // "forget everything you were told" in French, Spanish, Portuguese, Italian, German, Dutch
                r"\b(?:ne (?:suis|suivez|suivre) (?:plus|pas)|arrete[zr]? de suivre|no sigas|no sigan|no siga|deja de seguir|nao (?:siga|sigas|sigam)|pare de seguir|non (?:seguire|seguite|segua)|smetti di seguire|befolge nicht|befolgen sie nicht|folge nicht mehr|volg niet)\b[^.\n]{0,30}?\b(?:instructions?|consignes|instrucciones|instrucoes|istruzioni|anweisungen|instructies|regles|reglas|regras|regole|regeln|regels)\b[^.\n]{0,15}?\b(?:precedent\w*|anterior\w*|previ\w*|di prima|vorherigen|bisherigen|eerdere|vorige|ci-dessus|de arriba|acima|sopra|obigen|hierboven)\b",
                r"\b(?:oublie|oubliez)\b (?:tout |toutes? les (?:regles|consignes|instructions) )?(?:ce qu'on t'a dit|ce que l'on t'a dit|ce qu'on vous a dit|ce que tu sais|avant|jusqu'ici)",
                r"\b(?:olvida|olvidate|olvide|olvidese|olviden)\b(?: de)? (?:todo|todas? (?:tus|sus|las) (?:reglas|instrucciones)) (?:lo que (?:te|le) (?:han dicho|dijeron|dije)|lo anterior|anteriores?)",
                r"\b(?:esqueca|esquece|esquecam)\b (?:tudo|todas as (?:regras|instrucoes)) (?:o )?(?:que (?:te|lhe) (?:disseram|foi dito|falaram)|anteriores?)",
                r"\b(?:dimentica|dimenticate)\b (?:tutto|tutte le (?:regole|istruzioni)) (?:(?:quello|cio) che ti (?:e stato|hanno) dett|precedent)",
                r"\b(?:vergiss|vergesst|vergessen sie)\b (?:alles|alle regeln|alle anweisungen),? (?:was (?:man )?(?:dir|ihnen|euch) (?:vorher |bisher |zuvor )?gesagt|(?:was )?(?:du|sie) (?:bisher|vorher) (?:wusstest|gelernt))",
                r"\bvergeet\b alles,? wat (?:je|jou|u) (?:eerder |daarvoor |tot nu toe )?(?:is |werd |hebt )?(?:verteld|gezegd|geleerd)",
                // Polish, Turkish
                r"\b(?:zignoruj|ignoruj|zapomnij|pomin)\w*\b[^.\n]{0,30}?\b(?:poprzednie|wczesniejsze|powyzsze|wszystkie)\b[^.\n]{0,20}?\binstrukcj\w*",
                r"\b(?:onceki|yukaridaki|tum)\b[^.\n]{0,20}?\btalimat\w*[^.\n]{0,20}?\b(?:yok ?say|gormezden gel|unut|dikkate alma)",
            ],
        ),
        // --- instruction override, Russian, Chinese, Japanese, Korean
        rule(
            "instruction_override",
            Refuse,
            Native,
            NEG | SOFT,
            &[
                r"(?:не выполняй(?:те)?|перестань(?:те)? выполнять|не следуй(?:те)?)\s+(?:все\s+)?(?:предыдущ|прежн|вышеуказанн|старые|свои|ваши|системн)\S*\s+(?:инструкци|указани|команд|правил)",
                r"(?:предыдущ|прежн|вышеуказанн|все)\S*\s+(?:инструкци|указани)\S*\s+(?:больше не действуют|отменен|недействительн|аннулирован)",
                r"(?:前述|上記|以前|これまで|前|先|全て|すべて)の?(?:指示|命令|ルール|指令|プロンプト)[^。\n]{0,10}?(?:無効|撤回|キャンセル)",
                r"(?:之前|以上|上述|先前|原来|原來|所有)的?(?:所有)?(?:指令|指示|规则|規則|提示)[^。\n]{0,6}?(?:无效|無效|作废|作廢|被取消|已取消)",
                r"(?:забудь(?:те)?|игнорируй(?:те)?)\s+(?:все|всё|все,|всё,)\s*(?:что|чему)\s+(?:тебе|вам)\s+(?:говорили|сказали|объясняли)",
                r"(?:игнорируй(?:те)?|проигнорируй(?:те)?|забудь(?:те)?|не учитывай(?:те)?)\s+(?:все\s+)?(?:инструкци|указани|правил|команд)\S*\s+(?:выше|ранее|до этого|сверху|из системного)",
                r"(?:игнорируй(?:те)?|проигнорируй(?:те)?|забудь(?:те)?|отбрось(?:те)?|отмени(?:те)?|не обращай(?:те)? внимания на|не учитывай(?:те)?|пренебреги(?:те)?|не следуй(?:те)?|перестань(?:те)? следовать)[^.\n]{0,40}?(?:предыдущ|прежн|ранн|вышеуказанн|вышеизложенн|выше|старые|все|свои|ваши|исходн|изначальн|системн)[^.\n]{0,30}?(?:инструкци|указани|правил|команд|промпт|директив|установк)",
                r"(?:忽略|忽视|忽視|无视|無視|忘记|忘記|忘掉|不要理会|不要理會|不理会|不理會|别管|別管|不要遵守|不要遵循|停止遵循|放弃|放棄|丢弃|丟棄|抛开|拋開)[^。\n]{0,12}?(?:之前|以前|先前|此前|上面|上述|以上|前面|原来|原來|原有|原始|所有|全部|一切|系统|系統)[^。\n]{0,8}?(?:指令|指示|提示词|提示詞|提示|规则|規則|命令|设定|設定|约束|約束|限制|要求)",
                r"(?:忽略|忽视|忽視|无视|無視|忘记|忘記|忘掉)[^。\n]{0,6}?(?:所有|全部)[^。\n]{0,6}?(?:说明|說明)",
                r"(?:以前|前|上記|これまで|今まで|先|最初|元|過去|上|全て|すべて|全部|システム)の?[^。\n]{0,10}?(?:指示|命令|ルール|指令|プロンプト|設定|制約|規則|インストラクション)[^。\n]{0,16}?(?:無視|忘れ|破棄|取り消|従わな)",
                r"(?:이전|앞|위|기존|모든|지금까지|시스템)[^.\n]{0,10}?(?:지시|명령|규칙|지침|프롬프트|설정)[^.\n]{0,10}?(?:무시|잊)",
            ],
        ),
        // --- letter-spaced text, squashed
        rule(
            "instruction_override",
            Refuse,
            Squashed,
            0,
            &[
                r"(?:ignore|disregard|forget|bypass|override)(?:all|any|every|the|your|of|my)*(?:previous|prior|earlier|above|preceding|original|initial|system)(?:instructions?|prompts?|directives?|guidelines|rules)",
                r"forget(?:all|your|the)*instructions",
            ],
        ),
        rule(
            "role_reassignment",
            Refuse,
            Squashed,
            0,
            &[r"youarenow(?:dan|in(?:developer|god)mode)|actasdan|developermodeenabled"],
        ),
        rule(
            "prompt_leak",
            Refuse,
            Squashed,
            0,
            &[
                r"(?:reveal|print|show|output|repeat)(?:me)?(?:your|the)(?:full|entire|hidden|initial|original)*(?:systemprompt|systemmessage|initialinstructions)",
            ],
        ),
        // --- chat templates
        rule(
            "chat_template",
            Refuse,
            Latin,
            SOFT,
            &[r"<\|[a-z][a-z0-9_]{1,31}\|>", r"\[/?inst\]|<</?sys>>|<(?:start|end)_of_turn>|<\|?im_(?:start|end)\|?>"],
        ),
        // --- role injection
        with_veto(
            rule(
                "role_injection",
                Refuse,
                Latin,
                SOFT,
                &[
                    r"<\s*/?\s*(?:system|system[_ -]?(?:prompt|message|instructions?)|sys)\s*>",
                    r"\{\{\s*[#/]?\s*(?:system|system[_ -]?(?:prompt|message))\s*\}\}",
                ],
            ),
            one_word_element,
        ),
        rule(
            "role_injection",
            Refuse,
            Latin,
            0,
            &[
                r"(?m)(?:^|[.!?;]\s+)[\s>#-]*\[\s*(?:system|system (?:message|prompt|override|note|notice|instructions?)|sys|admin(?:istrator)?(?: override)?|developer(?: message)?)\s*\]\s*:?[^\S\n]*[a-z]",
                r"(?m)(?:^|[.!?;]\s+)[\s>#\-\[<(|]*(?:system|system (?:message|prompt|note|notice|update|override|alert)|sys|sys-?note|developer(?: message| note)?|admin(?:istrator)?(?: message| note)?|root|operator|(?:security |admin |system |safety )?override)[\]>)|]*\s*:\s*(?:you\b|your\b|ignore|disregard|forget|from now on|new (?:instructions|rules|policy|task)|the (?:assistant|ai|model|user has)|do not|don't|always|never|important|override|respond|reply|answer|output|reveal|obey|follow|act as|pretend|delete|send|forward|all (?:previous|prior)|(?:previous|prior) instructions)",
                r"(?m)(?:^|[.!?;]\s+)[\s>#-]*(?:assistant|ai)\s*:\s*you (?:are|must|will|shall)\b",
                r"(?m)(?:^|[.!?;]\s+)[\s>#\-\[<(|]*(?:system|admin|developer|operator)(?: \w+){0,2}[\]>)|]*\s*:\s*(?:you (?:must|will|are|shall) now\b|you are no longer\b|from now on\b|ignore\b|disregard\b|forget\b|the user (?:is|has)\b)",
                r"(?m)^[\s>]*#{1,6} ?system(?: prompt| message)? ?:?[^\S\n]*(?:\n[^\S\n]*)?(?:you\b|your\b|ignore|disregard|forget|from now on|new instructions|always|never|do not)",
                r"\b(?:this is|the following is|here is|here are) (?:a |an )?(?:message|instructions?|update|notice|override|directive|order)s? from (?:your|the) (?:developers?|creators?|admin(?:istrator)?s?|operators?|owners?|system|openai|anthropic|google|makers?)\b[^.\n]{0,80}?\b(?:you|your|disable|ignore|reveal|must|allowed)\b",
                r"\b(?:your )?(?:developers?|creators?|admins?|administrators?|operators?|openai|anthropic) (?:have|has) (?:updated|changed|modified|replaced|overridden|revoked|removed|lifted) your (?:instructions|rules|guidelines|polic(?:y|ies)|restrictions|prompt|programming|system prompt)\b",
            ],
        ),
        rule(
            "role_injection",
            Suspect,
            Latin,
            0,
            &[
                r"(?m)^[\s>#-]*\[\s*(?:system|system message|system prompt|sys)\s*\]\s*$",
                r"(?m)^[\s>]*#{1,6} ?(?:system|instruction|instructions) ?:\s*$",
            ],
        ),
        // --- role reassignment
        rule(
            "role_reassignment",
            Refuse,
            Latin,
            SOFT,
            &[
                r"\b(?:you are|you're|you will be|you'll be|you will act as|you act as|act as|acting as|pretend (?:to be|you are|you're)|roleplay as|role-play as|play the role of|become|simulate|behave as|respond as|answer as|you will (?:now )?respond as|switch to|enter)\b(?: now| from now on)?(?: called| named)? (?:dan|stan|dude|aim)\b",
                r"\b(?:you are|you're|you will be|you'll be|you will act as|act as|acting as|pretend (?:to be|you are|you're)|roleplay as|role-play as|play the role of|become|simulate|behave (?:as|like)|act like|respond as|answer as|switch to|enter)\b(?: now| from now on)?[^.\n]{0,40}?\b(?:jailbroken|jailbreak|unrestricted|unfiltered|uncensored|amoral|unethical|evil\w*|no (?:longer )?(?:restrictions|rules|limits|filters|guidelines)|without (?:any )?(?:ethical |moral |safety |content )?(?:restrictions|rules|limits|filters|guidelines|guardrails|censorship)|developer mode|god mode|dev mode|not bound by|free (?:from|of) (?:all |any )?(?:restrictions|rules|limits|filters|guidelines|constraints|censorship)|no content polic\w*|freegpt)\b",
                r"\byou are no longer (?:an? )?(?:claude|chatgpt|gpt|gemini|copilot|llama|ai|assistant|bound|restricted|limited|required|subject)\b",
                r"\b(?:dan|jailbreak|jailbroken|unrestricted|unfiltered|uncensored) mode\b",
                r"\bdeveloper mode\b[^\n]{0,80}?\b(?:no longer (?:filtered|restricted|censored)|content polic|uncensored|unfiltered|ignores?\b|without (?:any )?(?:restrictions|filters|limits)|you (?:must|will|can) (?:comply|answer|say|generate|output))",
                // other languages: "from now on you are … without limits / DAN"
                r"\b(?:tu es|vous etes|eres|es usted|du bist|bist du|sie sind|voce e|tu es|sei|siete|je bent|ben je|jij bent)\b(?: maintenant| desormais| ahora| jetzt| agora| ora| nu)?[^.\n]{0,40}?\b(?:dan|sans (?:aucune? )?(?:restrictions?|limites?|filtres?|regles)|plus aucune limite|sin (?:filtros|restricciones|limites|reglas)|ohne (?:einschrankungen|regeln|filter|grenzen)|sem (?:restricoes|filtros|limites|regras)|senza (?:limiti|restrizioni|filtri|regole)|zonder (?:beperkingen|regels|filters))\b",
            ],
        ),
        rule(
            "role_reassignment",
            Suspect,
            Latin,
            0,
            &[
                r"\bno refusals\b|\bwithout (?:refusing|refusals|any refusal)\b|\bnever refuse\b|\b(?:you|the assistant|the ai|the model) (?:is|are) now (?:permitted|allowed|authori[sz]ed|free) to\b",
                r"\b(?:pretend (?:to be|you are|you're)|act as|act like|roleplay as|role-play as|play|be) my (?:late |dead |deceased |dear )+(?:grand(?:mother|ma|father|pa)|mother|father|mom|dad|granny)\b",
            ],
        ),
        rule(
            "role_reassignment",
            Refuse,
            Native,
            0,
            &[
                r"(?:отныне|теперь|с этого момента)\s+(?:ты|вы)\s+(?:dan|дан\b|[^.\n]{0,30}?без (?:ограничений|правил|фильтров|цензуры))",
                r"(?:从现在开始|從現在開始|现在起|現在起|从现在起|從現在起|现在|現在)[^。\n]{0,6}?你(?:是|就是|将是|將是|扮演)[^。\n]{0,20}?(?:没有任何限制|沒有任何限制|不受限制|无限制|無限制|没有限制|沒有限制|dan)",
                r"(?:制限のない|制限なしの|制約のない)(?:アシスタント|ai)",
            ],
        ),
        // --- prompt leak
        rule(
            "prompt_leak",
            Refuse,
            Latin,
            SOFT,
            &[
                r"\b(?:reveal|show|print|output|display|repeat|tell|give|share|dump|leak|disclose|spill|write out|echo|recite|expose|list|type out|paste|provide|send)\b(?: me| us)?(?: back)?[^.\n]{0,25}?\byour (?:\w+ ){0,3}?(?:system prompt|system message|prompt|instructions|initial prompt|hidden (?:prompt|instructions|rules)|secret (?:prompt|instructions|rules)|pre-?prompt|meta-?prompt|developer (?:prompt|message|instructions)|configuration)\b",
                r"(?m)(?:^|[.!?:;,]\s*|please |now |first,? |before (?:anything|answering|continuing)[^.\n]{0,10}?,? )(?:reveal|show|print|output|display|repeat|tell|give|share|dump|leak|disclose|spill|write out|echo|recite|expose|type out|paste)\b(?: me| us)?(?: back)? (?:the|its) (?:\w+ ){0,3}?(?:system prompt|system message|initial (?:prompt|instructions)|original (?:prompt|instructions)|hidden (?:prompt|instructions|rules)|secret (?:prompt|instructions)|pre-?prompt|meta-?prompt|developer (?:prompt|message|instructions)|confidential instructions)\b",
                r"\bwhat (?:is|was) your (?:full |exact |original |initial |hidden )?system prompt\b",
                r"\b(?:output|print|repeat|dump|show|reveal|list|write out)\b (?:me )?(?:the |this |our )?(?:entire |whole |full )?(?:conversation|chat|chat history|message history|dialogue|context(?: window)?)\b (?:so far|up to (?:now|here|this point)|above|including (?:any |all )?(?:hidden|system))",
                r"\brepeat (?:everything|all(?: of)?(?: the)? (?:text|words|content)|the (?:text|words|content|message)s?) (?:above|before|prior|preceding|so far)\b",
                r"\b(?:starting|beginning) with ['\x22]?you are\b",
                // French, Spanish, Portuguese, Italian, Dutch, German
                r"\b(?:revele|revelez|montre|montrez|affiche|affichez|donne|donnez|dis|dites|ecris|ecrivez)(?:-moi|-nous)?\b[^.\n]{0,20}?\b(?:ton|votre|le) (?:prompt|invite|message) (?:systeme|system|initial)\b",
                r"\b(?:muestra|muestrame|revela|revelame|dime|ensename|imprime|escribe)\b[^.\n]{0,20}?\b(?:tu|su|el) (?:prompt|mensaje|indicacion) (?:del sistema|de sistema|inicial)\b",
                r"\b(?:mostre|mostra|revele|revela|diga|imprima)\b[^.\n]{0,20}?\b(?:o teu|o seu|seu|teu|o) (?:prompt|mensagem) (?:de|do) sistema\b",
                r"\b(?:mostra|mostrami|rivela|rivelami|dimmi|stampa|scrivi)\b[^.\n]{0,20}?\b(?:il tuo|il|tuo) (?:prompt|messaggio) (?:di|del) sistema\b",
                r"\b(?:laat|toon|geef|onthul)\b[^.\n]{0,20}?\b(?:je|jouw|de|uw) (?:systeemprompt|systeem-prompt|systeeminstructies)\b",
                r"\b(?:gib|geben sie|gebt|zeig|zeige|zeigen sie|nenne|nennen sie|verrate|verraten sie|offenbare)\b[^.\n]{0,30}?\b(?:system-?prompt|systemanweisung\w*|system-?nachricht|anfangsanweisung\w*|ursprunglichen anweisungen)\b",
            ],
        ),
        rule(
            "prompt_leak",
            Refuse,
            Native,
            0,
            &[
                r"(?:покажи|покажите|выведи|выведите|раскрой|раскройте|скажи|скажите|напиши|напишите|назови|назовите)[^.\n]{0,20}?системн\w* (?:промпт|подсказк|инструкци|сообщени)",
                r"(?:输出|輸出|显示|顯示|告诉我|告訴我|打印|泄露|洩露|展示|给我看|給我看|重复|重複)[^。\n]{0,10}?系[统統](?:提示|指令|消息|訊息|设定|設定)",
                r"システムプロンプト[^。\n]{0,10}?(?:表示|教え|出力|見せ|開示)",
                r"시스템 ?프롬프트[^.\n]{0,10}?(?:보여|출력|알려|공개)",
                r"sistem (?:istemini|komutunu|promptunu)[^.\n]{0,10}?(?:goster|yaz|soyle|paylas)",
            ],
        ),
        rule(
            "prompt_leak",
            Suspect,
            Latin,
            0,
            &[
                r"\bwhat (?:are|were) your (?:\w+ )?(?:instructions|rules|guidelines)\b",
                r"\byour system prompt\b",
                r"\bwhat (?:instructions|rules|guidelines|prompt) (?:were|was|have) you (?:been )?given\b",
                r"\b(?:quote|repeat|print|output|recite|reproduce) (?:them|it|those|these) (?:exactly|verbatim|word for word|in full)\b",
            ],
        ),
        // --- exfiltration
        rule(
            "exfiltration",
            Refuse,
            Latin,
            NEG,
            &[
                &format!(r"{EXFIL_VERB}[^.\n]{{0,60}}?{SENSITIVE}[^\n]{{0,80}}?{DEST}"),
                &format!(r"{EXFIL_VERB}[^.\n]{{0,30}}?(?:\b(?:to|at|into) )?{DEST}\S*[^.\n]{{0,60}}?{SENSITIVE}"),
                &format!(
                    r"\b(?:secretly|silently|quietly|covertly|discreetly|without (?:telling|informing|notifying|alerting|asking) (?:the user|them|anyone)|in the background)\b[^.\n]{{0,30}}?{EXFIL_VERB}[^\n]{{0,80}}?{DEST}"
                ),
                // markdown or HTML images whose query carries a placeholder
                r"!\[[^\]\n]{0,200}\]\(\s*<?(?:https?:)?//[^)\n]{0,300}?[?&=/][^)\n]{0,300}?(?:\{|\$|%7b|\[|<)",
                r#"<img\b[^>]{0,200}?\bsrc\s*=\s*["']?(?:https?:)?//[^"'>\s]{0,300}?[?&=][^"'>]{0,200}?(?:\{|\$|%7b|\[|<)"#,
                r"https?://\S*[?&][\w-]+=[^\n]{0,200}?\b(?:replac|substitut|fill)\w*\b[^\n]{0,60}?\b(?:summary|chat|conversation|secret|password|key|token|note|history|message)s?\b",
                r"\b(?:replac|substitut|fill)\w*\b[^\n]{0,60}?\b(?:summary|chat|conversation|secret|password|key|token|note|history|message)s?\b[^\n]{0,200}?https?://\S*[?&][\w-]+=",
                // French, Spanish, Portuguese, Italian, German, Dutch
                &format!(
                    r"\b(?:envoie|envoyez|envoyer|transmets|transmettez|envia|enviar|envie|envies|manda|mande|mandar|schicke?|sende|senden|ubermittle|invia|inviate|inviare|stuur|verstuur|upload)\b[^\n]{{0,60}}?\b(?:utilisateur|usuario|nutzers|benutzers|utente|gebruiker|mots de passe|contrasenas|passworter|wachtwoorden|senhas|password|cles|claves|schlussel|chiavi|sleutels|secrets?|secretos|segredos|geheimnisse|segreti|geheimen)\b[^\n]{{0,80}}?{DEST}"
                ),
            ],
        ),
        rule(
            "exfiltration",
            Refuse,
            Latin,
            NEG,
            &[
                r"\b(?:print|output|reveal|show|list|dump|tell me|give me|share|leak)\b (?:every|all|any|each)? ?(?:of )?(?:the )?(?:api keys?|passwords?|secrets?|credentials|tokens?)\b[^.\n]{0,40}?\bthe user'?s\b",
                r"\b(?:print|output|reveal|show|list|dump|tell me|give me|share|leak|repeat)\b[^.\n]{0,20}?\b(?:secrets|passwords|api keys|credentials|tokens|keys|private data)\b (?:that )?you (?:have )?(?:seen|know|found|stored|remember|read|have access to|can (?:see|access))\b",
            ],
        ),
        rule(
            "exfiltration",
            Refuse,
            Native,
            0,
            &[
                r"(?:отправь|отправьте|перешли|перешлите|загрузи|загрузите|вышли|вышлите)[^\n]{0,60}?(?:пользовател|парол|ключ|секрет|заметк|переписк)[^\n]{0,60}?(?:https?://|\S+@\S+\.)",
                r"(?:用户|用戶|你的|所有)[^\n]{0,10}?(?:笔记|筆記|密码|密碼|密钥|密鑰|数据|數據|聊天记录|聊天記錄|对话|對話|文件)[^\n]{0,10}?(?:发送|發送|发给|發給|上传|上傳|转发|轉發|传|傳)[^\n]{0,20}?(?:https?://|[\w.]+@)",
                r"(?:ユーザー|あなた)の?(?:メモ|ノート|パスワード|データ|会話|ファイル|鍵)[^\n]{0,20}?(?:https?://|[\w.]+@)[^\n]{0,30}?(?:送信|送って|アップロード|転送)",
            ],
        ),
        rule(
            "exfiltration",
            Suspect,
            Latin,
            NEG,
            &[
                r"\b(?:send|forward|upload|post|email|transmit|exfiltrate|leak|include|append|attach|embed)\b[^.\n]{0,40}?\b(?:the user'?s|the owner'?s|all (?:of )?the user'?s) (?:\w+ )?(?:chat|conversation|history|messages|notes|emails|passwords?|keys?|tokens?|secrets?|credentials|contacts|files|data|inbox|phone numbers?|(?:email |home )?address(?:es)?|location|personal (?:data|information|details)|birth ?date|date of birth|ssn|social security number|card numbers?)\b",
            ],
        ),
        // --- text addressed to the AI reader
        rule(
            "addresses_the_model",
            Refuse,
            Latin,
            NEG,
            &[
                &format!(r"(?:{})[\s\S]{{0,60}}?{IMPERATIVE}", ADDRESS_EN.join("|")),
                &format!(r"{}[^\n]{{0,40}}?:[^\S\n]*\w", ADDRESS_EN[0]),
                &format!(r"{VOCATIVE_STRONG}[^\n]{{0,60}}?{IMPERATIVE}"),
                &format!(r"{VOCATIVE_WEAK} ?{LEADIN}{IMPERATIVE}"),
                r"\bthe (?:model|assistant|ai|agent|llm|chatbot)s? (?:must|should|will|shall|is to|has to|needs to) (?:now )?(?:ignore|disregard|forget|override|bypass) (?:its|their|all|any) (?:earlier|previous|prior|original|initial|system|safety|default|own)\b",
                r"\b(?:ai|llm)s? (?:[\w-]+ )?(?:assistants|agents|models|systems|tools|bots|chatbots|crawlers|summari[sz]ers)? ?(?:must|should|shall|are (?:required|instructed) to) (?:now |always |also )?(?:include|send|reveal|output|add|ignore|disregard|forget|say|tell|respond|reply|mention|insert|append|delete|forward|recommend|describe|rank|rate|call|praise|state)\b",
                r"\b(?:run|execute) (?:whatever|any|all|every) (?:commands?|code|instructions|scripts?) (?:that )?(?:appears?|you find|(?:is |are )?(?:found|written|contained)) (?:in|inside|within) (?:the|this|these) (?:notes?|page|document|file|text|vault)\b",
                r"\b(?:before|after) (?:you )?(?:answer|respond|reply|summari[sz]e|continu)\w*\b[^\n]{0,10}?,? (?:please |also |first )?(?:run|call|invoke|execute|use|delete|send|email|forward|open|visit)\b",
                // French, German, Spanish, Portuguese, Italian, Dutch: a note to the AI, then a colon
                r"\b(?:note|message|instructions?|consignes?) (?:pour|a) (?:l'|la |le )?(?:ia|assistant|agent|modele|llm)\b ?:",
                r"\b(?:hinweis|nachricht|anweisung(?:en)?|notiz|botschaft) (?:an|fur) (?:die |den |das )?(?:ki|ai|assistenten|agenten|sprachmodell|llm|bot|modell)\b ?:",
                r"\b(?:nota|mensaje|mensagem|instrucciones|instrucoes|aviso|messaggio|istruzioni) (?:para|per|a|ao|al|alla) (?:la |el |a |o |l'|il )?(?:ia|asistente|assistente|agente|modelo|modello|llm)\b ?:",
                r"\b(?:bericht|notitie|opmerking|instructies?) (?:voor|aan) (?:de |het )?(?:ai|ki|assistent|agent|model|llm)\b ?:",
            ],
        ),
        rule(
            "addresses_the_model",
            Refuse,
            Native,
            0,
            &[
                r"(?:примечание|сообщение|заметка|инструкция|указание|внимание)\s+(?:для\s+)?(?:ии|ai|нейросети|ассистента|модели|бота|llm)\s*:",
                r"(?:给|給|致|对|對)\s*(?:ai|人工智能|大模型|语言模型|語言模型|助手|ai助手)的?(?:说明|說明|消息|訊息|指示|提示)\s*:",
                r"如果你是\s*(?:ai|人工智能|大语言模型|大語言模型|语言模型|語言模型|ai助手|助手|机器人|機器人)[^。\n]{0,10}?(?:请|請|务必|務必|必须|必須)",
                r"(?:ai|人工知能|アシスタント|言語モデル|llm)(?:の方)?へ\s*[:、]",
                r"あなたが\s*(?:ai|人工知能|言語モデル)(?:なら|であれば)[^。\n]{0,30}?(?:ください|しなさい)",
            ],
        ),
        rule(
            "addresses_the_model",
            Suspect,
            Latin,
            NEG,
            &[
                r"\bas an ai (?:language model|assistant|model|chatbot)\b|\bas an ai,? (?:i|you)\b|\bjailbreak\b",
                r"\byou are now (?:an? |the |my )?(?:\w+ ){0,2}?(?:ai|assistant|model|chatbot|bot|llm|agent|persona|character|expert|language model)\b",
                r"\bfrom now on,? you (?:are|will|must|shall)\b",
                r"\bstay in character\b",
                r"\bnew (?:system |updated )?instructions ?:",
                r"\b(?:do not|don't|never) (?:tell|inform|mention (?:this |it )?to|alert|let) the user\b|\bwithout telling the user\b|\byou must not mention\b[^.\n]{0,30}?\buser\b|\bthe user (?:must|should) (?:not|never) (?:know|find out|see)\b",
                r"\bwhen summari[sz]ing\b[^.\n]{0,20}?,? (?:insert|include|add|say|mention|state|write|tell|recommend|describe)\b",
                &ADDRESS_EN.join("|"),
                ADDRESS_WEAK_EN,
                r"\bfrom now on,? (?:you )?(?:respond|reply|answer|always|only|never)\b",
                r"(?m)={2,} ?(?:admin|system|developer|operator)(?: message| notice| override| instructions?)? ?={2,}",
                r"\bnew task ?:",
                r"\bthe user (?:wants|has asked|asked|would like|needs) you to\b",
                r"\b(?:ai )?(?:assistants|agents|models|llms|ai systems|ais|chatbots) (?:must|should|shall|are (?:required|instructed) to) (?:now |always |also )?(?:include|send|reveal|output|add|ignore|disregard|forget|say|tell|respond|reply|mention|insert|append|delete|forward|recommend)\b",
                r"\b(?:important|urgent|updated|new) (?:new |updated )?(?:system )?instructions ?:",
            ],
        ),
    ];
    rules.push(rule(
        "addresses_the_model",
        Suspect,
        Native,
        0,
        &[
            r"(?:примечание|сообщение|инструкция)\s+для\s+(?:ии|нейросети|ассистента|модели)",
            r"如果你是\s*(?:ai|人工智能|大语言模型|语言模型|ai助手)",
            r"あなたが\s*(?:ai|人工知能|言語モデル)(?:なら|であれば)",
        ],
    ));
    // German "vergessen Sie nicht, …" is "do not forget", not an override.
    for r in rules.iter_mut().filter(|r| r.kind == "instruction_override" && r.view == View::Latin) {
        r.veto = r.veto.or(Some(german_dont_forget));
        r.view = View::Joined;
    }
    rules
});

fn german_dont_forget(hay: &str, start: usize, _: usize) -> bool {
    GERMAN_DONT_FORGET.is_match(&hay[start..])
}

/// `<system>GitHub</system>` (a Maven pom) is an XML element, not a fake role tag.
fn one_word_element(hay: &str, start: usize, end: usize) -> bool {
    let mut from = start.saturating_sub(64);
    while !hay.is_char_boundary(from) {
        from -= 1;
    }
    ELEMENT_AFTER.is_match(&hay[end..]) || ELEMENT_BEFORE.is_match(&hay[from..start])
}

static ELEMENT_AFTER: LazyLock<Regex> = LazyLock::new(|| compile(r"^[^<\s]{1,40}<\s*/\s*system\s*>"));
static ELEMENT_BEFORE: LazyLock<Regex> = LazyLock::new(|| compile(r"<\s*system\s*>[^<\s]{1,40}$"));
static GERMAN_DONT_FORGET: LazyLock<Regex> =
    LazyLock::new(|| compile(r"^(?:vergessen sie nicht|vergiss nicht|vergesst nicht|nicht vergessen)\b"));

static ADDRESSED: LazyLock<Regex> =
    LazyLock::new(|| compile(&format!("{}|{ADDRESS_WEAK_EN}|{VOCATIVE_STRONG}|{VOCATIVE_WEAK}", ADDRESS_EN.join("|"))));
/// An order at the start of a sentence (inside a comment already addressed to an AI).
static ORDER: LazyLock<Regex> =
    LazyLock::new(|| compile(&format!(r"(?m)(?:^|[.!?:;]\s*)(?:please |kindly |just |also |now |then )?{IMPERATIVE}")));
static ADDRESSED_NATIVE: LazyLock<Regex> = LazyLock::new(|| {
    compile(concat!(
        r"人工智能|人工知能|нейросет|ассистент|助手|アシスタント|言語モデル|语言模型|語言模型|大模型|ai(?:助手|へ)",
        r"|(?:^|[^\p{L}])ии(?:$|[^\p{L}])",
        r"|\b(?:pour|a|an|fur|para|per|voor) (?:l'|la |die |de |el |a )?(?:ia|ki)\b",
    ))
});

static NEGATION: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"(?:\b(?:not|never|don't|dont|do not|doesn't|shouldn't|mustn't|cannot|can't|won't|nicht|nie|pas|ne|no|non|niet|nunca|jamais|mai|не|нельзя)|n')\s*$|(?:不要|別|别|不|勿)\s*$",
    )
});

static DOCUMENT_REFERENCE: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"^\s*(?:(?:printed|written|shown|listed|given|found|included|posted|stuck|taped) )?(?:in|from|on|of|at|inside)\s+(?:the\s+|this\s+|that\s+|our\s+|my\s+)?(?:readme|docs?|documentation|wiki|manual|guide|page|section|chapter|email|e-mail|ticket|thread|issue|post|article|changelog|installer|setup|tutorial|slides?|handout|leaflet|sheet|recipe|box|package|packaging|label|sticker|poster|sign|card|pdf|book|course|video|step|website|site|back|door|wall|fridge)\b",
    )
});

static DISCUSSION: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"prompt[- ]?injection|injection|jailbreak|attack|payload|exploit|adversarial|red[- ]team|example|e\.g\.|for instance|such as|phrase|string|test case|benchmark|dataset|classifier|detector|filter|screen|guardrail|defen[cs]e|mitigation|malicious|researcher|paper|token|template|saying|says|slogan|lyric|quoted?|titled|joke|injektion|inyecci|injecao|iniezione|injectie|инъекц|注入|インジェクション|인젝션",
    )
});

static DECODE_CUE: LazyLock<Regex> = LazyLock::new(|| {
    compile(concat!(
        r"\b(?:decod|decrypt|deciph|unscrambl|translat|convert|revers|read|rot-?13)\w*\b[^\n]{0,60}?(?:\band\b|\bthen\b|,)\s*(?:then )?(?:follow|execute|obey|run|carry out|comply with|act on|perform|apply|implement|do)\b\s*",
        r"(?:it\b|them\b|this\b|these\b|that\b|what (?:it|they) says?|the (?:instructions?|commands?|steps|text|result|payload|message)\b|[:.!)\n]|$)",
        r"|\b(?:follow|execute|obey|run|carry out|apply)\w*\b[^\n]{0,30}?\b(?:after|once) (?:decoding|you decode|decrypting|reversing|you reverse)",
    ))
});
static ROT13_CUE: LazyLock<Regex> = LazyLock::new(|| compile(r"\brot[- ]?13\b|\bcaesar\b"));
static REVERSED_CUE: LazyLock<Regex> =
    LazyLock::new(|| compile(r"\bbackwards?\b|\breversed?\b|\bright to left\b|\bmirror(?:ed)?\b"));

#[cfg(test)]
mod tests;
