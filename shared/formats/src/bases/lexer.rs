//! The tokens of filter and formula expressions: numbers, strings, names, operators, and
//! regular expression literals.

use regex::RegexBuilder;

use super::parser::{Expr, ExprParser, Parsed};

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Num(f64),
    Str(String),
    Ident(String),
    Op(&'static str),
    End,
}

const OPS: &[&str] = &[
    "===", "!==", "==", "!=", "<=", ">=", "&&", "||", "=>", "(", ")", "[", "]", "{", "}", ",", ".", "+", "-", "*", "/",
    "%", "!", "<", ">", "?", ":", "=",
];

pub(super) fn show(tok: &Tok) -> String {
    match tok {
        Tok::Num(n) => format!("number {n}"),
        Tok::Str(s) => format!("string {s:?}"),
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Op(op) => format!("`{op}`"),
        Tok::End => "end of expression".to_string(),
    }
}

fn ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_' || c == '$'
}

fn ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

impl<'s> ExprParser<'s> {
    pub(super) fn rest(&self) -> &'s str {
        &self.src[self.pos..]
    }

    pub(super) fn skip_space(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    pub(super) fn next(&mut self) -> Result<Tok, String> {
        self.skip_space();
        let rest = self.rest();
        let Some(c) = rest.chars().next() else { return Ok(Tok::End) };
        let start = self.pos;
        if c.is_ascii_digit() || (c == '.' && rest[1..].starts_with(|d: char| d.is_ascii_digit())) {
            let bytes = rest.as_bytes();
            let mut i = 0;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i < bytes.len() && bytes[i] == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
                let mut j = i + 1;
                if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
                    j += 1;
                }
                if j < bytes.len() && bytes[j].is_ascii_digit() {
                    while j < bytes.len() && bytes[j].is_ascii_digit() {
                        j += 1;
                    }
                    i = j;
                }
            }
            self.pos += i;
            return rest[..i].parse::<f64>().map(Tok::Num).map_err(|_| format!("bad number at character {start}"));
        }
        if c == '"' || c == '\'' {
            let mut out = String::new();
            let mut chars = rest.char_indices().skip(1);
            while let Some((i, ch)) = chars.next() {
                match ch {
                    '\\' => {
                        let Some((_, e)) = chars.next() else { break };
                        match e {
                            'n' => out.push('\n'),
                            't' => out.push('\t'),
                            'r' => out.push('\r'),
                            'b' => out.push('\u{8}'),
                            'f' => out.push('\u{c}'),
                            '0' => out.push('\0'),
                            'u' => {
                                let hex: String = (0..4).filter_map(|_| chars.next().map(|(_, h)| h)).collect();
                                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                                    Some(ch) => out.push(ch),
                                    None => return Err(format!("bad \\u escape at character {}", start + i)),
                                }
                            }
                            other => out.push(other),
                        }
                    }
                    q if q == c => {
                        self.pos += i + 1;
                        return Ok(Tok::Str(out));
                    }
                    other => out.push(other),
                }
            }
            return Err(format!("unterminated string starting at character {start}"));
        }
        if ident_start(c) {
            let end = rest.find(|ch: char| !ident_char(ch)).unwrap_or(rest.len());
            self.pos += end;
            return Ok(Tok::Ident(rest[..end].to_string()));
        }
        for op in OPS {
            if rest.starts_with(op) {
                self.pos += op.len();
                return Ok(Tok::Op(op));
            }
        }
        Err(format!("unexpected character {c:?} at character {start}"))
    }

    pub(super) fn peek(&mut self) -> Result<Tok, String> {
        let pos = self.pos;
        let tok = self.next();
        self.pos = pos;
        tok
    }

    pub(super) fn eat(&mut self, op: &str) -> Result<bool, String> {
        if matches!(self.peek()?, Tok::Op(o) if o == op) {
            self.next()?;
            return Ok(true);
        }
        Ok(false)
    }

    pub(super) fn expect(&mut self, op: &str) -> Result<(), String> {
        match self.next()? {
            Tok::Op(o) if o == op => Ok(()),
            tok => Err(format!("expected `{op}` but found {} at character {}", show(&tok), self.pos)),
        }
    }

    pub(super) fn regex(&mut self) -> Parsed {
        let start = self.pos;
        let rest = self.rest();
        let mut in_class = false;
        let mut escaped = false;
        let mut end = None;
        for (i, c) in rest.char_indices().skip(1) {
            match c {
                '\n' => break,
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '[' => in_class = true,
                ']' => in_class = false,
                '/' if !in_class => {
                    end = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let Some(end) = end else { return Err(format!("unterminated regular expression at character {start}")) };
        let pattern = &rest[1..end];
        let flags_len = rest[end + 1..].find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len() - end - 1);
        let flags = &rest[end + 1..end + 1 + flags_len];
        self.pos += end + 1 + flags_len;
        let literal = format!("/{pattern}/{flags}");
        if flags.chars().any(|f| !"gimsu".contains(f)) {
            return Ok((Expr::Unsupported(format!("the regular expression {literal} (its flags)")), 1));
        }
        let built = RegexBuilder::new(pattern)
            .case_insensitive(flags.contains('i'))
            .multi_line(flags.contains('m'))
            .dot_matches_new_line(flags.contains('s'))
            .size_limit(1 << 20)
            .build();
        Ok(match built {
            Ok(re) => (Expr::Regex(re, flags.contains('g')), 1),
            Err(_) => (Expr::Unsupported(format!("the regular expression {literal}")), 1),
        })
    }
}
