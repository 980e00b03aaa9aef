//! The values of script variables and the errors of running a script.
//!
//! [`Value`] is pgbench's types (integers, doubles, booleans, and the text
//! of `-D NAME=VALUE`), with pgbench's coercions between them and its text
//! form of each: what a variable holds. `sql` writes values into `-M
//! simple` statements, and `Display` gives the text sent as an extended
//! or prepared statement's parameter. [`Num`] is what an expression
//! computes with: the same types less text, which reading a variable
//! turns into a number, a boolean or NULL (`Value::typed`); `expr` puts
//! constants in its trees as `Num`s, and `eval` uses their coercions.
//! [`EvalError`] is what a `\set` or `\sleep` can fail with at run time.

use std::fmt::{self, Write as _};
use std::sync::Arc;

/// The value of a script variable, with pgbench's types: 64-bit integers
/// and doubles (integers stay integers until a double meets them),
/// booleans (what comparisons and `AND`, `OR`, `NOT` give), and text (a
/// value defined with `-D NAME=VALUE`, kept as written).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(i64),
    Double(f64),
    Bool(bool),
    /// A value defined as text (`-D NAME=VALUE`, or a column `\gset`
    /// stored): sent to the server as it is written, and read as a
    /// boolean, an integer or a double, by pgbench's rules, where an
    /// expression uses it.
    Text(Arc<str>),
    /// pgbench's NULL: the constant, `-D NAME=null`, and what an
    /// operator or function gives when an argument is NULL. Written into
    /// SQL as the word `NULL`, as pgbench writes it.
    Null,
}

impl Value {
    /// A text value, as `-D NAME=VALUE` defines one.
    pub fn text(s: &str) -> Value {
        Value::Text(Arc::from(s))
    }

    /// A text value read as pgbench reads a variable's string form: `null`,
    /// a boolean (`true`, `yes`, `on`, `false`,
    /// `no`, `off`, or a prefix of them but `o`), an integer, or a double;
    /// other values are typed already.
    #[inline]
    pub(super) fn typed(&self) -> Result<Num, EvalError> {
        match *self {
            Value::Text(ref s) => Value::parse_text(s),
            Value::Int(i) => Ok(Num::Int(i)),
            Value::Double(d) => Ok(Num::Double(d)),
            Value::Bool(b) => Ok(Num::Bool(b)),
            Value::Null => Ok(Num::Null),
        }
    }

    /// [`typed`](Self::typed) of a text value, out of the hot path.
    #[inline(never)]
    fn parse_text(s: &str) -> Result<Num, EvalError> {
        let prefix_of =
            |word: &str| s.len() <= word.len() && word[..s.len()].eq_ignore_ascii_case(s);
        if s.is_empty() {
            return Err(EvalError::Malformed(s.to_owned()));
        }
        if s.eq_ignore_ascii_case("null") {
            return Ok(Num::Null);
        }
        if prefix_of("true") || prefix_of("yes") || s.eq_ignore_ascii_case("on") {
            return Ok(Num::Bool(true));
        }
        if prefix_of("false")
            || prefix_of("no")
            || s.eq_ignore_ascii_case("off")
            || s.eq_ignore_ascii_case("of")
        {
            return Ok(Num::Bool(false));
        }
        let t = s.trim_start();
        let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
        if digits.bytes().all(|b| b.is_ascii_digit()) {
            // It looks like an integer, so it must be one (pgbench's rule).
            return t
                .strip_prefix('+')
                .unwrap_or(t)
                .parse()
                .map(Num::Int)
                .map_err(|_| EvalError::Malformed(s.to_owned()));
        }
        match t.parse::<f64>() {
            Ok(d) => Ok(Num::Double(d)),
            Err(_) => Err(EvalError::Malformed(s.to_owned())),
        }
    }

    /// Whether `\if` (and `CASE WHEN`) takes the branch: a boolean's
    /// value, a number other than zero; NULL is false (pgbench's
    /// `valueTruth`). Text is read as pgbench reads it first.
    pub fn truth(&self) -> Result<bool, EvalError> {
        Ok(self.typed()?.truth())
    }

    /// Whether the literal this value is written as starts with a `-`.
    pub(super) fn writes_minus(&self) -> bool {
        match *self {
            Value::Int(i) => i < 0,
            Value::Double(d) => d.is_finite() && d.is_sign_negative(),
            Value::Bool(_) | Value::Null => false,
            Value::Text(ref s) => s.starts_with('-'),
        }
    }

    /// Appends the value as `-M simple` writes it into the statement: as
    /// its text form (see `Display`), but for the non-finite doubles, which
    /// have no bare literal and are written as quoted `float8` constants.
    pub(super) fn write_sql_literal(&self, out: &mut String) {
        // Writing to a String cannot fail.
        let _ = match *self {
            Value::Double(d) if d.is_nan() => write!(out, "'NaN'::float8"),
            Value::Double(d) if d == f64::INFINITY => write!(out, "'Infinity'::float8"),
            Value::Double(d) if d == f64::NEG_INFINITY => write!(out, "'-Infinity'::float8"),
            ref other => write!(out, "{other}"),
        };
    }
}

/// Writes a finite double as C's `%.15g` (pgbench's form of a double in
/// SQL): 15 significant digits, rounded half to even, trailing zeros
/// dropped, in exponent form (`1e+15`, `1.5e-05`) when the exponent is
/// below -4 or above 14.
fn write_g15(f: &mut fmt::Formatter<'_>, d: f64) -> fmt::Result {
    if d == 0.0 {
        return f.write_str(if d.is_sign_negative() { "-0" } else { "0" });
    }
    // Rust's exponent form rounds the exact binary value half to even, as
    // the C library does.
    let e = format!("{d:.14e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let all: String = mantissa.chars().filter(|c| *c != '.').collect();
    let digits = all.trim_end_matches('0');
    if negative {
        f.write_char('-')?;
    }
    if (-4..15).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                f.write_str(digits)?;
                for _ in digits.len()..int_len {
                    f.write_char('0')?;
                }
                Ok(())
            } else {
                write!(f, "{}.{}", &digits[..int_len], &digits[int_len..])
            }
        } else {
            f.write_str("0.")?;
            for _ in 0..(-exp - 1) {
                f.write_char('0')?;
            }
            f.write_str(digits)
        }
    } else {
        f.write_str(&digits[..1])?;
        if digits.len() > 1 {
            write!(f, ".{}", &digits[1..])?;
        }
        let sign = if exp < 0 { '-' } else { '+' };
        write!(f, "e{sign}{:02}", exp.unsigned_abs())
    }
}

/// The text form pgbench gives a variable, which PostgreSQL's input
/// functions accept: what an extended or prepared statement sends as a
/// parameter's value. Integers in full, doubles as C's `%.15g` (`0.3`,
/// `4`, `1e+15`; `NaN`, `Infinity`, `-Infinity`), booleans as `true` and
/// `false`, text as it is.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Value::Int(i) => f.write_str(itoa::Buffer::new().format(i)),
            Value::Double(d) if d.is_nan() => f.write_str("NaN"),
            Value::Double(d) if d == f64::INFINITY => f.write_str("Infinity"),
            Value::Double(d) if d == f64::NEG_INFINITY => f.write_str("-Infinity"),
            Value::Double(d) => write_g15(f, d),
            Value::Bool(b) => f.write_str(if b { "true" } else { "false" }),
            Value::Text(ref s) => f.write_str(s),
            Value::Null => f.write_str("NULL"),
        }
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Self {
        Value::Int(i)
    }
}

impl From<f64> for Value {
    fn from(d: f64) -> Self {
        Value::Double(d)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

/// A value as an expression computes with it: pgbench's types less text,
/// which reading a variable turns into one of these (see
/// [`Value::typed`]). It is copied, never counted or dropped, so the
/// interpreter's hot path stays as cheap as arithmetic on integers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Num {
    Int(i64),
    Double(f64),
    Bool(bool),
    Null,
}

impl Num {
    /// pgbench's name of the value's type, for errors.
    fn type_name(self) -> &'static str {
        match self {
            Num::Int(_) => "int",
            Num::Double(_) => "double",
            Num::Bool(_) => "boolean",
            Num::Null => "null",
        }
    }

    /// The value as an integer, as pgbench's `coerceToInt`: a double is
    /// rounded to the nearest integer, halves to even (`rint`), and must
    /// then fit in 64 bits; a boolean is an error. `function` names the
    /// caller in the error.
    #[inline]
    pub(super) fn to_int(self, function: &'static str) -> Result<i64, EvalError> {
        match self {
            Num::Int(i) => Ok(i),
            Num::Double(d) => {
                let r = d.round_ties_even();
                // -2^63 is exact as a double, and so is 2^63, the first
                // value past i64::MAX; NaN fails both comparisons.
                if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&r) {
                    Ok(r as i64)
                } else {
                    Err(EvalError::OutOfRange { function, value: r })
                }
            }
            other => Err(EvalError::Coerce {
                from: other.type_name(),
                to: "int",
            }),
        }
    }

    /// The value as a double (an integer converted, possibly rounded); a
    /// boolean is an error, as in pgbench's `coerceToDouble`.
    #[inline]
    pub(super) fn to_double(self) -> Result<f64, EvalError> {
        match self {
            Num::Int(i) => Ok(i as f64),
            Num::Double(d) => Ok(d),
            other => Err(EvalError::Coerce {
                from: other.type_name(),
                to: "double",
            }),
        }
    }

    /// The value as a boolean, for `AND`, `OR` and `NOT`: only a boolean
    /// is one (pgbench's `coerceToBool`); a number is an error.
    pub(super) fn to_bool(self) -> Result<bool, EvalError> {
        match self {
            Num::Bool(b) => Ok(b),
            other => Err(EvalError::Coerce {
                from: other.type_name(),
                to: "boolean",
            }),
        }
    }

    /// Whether `\if` (and `CASE WHEN`) takes the branch: a boolean's
    /// value, a number other than zero; NULL is false (pgbench's
    /// `valueTruth`).
    pub(super) fn truth(self) -> bool {
        match self {
            Num::Bool(b) => b,
            Num::Int(i) => i != 0,
            Num::Double(d) => d != 0.0,
            Num::Null => false,
        }
    }

    /// pgbench's `IS`: the same type, and for a boolean the same value
    /// (`x IS NULL`, `x IS TRUE`, `x IS FALSE`; an integer is never TRUE).
    pub(super) fn is(self, target: Num) -> bool {
        match (self, target) {
            (Num::Null, Num::Null) => true,
            (Num::Bool(a), Num::Bool(b)) => a == b,
            _ => false,
        }
    }

    /// What `debug()` prints after its prefix, as pgbench prints it: the
    /// type and the value, a double with 15 significant digits (`%.15g`).
    pub(super) fn debug_form(self) -> String {
        match self {
            Num::Null => "null".into(),
            Num::Bool(b) => format!("boolean {b}"),
            Num::Int(i) => format!("int {i}"),
            // PostgreSQL's own printf writes NaN and Infinity so.
            Num::Double(_) => format!("double {}", Value::from(self)),
        }
    }
}

impl From<Num> for Value {
    #[inline]
    fn from(n: Num) -> Self {
        match n {
            Num::Int(i) => Value::Int(i),
            Num::Double(d) => Value::Double(d),
            Num::Bool(b) => Value::Bool(b),
            Num::Null => Value::Null,
        }
    }
}

/// A failure while running a script: an expression or a `\sleep` whose
/// values, this time, make no sense. pgbench ends the client on these; the
/// engine decides what it does.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    #[error(
        "integer overflow in {0}; if values this large are meant, compute in doubles (e.g. double(:x) * :y)"
    )]
    Overflow(&'static str),
    #[error("division by zero")]
    DivisionByZero,
    #[error("permute size parameter must be greater than zero, but is {0}")]
    PermuteSize(i64),
    #[error(
        "{function}: double to int overflow for {value:.6}; the value must round to a 64-bit integer"
    )]
    OutOfRange { function: &'static str, value: f64 },
    #[error("cannot coerce {from} to {to}{}", coerce_hint(from, to))]
    Coerce {
        from: &'static str,
        to: &'static str,
    },
    #[error("malformed variable value '{0}': it is neither a number nor a boolean")]
    Malformed(String),
    #[error(
        "{function}: the lower bound {lb} is greater than the upper bound {ub}; the range is [lb, ub], lb first"
    )]
    EmptyRange {
        function: &'static str,
        lb: i64,
        ub: i64,
    },
    #[error(
        "{function}: random range is too large: [{lb}, {ub}] holds more values than a 64-bit integer counts"
    )]
    RangeTooLarge {
        function: &'static str,
        lb: i64,
        ub: i64,
    },
    #[error("{function}: the parameter is {value}, but it must be {requirement}")]
    BadParameter {
        function: &'static str,
        value: f64,
        requirement: &'static str,
    },
    #[error(
        "\\sleep: invalid sleep time '{0}': it must be an integer (a negative one does not sleep)"
    )]
    BadSleep(Value),
}

/// How to mend a coercion error, as pgbench's types work.
fn coerce_hint(from: &str, to: &str) -> &'static str {
    match (from, to) {
        ("int" | "double", "boolean") => {
            "; AND, OR and NOT take booleans: compare the number instead, e.g. :x <> 0"
        }
        ("boolean", _) => {
            "; a comparison or AND/OR/NOT gives a boolean, which arithmetic and numeric functions do not take"
        }
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use crate::script::testing::assert_shown;

    /// H6: a double becomes an integer as pgbench's coerceToInt makes it,
    /// rounded to the nearest, halves to even, with its overflow error.
    #[test]
    fn double_to_int_rounds_half_to_even_as_pgbench() {
        assert_shown(&[
            ("int(2.7)", "3"),
            ("int(-2.7)", "-3"),
            ("int(-7.9)", "-8"),
            ("int(3.5)", "4"),
            ("int(4.5)", "4"),
            ("int(2.5)", "2"),
            ("int(-2.5)", "-2"),
            ("int(0.5)", "0"),
            ("int(-0.5)", "0"),
            ("int(1.4999)", "1"),
            ("int(7.3)", "7"),
            ("int(3 + 0.6)", "4"),
            ("int(99999 / 100000.0) + 1", "2"),
            ("7.9 % 2", "0"),
            ("5.7 % 3", "0"),
            ("2.5 % 2", "0"),
            ("5 % 2.7", "2"),
            ("mod(5.7, 3)", "0"),
            ("random(0.6, 0.6)", "1"),
            ("random(1.5, 1.5)", "2"),
            ("int(-9223372036854775808.0)", "-9223372036854775808"),
            (
                "int(1e19)",
                "error: double to int overflow for 10000000000000000000.000000",
            ),
            (
                "int(9223372036854775807.0)",
                "error: double to int overflow",
            ),
            ("int(0.0 / 0)", "error: double to int overflow"),
            ("random(1e19, 1e20)", "error: double to int overflow"),
        ]);
    }

    /// Item 3: comparisons and logic give booleans, which arithmetic does
    /// not take, and logic takes only booleans: pgbench's coercions.
    #[test]
    fn comparisons_give_booleans_with_pgbench_coercions() {
        assert_shown(&[
            ("1 = 1", "true"),
            ("1.0 = 0.0 and 1.0 != 0.0", "false"),
            ("0 = 1 Or 1.0 = 1", "true"),
            ("not (1 = 1)", "false"),
            ("NOT FALSE", "true"),
            ("0 = 0 or (1/0) < 0", "true"),
            ("(1=0) and 5", "false"),
            ("(1=1) or 5", "true"),
            ("0.0 / 0 = 0.0 / 0", "false"),
            ("0.0 / 0 <> 0.0 / 0", "true"),
            (
                "NOT (0 > 1) AND (1 <= 1) AND NOT (0 >= 1) AND (0 < 1) AND NOT (false and true) AND (false OR TRUE) AND (NOT FALSE) AND NOT (NOT TRUE)",
                "true",
            ),
            ("NOT 0.0", "error: cannot coerce double to boolean"),
            ("1.5 AND 2", "error: cannot coerce double to boolean"),
            ("0.0 OR 0", "error: cannot coerce double to boolean"),
            ("5 AND 0", "error: cannot coerce int to boolean"),
            ("not 0", "error: cannot coerce int to boolean"),
            ("(1=1) and 0", "error: cannot coerce int to boolean"),
            ("(1 = 1) + 1", "error: cannot coerce boolean to int"),
            ("TRUE + 2", "error: cannot coerce boolean to int"),
            ("(1=1) = (1=1)", "error: cannot coerce boolean to int"),
            ("-(1=1)", "error: cannot coerce boolean to int"),
            ("int(1 = 1)", "error: cannot coerce boolean to int"),
            ("greatest(1 = 1, 2)", "error: cannot coerce boolean to int"),
            ("ln(TRUE)", "error: cannot coerce boolean to double"),
            ("double(1 = 1)", "error: cannot coerce boolean to double"),
        ]);
    }

    /// Item 6 and 11, L8: a double divided by zero is an infinity or NaN;
    /// doubles are written as C's %.15g.
    #[test]
    fn doubles_divide_by_zero_and_print_as_pgbench() {
        assert_shown(&[
            ("1.0 / 0", "Infinity"),
            ("-1.0 / 0.0", "-Infinity"),
            ("0.0 / 0.0", "NaN"),
            ("1 / 0", "error: division by zero"),
            ("1.0 % 0", "error: division by zero"),
            ("mod(1, 0)", "error: division by zero"),
            ("least(-5.18, .0E0, 1.0/0) * -3.3", "17.094"),
            ("0.1 + 0.2", "0.3"),
            ("1e15 + 0.3", "1e+15"),
            ("1e14 + 0.5", "100000000000000"),
            ("1234567890123455.0", "1.23456789012346e+15"),
            ("123456789012345.6", "123456789012346"),
            ("4.0", "4"),
            ("1000.0", "1000"),
            ("1.", "1"),
            (".5", "0.5"),
            ("1e3", "1000"),
            ("0.000012345", "1.2345e-05"),
            ("0.0001", "0.0001"),
            ("1e100", "1e+100"),
            ("-0.0", "0"),
            ("0.0 * -1", "-0"),
            ("1/3.0", "0.333333333333333"),
            ("pi()", "3.14159265358979"),
            ("pi() * 4.9", "15.39380400259"),
            ("pow(2, 0.5)", "1.4142135623731"),
            ("9223372036854775807 + 0.0", "9.22337203685478e+18"),
            ("sqrt(-1)", "NaN"),
            ("ln(0)", "-Infinity"),
            ("exp(1000)", "Infinity"),
            ("pow(-8, 1.0/3)", "NaN"),
        ]);
    }
}
