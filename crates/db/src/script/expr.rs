//! `\set` expressions: the tree ([`Expr`]) and its parser.
//!
//! [`parse_expr`] turns an expression's tokens (from `lex`) into a tree,
//! with pgbench's precedence, its functions checked by name and arity,
//! and variables resolved to slots (a name nothing has set yet is refused
//! here, at parse time). It runs once per `\set`, when `meta` reads the
//! line; `eval` walks the tree on every pass of a client.

use super::lex::{Tok, Token, lex};
use super::value::Num;
use super::{Vars, undefined_variable};

/// A `\set` expression, ready to evaluate.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr(pub(super) Node);

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Node {
    Const(Num),
    Var(usize),
    Not(Box<Node>),
    /// `x IS NULL`, `x IS TRUE`, `x IS FALSE` (`ISNULL`, and with `NOT`
    /// around it `IS NOT …` and `NOTNULL`): the value tested against.
    Is(Box<Node>, Num),
    Binary(BinOp, Box<Node>, Box<Node>),
    Call(Func, Vec<Node>),
    /// `CASE WHEN c THEN v … [ELSE e] END`: the pairs, and the ELSE.
    Case(Vec<(Node, Node)>, Option<Box<Node>>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Func {
    Abs,
    Int,
    Double,
    Greatest,
    Least,
    Pi,
    Sqrt,
    Exp,
    Ln,
    Pow,
    Mod,
    Random,
    RandomExponential,
    RandomGaussian,
    RandomZipfian,
    HashFnv1a,
    HashMurmur2,
    Permute,
    /// `debug(x)`: prints x's type and value on stderr, gives x.
    Debug,
}

/// How many arguments a function takes: `Some(n)` exactly n, `None` one or
/// more; [`SEEDED`]'s take one fewer, their seed then being
/// `:default_seed`.
const FUNCTIONS: [(&str, Func, Option<usize>); 21] = [
    ("abs", Func::Abs, Some(1)),
    ("int", Func::Int, Some(1)),
    ("double", Func::Double, Some(1)),
    ("greatest", Func::Greatest, None),
    ("least", Func::Least, None),
    ("pi", Func::Pi, Some(0)),
    ("sqrt", Func::Sqrt, Some(1)),
    ("exp", Func::Exp, Some(1)),
    ("ln", Func::Ln, Some(1)),
    ("pow", Func::Pow, Some(2)),
    ("power", Func::Pow, Some(2)),
    ("mod", Func::Mod, Some(2)),
    ("random", Func::Random, Some(2)),
    ("random_exponential", Func::RandomExponential, Some(3)),
    ("random_gaussian", Func::RandomGaussian, Some(3)),
    ("random_zipfian", Func::RandomZipfian, Some(3)),
    ("hash", Func::HashMurmur2, Some(2)),
    ("hash_fnv1a", Func::HashFnv1a, Some(2)),
    ("hash_murmur2", Func::HashMurmur2, Some(2)),
    ("permute", Func::Permute, Some(3)),
    ("debug", Func::Debug, Some(1)),
];

/// The functions whose last argument, a seed, may be left out: it is then
/// the predefined `:default_seed`, as in pgbench.
const SEEDED: [Func; 3] = [Func::HashFnv1a, Func::HashMurmur2, Func::Permute];

/// The most arguments a function takes (pgbench's `MAX_FARGS`).
pub(super) const MAX_ARGS: usize = 16;

/// The deepest an expression tree may be. Evaluation recurses once per
/// level; real scripts stay under ten, and the bound keeps a pathological
/// line from overflowing a client's stack.
const MAX_DEPTH: usize = 100;

impl Node {
    /// Adds the slots of the variables the expression reads to `out`.
    pub(super) fn slots(&self, out: &mut Vec<usize>) {
        match self {
            Node::Const(_) => {}
            Node::Var(slot) => out.push(*slot),
            Node::Not(n) | Node::Is(n, _) => n.slots(out),
            Node::Binary(_, a, b) => {
                a.slots(out);
                b.slots(out);
            }
            Node::Call(_, args) => args.iter().for_each(|a| a.slots(out)),
            Node::Case(pairs, other) => {
                for (c, v) in pairs {
                    c.slots(out);
                    v.slots(out);
                }
                if let Some(e) = other {
                    e.slots(out);
                }
            }
        }
    }
}

pub(super) fn parse_expr(src: &str, vars: &mut Vars) -> Result<Expr, String> {
    let tokens = lex(src)?;
    if tokens.is_empty() {
        return Err("expected an expression".into());
    }
    let mut parser = Parser {
        tokens,
        pos: 0,
        vars,
        nesting: 0,
    };
    let (node, _) = parser.or()?;
    if let Some(token) = parser.peek() {
        return Err(if token.tok == Tok::RParen {
            "unbalanced parentheses: ')' has no '(' to close".into()
        } else {
            format!(
                "unexpected '{}' after the end of the expression; an operator is missing, or it is extra",
                token.text
            )
        });
    }
    Ok(Expr(node))
}

/// A node and the depth of the tree under it.
type Parsed = Result<(Node, usize), String>;

struct Parser<'a, 'v> {
    tokens: Vec<Token<'a>>,
    pos: usize,
    vars: &'v mut Vars,
    nesting: usize,
}

fn deep(node: Node, depth: usize) -> Parsed {
    if depth > MAX_DEPTH {
        Err(format!(
            "the expression is nested more than {MAX_DEPTH} levels deep; split it over several \\set lines"
        ))
    } else {
        Ok((node, depth))
    }
}

fn binary(op: BinOp, (l, dl): (Node, usize), (r, dr): (Node, usize)) -> Parsed {
    deep(Node::Binary(op, Box::new(l), Box::new(r)), 1 + dl.max(dr))
}

impl<'a> Parser<'a, '_> {
    fn peek(&self) -> Option<Token<'a>> {
        self.tokens.get(self.pos).copied()
    }

    fn eat(&mut self, tok: Tok<'_>) -> bool {
        if self.peek().is_some_and(|t| t.tok == tok) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn keyword(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Token { tok: Tok::Word(w), .. }) if w.eq_ignore_ascii_case(word))
    }

    /// Guards the parser's own recursion (parentheses and unary operators
    /// nest without growing the tree).
    fn enter(&mut self) -> Result<(), String> {
        self.nesting += 1;
        if self.nesting > MAX_DEPTH {
            return Err(format!(
                "the expression is nested more than {MAX_DEPTH} levels deep; split it over several \\set lines"
            ));
        }
        Ok(())
    }

    fn or(&mut self) -> Parsed {
        let mut left = self.and()?;
        while self.keyword("or") {
            self.pos += 1;
            let right = self.and()?;
            left = binary(BinOp::Or, left, right)?;
        }
        Ok(left)
    }

    fn and(&mut self) -> Parsed {
        let mut left = self.not()?;
        while self.keyword("and") {
            self.pos += 1;
            let right = self.not()?;
            left = binary(BinOp::And, left, right)?;
        }
        Ok(left)
    }

    fn not(&mut self) -> Parsed {
        if self.keyword("not") {
            self.pos += 1;
            self.enter()?;
            let (node, depth) = self.not()?;
            self.nesting -= 1;
            return deep(Node::Not(Box::new(node)), depth + 1);
        }
        self.is_test()
    }

    /// `x IS [NOT] NULL|TRUE|FALSE`, `x ISNULL`, `x NOTNULL`: between NOT
    /// and the comparisons; they chain, left to right, as in pgbench
    /// (`1 IS NULL IS NULL` is `(1 IS NULL) IS NULL`).
    fn is_test(&mut self) -> Parsed {
        let (mut node, mut depth) = self.comparison()?;
        loop {
            let (negated, target) = if self.keyword("isnull") {
                self.pos += 1;
                (false, Num::Null)
            } else if self.keyword("notnull") {
                self.pos += 1;
                (true, Num::Null)
            } else if self.keyword("is") {
                self.pos += 1;
                let negated = self.keyword("not");
                if negated {
                    self.pos += 1;
                }
                let target = match self.peek().map(|t| t.tok) {
                    Some(Tok::Word(w)) if w.eq_ignore_ascii_case("null") => Num::Null,
                    Some(Tok::Word(w)) if w.eq_ignore_ascii_case("true") => Num::Bool(true),
                    Some(Tok::Word(w)) if w.eq_ignore_ascii_case("false") => Num::Bool(false),
                    _ => {
                        return Err(format!(
                            "IS{} takes NULL, TRUE or FALSE after it",
                            if negated { " NOT" } else { "" }
                        ));
                    }
                };
                self.pos += 1;
                (negated, target)
            } else {
                return Ok((node, depth));
            };
            let test = Node::Is(Box::new(node), target);
            (node, depth) = if negated {
                deep(Node::Not(Box::new(test)), depth + 2)?
            } else {
                deep(test, depth + 1)?
            };
        }
    }

    fn comparison(&mut self) -> Parsed {
        let left = self.bitwise()?;
        let Some(op) = self.peek().and_then(|t| comparison_op(t.tok)) else {
            return Ok(left);
        };
        self.pos += 1;
        let right = self.bitwise()?;
        if let Some(t) = self.peek().filter(|t| comparison_op(t.tok).is_some()) {
            return Err(format!(
                "comparisons do not chain ('{}' after a comparison); write (a < b) AND (b < c)",
                t.text
            ));
        }
        binary(op, left, right)
    }

    /// `& | # << >>`, one level between comparisons and `+ -`, as in
    /// pgbench (and PostgreSQL).
    fn bitwise(&mut self) -> Parsed {
        let mut left = self.additive()?;
        loop {
            let op = match self.peek().map(|t| t.tok) {
                Some(Tok::Amp) => BinOp::BitAnd,
                Some(Tok::Pipe) => BinOp::BitOr,
                Some(Tok::Hash) => BinOp::BitXor,
                Some(Tok::Shl) => BinOp::Shl,
                Some(Tok::Shr) => BinOp::Shr,
                _ => return Ok(left),
            };
            self.pos += 1;
            let right = self.additive()?;
            left = binary(op, left, right)?;
        }
    }

    fn additive(&mut self) -> Parsed {
        let mut left = self.multiplicative()?;
        loop {
            let op = match self.peek().map(|t| t.tok) {
                Some(Tok::Plus) => BinOp::Add,
                Some(Tok::Minus) => BinOp::Sub,
                _ => return Ok(left),
            };
            self.pos += 1;
            let right = self.multiplicative()?;
            left = binary(op, left, right)?;
        }
    }

    fn multiplicative(&mut self) -> Parsed {
        let mut left = self.unary()?;
        loop {
            let op = match self.peek().map(|t| t.tok) {
                Some(Tok::Star) => BinOp::Mul,
                Some(Tok::Slash) => BinOp::Div,
                Some(Tok::Percent) => BinOp::Mod,
                _ => return Ok(left),
            };
            self.pos += 1;
            let right = self.unary()?;
            left = binary(op, left, right)?;
        }
    }

    fn unary(&mut self) -> Parsed {
        let negative = match self.peek().map(|t| t.tok) {
            Some(Tok::Minus) => true,
            Some(Tok::Plus) => false,
            Some(Tok::Tilde) => {
                // pgbench's ~x is -1 # x, and binds as its bitwise
                // operators do: looser than + and *, so ~1 + 2 is ~3.
                self.pos += 1;
                self.enter()?;
                let operand = self.additive()?;
                self.nesting -= 1;
                return binary(BinOp::BitXor, (Node::Const(Num::Int(-1)), 1), operand);
            }
            _ => return self.primary(),
        };
        self.pos += 1;
        // A minus before an integer literal makes a negative literal, so
        // that -9223372036854775808, whose digits alone overflow, is written
        // as it reads.
        if negative
            && let Some(Token {
                tok: Tok::Int(n), ..
            }) = self.peek()
            && let Ok(n) = i64::try_from(-i128::from(n))
        {
            self.pos += 1;
            return Ok((Node::Const(Num::Int(n)), 1));
        }
        self.enter()?;
        let (node, depth) = self.unary()?;
        self.nesting -= 1;
        if negative {
            // pgbench's -x is 0 - x: -0.0 is 0, and -(minint) overflows
            // in the subtraction.
            binary(BinOp::Sub, (Node::Const(Num::Int(0)), 1), (node, depth))
        } else {
            Ok((node, depth))
        }
    }

    fn primary(&mut self) -> Parsed {
        let Some(token) = self.peek() else {
            return Err("the expression ends where a value was expected".into());
        };
        self.pos += 1;
        match token.tok {
            Tok::Int(n) => match i64::try_from(n) {
                Ok(n) => Ok((Node::Const(Num::Int(n)), 1)),
                Err(_) => Err(format!(
                    "bigint constant overflow ({n}): integers are 64-bit; write it as a double (e.g. 1e20) if that is meant"
                )),
            },
            Tok::Double(d) => Ok((Node::Const(Num::Double(d)), 1)),
            Tok::Var(name) => match self.vars.slot(name) {
                Some(slot) => Ok((Node::Var(slot), 1)),
                None => Err(undefined_variable(name)),
            },
            Tok::LParen => {
                self.enter()?;
                let inner = self.or()?;
                self.nesting -= 1;
                if !self.eat(Tok::RParen) {
                    return Err(match self.peek() {
                        None => "unbalanced parentheses: a '(' is never closed; add ')'".into(),
                        Some(t) => format!("expected ')' but found '{}'", t.text),
                    });
                }
                Ok(inner)
            }
            Tok::Word(word) => {
                if self.peek().is_some_and(|t| t.tok == Tok::LParen) {
                    self.pos += 1;
                    return self.call(word);
                }
                let lower = word.to_ascii_lowercase();
                Err(match lower.as_str() {
                    "case" => return self.case(),
                    "when" | "then" | "else" | "end" => {
                        format!("{} outside a CASE … END", word.to_ascii_uppercase())
                    }
                    "true" => return Ok((Node::Const(Num::Bool(true)), 1)),
                    "false" => return Ok((Node::Const(Num::Bool(false)), 1)),
                    "null" => return Ok((Node::Const(Num::Null), 1)),
                    "is" | "isnull" | "notnull" => {
                        format!("expected a value before {}", word.to_ascii_uppercase())
                    }
                    "and" | "or" | "not" => {
                        format!("expected a value before {}", word.to_ascii_uppercase())
                    }
                    _ if FUNCTIONS.iter().any(|(n, _, _)| *n == lower) => {
                        format!("{word} is a function: call it as {word}(…)")
                    }
                    _ => format!(
                        "unexpected word '{word}'; a variable is written :{word}, a function call {word}(…)"
                    ),
                })
            }
            Tok::RParen => Err("unbalanced parentheses: ')' has no '(' to close".into()),
            _ => Err(format!("expected a value but found '{}'", token.text)),
        }
    }

    /// `CASE WHEN c THEN v … [ELSE e] END`, its CASE read.
    fn case(&mut self) -> Parsed {
        self.enter()?;
        let mut pairs = Vec::new();
        let mut depth = 0;
        while self.keyword("when") {
            self.pos += 1;
            let (condition, dc) = self.or()?;
            if !self.keyword("then") {
                return Err("CASE: expected THEN after WHEN's condition".into());
            }
            self.pos += 1;
            let (value, dv) = self.or()?;
            depth = depth.max(dc).max(dv);
            pairs.push((condition, value));
        }
        if pairs.is_empty() {
            return Err("CASE needs at least one WHEN … THEN …".into());
        }
        let otherwise = if self.keyword("else") {
            self.pos += 1;
            let (value, d) = self.or()?;
            depth = depth.max(d);
            Some(Box::new(value))
        } else {
            None
        };
        if !self.keyword("end") {
            return Err("CASE: expected END".into());
        }
        self.pos += 1;
        self.nesting -= 1;
        deep(Node::Case(pairs, otherwise), depth + 1)
    }

    /// A function call, its name and `(` read.
    fn call(&mut self, word: &str) -> Parsed {
        let lower = word.to_ascii_lowercase();
        let Some(&(name, func, arity)) = FUNCTIONS.iter().find(|(n, _, _)| *n == lower) else {
            let names: Vec<&str> = FUNCTIONS.iter().map(|(n, _, _)| *n).collect();
            return Err(format!(
                "unknown function '{word}'; the functions are {}",
                names.join(", ")
            ));
        };
        self.enter()?;
        let mut args = Vec::new();
        let mut depth = 0;
        if !self.eat(Tok::RParen) {
            loop {
                let (arg, d) = self.or()?;
                args.push(arg);
                depth = depth.max(d);
                if self.eat(Tok::Comma) {
                    continue;
                }
                if self.eat(Tok::RParen) {
                    break;
                }
                return Err(match self.peek() {
                    None => format!("unbalanced parentheses: {name}( is never closed; add ')'"),
                    Some(t) => format!("expected ',' or ')' in {name}(…) but found '{}'", t.text),
                });
            }
        }
        self.nesting -= 1;
        if let Some(n) = arity
            && SEEDED.contains(&func)
            && args.len() + 1 == n
        {
            args.push(Node::Var(super::DEFAULT_SEED));
        }
        match arity {
            Some(n) if SEEDED.contains(&func) && args.len() != n => {
                return Err(format!(
                    "{name}() takes {} or {n} arguments (the last a seed, :default_seed when left out), but is given {}",
                    n - 1,
                    args.len()
                ));
            }
            Some(n) if args.len() != n => {
                return Err(format!(
                    "{name}() takes {n} argument{}, but is given {}",
                    if n == 1 { "" } else { "s" },
                    args.len()
                ));
            }
            None if args.is_empty() => {
                return Err(format!("{name}() takes at least one argument"));
            }
            None if args.len() > MAX_ARGS => {
                return Err(format!(
                    "too many function arguments: {name}() takes at most {MAX_ARGS}, as in pgbench, but is given {}; nest the calls, e.g. {name}({name}(…), …)",
                    args.len()
                ));
            }
            _ => {}
        }
        deep(Node::Call(func, args), depth + 1)
    }
}

fn comparison_op(tok: Tok<'_>) -> Option<BinOp> {
    Some(match tok {
        Tok::Lt => BinOp::Lt,
        Tok::Le => BinOp::Le,
        Tok::Gt => BinOp::Gt,
        Tok::Ge => BinOp::Ge,
        Tok::Eq => BinOp::Eq,
        Tok::Ne => BinOp::Ne,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use crate::script::testing::{boolean, int};

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(int("2 + 3 * 4"), 14);
        assert_eq!(int("(2 + 3) * 4"), 20);
        assert_eq!(int("10 - 4 - 3"), 3);
        assert_eq!(int("100 / 10 / 5"), 2);
        assert_eq!(int("-2 * 3 + 1"), -5);
        assert_eq!(int("- - 4"), 4);
        assert_eq!(int("+4 - +1"), 3);
        assert_eq!(int(":a * :b - -1"), -13);
        assert!(boolean("1 + 2 < 4"));
        assert!(boolean("2 * 3 = 6"));
        assert!(boolean("NOT 1 = 2"));
        assert!(!boolean("not true and false"));
        assert!(boolean("TRUE OR false AND false"));
        assert!(!boolean("(true OR false) AND false"));
        assert!(!boolean("1 < 2 AND 3 > 4"));
        assert!(boolean("1 <= 1 and 2 >= 3 or 5 <> 5 Or 5 != 6"));
        assert!(boolean("7 > 2.5"));
        assert!(boolean("1 = 1.0"));
        // No comments in expressions, as in pgbench: `--` is two minuses.
        assert_eq!(int("3 -- 2"), 5);
    }

    #[test]
    fn keywords_and_functions_ignore_case() {
        assert_eq!(int("RANDOM(1, 1) + Mod(7, 4) + GREATEST(1, 2)"), 6);
        assert!(boolean("tRuE aNd 1 = 1"));
    }
}
