//! The syntax of filter and formula expressions: the tree and a recursive-descent parser with
//! JavaScript's precedence, bounded in depth.

use regex::Regex;

use super::MAX_EXPR_DEPTH;
use super::lexer::{Tok, show};
use super::value::V;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone)]
pub(super) enum Expr {
    Lit(V),
    List(Vec<Expr>),
    Regex(Regex, bool),
    /// A frontmatter property (or `value`/`index`/`acc` inside `filter`/`map`/`reduce`).
    Prop(String),
    /// `note` itself.
    Note,
    /// `file` itself.
    File,
    FileField(String),
    Formula(String),
    Member(Box<Expr>, String),
    Index(Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>),
    Method(Box<Expr>, String, Vec<Expr>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// Valid Obsidian syntax this server does not evaluate.
    Unsupported(String),
}

pub(super) fn parse_expr(text: &str) -> Result<Expr, String> {
    let mut p = ExprParser { src: text, pos: 0, nesting: 0 };
    if p.peek()? == Tok::End {
        return Err("the expression is empty".to_string());
    }
    let (expr, _) = p.ternary()?;
    match p.next()? {
        Tok::End => Ok(expr),
        tok => Err(format!("unexpected {} at character {}", show(&tok), p.pos)),
    }
}

pub(super) struct ExprParser<'s> {
    pub(super) src: &'s str,
    pub(super) pos: usize,
    nesting: usize,
}

pub(super) type Parsed = Result<(Expr, usize), String>;

impl<'s> ExprParser<'s> {
    fn deeper(&mut self) -> Result<(), String> {
        self.nesting += 1;
        if self.nesting > MAX_EXPR_DEPTH {
            return Err(format!("the expression is nested deeper than {MAX_EXPR_DEPTH} levels"));
        }
        Ok(())
    }

    fn check_depth(depth: usize) -> Result<usize, String> {
        if depth > MAX_EXPR_DEPTH {
            return Err(format!("the expression is nested deeper than {MAX_EXPR_DEPTH} levels"));
        }
        Ok(depth)
    }

    fn ternary(&mut self) -> Parsed {
        self.deeper()?;
        let (cond, cd) = self.or()?;
        let out = if self.eat("?")? {
            let (a, ad) = self.ternary()?;
            self.expect(":")?;
            let (b, bd) = self.ternary()?;
            let depth = Self::check_depth(1 + cd.max(ad).max(bd))?;
            (Expr::Cond(Box::new(cond), Box::new(a), Box::new(b)), depth)
        } else {
            (cond, cd)
        };
        self.nesting -= 1;
        Ok(out)
    }

    fn or(&mut self) -> Parsed {
        let (mut left, mut depth) = self.and()?;
        while self.eat("||")? {
            let (right, rd) = self.and()?;
            depth = Self::check_depth(1 + depth.max(rd))?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        Ok((left, depth))
    }

    fn and(&mut self) -> Parsed {
        let (mut left, mut depth) = self.binary(0)?;
        while self.eat("&&")? {
            let (right, rd) = self.binary(0)?;
            depth = Self::check_depth(1 + depth.max(rd))?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
        Ok((left, depth))
    }

    /// Levels: 0 equality, 1 comparison, 2 additive, 3 multiplicative.
    fn binary(&mut self, level: usize) -> Parsed {
        if level > 3 {
            return self.unary();
        }
        let (mut left, mut depth) = self.binary(level + 1)?;
        loop {
            let op = match (level, self.peek()?) {
                (0, Tok::Op("==" | "===")) => BinOp::Eq,
                (0, Tok::Op("!=" | "!==")) => BinOp::Ne,
                (1, Tok::Op("<")) => BinOp::Lt,
                (1, Tok::Op("<=")) => BinOp::Le,
                (1, Tok::Op(">")) => BinOp::Gt,
                (1, Tok::Op(">=")) => BinOp::Ge,
                (2, Tok::Op("+")) => BinOp::Add,
                (2, Tok::Op("-")) => BinOp::Sub,
                (3, Tok::Op("*")) => BinOp::Mul,
                (3, Tok::Op("/")) => BinOp::Div,
                (3, Tok::Op("%")) => BinOp::Rem,
                _ => break,
            };
            self.next()?;
            let (right, rd) = self.binary(level + 1)?;
            depth = Self::check_depth(1 + depth.max(rd))?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
        Ok((left, depth))
    }

    fn unary(&mut self) -> Parsed {
        let op = match self.peek()? {
            Tok::Op(op @ ("!" | "-" | "+")) => op,
            _ => return self.postfix(),
        };
        self.next()?;
        self.deeper()?;
        let (inner, depth) = self.unary()?;
        self.nesting -= 1;
        let depth = Self::check_depth(depth + 1)?;
        let expr = match op {
            "!" => Expr::Not(Box::new(inner)),
            "-" => Expr::Neg(Box::new(inner)),
            _ => Expr::Call("number".to_string(), vec![inner]),
        };
        Ok((expr, depth))
    }

    fn args(&mut self) -> Result<(Vec<Expr>, usize), String> {
        let mut args = Vec::new();
        let mut depth = 0;
        if self.eat(")")? {
            return Ok((args, depth));
        }
        loop {
            let (arg, d) = self.ternary()?;
            depth = depth.max(d);
            args.push(arg);
            if self.eat(")")? {
                return Ok((args, depth));
            }
            self.expect(",")?;
        }
    }

    fn postfix(&mut self) -> Parsed {
        let (mut expr, mut depth) = self.primary()?;
        loop {
            if self.eat(".")? {
                let name = match self.next()? {
                    Tok::Ident(name) => name,
                    tok => return Err(format!("expected a name after `.` but found {}", show(&tok))),
                };
                let call = matches!(self.peek()?, Tok::Op("("));
                if call {
                    self.next()?;
                    let (args, ad) = self.args()?;
                    depth = Self::check_depth(1 + depth.max(ad))?;
                    expr = match expr {
                        Expr::Unsupported(u) if u == "formula" => Expr::Unsupported("formula used as a value".into()),
                        base => Expr::Method(Box::new(base), name, args),
                    };
                } else {
                    depth = Self::check_depth(depth + 1)?;
                    expr = match expr {
                        Expr::Note => Expr::Prop(name),
                        Expr::File => Expr::FileField(name),
                        Expr::Unsupported(u) if u == "formula" => Expr::Formula(name),
                        base => Expr::Member(Box::new(base), name),
                    };
                }
            } else if self.eat("[")? {
                self.deeper()?;
                let (index, id) = self.ternary()?;
                self.nesting -= 1;
                self.expect("]")?;
                depth = Self::check_depth(1 + depth.max(id))?;
                expr = match (expr, index) {
                    (Expr::Note, Expr::Lit(V::Str(name))) => Expr::Prop(name),
                    (Expr::File, Expr::Lit(V::Str(name))) => Expr::FileField(name),
                    (Expr::Unsupported(u), Expr::Lit(V::Str(name))) if u == "formula" => Expr::Formula(name),
                    (Expr::Unsupported(u), _) if u == "formula" => {
                        Expr::Unsupported("formula[…] with a computed name".into())
                    }
                    (base, index) => Expr::Index(Box::new(base), Box::new(index)),
                };
            } else if matches!(self.peek()?, Tok::Op("(")) {
                return Err("only functions and methods can be called".to_string());
            } else {
                break;
            }
        }
        if let Expr::Unsupported(u) = &expr
            && u == "formula"
        {
            expr = Expr::Unsupported("formula used as a value".into());
        }
        Ok((expr, depth))
    }

    fn primary(&mut self) -> Parsed {
        self.skip_space();
        if self.rest().starts_with('/') {
            return self.regex();
        }
        let at = self.pos;
        match self.next()? {
            Tok::Num(n) => Ok((Expr::Lit(V::Num(n)), 1)),
            Tok::Str(s) => Ok((Expr::Lit(V::Str(s)), 1)),
            Tok::Op("(") => {
                self.deeper()?;
                let (inner, depth) = self.ternary()?;
                self.nesting -= 1;
                self.expect(")")?;
                if matches!(self.peek()?, Tok::Op("=>")) {
                    return Err("arrow functions are not part of the Bases language".to_string());
                }
                Ok((inner, depth))
            }
            Tok::Op("[") => {
                self.deeper()?;
                let mut items = Vec::new();
                let mut depth = 0;
                if !self.eat("]")? {
                    loop {
                        let (item, d) = self.ternary()?;
                        depth = depth.max(d);
                        items.push(item);
                        if self.eat("]")? {
                            break;
                        }
                        self.expect(",")?;
                    }
                }
                self.nesting -= 1;
                Ok((Expr::List(items), Self::check_depth(depth + 1)?))
            }
            Tok::Ident(name) => {
                if matches!(self.peek()?, Tok::Op("(")) {
                    self.next()?;
                    self.deeper()?;
                    let (args, depth) = self.args()?;
                    self.nesting -= 1;
                    return Ok((Expr::Call(name, args), Self::check_depth(depth + 1)?));
                }
                let expr = match name.as_str() {
                    "true" => Expr::Lit(V::Bool(true)),
                    "false" => Expr::Lit(V::Bool(false)),
                    "null" | "undefined" => Expr::Lit(V::Null),
                    "note" => Expr::Note,
                    "file" => Expr::File,
                    "formula" => Expr::Unsupported("formula".into()),
                    "this" => Expr::Unsupported("this".into()),
                    _ => Expr::Prop(name),
                };
                Ok((expr, 1))
            }
            tok => Err(format!("unexpected {} at character {at}", show(&tok))),
        }
    }
}
