//! The query parser: query types, data commands (`FROM`, `WHERE`, `SORT`, `GROUP BY`,
//! `LIMIT`, `FLATTEN`), sources and expressions, with syntax errors that name the line and
//! column.

use otc_errors::{ErrorCode, ToolError, echo};

use super::ast::{BinOp, Expr, Lit, Named, Op};
use super::functions::FUNCTIONS;
use super::lexer::{
    is_ident_char, is_ident_start, read_date, read_duration, read_link, read_number, read_string, read_tag, skip_ws,
    starts_with_at,
};
use super::{Query, QueryType, Source, Src};

const KEYWORDS: &[&str] = &["FROM", "WHERE", "SORT", "LIMIT", "GROUP", "FLATTEN"];
const MAX_DEPTH: usize = 64;
const MAX_NODES: usize = 256;
pub(super) const DATE_SHORTHANDS: &[&str] = &[
    "start-of-month",
    "start-of-week",
    "start-of-year",
    "end-of-month",
    "end-of-week",
    "end-of-year",
    "yesterday",
    "tomorrow",
    "today",
    "now",
    "sow",
    "eow",
    "soy",
    "eoy",
    "som",
    "eom",
];

struct PErr {
    pos: usize,
    message: String,
    unsupported: Option<String>,
}

struct Parser {
    s: Vec<char>,
    pos: usize,
    depth: usize,
    /// Operators, accesses and negations read so far: bounds the tree's depth (evaluation
    /// recurses along left-leaning chains).
    nodes: usize,
}

impl Parser {
    fn new(text: &str) -> Self {
        Parser { s: text.chars().collect(), pos: 0, depth: 0, nodes: 0 }
    }

    fn fail(&self, pos: usize, message: impl Into<String>) -> PErr {
        PErr { pos, message: message.into(), unsupported: None }
    }

    fn unsupported(&self, pos: usize, construct: &str, message: impl Into<String>) -> PErr {
        PErr { pos, message: message.into(), unsupported: Some(construct.to_string()) }
    }

    fn nest(&mut self) -> Result<(), PErr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.fail(self.pos, "the query nests too deeply"));
        }
        Ok(())
    }

    fn count_node(&mut self) -> Result<(), PErr> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(self.fail(self.pos, "the query is too long: it has too many operators"));
        }
        Ok(())
    }

    fn peek(&self) -> Option<char> {
        self.s.get(self.pos).copied()
    }

    fn eof(&self) -> bool {
        self.pos >= self.s.len()
    }

    fn at(&self, lit: &str) -> bool {
        starts_with_at(&self.s, self.pos, lit)
    }

    fn eat(&mut self, lit: &str) -> bool {
        if self.at(lit) {
            self.pos += lit.chars().count();
            true
        } else {
            false
        }
    }

    fn ws(&mut self) -> bool {
        let start = self.pos;
        self.pos = skip_ws(&self.s, self.pos);
        self.pos > start
    }

    /// `word` (case-insensitive) here, not followed by an identifier character.
    fn word_at(&self, word: &str) -> bool {
        let n = word.chars().count();
        self.pos + n <= self.s.len()
            && self.s[self.pos..self.pos + n].iter().zip(word.chars()).all(|(a, b)| a.eq_ignore_ascii_case(&b))
            && !self.s.get(self.pos + n).is_some_and(|c| is_ident_char(*c))
    }

    fn eat_word(&mut self, word: &str) -> bool {
        if self.word_at(word) {
            self.pos += word.chars().count();
            true
        } else {
            false
        }
    }

    fn ident(&mut self) -> Option<String> {
        if !self.peek().is_some_and(is_ident_start) {
            return None;
        }
        let start = self.pos;
        while self.peek().is_some_and(is_ident_char) {
            self.pos += 1;
        }
        Some(self.s[start..self.pos].iter().collect())
    }

    fn need_ws(&mut self, after: &str) -> Result<(), PErr> {
        if self.ws() { Ok(()) } else { Err(self.fail(self.pos, format!("expected whitespace after {after}"))) }
    }

    // --- query -------------------------------------------------------------------------------

    fn query(&mut self) -> Result<Query, PErr> {
        self.ws();
        let kind = if self.eat_word("TABLE") {
            QueryType::Table
        } else if self.eat_word("LIST") {
            QueryType::List
        } else if self.eat_word("TASK") {
            QueryType::Task
        } else if self.word_at("CALENDAR") {
            return Err(self.unsupported(
                self.pos,
                "CALENDAR",
                "CALENDAR queries are not supported; use TABLE, LIST or TASK",
            ));
        } else {
            return Err(self.fail(self.pos, "expected the query type: TABLE, LIST or TASK"));
        };
        let mut show_id = true;
        let mut columns = Vec::new();
        if kind != QueryType::Task && !self.eof() {
            let at_clause = self.pos;
            if self.ws() {
                let save = self.pos;
                if self.eat_word("WITHOUT") && self.ws() && self.eat_word("ID") {
                    show_id = false;
                } else {
                    self.pos = save;
                }
                self.ws();
                if let Some(first) = self.named_opt()? {
                    columns.push(first);
                    if kind == QueryType::Table {
                        loop {
                            let save = self.pos;
                            self.ws();
                            if !self.eat(",") {
                                self.pos = save;
                                break;
                            }
                            self.ws();
                            match self.named_opt()? {
                                Some(named) => columns.push(named),
                                None => return Err(self.fail(self.pos, "expected a column expression after ','")),
                            }
                        }
                    }
                }
            } else {
                return Err(self.fail(at_clause, "expected whitespace after the query type"));
            }
        }
        let mut source = None;
        let mut ops = Vec::new();
        loop {
            self.ws();
            if self.eof() {
                break;
            }
            let at = self.pos;
            if self.eat_word("FROM") {
                if source.is_some() || !ops.is_empty() {
                    return Err(self.fail(at, "FROM must come once, right after the query type"));
                }
                self.need_ws("FROM")?;
                source = Some(Source(self.source()?));
            } else if self.eat_word("WHERE") {
                self.need_ws("WHERE")?;
                ops.push(Op::Where(self.expr()?));
            } else if self.eat_word("SORT") {
                self.need_ws("SORT")?;
                let mut keys = Vec::new();
                loop {
                    let e = self.expr()?;
                    let save = self.pos;
                    self.ws();
                    let desc = if self.eat_word("DESCENDING") || self.eat_word("DESC") {
                        true
                    } else if self.eat_word("ASCENDING") || self.eat_word("ASC") {
                        false
                    } else {
                        self.pos = save;
                        false
                    };
                    keys.push((e, desc));
                    let save = self.pos;
                    self.ws();
                    if self.eat(",") {
                        self.ws();
                    } else {
                        self.pos = save;
                        break;
                    }
                }
                ops.push(Op::Sort(keys));
            } else if self.eat_word("GROUP") {
                self.need_ws("GROUP")?;
                if !self.eat_word("BY") {
                    return Err(self.fail(self.pos, "expected BY after GROUP"));
                }
                self.need_ws("GROUP BY")?;
                let named =
                    self.named_opt()?.ok_or_else(|| self.fail(self.pos, "expected an expression after GROUP BY"))?;
                ops.push(Op::Group(named));
            } else if self.eat_word("LIMIT") {
                self.need_ws("LIMIT")?;
                ops.push(Op::Limit(self.expr()?));
            } else if self.eat_word("FLATTEN") {
                self.need_ws("FLATTEN")?;
                let named =
                    self.named_opt()?.ok_or_else(|| self.fail(self.pos, "expected an expression after FLATTEN"))?;
                ops.push(Op::Flatten(named));
            } else if self.word_at("CALENDAR") || self.word_at("TABLE") || self.word_at("LIST") || self.word_at("TASK")
            {
                return Err(self.fail(at, "a query has one query type, at its start"));
            } else {
                return Err(self.fail(
                    at,
                    "expected an operator or a data command (FROM, WHERE, SORT, GROUP BY, LIMIT, FLATTEN) or the end of the query",
                ));
            }
        }
        Ok(Query { kind, show_id, columns, source, ops })
    }

    /// `expr [AS name]`; the name defaults to the expression's text.
    fn named_opt(&mut self) -> Result<Option<Named>, PErr> {
        let start = self.pos;
        let Some(expr) = self.expr_opt()? else { return Ok(None) };
        let raw: String = self.s[start..self.pos].iter().collect();
        let mut name = raw.lines().map(str::trim).collect::<Vec<_>>().join("");
        let save = self.pos;
        if self.ws() && self.eat_word("AS") {
            self.ws();
            if let Some(id) = self.ident() {
                name = id;
            } else if let Some((text, end)) = read_string(&self.s, self.pos) {
                name = text;
                self.pos = end;
            } else {
                return Err(self.fail(self.pos, "expected a name (an identifier or a \"string\") after AS"));
            }
        } else {
            self.pos = save;
        }
        Ok(Some(Named { name, expr }))
    }

    // --- sources -----------------------------------------------------------------------------

    fn source(&mut self) -> Result<Src, PErr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.fail(self.pos, "the FROM clause nests too deeply"));
        }
        let mut left = self.source_atom()?;
        loop {
            let save = self.pos;
            self.ws();
            let and = if self.eat_word("and") || self.eat("&") {
                true
            } else if self.eat_word("or") || self.eat("|") {
                false
            } else {
                self.pos = save;
                break;
            };
            self.ws();
            self.count_node()?;
            let right = self.source_atom()?;
            left =
                if and { Src::And(Box::new(left), Box::new(right)) } else { Src::Or(Box::new(left), Box::new(right)) };
        }
        self.depth -= 1;
        Ok(left)
    }

    fn source_atom(&mut self) -> Result<Src, PErr> {
        let at = self.pos;
        match self.peek() {
            Some('(') => {
                self.pos += 1;
                self.ws();
                let inner = self.source()?;
                self.ws();
                if !self.eat(")") {
                    return Err(self.fail(self.pos, "expected ')' to close the source"));
                }
                Ok(inner)
            }
            Some('-') | Some('!') => {
                self.pos += 1;
                self.nest()?;
                let inner = self.source_atom()?;
                self.depth -= 1;
                Ok(Src::Not(Box::new(inner)))
            }
            Some('"') => {
                let (folder, end) = read_string(&self.s, self.pos)
                    .ok_or_else(|| self.fail(at, "expected the closing '\"' of the folder"))?;
                self.pos = end;
                Ok(Src::Folder(folder.trim_end_matches('/').to_string()))
            }
            Some('#') => {
                let (tag, end) = read_tag(&self.s, self.pos).expect("at '#'");
                if tag.len() == 1 {
                    return Err(self.fail(at, "expected a tag name after '#'"));
                }
                self.pos = end;
                Ok(Src::Tag(tag[1..].to_lowercase()))
            }
            Some('[') => {
                let (link, end) = read_link(&self.s, self.pos).ok_or_else(|| self.fail(at, "expected a [[link]]"))?;
                self.pos = end;
                Ok(Src::LinksTo(link.path))
            }
            _ if self.at("outgoing(") => {
                self.pos += "outgoing(".len();
                self.ws();
                let (link, end) = read_link(&self.s, self.pos)
                    .ok_or_else(|| self.fail(self.pos, "expected a [[link]] in outgoing(...)"))?;
                self.pos = end;
                self.ws();
                if !self.eat(")") {
                    return Err(self.fail(self.pos, "expected ')' after outgoing([[link]]"));
                }
                Ok(Src::LinkedFrom(link.path))
            }
            _ if self.at("csv(") => Err(self.unsupported(at, "csv() source", "csv() sources are not supported")),
            _ => Err(self.fail(at, "expected a source: #tag, \"folder\", [[note]] or outgoing([[note]])")),
        }
    }

    // --- expressions -------------------------------------------------------------------------

    fn expr(&mut self) -> Result<Expr, PErr> {
        match self.expr_opt()? {
            Some(e) => Ok(e),
            None => Err(self.fail(self.pos, "expected an expression")),
        }
    }

    fn expr_opt(&mut self) -> Result<Option<Expr>, PErr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.fail(self.pos, "the expression nests too deeply"));
        }
        let result = self.level(0);
        self.depth -= 1;
        result
    }

    fn level(&mut self, lvl: u8) -> Result<Option<Expr>, PErr> {
        let Some(mut left) = (if lvl == 3 { self.postfix()? } else { self.level(lvl + 1)? }) else { return Ok(None) };
        loop {
            let save = self.pos;
            self.ws();
            let Some(op) = self.binop(lvl) else {
                self.pos = save;
                break;
            };
            self.ws();
            self.count_node()?;
            let at = self.pos;
            let right = if lvl == 3 { self.postfix()? } else { self.level(lvl + 1)? };
            match right {
                Some(right) => left = Expr::Bin(Box::new(left), op, Box::new(right)),
                None => return Err(self.fail(at, format!("expected an expression after '{}'", op.text()))),
            }
        }
        Ok(Some(left))
    }

    fn binop(&mut self, lvl: u8) -> Option<BinOp> {
        let table: &[(&str, BinOp)] = match lvl {
            0 => &[("&", BinOp::And), ("|", BinOp::Or)],
            1 => &[
                (">=", BinOp::Ge),
                ("<=", BinOp::Le),
                ("!=", BinOp::Ne),
                (">", BinOp::Gt),
                ("<", BinOp::Lt),
                ("=", BinOp::Eq),
            ],
            2 => &[("+", BinOp::Add), ("-", BinOp::Sub)],
            _ => &[("*", BinOp::Mul), ("/", BinOp::Div), ("%", BinOp::Mod)],
        };
        if lvl == 0 {
            if self.eat_word("and") {
                return Some(BinOp::And);
            }
            if self.eat_word("or") {
                return Some(BinOp::Or);
            }
        }
        if lvl == 1 && self.at("=>") {
            return None;
        }
        for (text, op) in table {
            if self.eat(text) {
                return Some(*op);
            }
        }
        None
    }

    fn postfix(&mut self) -> Result<Option<Expr>, PErr> {
        let Some(mut e) = self.atom()? else { return Ok(None) };
        loop {
            if matches!(self.peek(), Some('.' | '[' | '(')) {
                self.count_node()?;
            }
            match self.peek() {
                Some('.') if self.s.get(self.pos + 1).is_some_and(|c| is_ident_start(*c)) => {
                    self.pos += 1;
                    let name = self.ident().expect("identifier start");
                    e = Expr::Index(Box::new(e), Box::new(Expr::Lit(Lit::Str(name))));
                }
                Some('[') => {
                    self.pos += 1;
                    self.ws();
                    let index = self.expr()?;
                    self.ws();
                    if !self.eat("]") {
                        return Err(self.fail(self.pos, "expected ']' to close the index"));
                    }
                    e = Expr::Index(Box::new(e), Box::new(index));
                }
                Some('(') => {
                    let at = self.pos;
                    let Expr::Var(name) = e else {
                        return Err(self.unsupported(
                            at,
                            "calling an expression",
                            "only named functions can be called",
                        ));
                    };
                    let lower = name.to_lowercase();
                    if !FUNCTIONS.contains(&lower.as_str()) {
                        return Err(self.unsupported(
                            at - name.chars().count(),
                            "function",
                            format!("unknown or unsupported function '{}'", echo(&name)),
                        ));
                    }
                    self.pos += 1;
                    let args = self.args(")")?;
                    e = Expr::Call(lower, args);
                }
                _ => break,
            }
        }
        Ok(Some(e))
    }

    /// Comma-separated expressions up to `close` (the opener already eaten).
    fn args(&mut self, close: &str) -> Result<Vec<Expr>, PErr> {
        let mut args = Vec::new();
        self.ws();
        if self.eat(close) {
            return Ok(args);
        }
        loop {
            args.push(self.expr()?);
            self.ws();
            if self.eat(",") {
                self.ws();
                continue;
            }
            if self.eat(close) {
                return Ok(args);
            }
            return Err(self.fail(self.pos, format!("expected ',' or '{close}'")));
        }
    }

    fn atom(&mut self) -> Result<Option<Expr>, PErr> {
        let Some(c) = self.peek() else { return Ok(None) };
        let at = self.pos;
        match c {
            '!' => {
                if let Some((mut link, end)) = read_link(&self.s, self.pos + 1) {
                    link.embed = true;
                    self.pos = end;
                    return Ok(Some(Expr::Lit(Lit::Link(link))));
                }
                self.pos += 1;
                self.count_node()?;
                self.nest()?;
                let inner = self.postfix()?;
                self.depth -= 1;
                match inner {
                    Some(e) => Ok(Some(Expr::Not(Box::new(e)))),
                    None => Err(self.fail(self.pos, "expected an expression after '!'")),
                }
            }
            '[' => {
                if let Some((link, end)) = read_link(&self.s, self.pos) {
                    self.pos = end;
                    return Ok(Some(Expr::Lit(Lit::Link(link))));
                }
                self.pos += 1;
                Ok(Some(Expr::List(self.args("]")?)))
            }
            '{' => {
                self.pos += 1;
                let mut entries = Vec::new();
                self.ws();
                if self.eat("}") {
                    return Ok(Some(Expr::Object(entries)));
                }
                loop {
                    let key = if let Some(id) = self.ident() {
                        id
                    } else if let Some((text, end)) = read_string(&self.s, self.pos) {
                        self.pos = end;
                        text
                    } else {
                        return Err(self.fail(self.pos, "expected an object key"));
                    };
                    self.ws();
                    if !self.eat(":") {
                        return Err(self.fail(self.pos, "expected ':' after the object key"));
                    }
                    self.ws();
                    entries.push((key, self.expr()?));
                    self.ws();
                    if self.eat(",") {
                        self.ws();
                    } else if self.eat("}") {
                        return Ok(Some(Expr::Object(entries)));
                    } else {
                        return Err(self.fail(self.pos, "expected ',' or '}'"));
                    }
                }
            }
            '(' => {
                if let Some(params) = self.lambda_head() {
                    self.ws();
                    let body = self.expr()?;
                    return Ok(Some(Expr::Lambda(params, Box::new(body))));
                }
                self.pos += 1;
                self.ws();
                let inner = self.expr()?;
                self.ws();
                if !self.eat(")") {
                    return Err(self.fail(self.pos, "expected ')'"));
                }
                Ok(Some(inner))
            }
            '"' => {
                let (text, end) = read_string(&self.s, self.pos)
                    .ok_or_else(|| self.fail(at, "expected the closing '\"' of the string"))?;
                self.pos = end;
                Ok(Some(Expr::Lit(Lit::Str(text))))
            }
            c if c.is_ascii_digit() || (c == '-' && self.s.get(self.pos + 1).is_some_and(|d| d.is_ascii_digit())) => {
                let (n, end) = read_number(&self.s, self.pos).expect("a digit");
                self.pos = end;
                Ok(Some(Expr::Lit(Lit::Num(n))))
            }
            c if is_ident_start(c) => {
                let id = self.ident().expect("identifier start");
                match id.as_str() {
                    "true" | "True" => return Ok(Some(Expr::Lit(Lit::Bool(true)))),
                    "false" | "False" => return Ok(Some(Expr::Lit(Lit::Bool(false)))),
                    "null" => return Ok(Some(Expr::Lit(Lit::Null))),
                    _ => {}
                }
                let lower = id.to_lowercase();
                if (lower == "date" || lower == "dur")
                    && self.peek() == Some('(')
                    && let Some(lit) = self.literal_call(lower == "date")
                {
                    return Ok(Some(Expr::Lit(lit)));
                }
                let is_call = self.peek() == Some('(') && FUNCTIONS.contains(&lower.as_str());
                if KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(&id)) && !is_call {
                    self.pos = at;
                    return Ok(None);
                }
                Ok(Some(Expr::Var(id)))
            }
            _ => Ok(None),
        }
    }

    /// `(a, b) =>`; restores the position when this is no lambda.
    fn lambda_head(&mut self) -> Option<Vec<String>> {
        let save = self.pos;
        self.pos += 1;
        self.ws();
        let mut params = Vec::new();
        if !self.eat(")") {
            loop {
                let Some(id) = self.ident() else {
                    self.pos = save;
                    return None;
                };
                params.push(id);
                self.ws();
                if self.eat(",") {
                    self.ws();
                } else if self.eat(")") {
                    break;
                } else {
                    self.pos = save;
                    return None;
                }
            }
        }
        self.ws();
        if self.eat("=>") {
            Some(params)
        } else {
            self.pos = save;
            None
        }
    }

    /// `date(2024-01-05)`, `date(today)`, `dur(3 days)` as literals; restores the position when
    /// the argument is an expression instead.
    fn literal_call(&mut self, date: bool) -> Option<Lit> {
        let save = self.pos;
        self.pos += 1;
        self.ws();
        let lit = if date {
            if let Some(short) = DATE_SHORTHANDS.iter().find(|s| self.at(s)) {
                self.pos += short.len();
                Some(Lit::DateShorthand(short))
            } else if let Some((d, end)) = read_date(&self.s, self.pos) {
                self.pos = end;
                Some(Lit::Date(d))
            } else {
                None
            }
        } else if let Some((d, end)) = read_duration(&self.s, self.pos) {
            self.pos = end;
            Some(Lit::Dur(d))
        } else {
            None
        };
        self.ws();
        if lit.is_some() && self.eat(")") {
            lit
        } else {
            self.pos = save;
            None
        }
    }
}

fn line_col(s: &[char], pos: usize) -> (usize, usize) {
    let pos = pos.min(s.len());
    let line = s[..pos].iter().filter(|c| **c == '\n').count() + 1;
    let line_start = s[..pos].iter().rposition(|c| *c == '\n').map_or(0, |i| i + 1);
    (line, pos - line_start + 1)
}

fn parse_error(err: PErr, s: &[char]) -> ToolError {
    let (line, column) = line_col(s, err.pos);
    let mut out =
        ToolError::with_message(ErrorCode::DqlError, format!("{} (line {line}, column {column})", err.message))
            .detail("line", line)
            .detail("column", column);
    if let Some(construct) = err.unsupported {
        out = out.detail("unsupported", construct);
    }
    out.bounded()
}

/// Lines starting with `//` are comments.
fn strip_comments(text: &str) -> String {
    text.split('\n')
        .map(
            |line| {
                if line.trim_start().starts_with("//") { " ".repeat(line.chars().count()) } else { line.to_string() }
            },
        )
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads a query. A syntax error answers `dql_error` with `details.line` and `details.column`
/// (1-based) and a message naming what was expected there; a construct outside the subset
/// (`CALENDAR`, `csv()` sources, an unknown function, calling a non-function) answers the same
/// code with `details.unsupported` naming it.
pub fn parse(dql: &str) -> Result<Query, ToolError> {
    let text = strip_comments(dql);
    let mut parser = Parser::new(&text);
    parser.query().map_err(|e| parse_error(e, &parser.s))
}

pub(super) fn parse_expression(expression: &str) -> Result<Expr, ToolError> {
    let mut parser = Parser::new(expression);
    let result = (|| {
        parser.ws();
        let e = parser.expr()?;
        parser.ws();
        if !parser.eof() {
            return Err(parser.fail(parser.pos, "expected an operator or the end of the expression"));
        }
        Ok(e)
    })();
    result.map_err(|e| parse_error(e, &parser.s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dql::testing::*;
    use crate::dql::{eval_field, run};
    use serde_json::{Value, json};

    #[test]
    fn syntax_errors_name_line_and_column() {
        let err = parse("LIST\nWHERE status =").unwrap_err();
        assert_eq!(err.code, ErrorCode::DqlError);
        assert_eq!((err.details["line"].clone(), err.details["column"].clone()), (json!(2), json!(15)));
        assert!(err.message.contains("expected an expression after '='"), "{}", err.message);
        let err = parse("LIST FROM \"a\" WHER x").unwrap_err();
        assert_eq!((err.details["line"].clone(), err.details["column"].clone()), (json!(1), json!(15)));
        assert!(err.message.contains("data command"), "{}", err.message);
        let err = parse("TABLE a, FROM #x").unwrap_err();
        assert!(err.message.contains("column expression"), "{}", err.message);
        let err = parse("CHART * FROM x").unwrap_err();
        assert_eq!((err.details["line"].clone(), err.details["column"].clone()), (json!(1), json!(1)));
        assert!(err.message.contains("TABLE, LIST or TASK"));
        let err = parse("LIST FROM #a WHERE (x").unwrap_err();
        assert!(err.message.contains("expected ')'"), "{}", err.message);
        let err = parse("LIST WHERE x SORT y FROM #a").unwrap_err();
        assert!(err.message.contains("FROM must come once"), "{}", err.message);
        let err = parse("LIST FROM nowhere").unwrap_err();
        assert!(err.message.contains("expected a source"), "{}", err.message);
        let err = parse(&format!("LIST WHERE {}1{}", "(".repeat(200), ")".repeat(200))).unwrap_err();
        assert!(err.message.contains("nests too deeply"), "{}", err.message);
        for long in [
            format!("LIST WHERE x{}", " + 1".repeat(100_000)),
            format!("LIST WHERE x{}", ".a".repeat(100_000)),
            format!("LIST FROM #a{}", " or #b".repeat(100_000)),
        ] {
            assert!(parse(&long).unwrap_err().message.contains("too many operators"));
        }
        let long = parse(&format!("LIST WITHOUT ID priority{} FROM \"Projects/Beta\"", " + 1".repeat(250))).unwrap();
        assert_eq!(run(&long, &vault(), None, today(), now()).unwrap().rows[0].values, [json!(251)]);
        let long = parse(&format!("LIST WITHOUT ID file{} FROM \"Projects/Beta\"", ".name".repeat(250))).unwrap();
        assert_eq!(run(&long, &vault(), None, today(), now()).unwrap().rows[0].values, [Value::Null]);
        for deep in [format!("LIST WHERE {}x", "!".repeat(100_000)), format!("LIST FROM {}#a", "-".repeat(100_000))] {
            assert!(parse(&deep).unwrap_err().message.contains("nests too deeply"));
        }
        let err = eval_field("1 +", &vault()[0], today(), now()).unwrap_err();
        assert_eq!(err.details["column"], 4);
    }

    #[test]
    fn unsupported_constructs_are_refused() {
        let err = parse("CALENDAR file.mtime FROM #x").unwrap_err();
        assert_eq!(err.code, ErrorCode::DqlError);
        assert_eq!(err.details["unsupported"], "CALENDAR");
        assert_eq!(err.details["line"], 1);
        let err = parse("LIST FROM csv(\"data.csv\")").unwrap_err();
        assert_eq!(err.details["unsupported"], "csv() source");
        let err = parse("LIST hash(file.name)").unwrap_err();
        assert_eq!(err.details["unsupported"], "function");
        assert!(err.message.contains("'hash'"));
        assert_eq!(err.details["column"], 6);
    }

    #[test]
    fn parsing_details() {
        let q = parse("// a comment\nTABLE WITHOUT ID\n  file.link AS Note,\n  status\nFROM #project\nWHERE status != \"done\"\nSORT file.mtime DESC").unwrap();
        assert_eq!(q.kind, QueryType::Table);
        assert!(!q.show_id);
        let used: Vec<String> = q.fields_used().into_iter().collect();
        assert_eq!(used, ["file.link", "file.mtime", "status"]);
        assert!(!q.needs_tasks());
        assert!(parse("TASK").unwrap().needs_tasks());
        assert!(parse("LIST length(file.tasks)").unwrap().needs_tasks());
        let q = parse("LIST filter(file.outlinks, (l) => l.status = this.status)").unwrap();
        assert_eq!(q.fields_used().into_iter().collect::<Vec<_>>(), ["file.outlinks", "this.status"]);
        assert!(parse("list").unwrap().source().is_none());
        assert!(parse("table without id").is_ok());
        // `row` reaches a field whose name is a keyword.
        assert!(parse("LIST row.sort").is_ok());
    }
}
