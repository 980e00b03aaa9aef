//! The lexer of `\set` expressions: an expression's text into tokens.
//!
//! The first step from text to an [`Expr`](super::Expr): `meta` hands a
//! `\set`'s expression to `expr::parse_expr`, which lexes it here, once,
//! at parse time, and builds the tree from the tokens.

use super::is_name_char;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Tok<'a> {
    Int(u64),
    Double(f64),
    Var(&'a str),
    Word(&'a str),
    LParen,
    RParen,
    Comma,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    Amp,
    Pipe,
    Hash,
    Tilde,
    Shl,
    Shr,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Token<'a> {
    pub(super) tok: Tok<'a>,
    /// The token as written, for error messages.
    pub(super) text: &'a str,
}

pub(super) fn lex(src: &str) -> Result<Vec<Token<'_>>, String> {
    let bytes = src.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let c = bytes[i];
        let tok = match c {
            b' ' | b'\t' | b'\r' | b'\n' => {
                i += 1;
                continue;
            }
            // No comments: pgbench reads `1 -- x` as 1 minus minus x.
            b'0'..=b'9' | b'.' => number(src, &mut i)?,
            b':' => {
                i += 1;
                while bytes.get(i).is_some_and(|&b| is_name_char(b as char)) {
                    i += 1;
                }
                if i == start + 1 {
                    return Err("':' must be followed by a variable's name, e.g. :aid".into());
                }
                Tok::Var(&src[start + 1..i])
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                while bytes.get(i).is_some_and(|&b| is_name_char(b as char)) {
                    i += 1;
                }
                Tok::Word(&src[start..i])
            }
            _ => operator(src, &mut i)?,
        };
        tokens.push(Token {
            tok,
            text: &src[start..i],
        });
    }
    Ok(tokens)
}

/// A number at `*i`: an integer, or a double with a point or an exponent;
/// `*i` moves past it.
fn number<'a>(src: &'a str, i: &mut usize) -> Result<Tok<'a>, String> {
    let bytes = src.as_bytes();
    let start = *i;
    let digits = |i: &mut usize| {
        let from = *i;
        while bytes.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > from
    };
    let mut any = digits(i);
    let mut double = false;
    if bytes.get(*i) == Some(&b'.') {
        *i += 1;
        double = true;
        any |= digits(i);
    }
    if any && matches!(bytes.get(*i), Some(b'e' | b'E')) {
        *i += 1;
        double = true;
        if matches!(bytes.get(*i), Some(b'+' | b'-')) {
            *i += 1;
        }
        if !digits(i) {
            return Err(format!(
                "malformed number '{}': an exponent needs digits, e.g. 1e3",
                &src[start..*i]
            ));
        }
    }
    let text = &src[start..*i];
    if !any {
        return Err("unexpected '.' in expression; write numbers as 0.5 or 5.0".into());
    }
    if double {
        let d: f64 = text
            .parse()
            .map_err(|_| format!("malformed number '{text}'"))?;
        // pgbench refuses what strtod reports out of range: an
        // overflow, and an underflow to zero or a subnormal.
        let nonzero = text
            .split(['e', 'E'])
            .next()
            .is_some_and(|m| m.bytes().any(|b| (b'1'..=b'9').contains(&b)));
        if d.is_infinite() || (nonzero && d.abs() < f64::MIN_POSITIVE) {
            return Err(format!(
                "double constant overflow ({text}): a double is at most about 1.8e308 and at least about 2.2e-308 apart from 0"
            ));
        }
        Ok(Tok::Double(d))
    } else {
        Ok(Tok::Int(text.parse().map_err(|_| {
            format!(
                "bigint constant overflow ({text}): integers are 64-bit; write it as a double (e.g. 1e20) if that is meant"
            )
        })?))
    }
}

/// An operator or punctuation at `*i`; `*i` moves past it.
fn operator<'a>(src: &'a str, i: &mut usize) -> Result<Tok<'a>, String> {
    let bytes = src.as_bytes();
    let start = *i;
    let c = bytes[start];
    let next = bytes.get(start + 1).copied();
    *i += 1;
    Ok(match c {
        b'(' => Tok::LParen,
        b')' => Tok::RParen,
        b',' => Tok::Comma,
        b'+' => Tok::Plus,
        b'-' => Tok::Minus,
        b'*' => Tok::Star,
        b'/' => Tok::Slash,
        b'%' => Tok::Percent,
        b'=' if next == Some(b'=') => {
            return Err("'==' is not an operator; equality is '='".into());
        }
        b'=' => Tok::Eq,
        b'<' if next == Some(b'=') => {
            *i += 1;
            Tok::Le
        }
        b'<' if next == Some(b'>') => {
            *i += 1;
            Tok::Ne
        }
        b'>' if next == Some(b'=') => {
            *i += 1;
            Tok::Ge
        }
        b'<' if next == Some(b'<') => {
            *i += 1;
            Tok::Shl
        }
        b'>' if next == Some(b'>') => {
            *i += 1;
            Tok::Shr
        }
        b'<' => Tok::Lt,
        b'>' => Tok::Gt,
        b'!' if next == Some(b'=') => {
            *i += 1;
            Tok::Ne
        }
        b'!' => {
            return Err("'!' is not an operator; write NOT, or != for inequality".into());
        }
        b'&' => Tok::Amp,
        b'|' => Tok::Pipe,
        b'#' => Tok::Hash,
        b'~' => Tok::Tilde,
        b'\'' | b'"' => {
            return Err("strings are not supported in \\set expressions".into());
        }
        _ => {
            let ch = src[start..].chars().next().unwrap_or('?');
            return Err(format!("unexpected character '{ch}' in expression"));
        }
    })
}
