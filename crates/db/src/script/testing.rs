//! Helpers the script modules' tests share: parse a script, evaluate a
//! `\set` expression, show a value as pgbench would send it.

use super::{CommandKind, EvalError, Predefined, Script, ScriptError, Sql, Value};

pub(super) const VARS: Predefined = Predefined {
    scale: 10,
    client_id: 3,
    random_seed: 42,
    default_seed: 4242,
};

pub(super) fn sqls(script: &Script) -> Vec<&Sql> {
    script
        .commands()
        .iter()
        .filter_map(|c| match &c.kind {
            CommandKind::Sql(sql) => Some(sql),
            _ => None,
        })
        .collect()
}

pub(super) fn parse_err(text: &str) -> ScriptError {
    Script::parse("t.sql", text).expect_err("the script should not parse")
}

/// Each script of `cases` (its text, the line it is refused at, what the
/// message says) is refused there, saying so.
pub(super) fn assert_refused(cases: &[(&str, usize, &str)]) {
    for &(text, line, says) in cases {
        let err = parse_err(text);
        assert_eq!(err.line(), line, "{text:?}: {err}");
        assert!(err.message().contains(says), "{text:?}: {err}");
    }
}

/// The script `name` of `text` parses, into `commands` commands.
pub(super) fn parsed(name: &str, text: &str, commands: usize) -> Script {
    let script = Script::parse(name, text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(script.commands().len(), commands, "{text}");
    script
}

/// Evaluates `\set x EXPR` in a script where `a` is 7 and `b` is -2.
pub(super) fn eval_str(expr: &str) -> Result<Value, EvalError> {
    let text = format!("\\set a 7\n\\set b -2\n\\set x {expr}\n");
    eval_sets(&text, &VARS)
}

/// Runs the `\set` commands of the script `text` in order, its variables
/// predefined as `predefined` say: the value the last one set.
fn eval_sets(text: &str, predefined: &Predefined) -> Result<Value, EvalError> {
    let script = Script::parse("e", text).unwrap_or_else(|e| panic!("{e}"));
    let mut vars = script.initial_values(predefined);
    let mut rng = fastrand::Rng::with_seed(1);
    let mut last = Value::Int(0);
    for command in script.commands() {
        if let CommandKind::Set { slot, expr } = &command.kind {
            last = expr.eval(&vars, &mut rng)?;
            vars[*slot] = last.clone();
        }
    }
    Ok(last)
}

pub(super) fn int(expr: &str) -> i64 {
    match eval_str(expr) {
        Ok(Value::Int(i)) => i,
        other => panic!("{expr}: {other:?}"),
    }
}

pub(super) fn boolean(expr: &str) -> bool {
    match eval_str(expr) {
        Ok(Value::Bool(b)) => b,
        other => panic!("{expr}: {other:?}"),
    }
}

pub(super) fn double(expr: &str) -> f64 {
    match eval_str(expr) {
        Ok(Value::Double(d)) => d,
        other => panic!("{expr}: {other:?}"),
    }
}

/// `\set x EXPR` as pgbench would send `:x` to the server (extended
/// protocol), or the error, parse or run time, prefixed by "error: ".
pub(super) fn shown(expr: &str) -> String {
    let text = format!("\\set foo -10.1\n\\set x {expr}\n");
    match Script::parse("e", &text) {
        Err(e) => format!("error: {}", e.message()),
        Ok(_) => match eval_str_with(&text) {
            Ok(v) => v.to_string(),
            Err(e) => format!("error: {e}"),
        },
    }
}

pub(super) fn eval_str_with(text: &str) -> Result<Value, EvalError> {
    let predefined = Predefined {
        scale: 1,
        client_id: 0,
        random_seed: 5432,
        default_seed: 5432,
    };
    eval_sets(text, &predefined)
}

pub(super) fn assert_shown(cases: &[(&str, &str)]) {
    let mut wrong = Vec::new();
    for (expr, expected) in cases {
        let got = shown(expr);
        let ok = match expected.strip_prefix("error: ") {
            Some(needle) => got.starts_with("error: ") && got.contains(needle),
            None => got == *expected,
        };
        if !ok {
            wrong.push(format!("{expr}: got {got:?}, pgbench gives {expected:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
