//! Evaluation of a `\set` expression over a client's variables.
//!
//! [`Expr::eval`] walks the tree `expr` built, with pgbench's arithmetic
//! (checked integers, doubles as in C), comparisons, lazy `AND`, `OR` and
//! `CASE`, and its functions; the coercions are `Num`'s (a copied value,
//! never counted or dropped), and the random functions draw through
//! `random`. This is the hot path: it runs for every `\set` of every
//! pass of every client.

use super::expr::{BinOp, Expr, Func, MAX_ARGS, Node};
use super::random::{random, random_exponential, random_gaussian, random_zipfian, range_len};
use super::value::Num;
use super::{EvalError, Value};

/// What evaluating a node gives: a [`Num`], or a boxed error, so that the
/// result fits in two registers on the way up the tree.
type Out = Result<Num, Box<EvalError>>;

/// What every node of one evaluation reads: the client's variables, its
/// random numbers, and where the expression is (for `debug()`), passed
/// down the tree as one pointer.
struct Cx<'a> {
    vars: &'a [Value],
    rng: &'a mut fastrand::Rng,
    at: At,
}

impl Expr {
    /// Evaluates the expression over a client's variables, drawing random
    /// numbers from `rng`, with pgbench's types and rules.
    ///
    /// Integer arithmetic is checked: an overflow or an integer division
    /// or modulo by zero is an error, not a wrapped value; a double divided
    /// by zero is an infinity or NaN, as in C. Where an integer is wanted
    /// (`int()`, `%`, `mod()`, the random functions' bounds), a double is
    /// rounded half to even. Comparisons give booleans; `AND`, `OR` and
    /// `NOT` take only booleans, and evaluate their right side only when it
    /// decides the result, so `:n <> 0 AND 10 / :n > 1` is safe.
    ///
    /// # Panics
    ///
    /// If `vars` is shorter than the script's variables (make it with
    /// [`Script::initial_values`](super::Script::initial_values)).
    pub fn eval(&self, vars: &[Value], rng: &mut fastrand::Rng) -> Result<Value, EvalError> {
        self.eval_at(vars, rng, At::default())
    }

    /// [`Expr::eval`] for command `at` of a script, which `debug()` names
    /// as pgbench does (script from 0, command from 1).
    pub fn eval_at(
        &self,
        vars: &[Value],
        rng: &mut fastrand::Rng,
        at: At,
    ) -> Result<Value, EvalError> {
        match eval(&self.0, &mut Cx { vars, rng, at }) {
            Ok(n) => Ok(Value::from(n)),
            Err(e) => Err(*e),
        }
    }
}

/// Where an expression runs, for `debug()`'s line: the script's number
/// (from 0) and the command's (from 1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct At {
    pub script: usize,
    pub command: usize,
}

/// pgbench's `AND` and `OR` with NULL: a NULL on either side that is
/// evaluated makes the result NULL (not SQL's three-valued logic); the
/// right side is evaluated only when the left does not decide.
fn lazy(and: bool, l: &Node, r: &Node, cx: &mut Cx<'_>) -> Out {
    let left = eval(l, cx)?;
    if left == Num::Null {
        return Ok(Num::Null);
    }
    if left.to_bool()? != and {
        return Ok(Num::Bool(!and));
    }
    let right = eval(r, cx)?;
    if right == Num::Null {
        return Ok(Num::Null);
    }
    Ok(Num::Bool(right.to_bool()?))
}

/// A leaf (a constant, a variable) here, inline; any other node through
/// [`eval_node`]. Most operands are leaves, and a call for each cost about
/// 50 instructions of entry, dispatch and exit, a third of a `\set`.
#[inline(always)]
fn eval(node: &Node, cx: &mut Cx<'_>) -> Out {
    match node {
        Node::Const(n) => Ok(*n),
        Node::Var(slot) => Ok(cx.vars[*slot].typed()?),
        _ => eval_node(node, cx),
    }
}

fn eval_node(node: &Node, cx: &mut Cx<'_>) -> Out {
    Ok(match node {
        Node::Const(n) => *n,
        Node::Var(slot) => cx.vars[*slot].typed()?,
        Node::Not(inner) => match eval(inner, cx)? {
            Num::Null => Num::Null,
            v => Num::Bool(!v.to_bool()?),
        },
        Node::Is(inner, target) => Num::Bool(eval(inner, cx)?.is(*target)),
        Node::Binary(BinOp::And, l, r) => lazy(true, l, r, cx)?,
        Node::Binary(BinOp::Or, l, r) => lazy(false, l, r, cx)?,
        Node::Binary(op, l, r) => {
            let (a, b) = (eval(l, cx)?, eval(r, cx)?);
            if a == Num::Null || b == Num::Null {
                Num::Null
            } else {
                binary_op(*op, a, b)?
            }
        }
        Node::Call(func, args) => call(*func, args, cx)?,
        Node::Case(pairs, otherwise) => {
            for (condition, value) in pairs {
                // pgbench's valueTruth: a number is true unless zero, and
                // NULL is false.
                if eval(condition, cx)?.truth() {
                    return eval(value, cx);
                }
            }
            match otherwise {
                Some(value) => eval(value, cx)?,
                // pgbench's CASE without ELSE has ELSE NULL.
                None => Num::Null,
            }
        }
    })
}

/// `%` and `mod()`: the remainder of truncating division, so it takes the
/// dividend's sign (`-7 % 3 = -1`), as in C and SQL.
fn int_mod(a: i64, b: i64) -> Result<i64, EvalError> {
    if b == 0 {
        return Err(EvalError::DivisionByZero);
    }
    // i64::MIN % -1 overflows in the machine's division, but is 0.
    Ok(a.wrapping_rem(b))
}

fn binary_op(op: BinOp, a: Num, b: Num) -> Result<Num, EvalError> {
    use Num::{Double, Int};
    if op == BinOp::Mod {
        // Modulo is an integer operation; doubles are rounded first.
        return Ok(Int(int_mod(a.to_int("%")?, b.to_int("%")?)?));
    }
    let bitwise = matches!(
        op,
        BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr
    );
    // pgbench computes in doubles when either side is one, else in
    // integers (bitwise operators always in integers, doubles rounded); a
    // boolean is neither, and is refused.
    if !bitwise && (matches!(a, Double(_)) || matches!(b, Double(_))) {
        let (x, y) = (a.to_double()?, b.to_double()?);
        return Ok(match op {
            BinOp::Add => Double(x + y),
            BinOp::Sub => Double(x - y),
            BinOp::Mul => Double(x * y),
            // As in C: ±Infinity, or NaN for 0 / 0.
            BinOp::Div => Double(x / y),
            // A NaN compares as nothing: every comparison but <> is false.
            _ => compared(op, x, y),
        });
    }
    let (x, y) = (
        a.to_int("a bitwise operator")?,
        b.to_int("a bitwise operator")?,
    );
    Ok(match op {
        BinOp::BitAnd => Int(x & y),
        BinOp::BitOr => Int(x | y),
        BinOp::BitXor => Int(x ^ y),
        // As C on the machines pgbench runs on: the count taken modulo 64.
        BinOp::Shl => Int(x.wrapping_shl(y as u32)),
        BinOp::Shr => Int(x.wrapping_shr(y as u32)),
        BinOp::Add => Int(x.checked_add(y).ok_or(EvalError::Overflow("addition"))?),
        BinOp::Sub => Int(x.checked_sub(y).ok_or(EvalError::Overflow("subtraction"))?),
        BinOp::Mul => Int(x
            .checked_mul(y)
            .ok_or(EvalError::Overflow("multiplication"))?),
        BinOp::Div => {
            if y == 0 {
                return Err(EvalError::DivisionByZero);
            }
            // Rust's division truncates toward zero, as pgbench's does;
            // only i64::MIN / -1 overflows.
            Int(x.checked_div(y).ok_or(EvalError::Overflow("division"))?)
        }
        _ => compared(op, x, y),
    })
}

/// The comparison `op` of `x` and `y`, in doubles or integers alike: `<`,
/// `<=`, `>`, `>=`, `=`, and `<>` for any other operator.
#[inline]
fn compared<T: PartialOrd>(op: BinOp, x: T, y: T) -> Num {
    Num::Bool(match op {
        BinOp::Lt => x < y,
        BinOp::Le => x <= y,
        BinOp::Gt => x > y,
        BinOp::Ge => x >= y,
        BinOp::Eq => x == y,
        _ => x != y,
    })
}

fn call(func: Func, args: &[Node], cx: &mut Cx<'_>) -> Out {
    use Num::{Double, Int};
    // The call every pgbench script makes, `random(lb, ub)`, without the
    // general path's array of arguments (its setting up and its scan for
    // NULL were a third of a select-only transaction's interpreting).
    if func == Func::Random
        && let [lb, ub] = args
    {
        let (lb, ub) = (eval(lb, cx)?, eval(ub, cx)?);
        if lb == Num::Null || ub == Num::Null {
            return Ok(Num::Null);
        }
        let (lb, ub) = (lb.to_int("random()")?, ub.to_int("random()")?);
        return Ok(Int(random(cx.rng, lb, ub)?));
    }
    // As pgbench: every argument is evaluated first, then converted.
    let mut values = [Num::Null; MAX_ARGS];
    for (value, arg) in values.iter_mut().zip(args) {
        *value = eval(arg, cx)?;
    }
    let values = &values[..args.len()];
    if func == Func::Debug {
        let value = values[0];
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "debug(script={},command={}): {}",
                cx.at.script,
                cx.at.command,
                value.debug_form()
            );
        }
        return Ok(value);
    }
    // Any other function of a NULL is NULL.
    if values.contains(&Num::Null) {
        return Ok(Num::Null);
    }
    let arg = |i: usize| values[i];
    Ok(match func {
        // pgbench's abs() of the smallest integer wraps to itself (C's
        // -i), and keeps -0.0 as it is.
        Func::Abs => match arg(0) {
            Int(i) => Int(i.wrapping_abs()),
            other => {
                let d = other.to_double()?;
                Double(if d < 0.0 { -d } else { d })
            }
        },
        Func::Int => Int(arg(0).to_int("int()")?),
        Func::Double => Double(arg(0).to_double()?),
        Func::Greatest | Func::Least => {
            let greatest = func == Func::Greatest;
            if values.iter().any(|v| matches!(v, Double(_))) {
                // C's Min and Max macros, NaN and all: the later value
                // wins unless the earlier is strictly better.
                let mut best = arg(0).to_double()?;
                for v in &values[1..] {
                    let v = v.to_double()?;
                    let keep = if greatest { best > v } else { best < v };
                    if !keep {
                        best = v;
                    }
                }
                Double(best)
            } else {
                let name = if greatest { "greatest()" } else { "least()" };
                let mut best = arg(0).to_int(name)?;
                for v in &values[1..] {
                    let v = v.to_int(name)?;
                    best = if greatest { best.max(v) } else { best.min(v) };
                }
                Int(best)
            }
        }
        Func::Pi => Double(std::f64::consts::PI),
        Func::Sqrt => Double(arg(0).to_double()?.sqrt()),
        Func::Exp => Double(arg(0).to_double()?.exp()),
        Func::Ln => Double(arg(0).to_double()?.ln()),
        Func::Pow => Double(arg(0).to_double()?.powf(arg(1).to_double()?)),
        Func::Mod => Int(int_mod(arg(0).to_int("mod()")?, arg(1).to_int("mod()")?)?),
        Func::Random | Func::RandomExponential | Func::RandomGaussian | Func::RandomZipfian => {
            let name = match func {
                Func::Random => "random()",
                Func::RandomExponential => "random_exponential()",
                Func::RandomGaussian => "random_gaussian()",
                _ => "random_zipfian()",
            };
            let lb = arg(0).to_int(name)?;
            let ub = arg(1).to_int(name)?;
            range_len(name, lb, ub)?;
            let param = if args.len() > 2 {
                arg(2).to_double()?
            } else {
                0.0
            };
            Int(match func {
                Func::Random => random(cx.rng, lb, ub)?,
                Func::RandomExponential => random_exponential(cx.rng, lb, ub, param)?,
                Func::RandomGaussian => random_gaussian(cx.rng, lb, ub, param)?,
                _ => random_zipfian(cx.rng, lb, ub, param)?,
            })
        }
        Func::HashFnv1a | Func::HashMurmur2 => {
            let name = if func == Func::HashFnv1a {
                "hash_fnv1a()"
            } else {
                "hash_murmur2()"
            };
            let (value, seed) = (arg(0).to_int(name)?, arg(1).to_int(name)?);
            Int(if func == Func::HashFnv1a {
                super::hash::fnv1a(value, seed)
            } else {
                super::hash::murmur2(value, seed)
            })
        }
        Func::Debug => unreachable!("debug() returns above"),
        Func::Permute => {
            let name = "permute()";
            let (value, size, seed) = (
                arg(0).to_int(name)?,
                arg(1).to_int(name)?,
                arg(2).to_int(name)?,
            );
            if size <= 0 {
                return Err(EvalError::PermuteSize(size).into());
            }
            Int(super::hash::permute(value, size, seed))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::testing::{assert_shown, boolean, double, eval_str, int};

    /// 001's bitwise and CASE lines, and pgbench's lazy CASE.
    #[test]
    fn bitwise_operators_and_case_as_pgbench() {
        assert_shown(&[
            ("17 / (4|1) + ( 4 + (7 >> 2))", "8"),
            ("- (3 * 4 - (-(~ 1) + -(~ 0))) / -1 + 3 % -1", "9"),
            (
                "64 % (((2 + 1 * 2 + (1 # 2) | 4 * (2 & 11)) - (1 << 2)) + 2)",
                "12",
            ),
            ("~1 + 2", "-4"),
            ("~ 0", "-1"),
            ("5 & 1.6", "0"),
            ("1 << 63", "-9223372036854775808"),
            ("-8 >> 1", "-4"),
            ("TRUE & 1", "error: cannot coerce boolean to int"),
            ("case when 0 < 1 then 32 else 0 end", "32"),
            ("case when true then 33 else 0 end", "33"),
            (
                "case when false THEN -1 when 1 = 1 then 13 + 19 + 2.0 end",
                "34",
            ),
            (
                "case when (1 > 0) and (1 >= 0) and (0 < 1) and (0 <= 1) and (0 != 1) and (0 = 0) and (0 <> 1) then 35 else 0 end",
                "35",
            ),
            ("CASE WHEN NOT FALSE THEN 3 * 12.3333334 END", "37.0000002"),
            (
                "case when false then 0 when 1-1 <> 0 then 1 else 38 end",
                "38",
            ),
            ("case when 0 then 1 when 2.5 then 2 else 3 end", "2"),
            ("case when 1 = 0 then 1 end", "NULL"),
            ("case when NULL then 1 else 2 end", "2"),
            ("NULL IS NULL", "true"),
            ("1 ISNULL", "false"),
            ("1 NOTNULL", "true"),
            ("1 IS TRUE", "false"),
            ("NOT 1 = 1 IS TRUE", "false"),
            ("FALSE AND NULL", "false"),
            ("TRUE AND NULL", "NULL"),
            ("TRUE OR NULL", "true"),
            ("NULL OR TRUE", "NULL"),
            ("NOT NULL", "NULL"),
            ("random(1, NULL)", "NULL"),
            ("debug(NULL) IS NULL", "true"),
            ("1 IS NULL IS NULL", "false"),
            ("1 IS 2", "error: NULL, TRUE or FALSE"),
            ("case when 0 = 0 then -1 else (1 / 0) end", "-1"),
            (
                "case when 0 = 0 or (1 / 0) < 0 then -1 else (1 / 0) end",
                "-1",
            ),
            (
                "case when 0 > 0 and (1 / 0) < 0 then (1 / 0) else 1 end",
                "1",
            ),
        ]);
    }

    /// pgbench's own regression expressions (001_pgbench_with_server.pl's
    /// "pgbench expressions", with foo = -10.1 and scale 1), where dyno
    /// has their features.
    #[test]
    fn pgbench_regression_expressions() {
        assert_shown(&[
            ("abs(-4)", "4"),
            ("greatest(5, 4, 3, 2)", "5"),
            ("11 + least(-5, -4, -3, -2)", "6"),
            ("int(7.3)", "7"),
            ("10 + (0 + 0 * 0 - 0 / 1)", "10"),
            ("10 + :scale", "11"),
            ("sqrt(+1.5 * 2.0) * abs(-0.8E1)", "13.856406460551"),
            ("double(1 + 1) * (-75.0 / :foo)", "14.8514851485149"),
            ("greatest(4, 2, -1.17) * 4.0 * Ln(Exp(1.0))", "16"),
            ("pow(-3,3)", "-27"),
            ("pow(2.0,10)", "1024"),
            ("pow(0,0)", "1"),
            ("pow(0.0,0.0)", "1"),
            ("pow(-2,-3)", "-0.125"),
            ("pow(-2.0,-3.0)", "-0.125"),
            ("power(-5.0,-5.0)", "-0.00032"),
            ("pow(9223372036854775807, 2)", "8.50705917302346e+37"),
            ("pow(10,30)", "1e+30"),
            ("10 + mod(13 * 7 + 12, 13) - mod(-19 * 11 - 17, 19)", "39"),
            ("-9223372036854775808", "-9223372036854775808"),
            ("- 9223372036854775808", "-9223372036854775808"),
            ("abs(-9223372036854775808)", "-9223372036854775808"),
            // 001's errors.
            ("9223372036854775808", "error: bigint constant overflow"),
            ("1.0E309", "error: double constant overflow"),
            (".1E310", "error: double constant overflow"),
            ("1e-400", "error: double constant overflow"),
            ("1 + 2 -- a comment", "error: "),
            (
                "9223372036854775807 + 1",
                "error: integer overflow in addition",
            ),
            (
                "-9223372036854775808 - 1",
                "error: integer overflow in subtraction",
            ),
            (
                "-(-9223372036854775808)",
                "error: integer overflow in subtraction",
            ),
            (
                "2 * 4611686018427387904",
                "error: integer overflow in multiplication",
            ),
            (
                "-9223372036854775808 / -1",
                "error: integer overflow in division",
            ),
            ("random(5, 3)", "error: lower bound 5 is greater"),
            (
                "random(0, 9223372036854775807)",
                "error: random range is too large",
            ),
            (
                "random(-9223372036854775808, 9223372036854775807)",
                "error: random range is too large",
            ),
            ("random_gaussian(0, 10, 1.0)", "error: at least 2.0"),
            ("random_exponential(0, 10, 0.0)", "error: greater than 0"),
            ("random_zipfian(0, 10, 1)", "error: in [1.001, 1000]"),
            (
                "least(0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16)",
                "error: too many function arguments",
            ),
            ("greatest(0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15)", "15"),
            ("noSuchFunction()", "error: unknown function"),
            ("ln(2.0, 1.0)", "error: ln() takes 1 argument"),
            ("greatest()", "error: at least one argument"),
            ("1 +", "error: "),
            ("1 == 1", "error: "),
        ]);
    }

    #[test]
    fn integer_semantics() {
        assert_eq!(int("7 / 2"), 3);
        assert_eq!(int("7 / -2"), -3);
        assert_eq!(int("-7 / 2"), -3);
        assert_eq!(int("-7 % 3"), -1);
        assert_eq!(int("7 % -3"), 1);
        assert_eq!(int("mod(-7, 3)"), -1);
        assert_eq!(int("7.9 % 3"), 2);
        assert_eq!(int("-9223372036854775808"), i64::MIN);
        assert_eq!(int("9223372036854775807"), i64::MAX);
        assert_eq!(int("-9223372036854775808 % -1"), 0);
        for (expr, what) in [
            ("9223372036854775807 + 1", "addition"),
            ("-9223372036854775808 - 1", "subtraction"),
            ("4611686018427387904 * 2", "multiplication"),
            ("-9223372036854775808 / -1", "division"),
            // -x is 0 - x, as in pgbench.
            ("-(-9223372036854775807 - 1)", "subtraction"),
        ] {
            assert_eq!(eval_str(expr), Err(EvalError::Overflow(what)), "{expr}");
        }
        // pgbench's abs() wraps the smallest integer to itself.
        assert_eq!(int("abs(-9223372036854775807 - 1)"), i64::MIN);
        assert_eq!(eval_str("1 / 0"), Err(EvalError::DivisionByZero));
        assert_eq!(eval_str("1.5 / 0"), Ok(Value::Double(f64::INFINITY)));
        assert_eq!(eval_str("1 % 0"), Err(EvalError::DivisionByZero));
        assert_eq!(eval_str("mod(1, 0)"), Err(EvalError::DivisionByZero));
        assert!(matches!(
            eval_str("int(1e19)"),
            Err(EvalError::OutOfRange {
                function: "int()",
                ..
            })
        ));
        assert!(matches!(
            eval_str("int(sqrt(-1))"),
            Err(EvalError::OutOfRange { .. })
        ));
        // AND and OR stop once the result is known.
        assert!(!boolean("1 = 0 AND 1 / 0 = 1"));
        assert!(boolean("1 = 1 OR 1 / 0 = 1"));
        let overflow = EvalError::Overflow("addition").to_string();
        assert!(
            overflow.contains("integer overflow in addition"),
            "{overflow}"
        );
    }

    #[test]
    fn mixing_integers_and_doubles() {
        assert_eq!(eval_str("1 + 0.5"), Ok(Value::Double(1.5)));
        assert_eq!(eval_str("3 / 2.0"), Ok(Value::Double(1.5)));
        assert_eq!(eval_str("2 * 1e3"), Ok(Value::Double(2000.0)));
        assert_eq!(eval_str("1.5e-1 - .05"), Ok(Value::Double(0.15 - 0.05)));
        assert_eq!(eval_str("-:a + 0.0"), Ok(Value::Double(-7.0)));
        assert_eq!(int("int(-3.7)"), -4);
        assert_eq!(int("int(3.7)"), 4);
        assert_eq!(int("int(42)"), 42);
        assert_eq!(double("double(3)"), 3.0);
        assert_eq!(int("abs(:b)"), 2);
        assert_eq!(double("ABS(-2.5)"), 2.5);
        assert_eq!(eval_str("greatest(1, 2.5, 2)"), Ok(Value::Double(2.5)));
        assert_eq!(eval_str("greatest(1, :a, 2)"), Ok(Value::Int(7)));
        assert_eq!(eval_str("least(3, 1, 2)"), Ok(Value::Int(1)));
        assert_eq!(eval_str("least(3)"), Ok(Value::Int(3)));
        assert_eq!(eval_str("Least(3, -0.5)"), Ok(Value::Double(-0.5)));
        assert_eq!(double("pi()"), std::f64::consts::PI);
        assert_eq!(double("sqrt(16)"), 4.0);
        assert_eq!(double("pow(2, 10)"), 1024.0);
        assert_eq!(double("power(2, -1)"), 0.5);
        assert!((double("ln(exp(1))") - 1.0).abs() < 1e-12);
    }
}
