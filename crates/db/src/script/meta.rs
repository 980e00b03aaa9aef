//! Meta-commands: a script's `\` lines.
//!
//! `Script::parse` hands each `\` line (its continuations joined) to
//! [`parse_meta`], which reads `\set` (its expression through
//! `expr::parse_expr`) and `\sleep`, and refuses pgbench's other
//! meta-commands by name. [`Sleep`] keeps the sleep's amount and unit; a
//! client reads its duration on each pass.

use std::fmt::Write as _;
use std::time::Duration;

use super::expr::parse_expr;
use super::{
    Command, CommandKind, EvalError, ScriptError, Value, Vars, first_word, is_name_char,
    undefined_variable,
};

pub(super) fn parse_meta(
    script: &str,
    line: usize,
    meta: &str,
    vars: &mut Vars,
) -> Result<Command, ScriptError> {
    let err = |message: String| ScriptError::new(script, line, message);
    let (command, args) = first_word(meta);
    let lower = command.to_ascii_lowercase();
    let kind = match lower.as_str() {
        "set" => {
            let (var, expr) = first_word(args);
            if var.is_empty() || expr.is_empty() {
                return Err(err(
                    "\\set needs a variable name and an expression, e.g. \\set aid random(1, 100000 * :scale)"
                        .into(),
                ));
            }
            if let Some(bare) = var.strip_prefix(':') {
                return Err(err(format!(
                    "\\set takes the variable's bare name: write \\set {bare} …, without the ':'"
                )));
            }
            if !var.chars().all(is_name_char) {
                return Err(err(format!(
                    "'{var}' is not a variable name; names are made of letters, digits and '_'"
                )));
            }
            // The expression is read before the variable is defined: `\set
            // x :x + 1` on a first `\set x` reads a variable nobody set.
            let expr = parse_expr(expr, vars).map_err(err)?;
            let slot = vars.define(var);
            CommandKind::Set { slot, expr }
        }
        "sleep" => CommandKind::Sleep(parse_sleep(args, vars).map_err(err)?),
        "shell" => CommandKind::Shell(parse_shell(None, args, vars).map_err(err)?),
        "setshell" => {
            let (var, rest) = first_word(args);
            if var.is_empty() || rest.is_empty() {
                return Err(err(
                    "\\setshell needs a variable name and a command, e.g. \\setshell n wc -l :file"
                        .into(),
                ));
            }
            if !super::is_variable_name(var) {
                return Err(err(format!(
                    "'{var}' is not a variable name; names are made of letters, digits and '_', not a digit first"
                )));
            }
            // The arguments are read before the variable is defined, as
            // `\set`'s expression is.
            let mut shell = parse_shell(None, rest, vars).map_err(err)?;
            shell.target = Some(vars.define(var));
            CommandKind::Shell(shell)
        }
        "" => {
            return Err(err(
                "a '\\' must be followed by a meta-command's name, e.g. \\set or \\sleep".into(),
            ));
        }
        _ => {
            return Err(err(format!(
                "unknown meta-command \\{command}; dyno runs SQL, \\set and \\sleep"
            )));
        }
    };
    Ok(Command { line, kind })
}

/// `\shell` and `\setshell`: a command line run by `/bin/sh -c`, made of
/// words and variables' values joined by spaces, as pgbench makes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shell {
    /// `\setshell`: the variable the output's integer goes into.
    pub target: Option<usize>,
    pub args: Vec<ShellArg>,
}

/// A word of a shell command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellArg {
    /// Sent as written (`::word` is the text `:word`).
    Text(String),
    /// A variable's value (`:name`), by slot.
    Var(usize),
}

impl Shell {
    /// The variables the command line reads.
    pub(super) fn slots(&self) -> impl Iterator<Item = usize> + '_ {
        self.args.iter().filter_map(|a| match a {
            ShellArg::Var(slot) => Some(*slot),
            ShellArg::Text(_) => None,
        })
    }

    /// The command line, with the variables' values written in.
    ///
    /// # Panics
    /// If `vars` is shorter than the script's variables.
    pub fn command_line(&self, vars: &[Value]) -> String {
        let mut line = String::new();
        for (i, arg) in self.args.iter().enumerate() {
            if i > 0 {
                line.push(' ');
            }
            match arg {
                ShellArg::Text(t) => line.push_str(t),
                ShellArg::Var(slot) => {
                    let _ = write!(line, "{}", vars[*slot]);
                }
            }
        }
        line
    }

    /// What `\setshell` stores from the command's output, as pgbench
    /// reads it (`strtol` of its first line): an integer, with white space
    /// around it.
    pub fn integer(output: &str) -> Result<i64, String> {
        let output = output.split_inclusive('\n').next().unwrap_or("");
        let t = output.trim();
        // strtol reads a sign and digits, then only white space may follow.
        let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
        if t.is_empty() || digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "shell command must return an integer (not \"{}\")",
                output.trim_end_matches('\n')
            ));
        }
        t.strip_prefix('+')
            .unwrap_or(t)
            .parse()
            .map_err(|_| format!("shell command returned {t}, which is out of 64-bit range"))
    }
}

/// Reads a shell command's words: `:name` is a variable, `::word` the
/// text `:word`, anything else as written.
fn parse_shell(target: Option<usize>, args: &str, vars: &mut Vars) -> Result<Shell, String> {
    let mut out = Vec::new();
    for word in args.split_whitespace() {
        out.push(match word.strip_prefix(':') {
            Some(rest) if rest.starts_with(':') => ShellArg::Text(rest.to_owned()),
            Some(name) => match vars.slot(name) {
                Some(slot) => ShellArg::Var(slot),
                None => return Err(undefined_variable(name)),
            },
            None => ShellArg::Text(word.to_owned()),
        });
    }
    if out.is_empty() {
        return Err("\\shell needs a command, e.g. \\shell touch /tmp/started".into());
    }
    Ok(Shell { target, args: out })
}

/// A `\sleep`: how long, from a literal or a variable, in some unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sleep {
    amount: SleepAmount,
    unit_us: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SleepAmount {
    Literal(i64),
    Var(usize),
}

/// C's `atoi`, as pgbench reads a sleep time: leading white space, a sign,
/// the digits up to the first other character (saturating instead of
/// overflowing); `None` where there are no digits.
fn leading_integer(s: &str) -> Option<i64> {
    let t = s.trim_start();
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits = t.bytes().take_while(u8::is_ascii_digit);
    let mut n: i64 = 0;
    let mut any = false;
    for d in digits {
        any = true;
        n = n.saturating_mul(10).saturating_add(i64::from(d - b'0'));
    }
    any.then_some(if negative { -n } else { n })
}

impl Sleep {
    /// The variable the sleep reads, if any.
    pub(super) fn slot(&self) -> Option<usize> {
        match self.amount {
            SleepAmount::Var(slot) => Some(slot),
            SleepAmount::Literal(_) => None,
        }
    }

    /// How long to sleep, given the client's variables, as pgbench reads
    /// it: a variable's text form (a double's is `%.15g`) is read as C's
    /// `atoi` reads it, so 2.7 sleeps 2 units; a value that does not start
    /// with a digit or a sign and digits (a boolean, `-0.5`) is an error;
    /// a negative time does not sleep.
    ///
    /// # Panics
    ///
    /// If `vars` is shorter than the script's variables (make it with
    /// [`Script::initial_values`](super::Script::initial_values)).
    pub fn duration(&self, vars: &[Value]) -> Result<Duration, EvalError> {
        let amount = match self.amount {
            SleepAmount::Literal(n) => n,
            SleepAmount::Var(slot) => match &vars[slot] {
                Value::Int(i) => *i,
                other => {
                    let text = other.to_string();
                    match leading_integer(&text) {
                        // pgbench errs where atoi gives 0 and the text does
                        // not start with a digit ("-0.5", " 0").
                        Some(0) if !text.starts_with(|c: char| c.is_ascii_digit()) => {
                            return Err(EvalError::BadSleep(other.clone()));
                        }
                        Some(n) => n,
                        None => return Err(EvalError::BadSleep(other.clone())),
                    }
                }
            },
        };
        let amount = u64::try_from(amount).unwrap_or(0);
        Ok(Duration::from_micros(amount.saturating_mul(self.unit_us)))
    }
}

fn parse_sleep(args: &str, vars: &mut Vars) -> Result<Sleep, String> {
    let mut words = args.split_whitespace();
    let usage = "write \\sleep N [us|ms|s], N an integer or a :variable, e.g. \\sleep 10 ms";
    let first = words.next();
    let mut glued_unit = None;
    let amount = match first {
        None => return Err(format!("\\sleep needs a time; {usage}")),
        Some(word) => {
            if let Some(var) = word.strip_prefix(':') {
                match vars.slot(var) {
                    Some(slot) if !var.is_empty() => SleepAmount::Var(slot),
                    _ if var.is_empty() || !var.chars().all(is_name_char) => {
                        return Err(format!("'{word}' is not a variable; {usage}"));
                    }
                    _ => return Err(undefined_variable(var)),
                }
            } else {
                // As pgbench: a sign, digits, and a unit that may be glued
                // on (`10ms`) when no unit follows as its own word.
                let unsigned = word.strip_prefix(['+', '-']).unwrap_or(word);
                let digits = unsigned.bytes().take_while(u8::is_ascii_digit).count();
                let rest = &unsigned[digits..];
                if digits == 0 || (!rest.is_empty() && args.split_whitespace().count() > 1) {
                    return Err(format!("'{word}' is not a time; {usage}"));
                }
                if !rest.is_empty() {
                    glued_unit = Some(rest);
                }
                let number = &word[..word.len() - rest.len()];
                let n: i64 = number
                    .strip_prefix('+')
                    .unwrap_or(number)
                    .parse()
                    .map_err(|_| format!("\\sleep time {number} is too large"))?;
                SleepAmount::Literal(n)
            }
        }
    };
    let unit = glued_unit.or_else(|| words.next());
    let unit_us = match unit.map(str::to_ascii_lowercase).as_deref() {
        None | Some("s") => 1_000_000,
        Some("ms") => 1_000,
        Some("us") => 1,
        Some(_) => {
            let unit = unit.unwrap_or_default();
            return Err(format!("unknown \\sleep unit '{unit}'; use us, ms or s"));
        }
    };
    if let Some(extra) = words.next() {
        return Err(format!(
            "unexpected '{extra}' after \\sleep's unit; {usage}"
        ));
    }
    Ok(Sleep { amount, unit_us })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::script::testing::{VARS, parse_err};
    use crate::script::{CommandKind, SCALE, Script, Value};

    #[test]
    fn sleep_units_and_errors() {
        let durations = |text: &str| -> Vec<Duration> {
            let script = Script::parse("s", text).unwrap();
            let mut vars = script.initial_values(&VARS);
            vars[SCALE] = Value::Int(-1);
            script
                .commands()
                .iter()
                .filter_map(|c| match &c.kind {
                    CommandKind::Sleep(s) => Some(s.duration(&vars).unwrap_or_default()),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(
            durations(
                "\\sleep 2\n\\sleep 2 s\n\\sleep 250 ms\n\\sleep 7 us\n\\sleep :client_id ms\n"
            ),
            [
                Duration::from_secs(2),
                Duration::from_secs(2),
                Duration::from_millis(250),
                Duration::from_micros(7),
                Duration::from_millis(3),
            ]
        );
        let script = Script::parse("s", "\\sleep :scale\n").unwrap();
        let mut vars = script.initial_values(&VARS);
        vars[SCALE] = Value::Int(-1);
        let CommandKind::Sleep(sleep) = &script.commands()[0].kind else {
            panic!("not a \\sleep");
        };
        // A negative time does not sleep, as in pgbench.
        assert_eq!(sleep.duration(&vars), Ok(Duration::ZERO));
        for (text, needle) in [
            ("\\sleep\n", "needs a time"),
            ("\\sleep 10 minutes\n", "unknown \\sleep unit 'minutes'"),
            ("\\sleep 1.5 s\n", "'1.5' is not a time"),
            ("\\sleep :nope\n", "'nope' is used before any \\set"),
            ("\\sleep 1 s now\n", "unexpected 'now'"),
        ] {
            let err = parse_err(text);
            assert!(err.message().contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn shell_lines_join_words_and_values_and_read_strtols_integer() {
        let script = Script::parse("s", "\\set a -3\n\\setshell n echo ::a :a  x\n").unwrap();
        let mut vars = script.initial_values(&VARS);
        vars[script.slot("a").unwrap()] = Value::Int(-3);
        let CommandKind::Shell(shell) = &script.commands()[1].kind else {
            panic!("not a shell command");
        };
        assert_eq!(shell.target, script.slot("n"));
        assert_eq!(shell.command_line(&vars), "echo :a -3 x");
        for (out, want) in [
            ("42\n", Ok(42)),
            ("  -7  \nnext\n", Ok(-7)),
            ("+5", Ok(5)),
            ("", Err(())),
            ("\n12\n", Err(())),
            ("12abc\n", Err(())),
            ("1.5\n", Err(())),
            ("99999999999999999999\n", Err(())),
        ] {
            assert_eq!(super::Shell::integer(out).map_err(|_| ()), want, "{out:?}");
        }
    }

    #[test]
    fn meta_commands_ignore_case() {
        let script = Script::parse("c", "\\SET x 1\n\\Sleep :x MS\n").unwrap();
        assert_eq!(script.commands().len(), 2);
        let script = Script::parse("c", "\\SetShell x echo 1\n\\SHELL true\n").unwrap();
        assert!(matches!(
            &script.commands()[0].kind,
            CommandKind::Shell(s) if s.target.is_some()
        ));
        let err = parse_err("\\SyncPipeline\n");
        assert!(err.message().contains("outside a pipeline"), "{err}");
        let script = Script::parse(
            "c",
            "\\StartPipeline\nSELECT 1;\n\\SyncPipeline\nSELECT 2;\n\\EndPipeline\n",
        )
        .unwrap();
        assert!(matches!(
            script.commands()[2].kind,
            CommandKind::SyncPipeline
        ));
    }
}
