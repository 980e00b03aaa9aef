//! pgbench's script language: parsing, evaluation and the text sent to the
//! server.
//!
//! A script is read once, by [`Script::parse`], into a list of
//! [`Command`]s: `\set` assignments, `\sleep`s and SQL statements. Variable
//! names are resolved then to slot numbers, so a client running the script
//! keeps its variables in a plain `Vec<Value>` (made by
//! [`Script::initial_values`]) and never hashes a name on the hot path; a
//! name used before anything sets it is refused at parse time, with its
//! line, rather than discovered mid-run.
//!
//! Each pass of a client over the script evaluates `\set` expressions
//! ([`Expr::eval`]) with a `fastrand::Rng` the caller owns, so a run can be
//! seeded and replayed, and renders each SQL statement for the protocol in
//! use: [`Sql::render_simple`] for pgbench's `-M simple` (values written into
//! the text), and [`Sql::parameterized`] with [`Sql::params`] for `-M
//! extended` and `-M prepared` (the text, with `$1, $2, …`, is made once at
//! parse time).
//!
//! The language is the part of pgbench's that scripts use: SQL, `\set` with
//! its expressions (pgbench's integers, doubles and booleans, operators,
//! `CASE` and functions, with its rounding and coercion rules) and the
//! random distributions, `\sleep`, and variables defined with `-D`. What
//! is left out (`\if`, `\gset`, `\setshell`, `NULL`, `hash()`, …) is
//! refused by name, at parse time, so a script never half-runs.
//! docs/pgbench-scripts.md lists where dyno differs from pgbench, and why.
//!
//! [`builtin`] holds pgbench's three built-in scripts and [`weighted`] reads
//! its `NAME@WEIGHT` arguments.

use std::fmt::{self, Write as _};
use std::time::Duration;

/// The slot of the predefined variable `scale` (pgbench's scale factor).
pub const SCALE: usize = 0;
/// The slot of the predefined variable `client_id` (numbered from 0).
pub const CLIENT_ID: usize = 1;
/// The slot of the predefined variable `random_seed`.
pub const RANDOM_SEED: usize = 2;
const PREDEFINED: [&str; 3] = ["scale", "client_id", "random_seed"];

// ---------------------------------------------------------------------------
// Values and errors
// ---------------------------------------------------------------------------

/// The value of a script variable, with pgbench's types: 64-bit integers
/// and doubles (integers stay integers until a double meets them),
/// booleans (what comparisons and `AND`, `OR`, `NOT` give), and text (a
/// value defined with `-D NAME=VALUE`, kept as written).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Int(i64),
    Double(f64),
    Bool(bool),
    /// A value defined as text (`-D NAME=VALUE`): sent to the server as it
    /// is written, and read as a boolean, an integer or a double, by
    /// pgbench's rules, where an expression uses it. The text lives as long
    /// as the process (see [`Value::text`]).
    Text(&'static str),
}

impl Value {
    /// A text value, as `-D NAME=VALUE` defines one. The text is leaked, so
    /// that values stay `Copy`: make these once, for a run's definitions.
    pub fn text(s: &str) -> Value {
        Value::Text(Box::leak(s.to_owned().into_boxed_str()))
    }

    /// pgbench's name of the value's type, for errors.
    fn type_name(self) -> &'static str {
        match self {
            Value::Int(_) => "int",
            Value::Double(_) => "double",
            Value::Bool(_) => "boolean",
            Value::Text(_) => "text",
        }
    }

    /// A text value read as pgbench reads a variable's string form: `null`
    /// (which dyno does not take), a boolean (`true`, `yes`, `on`, `false`,
    /// `no`, `off`, or a prefix of them but `o`), an integer, or a double;
    /// other values are typed already.
    fn typed(self) -> Result<Value, EvalError> {
        let Value::Text(s) = self else {
            return Ok(self);
        };
        let prefix_of =
            |word: &str| s.len() <= word.len() && word[..s.len()].eq_ignore_ascii_case(s);
        if s.is_empty() {
            return Err(EvalError::Malformed(s));
        }
        if s.eq_ignore_ascii_case("null") {
            return Err(EvalError::Null);
        }
        if prefix_of("true") || prefix_of("yes") || s.eq_ignore_ascii_case("on") {
            return Ok(Value::Bool(true));
        }
        if prefix_of("false")
            || prefix_of("no")
            || s.eq_ignore_ascii_case("off")
            || s.eq_ignore_ascii_case("of")
        {
            return Ok(Value::Bool(false));
        }
        let t = s.trim_start();
        let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
        if digits.bytes().all(|b| b.is_ascii_digit()) {
            // It looks like an integer, so it must be one (pgbench's rule).
            return t
                .strip_prefix('+')
                .unwrap_or(t)
                .parse()
                .map(Value::Int)
                .map_err(|_| EvalError::Malformed(s));
        }
        match t.parse::<f64>() {
            Ok(d) => Ok(Value::Double(d)),
            Err(_) => Err(EvalError::Malformed(s)),
        }
    }

    /// The value as an integer, as pgbench's `coerceToInt`: a double is
    /// rounded to the nearest integer, halves to even (`rint`), and must
    /// then fit in 64 bits; a boolean is an error. `function` names the
    /// caller in the error.
    fn to_int(self, function: &'static str) -> Result<i64, EvalError> {
        match self.typed()? {
            Value::Int(i) => Ok(i),
            Value::Double(d) => {
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
    fn to_double(self) -> Result<f64, EvalError> {
        match self.typed()? {
            Value::Int(i) => Ok(i as f64),
            Value::Double(d) => Ok(d),
            other => Err(EvalError::Coerce {
                from: other.type_name(),
                to: "double",
            }),
        }
    }

    /// The value as a boolean, for `AND`, `OR` and `NOT`: only a boolean
    /// is one (pgbench's `coerceToBool`); a number is an error.
    fn to_bool(self) -> Result<bool, EvalError> {
        match self.typed()? {
            Value::Bool(b) => Ok(b),
            other => Err(EvalError::Coerce {
                from: other.type_name(),
                to: "boolean",
            }),
        }
    }

    /// Whether the literal this value is written as starts with a `-`.
    fn writes_minus(self) -> bool {
        match self {
            Value::Int(i) => i < 0,
            Value::Double(d) => d.is_finite() && d.is_sign_negative(),
            Value::Bool(_) => false,
            Value::Text(s) => s.starts_with('-'),
        }
    }

    /// Appends the value as `-M simple` writes it into the statement: as
    /// its text form (see `Display`), but for the non-finite doubles, which
    /// have no bare literal and are written as quoted `float8` constants.
    fn write_sql_literal(self, out: &mut String) {
        // Writing to a String cannot fail.
        let _ = match self {
            Value::Double(d) if d.is_nan() => write!(out, "'NaN'::float8"),
            Value::Double(d) if d == f64::INFINITY => write!(out, "'Infinity'::float8"),
            Value::Double(d) if d == f64::NEG_INFINITY => write!(out, "'-Infinity'::float8"),
            other => write!(out, "{other}"),
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
            Value::Int(i) => write!(f, "{i}"),
            Value::Double(d) if d.is_nan() => f.write_str("NaN"),
            Value::Double(d) if d == f64::INFINITY => f.write_str("Infinity"),
            Value::Double(d) if d == f64::NEG_INFINITY => f.write_str("-Infinity"),
            Value::Double(d) => write_g15(f, d),
            Value::Bool(b) => f.write_str(if b { "true" } else { "false" }),
            Value::Text(s) => f.write_str(s),
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

/// A script that cannot be read: where, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}:{line}: {message}")]
pub struct ScriptError {
    name: String,
    line: usize,
    message: String,
}

impl ScriptError {
    fn new(name: &str, line: usize, message: impl Into<String>) -> Self {
        ScriptError {
            name: name.to_owned(),
            line,
            message: message.into(),
        }
    }

    /// The script's name, as given to [`Script::parse`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The line (from 1) the error is on.
    pub fn line(&self) -> usize {
        self.line
    }

    /// What is wrong, without the name and line.
    pub fn message(&self) -> &str {
        &self.message
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
    Malformed(&'static str),
    #[error("NULL values (-D NAME=null) are not supported in expressions by dyno yet")]
    Null,
    #[error(
        "CASE matched no WHEN and has no ELSE, so its value is NULL, which dyno does not support yet; add an ELSE"
    )]
    NoCase,
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

// ---------------------------------------------------------------------------
// Scripts
// ---------------------------------------------------------------------------

/// A parsed script: its commands, in order, and the names of its variable
/// slots.
#[derive(Debug, Clone)]
pub struct Script {
    name: String,
    commands: Vec<Command>,
    variables: Vec<String>,
    /// The `-D NAME=VALUE` definitions, by slot.
    defined: Vec<(usize, Value)>,
}

/// The values of the predefined variables, which the run, not the script,
/// decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Predefined {
    /// pgbench's scale factor (`-s`, or read from the database).
    pub scale: i64,
    /// The client's number, from 0.
    pub client_id: i64,
    /// The run's seed, as recorded with the run (a `u64` seed is given as
    /// its bits, `seed as i64`).
    pub random_seed: i64,
}

/// One command of a script and the line it starts on (for run-time error
/// messages).
#[derive(Debug, Clone)]
pub struct Command {
    /// The line (from 1) the command starts on.
    pub line: usize,
    /// What the command does.
    pub kind: CommandKind,
}

/// What a [`Command`] does.
#[derive(Debug, Clone)]
pub enum CommandKind {
    /// `\set`: evaluate `expr` and store it in slot `slot`.
    Set { slot: usize, expr: Expr },
    /// `\sleep`.
    Sleep(Sleep),
    /// A SQL statement.
    Sql(Sql),
}

impl Script {
    /// Reads a script in pgbench's language. `name` (a file name, or a
    /// built-in's name) only labels errors.
    ///
    /// Lines that are blank or start with `--` are skipped. A line starting
    /// with `\` is a meta-command, which ends at the end of the line (or of
    /// the next, when the line ends with `\`). Everything else is SQL: a
    /// statement runs over as many lines as it needs and ends with a line
    /// ending in `;`, at the end of the script, or where a meta-command
    /// starts.
    pub fn parse(name: &str, text: &str) -> Result<Script, ScriptError> {
        Script::parse_with(name, text, &[])
    }

    /// [`parse`](Self::parse), with variables defined before the script
    /// runs, as pgbench's `-D NAME=VALUE` defines them (see
    /// [`definition`]): the script may read them anywhere, and a
    /// definition of a predefined variable (`scale`, say) replaces its
    /// value.
    pub fn parse_with(
        name: &str,
        text: &str,
        definitions: &[(String, Value)],
    ) -> Result<Script, ScriptError> {
        let mut vars = Vars {
            names: PREDEFINED.iter().map(|s| (*s).to_owned()).collect(),
        };
        let defined: Vec<(usize, Value)> = definitions
            .iter()
            .map(|(n, v)| (vars.define(n), *v))
            .collect();
        let mut commands = Vec::new();
        let mut pending: Option<SqlBuilder> = None;
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let line_no = i + 1;
            let line = lines[i];
            i += 1;
            let in_quote = pending.as_ref().is_some_and(|p| p.quote != Quote::None);
            if !in_quote {
                let trimmed = line.trim_start();
                if pending.is_none() && (trimmed.is_empty() || trimmed.starts_with("--")) {
                    continue;
                }
                if let Some(meta) = trimmed.strip_prefix('\\') {
                    // A meta-command ends an SQL statement left without its
                    // `;`, as the end of the script does.
                    if let Some(sql) = pending.take() {
                        commands.extend(sql.finish(name)?);
                    }
                    let mut meta = meta.trim_end().to_owned();
                    while let Some(head) = meta.strip_suffix('\\') {
                        meta = head.to_owned();
                        meta.push(' ');
                        if let Some(next) = lines.get(i) {
                            meta.push_str(next.trim());
                            i += 1;
                        }
                    }
                    commands.push(parse_meta(name, line_no, &meta, &mut vars)?);
                    continue;
                }
            }
            let sql = pending.get_or_insert_with(SqlBuilder::default);
            if sql.push_line(name, line_no, line, &vars)?
                && let Some(sql) = pending.take()
            {
                commands.extend(sql.finish(name)?);
            }
        }
        if let Some(sql) = pending.take() {
            commands.extend(sql.finish(name)?);
        }
        if commands.is_empty() {
            return Err(ScriptError::new(
                name,
                lines.len().max(1),
                "the script has no commands; write SQL statements ending in ';' or \\set and \\sleep lines",
            ));
        }
        Ok(Script {
            name: name.to_owned(),
            commands,
            variables: vars.names,
            defined,
        })
    }

    /// The name the script was parsed under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The commands, in the order a pass runs them.
    pub fn commands(&self) -> &[Command] {
        &self.commands
    }

    /// The variables' names, indexed by slot: the predefined ones first
    /// ([`SCALE`], [`CLIENT_ID`], [`RANDOM_SEED`]), then in the order the
    /// script first sets them.
    pub fn variables(&self) -> &[String] {
        &self.variables
    }

    /// Command `index` in a line, for a report: `\set NAME`, `\sleep`, or
    /// the statement with its white space run together.
    pub fn command_text(&self, index: usize) -> String {
        match &self.commands[index].kind {
            CommandKind::Set { slot, .. } => format!("\\set {}", self.variables[*slot]),
            CommandKind::Sleep(_) => "\\sleep".to_owned(),
            CommandKind::Sql(sql) => sql.text().split_whitespace().collect::<Vec<_>>().join(" "),
        }
    }

    /// The slot of the variable `name`, if the script has it.
    pub fn slot(&self, name: &str) -> Option<usize> {
        self.variables.iter().position(|v| v == name)
    }

    /// A client's variables before its first pass: the predefined ones set,
    /// the others 0. Parsing made sure that no command reads a variable
    /// before an earlier command of the same pass sets it, so the zeros are
    /// never seen.
    pub fn initial_values(&self, predefined: &Predefined) -> Vec<Value> {
        let mut values = vec![Value::Int(0); self.variables.len()];
        values[SCALE] = Value::Int(predefined.scale);
        values[CLIENT_ID] = Value::Int(predefined.client_id);
        values[RANDOM_SEED] = Value::Int(predefined.random_seed);
        for &(slot, value) in &self.defined {
            values[slot] = value;
        }
        values
    }

    /// Checks the script against the limits of the extended and prepared
    /// protocols as pgbench has them: at most 255 parameters (variable
    /// references) in a statement. `-M simple` has no such limit.
    pub fn check_parameters(&self) -> Result<(), ScriptError> {
        for command in &self.commands {
            if let CommandKind::Sql(sql) = &command.kind
                && sql.params.len() > MAX_PARAMS
            {
                return Err(ScriptError::new(
                    &self.name,
                    command.line,
                    format!(
                        "the statement has {} variable references, but -M extended and -M prepared take at most {MAX_PARAMS} (as pgbench); use -M simple, or fewer references",
                        sql.params.len()
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The most parameters pgbench gives a statement under `-M extended` and
/// `-M prepared` (its `MAX_ARGS` less one).
pub const MAX_PARAMS: usize = 255;

/// Reads pgbench's `-D NAME=VALUE`: the name, a variable's (letters,
/// digits and '_', not starting with a digit), and the value as text,
/// which expressions read as a boolean, an integer or a double, and SQL
/// gets as it is written.
pub fn definition(arg: &str) -> Result<(String, Value), String> {
    let Some((name, value)) = arg.split_once('=') else {
        return Err(format!(
            "-D takes NAME=VALUE, e.g. -D aid=42; '{arg}' has no '='"
        ));
    };
    if name.is_empty()
        || !name.chars().all(is_name_char)
        || name.starts_with(|c: char| c.is_ascii_digit())
    {
        return Err(format!(
            "-D {arg}: '{name}' is not a variable name; names are made of letters, digits and '_', and do not start with a digit"
        ));
    }
    Ok((name.to_owned(), Value::text(value)))
}

/// The variables known at a point of the script: the predefined ones and
/// those set by an earlier `\set`.
#[derive(Debug)]
struct Vars {
    names: Vec<String>,
}

impl Vars {
    fn slot(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|v| v == name)
    }

    fn define(&mut self, name: &str) -> usize {
        self.slot(name).unwrap_or_else(|| {
            self.names.push(name.to_owned());
            self.names.len() - 1
        })
    }
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn undefined_variable(name: &str) -> String {
    format!(
        "variable '{name}' is used before any \\set of it; set it on an earlier line (the predefined variables are scale, client_id and random_seed)"
    )
}

// ---------------------------------------------------------------------------
// Meta-commands
// ---------------------------------------------------------------------------

/// pgbench's meta-commands that dyno does not run yet: named in the error,
/// so that the user knows the script is pgbench's and not mistyped.
const UNSUPPORTED_META: [&str; 12] = [
    "setshell",
    "shell",
    "if",
    "elif",
    "else",
    "endif",
    "gset",
    "aset",
    "startpipeline",
    "endpipeline",
    "syncpipeline",
    "flushrequest",
];

fn parse_meta(
    script: &str,
    line: usize,
    meta: &str,
    vars: &mut Vars,
) -> Result<Command, ScriptError> {
    let err = |message: String| ScriptError::new(script, line, message);
    let (command, args) = meta
        .split_once(char::is_whitespace)
        .map_or((meta, ""), |(c, a)| (c, a.trim()));
    let lower = command.to_ascii_lowercase();
    let kind = match lower.as_str() {
        "set" => {
            let (var, expr) = args
                .split_once(char::is_whitespace)
                .map_or((args, ""), |(v, e)| (v, e.trim()));
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
        "" => {
            return Err(err(
                "a '\\' must be followed by a meta-command's name, e.g. \\set or \\sleep".into(),
            ));
        }
        other if UNSUPPORTED_META.contains(&other) => {
            return Err(err(format!(
                "\\{command} is not supported by dyno yet; dyno runs SQL, \\set and \\sleep"
            )));
        }
        _ => {
            return Err(err(format!(
                "unknown meta-command \\{command}; dyno runs SQL, \\set and \\sleep"
            )));
        }
    };
    Ok(Command { line, kind })
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
    /// How long to sleep, given the client's variables, as pgbench reads
    /// it: a variable's text form (a double's is `%.15g`) is read as C's
    /// `atoi` reads it, so 2.7 sleeps 2 units; a value that does not start
    /// with a digit or a sign and digits (a boolean, `-0.5`) is an error;
    /// a negative time does not sleep.
    ///
    /// # Panics
    ///
    /// If `vars` is shorter than the script's variables (make it with
    /// [`Script::initial_values`]).
    pub fn duration(&self, vars: &[Value]) -> Result<Duration, EvalError> {
        let amount = match self.amount {
            SleepAmount::Literal(n) => n,
            SleepAmount::Var(slot) => match vars[slot] {
                Value::Int(i) => i,
                other => {
                    let text = other.to_string();
                    match leading_integer(&text) {
                        // pgbench errs where atoi gives 0 and the text does
                        // not start with a digit ("-0.5", " 0").
                        Some(0) if !text.starts_with(|c: char| c.is_ascii_digit()) => {
                            return Err(EvalError::BadSleep(other));
                        }
                        Some(n) => n,
                        None => return Err(EvalError::BadSleep(other)),
                    }
                }
            },
        };
        let amount = u64::try_from(amount).unwrap_or(0);
        Ok(Duration::from_micros(amount.saturating_mul(self.unit_us)))
    }
}

fn parse_sleep(args: &str, vars: &Vars) -> Result<Sleep, String> {
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

// ---------------------------------------------------------------------------
// SQL
// ---------------------------------------------------------------------------

/// A piece of an SQL statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SqlPart {
    /// Text sent as it is.
    Text(String),
    /// A variable reference (`:name`), by slot.
    Var(usize),
}

/// An SQL statement, split into text and variable references, with its
/// parameterized form made once.
#[derive(Debug, Clone)]
pub struct Sql {
    text: String,
    parts: Vec<SqlPart>,
    parameterized: String,
    params: Vec<usize>,
}

impl Sql {
    /// The statement as written (comments and the final `;` left out).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The statement as text and variable slots, in order.
    pub fn parts(&self) -> &[SqlPart] {
        &self.parts
    }

    /// The text for pgbench's `-M extended` and `-M prepared`: each
    /// variable reference replaced by `$1`, `$2`, … in order.
    ///
    /// Each reference gets its own number, even when a variable appears
    /// twice, as in pgbench: PostgreSQL infers one type per parameter, and a
    /// variable used in two places of different types would otherwise make
    /// the statement fail to prepare.
    pub fn parameterized(&self) -> &str {
        &self.parameterized
    }

    /// The slots whose values are the parameters of
    /// [`parameterized`](Self::parameterized), `$1` first.
    pub fn param_slots(&self) -> &[usize] {
        &self.params
    }

    /// The parameters' values, `$1` first; [`Value`]'s `Display` is their
    /// text form.
    ///
    /// # Panics
    ///
    /// If `vars` is shorter than the script's variables (make it with
    /// [`Script::initial_values`]).
    pub fn params<'a>(&'a self, vars: &'a [Value]) -> impl ExactSizeIterator<Item = Value> + 'a {
        self.params.iter().map(move |&slot| vars[slot])
    }

    /// The text for pgbench's `-M simple`: each variable's value written in
    /// as a literal.
    ///
    /// # Panics
    ///
    /// If `vars` is shorter than the script's variables.
    pub fn render_simple(&self, vars: &[Value]) -> String {
        let mut out = String::with_capacity(self.text.len() + 16);
        self.write_simple(vars, &mut out);
        out
    }

    /// [`render_simple`](Self::render_simple), appended to `out`, so that a
    /// client can reuse one buffer for all its statements.
    ///
    /// The substitution is textual, as pgbench's is (`t_:n` makes a table
    /// name), with one guard: a negative value after an operator character
    /// gets a space first, so that `:a-:b` with `b = -3` becomes `5- -3`
    /// and not `5--3`, which PostgreSQL would read as `5` and a comment.
    ///
    /// # Panics
    ///
    /// If `vars` is shorter than the script's variables.
    pub fn write_simple(&self, vars: &[Value], out: &mut String) {
        for part in &self.parts {
            match part {
                SqlPart::Text(text) => out.push_str(text),
                SqlPart::Var(slot) => {
                    let value = vars[*slot];
                    if value.writes_minus() && out.ends_with(is_operator_char) {
                        out.push(' ');
                    }
                    value.write_sql_literal(out);
                }
            }
        }
    }
}

/// The characters PostgreSQL's operators are made of.
fn is_operator_char(c: char) -> bool {
    "+-*/<>=~!@#%^&|`?".contains(c)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Quote {
    #[default]
    None,
    /// In a '…' string, opened on the line.
    Single(usize),
    /// In a "…" identifier, opened on the line.
    Double(usize),
}

/// An SQL statement being read, line by line.
#[derive(Debug, Default)]
struct SqlBuilder {
    line: usize,
    text: String,
    parts: Vec<SqlPart>,
    quote: Quote,
}

fn push_text(parts: &mut Vec<SqlPart>, s: &str) {
    if s.is_empty() {
        return;
    }
    match parts.last_mut() {
        Some(SqlPart::Text(last)) => last.push_str(s),
        _ => parts.push(SqlPart::Text(s.to_owned())),
    }
}

/// Cuts trailing whitespace off the last text part (dropping it if nothing
/// is left), and off `text`.
fn trim_end(parts: &mut Vec<SqlPart>, text: &mut String) {
    if let Some(SqlPart::Text(last)) = parts.last_mut() {
        last.truncate(last.trim_end().len());
        if last.is_empty() {
            parts.pop();
        }
    }
    text.truncate(text.trim_end().len());
}

impl SqlBuilder {
    /// Adds one line of the statement; true when the line ends it.
    ///
    /// Outside quotes, `--` starts a comment to the end of the line, `::`
    /// is a cast and `:name` a variable; in '…' strings and "…"
    /// identifiers everything is text. A quote left open carries over to
    /// the next line, as a string may span lines.
    fn push_line(
        &mut self,
        script: &str,
        line_no: usize,
        line: &str,
        vars: &Vars,
    ) -> Result<bool, ScriptError> {
        let err = |message: String| ScriptError::new(script, line_no, message);
        let mut parts = Vec::new();
        let mut text = String::new();
        let started_in_quote = self.quote != Quote::None;
        let mut chars = line.char_indices().peekable();
        let mut literal_start = 0;
        // Text runs are copied in slices, from `literal_start` up to the
        // next variable reference or comment.
        while let Some((i, c)) = chars.next() {
            match self.quote {
                Quote::Single(_) if c == '\'' => self.quote = Quote::None,
                Quote::Double(_) if c == '"' => self.quote = Quote::None,
                Quote::Single(_) | Quote::Double(_) => {}
                Quote::None => match c {
                    '\'' => self.quote = Quote::Single(line_no),
                    '"' => self.quote = Quote::Double(line_no),
                    '-' if chars.peek().is_some_and(|&(_, n)| n == '-') => {
                        push_text(&mut parts, &line[literal_start..i]);
                        text.push_str(&line[literal_start..i]);
                        literal_start = line.len();
                        break;
                    }
                    '\\' => {
                        let rest = &line[i + 1..];
                        let name: String = rest.chars().take_while(|&c| is_name_char(c)).collect();
                        return Err(err(if name.is_empty() {
                            format!(
                                "'\\{}' in SQL is not supported by dyno yet (\\; compound statements included); end each statement with ';' at the end of its line",
                                rest.chars().next().map(String::from).unwrap_or_default()
                            )
                        } else {
                            format!(
                                "\\{name} is not supported by dyno yet; dyno runs SQL, \\set and \\sleep"
                            )
                        }));
                    }
                    ':' => match chars.peek() {
                        Some(&(_, ':')) => {
                            chars.next();
                        }
                        // As pgbench: a variable's name starts with a letter
                        // or '_', so an array slice `[1:2]` stays text.
                        Some(&(_, n)) if n.is_ascii_alphabetic() || n == '_' => {
                            let start = i + 1;
                            let mut end = start;
                            while let Some(&(j, n)) = chars.peek() {
                                if !is_name_char(n) {
                                    break;
                                }
                                end = j + n.len_utf8();
                                chars.next();
                            }
                            let name = &line[start..end];
                            let Some(slot) = vars.slot(name) else {
                                return Err(err(format!(
                                    "{}; if ':{name}' is not meant as a variable (an array slice, say), put a space after the ':'",
                                    undefined_variable(name)
                                )));
                            };
                            push_text(&mut parts, &line[literal_start..i]);
                            parts.push(SqlPart::Var(slot));
                            text.push_str(&line[literal_start..end]);
                            literal_start = end;
                        }
                        _ => {}
                    },
                    _ => {}
                },
            }
        }
        push_text(&mut parts, &line[literal_start..]);
        text.push_str(&line[literal_start..]);

        let mut ended = false;
        if self.quote == Quote::None {
            trim_end(&mut parts, &mut text);
            if let Some(SqlPart::Text(last)) = parts.last_mut()
                && last.ends_with(';')
            {
                last.pop();
                text.pop();
                trim_end(&mut parts, &mut text);
                ended = true;
            }
        }
        if parts.is_empty() && !started_in_quote {
            // A blank or comment line between a statement's lines (inside a
            // string, a blank line is part of the string).
            return Ok(ended);
        }
        if self.parts.is_empty() {
            // The statement's first line: no indentation before it.
            self.line = line_no;
            if let Some(SqlPart::Text(first)) = parts.first_mut() {
                let cut = first.len() - first.trim_start().len();
                first.drain(..cut);
                text.drain(..cut);
            }
            if matches!(parts.first(), Some(SqlPart::Text(t)) if t.is_empty()) {
                parts.remove(0);
            }
        } else {
            push_text(&mut self.parts, "\n");
            self.text.push('\n');
        }
        let mut parts = parts.into_iter();
        if let Some(SqlPart::Text(first)) = parts.as_slice().first() {
            push_text(&mut self.parts, first);
            parts.next();
        }
        self.parts.extend(parts);
        self.text.push_str(&text);
        Ok(ended)
    }

    /// The statement, or nothing for an empty one (a lone `;`).
    fn finish(self, script: &str) -> Result<Option<Command>, ScriptError> {
        match self.quote {
            Quote::None => {}
            Quote::Single(line) => {
                return Err(ScriptError::new(
                    script,
                    line,
                    "a string opened with ' on this line is never closed; close it with '",
                ));
            }
            Quote::Double(line) => {
                return Err(ScriptError::new(
                    script,
                    line,
                    "an identifier opened with \" on this line is never closed; close it with \"",
                ));
            }
        }
        if self.parts.is_empty() {
            return Ok(None);
        }
        let mut parameterized = String::with_capacity(self.text.len());
        let mut params = Vec::new();
        for part in &self.parts {
            match part {
                SqlPart::Text(text) => parameterized.push_str(text),
                SqlPart::Var(slot) => {
                    params.push(*slot);
                    let _ = write!(parameterized, "${}", params.len());
                }
            }
        }
        Ok(Some(Command {
            line: self.line,
            kind: CommandKind::Sql(Sql {
                text: self.text,
                parts: self.parts,
                parameterized,
                params,
            }),
        }))
    }
}

// ---------------------------------------------------------------------------
// Expressions: lexing and parsing
// ---------------------------------------------------------------------------

/// A `\set` expression, ready to evaluate.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr(Node);

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Const(Value),
    Var(usize),
    Not(Box<Node>),
    Binary(BinOp, Box<Node>, Box<Node>),
    Call(Func, Vec<Node>),
    /// `CASE WHEN c THEN v … [ELSE e] END`: the pairs, and the ELSE.
    Case(Vec<(Node, Node)>, Option<Box<Node>>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BinOp {
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
enum Func {
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
}

/// How many arguments a function takes: `Some(n)` exactly n, `None` one or
/// more.
const FUNCTIONS: [(&str, Func, Option<usize>); 16] = [
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
];

/// pgbench's functions that dyno does not have yet.
const UNSUPPORTED_FUNCTIONS: [&str; 5] = ["hash", "hash_fnv1a", "hash_murmur2", "permute", "debug"];

/// The most arguments a function takes (pgbench's `MAX_FARGS`).
const MAX_ARGS: usize = 16;

/// The deepest an expression tree may be. Evaluation recurses once per
/// level; real scripts stay under ten, and the bound keeps a pathological
/// line from overflowing a client's stack.
const MAX_DEPTH: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok<'a> {
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
struct Token<'a> {
    tok: Tok<'a>,
    /// The token as written, for error messages.
    text: &'a str,
}

fn lex(src: &str) -> Result<Vec<Token<'_>>, String> {
    let bytes = src.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let c = bytes[i];
        let next = bytes.get(i + 1).copied();
        let tok = match c {
            b' ' | b'\t' | b'\r' | b'\n' => {
                i += 1;
                continue;
            }
            // No comments: pgbench reads `1 -- x` as 1 minus minus x.
            b'0'..=b'9' | b'.' => {
                let digits = |i: &mut usize| {
                    let from = *i;
                    while bytes.get(*i).is_some_and(u8::is_ascii_digit) {
                        *i += 1;
                    }
                    *i > from
                };
                let mut any = digits(&mut i);
                let mut double = false;
                if bytes.get(i) == Some(&b'.') {
                    i += 1;
                    double = true;
                    any |= digits(&mut i);
                }
                if any && matches!(bytes.get(i), Some(b'e' | b'E')) {
                    i += 1;
                    double = true;
                    if matches!(bytes.get(i), Some(b'+' | b'-')) {
                        i += 1;
                    }
                    if !digits(&mut i) {
                        return Err(format!(
                            "malformed number '{}': an exponent needs digits, e.g. 1e3",
                            &src[start..i]
                        ));
                    }
                }
                let text = &src[start..i];
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
                    Tok::Double(d)
                } else {
                    Tok::Int(text.parse().map_err(|_| {
                        format!(
                            "bigint constant overflow ({text}): integers are 64-bit; write it as a double (e.g. 1e20) if that is meant"
                        )
                    })?)
                }
            }
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
            _ => {
                i += 1;
                match c {
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
                        i += 1;
                        Tok::Le
                    }
                    b'<' if next == Some(b'>') => {
                        i += 1;
                        Tok::Ne
                    }
                    b'>' if next == Some(b'=') => {
                        i += 1;
                        Tok::Ge
                    }
                    b'<' if next == Some(b'<') => {
                        i += 1;
                        Tok::Shl
                    }
                    b'>' if next == Some(b'>') => {
                        i += 1;
                        Tok::Shr
                    }
                    b'<' => Tok::Lt,
                    b'>' => Tok::Gt,
                    b'!' if next == Some(b'=') => {
                        i += 1;
                        Tok::Ne
                    }
                    b'!' => {
                        return Err(
                            "'!' is not an operator; write NOT, or != for inequality".into()
                        );
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
                }
            }
        };
        tokens.push(Token {
            tok,
            text: &src[start..i],
        });
    }
    Ok(tokens)
}

fn parse_expr(src: &str, vars: &Vars) -> Result<Expr, String> {
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
    vars: &'v Vars,
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
        self.comparison()
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
                return binary(BinOp::BitXor, (Node::Const(Value::Int(-1)), 1), operand);
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
            return Ok((Node::Const(Value::Int(n)), 1));
        }
        self.enter()?;
        let (node, depth) = self.unary()?;
        self.nesting -= 1;
        if negative {
            // pgbench's -x is 0 - x: -0.0 is 0, and -(minint) overflows
            // in the subtraction.
            binary(BinOp::Sub, (Node::Const(Value::Int(0)), 1), (node, depth))
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
                Ok(n) => Ok((Node::Const(Value::Int(n)), 1)),
                Err(_) => Err(format!(
                    "bigint constant overflow ({n}): integers are 64-bit; write it as a double (e.g. 1e20) if that is meant"
                )),
            },
            Tok::Double(d) => Ok((Node::Const(Value::Double(d)), 1)),
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
                    "true" => return Ok((Node::Const(Value::Bool(true)), 1)),
                    "false" => return Ok((Node::Const(Value::Bool(false)), 1)),
                    "null" => "NULL is not supported by dyno yet".into(),
                    "is" | "isnull" | "notnull" => {
                        "IS, ISNULL and NOTNULL are not supported by dyno yet".into()
                    }
                    "and" | "or" | "not" => {
                        format!("expected a value before {}", word.to_ascii_uppercase())
                    }
                    _ if UNSUPPORTED_FUNCTIONS.contains(&lower.as_str())
                        || FUNCTIONS.iter().any(|(n, _, _)| *n == lower) =>
                    {
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
            return Err(if UNSUPPORTED_FUNCTIONS.contains(&lower.as_str()) {
                format!("{lower}() is not supported by dyno yet")
            } else {
                let names: Vec<&str> = FUNCTIONS.iter().map(|(n, _, _)| *n).collect();
                format!(
                    "unknown function '{word}'; the functions are {}",
                    names.join(", ")
                )
            });
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
        match arity {
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

// ---------------------------------------------------------------------------
// Expressions: evaluation
// ---------------------------------------------------------------------------

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
    /// [`Script::initial_values`]).
    pub fn eval(&self, vars: &[Value], rng: &mut fastrand::Rng) -> Result<Value, EvalError> {
        eval(&self.0, vars, rng)
    }
}

fn eval(node: &Node, vars: &[Value], rng: &mut fastrand::Rng) -> Result<Value, EvalError> {
    Ok(match node {
        Node::Const(v) => *v,
        Node::Var(slot) => vars[*slot].typed()?,
        Node::Not(inner) => Value::Bool(!eval(inner, vars, rng)?.to_bool()?),
        Node::Binary(BinOp::And, l, r) => {
            Value::Bool(eval(l, vars, rng)?.to_bool()? && eval(r, vars, rng)?.to_bool()?)
        }
        Node::Binary(BinOp::Or, l, r) => {
            Value::Bool(eval(l, vars, rng)?.to_bool()? || eval(r, vars, rng)?.to_bool()?)
        }
        Node::Binary(op, l, r) => binary_op(*op, eval(l, vars, rng)?, eval(r, vars, rng)?)?,
        Node::Call(func, args) => call(*func, args, vars, rng)?,
        Node::Case(pairs, otherwise) => {
            for (condition, value) in pairs {
                // pgbench's valueTruth: a number is true unless zero.
                let truth = match eval(condition, vars, rng)?.typed()? {
                    Value::Bool(b) => b,
                    Value::Int(i) => i != 0,
                    Value::Double(d) => d != 0.0,
                    Value::Text(_) => false,
                };
                if truth {
                    return eval(value, vars, rng);
                }
            }
            match otherwise {
                Some(value) => eval(value, vars, rng)?,
                None => return Err(EvalError::NoCase),
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

fn binary_op(op: BinOp, a: Value, b: Value) -> Result<Value, EvalError> {
    use Value::{Bool, Double, Int};
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
            BinOp::Lt => Bool(x < y),
            BinOp::Le => Bool(x <= y),
            BinOp::Gt => Bool(x > y),
            BinOp::Ge => Bool(x >= y),
            BinOp::Eq => Bool(x == y),
            _ => Bool(x != y),
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
        BinOp::Lt => Bool(x < y),
        BinOp::Le => Bool(x <= y),
        BinOp::Gt => Bool(x > y),
        BinOp::Ge => Bool(x >= y),
        BinOp::Eq => Bool(x == y),
        _ => Bool(x != y),
    })
}

fn call(
    func: Func,
    args: &[Node],
    vars: &[Value],
    rng: &mut fastrand::Rng,
) -> Result<Value, EvalError> {
    use Value::{Double, Int};
    // As pgbench: every argument is evaluated first, then converted.
    let mut values = [Value::Int(0); MAX_ARGS];
    for (value, arg) in values.iter_mut().zip(args) {
        *value = eval(arg, vars, rng)?;
    }
    let values = &values[..args.len()];
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
                Func::Random => random(rng, lb, ub)?,
                Func::RandomExponential => random_exponential(rng, lb, ub, param)?,
                Func::RandomGaussian => random_gaussian(rng, lb, ub, param)?,
                _ => random_zipfian(rng, lb, ub, param)?,
            })
        }
    })
}

// ---------------------------------------------------------------------------
// Random distributions
// ---------------------------------------------------------------------------

/// The number of integers in [lb, ub], which may not fit in an i64.
/// pgbench's limit: the count must fit in an i64.
fn range_len(function: &'static str, lb: i64, ub: i64) -> Result<i128, EvalError> {
    if lb > ub {
        return Err(EvalError::EmptyRange { function, lb, ub });
    }
    let n = i128::from(ub) - i128::from(lb) + 1;
    if n > i128::from(i64::MAX) {
        return Err(EvalError::RangeTooLarge { function, lb, ub });
    }
    Ok(n)
}

/// `lb + floor(n * r)` for `r` in [0, 1), kept in [lb, ub] where rounding
/// would push `n * r` up to `n` (or a NaN would make it 0).
fn scale_unit(lb: i64, n: i128, r: f64) -> i64 {
    let offset = ((n as f64 * r).floor() as i128).clamp(0, n - 1);
    // lb + offset ≤ ub, so the sum fits.
    (i128::from(lb) + offset) as i64
}

/// `random(lb, ub)`: every integer of [lb, ub] equally likely.
fn random(rng: &mut fastrand::Rng, lb: i64, ub: i64) -> Result<i64, EvalError> {
    range_len("random()", lb, ub)?;
    Ok(rng.i64(lb..=ub))
}

/// `random_exponential(lb, ub, p)`: values fall off exponentially from lb,
/// the density at ub being `exp(-p)` times that at lb.
///
/// With `v` uniform in (e^-p, 1], `x = -ln(v) / p` is exponentially
/// distributed truncated to [0, 1): `P(x < t) = (1 - e^(-p t)) / (1 -
/// e^-p)`. The result is `lb + floor(n x)` with `n = ub - lb + 1`, so the
/// value `lb + i` has probability `(e^(-p i/n) - e^(-p (i+1)/n)) / (1 -
/// e^-p)`: the largest at lb, and always inside [lb, ub]. (`v` is made
/// from `u` uniform in [0, 1) as `1 - (1 - e^-p) u`, so that `u = 0`
/// gives `x = 0` and no draw gives `x = 1`; should rounding still make
/// `n x` reach n, the result is clamped to ub.)
fn random_exponential(rng: &mut fastrand::Rng, lb: i64, ub: i64, p: f64) -> Result<i64, EvalError> {
    let n = range_len("random_exponential()", lb, ub)?;
    if !(p > 0.0 && p.is_finite()) {
        return Err(EvalError::BadParameter {
            function: "random_exponential()",
            value: p,
            requirement: "greater than 0 (larger values crowd the draws nearer lb)",
        });
    }
    // -ln(1 - (1 - e^-p) u) / p, through ln_1p and exp_m1 so that a small
    // p (a nearly uniform draw) loses no precision to 1 - e^-p.
    let x = -((-p).exp_m1() * rng.f64()).ln_1p() / p;
    Ok(scale_unit(lb, n, x))
}

/// `random_gaussian(lb, ub, p)`: a normal distribution centred on the
/// middle of [lb, ub], truncated at `p` standard deviations either side.
///
/// A standard normal `z` is drawn by the Box–Muller transform, again until
/// it falls in [-p, p); `r = (z + p) / 2p` maps it onto [0, 1) and the
/// result is `lb + floor(n r)`. Requiring `p >= 2` keeps the redraws rare
/// (under 5% of draws fall outside ±2).
fn random_gaussian(rng: &mut fastrand::Rng, lb: i64, ub: i64, p: f64) -> Result<i64, EvalError> {
    let n = range_len("random_gaussian()", lb, ub)?;
    if !(p >= 2.0 && p.is_finite()) {
        return Err(EvalError::BadParameter {
            function: "random_gaussian()",
            value: p,
            requirement: "at least 2.0 (the range is that many standard deviations either side of its middle)",
        });
    }
    let z = loop {
        // 1 - u lies in (0, 1], where the logarithm is finite.
        let radius = (-2.0 * (1.0 - rng.f64()).ln()).sqrt();
        let z = radius * (std::f64::consts::TAU * rng.f64()).cos();
        if (-p..p).contains(&z) {
            break z;
        }
    };
    Ok(scale_unit(lb, n, (z + p) / (2.0 * p)))
}

/// `random_zipfian(lb, ub, s)`: Zipf's law over the `n = ub - lb + 1`
/// values, `lb + k - 1` drawn with probability proportional to `k^-s`
/// (k = 1..n), so lb is the most likely and `lb + 1` is `2^s` times less.
///
/// A table of the n probabilities would cost O(n) per range; this is
/// Hörmann and Derflinger's rejection-inversion ("Rejection-inversion to
/// generate variates from monotone discrete distributions", ACM TOMACS
/// 6(3), 1996), O(1) a draw for any n. With `h(x) = x^-s` and `H` its
/// integral (`H(1) = 0`), the hat is the continuous density `h` itself:
/// each k owns the area `H(k + ½) - H(k - ½)` under it, which is at least
/// `h(k)` because `h` is convex. A point `u` is drawn uniformly from the
/// whole area, mapped back through `H⁻¹` to `x` and rounded to `k`; it is
/// accepted when it lies in the top `h(k)` of its k's strip, `u >= H(k +
/// ½) - h(k)`, so that each k is accepted with probability proportional
/// to `h(k)` exactly. k = 1's strip is cut to exactly `h(1)` (the area
/// starts at `H(1.5) - h(1)`), so it is always accepted. The paper's
/// squeeze accepts without computing `H(k + ½)` when `k - x` is at most
/// `2 - H⁻¹(H(2.5) - h(2))`, the narrowest accepting distance, which is
/// k = 2's.
///
/// Over 98% of the points drawn are accepted, nearly all by the squeeze
/// (measured for s from 1.001 to 1000 and n from 2 to 2^62), so a draw
/// costs a few logarithms and exponentials whatever n is. s must be at
/// least 1.001, as in pgbench, where the sum of `k^-s` stays finite for
/// any n. For large s the values past lb are all but impossible (lb + 1
/// has probability below 2^-s), and so they come out: a million draws at
/// s = 40, 55, 60, 100, 500 and 1000, with n = 10 and 10^9, gave lb every
/// time, so the doubles' rounding at such s makes no stray values.
fn random_zipfian(rng: &mut fastrand::Rng, lb: i64, ub: i64, s: f64) -> Result<i64, EvalError> {
    let n = range_len("random_zipfian()", lb, ub)?;
    if !(1.001..=1000.0).contains(&s) {
        return Err(EvalError::BadParameter {
            function: "random_zipfian()",
            value: s,
            requirement: "in [1.001, 1000] (larger values crowd the draws nearer lb)",
        });
    }
    if n == 1 {
        return Ok(lb);
    }
    let zipf = Zipf::new(s);
    let n_f = n as f64;
    let area_start = zipf.big_h(1.5) - 1.0;
    let area_end = zipf.big_h(n_f + 0.5);
    loop {
        // u runs over (area_start, area_end]: rng.f64() = 0 gives the end.
        let u = area_end + rng.f64() * (area_start - area_end);
        let x = zipf.big_h_inv(u);
        let k = (x + 0.5).floor().clamp(1.0, n_f);
        if k - x <= zipf.squeeze || u >= zipf.big_h(k + 0.5) - zipf.h(k) {
            let offset = (k as i128 - 1).clamp(0, n - 1);
            return Ok((i128::from(lb) + offset) as i64);
        }
    }
}

/// The functions of one Zipf exponent that [`random_zipfian`] uses.
struct Zipf {
    s: f64,
    /// Accept at once when `k - x` is at most this.
    squeeze: f64,
}

impl Zipf {
    fn new(s: f64) -> Self {
        let mut zipf = Zipf { s, squeeze: 0.0 };
        zipf.squeeze = 2.0 - zipf.big_h_inv(zipf.big_h(2.5) - zipf.h(2.0));
        zipf
    }

    /// `h(x) = x^-s`.
    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    /// `H(x) = (x^(1-s) - 1) / (1 - s)`, the integral of `h` from 1,
    /// written as `ln x · g((1-s) ln x)` with `g(t) = (e^t - 1) / t` so it
    /// stays accurate when s is close to 1.
    fn big_h(&self, x: f64) -> f64 {
        let log_x = x.ln();
        expm1_over((1.0 - self.s) * log_x) * log_x
    }

    /// The inverse of `H`: `(1 + (1-s) y)^(1/(1-s))`, written as
    /// `exp(y · f((1-s) y))` with `f(t) = ln(1 + t) / t`.
    fn big_h_inv(&self, y: f64) -> f64 {
        // (1-s) y > -1 for every y the sampler draws; rounding may touch it.
        let t = ((1.0 - self.s) * y).max(-1.0);
        (log1p_over(t) * y).exp()
    }
}

/// `ln(1 + t) / t`, 1 at t = 0.
fn log1p_over(t: f64) -> f64 {
    if t.abs() > 1e-8 {
        t.ln_1p() / t
    } else {
        1.0 - t * (0.5 - t / 3.0)
    }
}

/// `(e^t - 1) / t`, 1 at t = 0.
fn expm1_over(t: f64) -> f64 {
    if t.abs() > 1e-8 {
        t.exp_m1() / t
    } else {
        1.0 + t * (0.5 + t / 6.0)
    }
}

// ---------------------------------------------------------------------------
// Built-in scripts and script arguments
// ---------------------------------------------------------------------------

const TPCB_LIKE: &str = "\
\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
";

const SIMPLE_UPDATE: &str = "\
\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
";

const SELECT_ONLY: &str = "\
\\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
";

const BUILTINS: [(&str, &str); 3] = [
    ("tpcb-like", TPCB_LIKE),
    ("simple-update", SIMPLE_UPDATE),
    ("select-only", SELECT_ONLY),
];

/// The names of pgbench's built-in scripts (for `-b list`).
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    BUILTINS.iter().map(|(name, _)| *name)
}

/// One of pgbench's built-in scripts, by name or by an unambiguous prefix
/// of it (`tpcb`, `simple`, `sel`), as pgbench's `-b` takes them: its full
/// name and its text.
pub fn builtin(name: &str) -> Result<(&'static str, &'static str), String> {
    let all = || builtin_names().collect::<Vec<_>>().join(", ");
    if name.is_empty() {
        return Err(format!(
            "a built-in script's name is needed; they are {}",
            all()
        ));
    }
    if let Some(&found) = BUILTINS.iter().find(|(n, _)| *n == name) {
        return Ok(found);
    }
    let candidates: Vec<_> = BUILTINS
        .iter()
        .filter(|(n, _)| n.starts_with(name))
        .collect();
    match candidates.as_slice() {
        [found] => Ok(**found),
        [] => Err(format!(
            "no built-in script is called '{name}'; the built-ins are {}",
            all()
        )),
        many => Err(format!(
            "'{name}' is ambiguous: it begins {}; write more of the name",
            many.iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(" and ")
        )),
    }
}

/// Splits pgbench's `NAME@WEIGHT` script argument (for `-b` and `-f`) into
/// the name and the weight, a non-negative integer, 1 when not given. The
/// split is at the last `@`, so a file name may hold one.
pub fn weighted(arg: &str) -> Result<(&str, u32), String> {
    let Some((name, weight)) = arg.rsplit_once('@') else {
        if arg.is_empty() {
            return Err("a script's name is needed, optionally with @WEIGHT".into());
        }
        return Ok((arg, 1));
    };
    let usage = "write NAME@WEIGHT, WEIGHT a non-negative integer, e.g. tpcb-like@2";
    if name.is_empty() {
        return Err(format!("'{arg}' has no script name before '@'; {usage}"));
    }
    if weight.is_empty() || !weight.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "'{arg}': the weight '{weight}' is not a non-negative integer; {usage}"
        ));
    }
    let weight = weight
        .parse()
        .map_err(|_| format!("'{arg}': the weight is too large (at most {})", u32::MAX))?;
    Ok((name, weight))
}

#[cfg(test)]
mod tests {
    use super::*;

    const VARS: Predefined = Predefined {
        scale: 10,
        client_id: 3,
        random_seed: 42,
    };

    fn sqls(script: &Script) -> Vec<&Sql> {
        script
            .commands()
            .iter()
            .filter_map(|c| match &c.kind {
                CommandKind::Sql(sql) => Some(sql),
                _ => None,
            })
            .collect()
    }

    fn parse_err(text: &str) -> ScriptError {
        Script::parse("t.sql", text).expect_err("the script should not parse")
    }

    /// Evaluates `\set x EXPR` in a script where `a` is 7 and `b` is -2.
    fn eval_str(expr: &str) -> Result<Value, EvalError> {
        let text = format!("\\set a 7\n\\set b -2\n\\set x {expr}\n");
        let script = Script::parse("e", &text).unwrap_or_else(|e| panic!("{e}"));
        let mut vars = script.initial_values(&VARS);
        let mut rng = fastrand::Rng::with_seed(1);
        let mut last = Value::Int(0);
        for command in script.commands() {
            if let CommandKind::Set { slot, expr } = &command.kind {
                last = expr.eval(&vars, &mut rng)?;
                vars[*slot] = last;
            }
        }
        Ok(last)
    }

    fn int(expr: &str) -> i64 {
        match eval_str(expr) {
            Ok(Value::Int(i)) => i,
            other => panic!("{expr}: {other:?}"),
        }
    }

    fn boolean(expr: &str) -> bool {
        match eval_str(expr) {
            Ok(Value::Bool(b)) => b,
            other => panic!("{expr}: {other:?}"),
        }
    }

    fn double(expr: &str) -> f64 {
        match eval_str(expr) {
            Ok(Value::Double(d)) => d,
            other => panic!("{expr}: {other:?}"),
        }
    }

    fn parse_message(expr: &str) -> String {
        parse_err(&format!("\\set x {expr}\n")).message().to_owned()
    }

    /// `\set x EXPR` as pgbench would send `:x` to the server (extended
    /// protocol), or the error, parse or run time, prefixed by "error: ".
    fn shown(expr: &str) -> String {
        let text = format!("\\set foo -10.1\n\\set x {expr}\n");
        match Script::parse("e", &text) {
            Err(e) => format!("error: {}", e.message()),
            Ok(_) => match eval_str_with(&text) {
                Ok(v) => v.to_string(),
                Err(e) => format!("error: {e}"),
            },
        }
    }

    fn eval_str_with(text: &str) -> Result<Value, EvalError> {
        let script = Script::parse("e", text).unwrap_or_else(|e| panic!("{e}"));
        let mut vars = script.initial_values(&Predefined {
            scale: 1,
            client_id: 0,
            random_seed: 5432,
        });
        let mut rng = fastrand::Rng::with_seed(1);
        let mut last = Value::Int(0);
        for command in script.commands() {
            if let CommandKind::Set { slot, expr } = &command.kind {
                last = expr.eval(&vars, &mut rng)?;
                vars[*slot] = last;
            }
        }
        Ok(last)
    }

    fn assert_shown(cases: &[(&str, &str)]) {
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
            ("case when 1 = 0 then 1 end", "error: CASE matched no WHEN"),
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
    fn tpcb_like_renders_in_all_three_protocols() {
        let (name, text) = builtin("tpcb-like").unwrap();
        let script = Script::parse(name, text).unwrap();
        assert_eq!(script.commands().len(), 11);
        let mut vars = script.initial_values(&VARS);
        for (var, value) in [("aid", 123_456), ("bid", 7), ("tid", 61), ("delta", -4321)] {
            vars[script.slot(var).unwrap()] = Value::Int(value);
        }
        let sql = sqls(&script);
        let simple: Vec<String> = sql.iter().map(|s| s.render_simple(&vars)).collect();
        assert_eq!(
            simple,
            [
                "BEGIN",
                "UPDATE pgbench_accounts SET abalance = abalance + -4321 WHERE aid = 123456",
                "SELECT abalance FROM pgbench_accounts WHERE aid = 123456",
                "UPDATE pgbench_tellers SET tbalance = tbalance + -4321 WHERE tid = 61",
                "UPDATE pgbench_branches SET bbalance = bbalance + -4321 WHERE bid = 7",
                "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (61, 7, 123456, -4321, CURRENT_TIMESTAMP)",
                "END",
            ]
        );
        let parameterized: Vec<&str> = sql.iter().map(|s| s.parameterized()).collect();
        assert_eq!(
            parameterized,
            [
                "BEGIN",
                "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
                "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
                "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2",
                "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2",
                "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
                "END",
            ]
        );
        let params: Vec<String> = sql[5].params(&vars).map(|v| v.to_string()).collect();
        assert_eq!(params, ["61", "7", "123456", "-4321"]);
        let params: Vec<Value> = sql[1].params(&vars).collect();
        assert_eq!(params, [Value::Int(-4321), Value::Int(123_456)]);
        assert!(sql[0].param_slots().is_empty());
    }

    #[test]
    fn builtin_sets_draw_within_pgbench_ranges() {
        let (name, text) = builtin("tpcb-like").unwrap();
        let script = Script::parse(name, text).unwrap();
        let mut vars = script.initial_values(&VARS);
        let mut rng = fastrand::Rng::with_seed(7);
        let ranges = [
            ("aid", 1, 1_000_000),
            ("bid", 1, 10),
            ("tid", 1, 100),
            ("delta", -5000, 5000),
        ];
        let mut seen_low = [false; 4];
        let mut seen_high = [false; 4];
        for _ in 0..20_000 {
            for command in script.commands() {
                if let CommandKind::Set { slot, expr } = &command.kind {
                    vars[*slot] = expr.eval(&vars, &mut rng).unwrap();
                }
            }
            for (i, (var, lo, hi)) in ranges.iter().enumerate() {
                let Value::Int(v) = vars[script.slot(var).unwrap()] else {
                    panic!("{var} is not an integer");
                };
                assert!((*lo..=*hi).contains(&v), "{var} = {v}");
                seen_low[i] |= v <= lo + (hi - lo) / 10;
                seen_high[i] |= v >= hi - (hi - lo) / 10;
            }
        }
        assert_eq!(seen_low, [true; 4]);
        assert_eq!(seen_high, [true; 4]);
    }

    #[test]
    fn simple_update_and_select_only() {
        let (name, text) = builtin("simple").unwrap();
        assert_eq!(name, "simple-update");
        let script = Script::parse(name, text).unwrap();
        let mut vars = script.initial_values(&VARS);
        for (var, value) in [("aid", 5), ("bid", 1), ("tid", 2), ("delta", 17)] {
            vars[script.slot(var).unwrap()] = Value::Int(value);
        }
        let simple: Vec<String> = sqls(&script)
            .iter()
            .map(|s| s.render_simple(&vars))
            .collect();
        assert_eq!(
            simple,
            [
                "BEGIN",
                "UPDATE pgbench_accounts SET abalance = abalance + 17 WHERE aid = 5",
                "SELECT abalance FROM pgbench_accounts WHERE aid = 5",
                "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (2, 1, 5, 17, CURRENT_TIMESTAMP)",
                "END",
            ]
        );

        let (name, text) = builtin("select-only").unwrap();
        let script = Script::parse(name, text).unwrap();
        assert_eq!(script.commands().len(), 2);
        let mut vars = script.initial_values(&VARS);
        vars[script.slot("aid").unwrap()] = Value::Int(99);
        let sql = sqls(&script);
        assert_eq!(
            sql[0].render_simple(&vars),
            "SELECT abalance FROM pgbench_accounts WHERE aid = 99"
        );
        assert_eq!(
            sql[0].parameterized(),
            "SELECT abalance FROM pgbench_accounts WHERE aid = $1"
        );
        assert_eq!(sql[0].param_slots(), [script.slot("aid").unwrap()]);
    }

    #[test]
    fn builtin_names_and_prefixes() {
        assert_eq!(builtin("tpcb").unwrap().0, "tpcb-like");
        assert_eq!(builtin("t").unwrap().0, "tpcb-like");
        assert_eq!(builtin("sel").unwrap().0, "select-only");
        assert_eq!(builtin("select-only").unwrap().0, "select-only");
        let ambiguous = builtin("s").unwrap_err();
        assert!(ambiguous.contains("ambiguous"), "{ambiguous}");
        assert!(ambiguous.contains("simple-update") && ambiguous.contains("select-only"));
        let unknown = builtin("tpcc").unwrap_err();
        assert!(
            unknown.contains("'tpcc'") && unknown.contains("tpcb-like"),
            "{unknown}"
        );
        assert!(builtin("").is_err());
        assert_eq!(
            builtin_names().collect::<Vec<_>>(),
            ["tpcb-like", "simple-update", "select-only"]
        );
    }

    #[test]
    fn weights() {
        assert_eq!(weighted("tpcb-like@5"), Ok(("tpcb-like", 5)));
        assert_eq!(weighted("select-only@0"), Ok(("select-only", 0)));
        assert_eq!(weighted("my.sql"), Ok(("my.sql", 1)));
        assert_eq!(weighted("dir@host/my.sql@3"), Ok(("dir@host/my.sql", 3)));
        for bad in [
            "x@",
            "x@-1",
            "x@+2",
            "x@two",
            "x@1.5",
            "@3",
            "",
            "x@99999999999",
        ] {
            let err = weighted(bad).unwrap_err();
            assert!(!err.is_empty(), "{bad}");
        }
        assert!(
            weighted("x@two")
                .unwrap_err()
                .contains("non-negative integer")
        );
        assert!(weighted("x@99999999999").unwrap_err().contains("too large"));
    }

    #[test]
    fn casts_and_quoted_colons_stay_text() {
        let script = Script::parse(
            "q",
            "\\set aid 5\nSELECT :aid::int, 'a:b :aid', \"col:aid\", x::text, ':' FROM t WHERE y = :aid;\n",
        )
        .unwrap();
        let sql = sqls(&script)[0];
        let aid = script.slot("aid").unwrap();
        assert_eq!(
            sql.parameterized(),
            "SELECT $1::int, 'a:b :aid', \"col:aid\", x::text, ':' FROM t WHERE y = $2"
        );
        assert_eq!(sql.param_slots(), [aid, aid]);
        assert_eq!(
            sql.text(),
            "SELECT :aid::int, 'a:b :aid', \"col:aid\", x::text, ':' FROM t WHERE y = :aid"
        );
        let mut vars = script.initial_values(&VARS);
        vars[aid] = Value::Int(5);
        assert_eq!(
            sql.render_simple(&vars),
            "SELECT 5::int, 'a:b :aid', \"col:aid\", x::text, ':' FROM t WHERE y = 5"
        );
        assert_eq!(
            sql.parts(),
            [
                SqlPart::Text("SELECT ".into()),
                SqlPart::Var(aid),
                SqlPart::Text(
                    "::int, 'a:b :aid', \"col:aid\", x::text, ':' FROM t WHERE y = ".into()
                ),
                SqlPart::Var(aid),
            ]
        );
    }

    #[test]
    fn multi_line_sql_comments_and_blank_lines() {
        let text = "\
-- a comment at the top

  \\set id random(1, 10)
SELECT *
  -- a comment inside the statement
  FROM t   -- a trailing comment, with :undefined in it

  WHERE id = :id   ;   
UPDATE t SET note = 'line one;
-- not a comment: inside the string
line three' WHERE id = :id;
SELECT 1; -- done
  SELECT '--' || :client_id";
        let script = Script::parse("m", text).unwrap();
        let commands = script.commands();
        assert_eq!(commands.len(), 5);
        assert_eq!(commands[0].line, 3);
        let lines: Vec<usize> = commands.iter().map(|c| c.line).collect();
        assert_eq!(lines, [3, 4, 9, 12, 13]);
        let sql = sqls(&script);
        assert_eq!(sql[0].text(), "SELECT *\n  FROM t\n  WHERE id = :id");
        assert_eq!(
            sql[0].parameterized(),
            "SELECT *\n  FROM t\n  WHERE id = $1"
        );
        assert_eq!(
            sql[1].parameterized(),
            "UPDATE t SET note = 'line one;\n-- not a comment: inside the string\nline three' WHERE id = $1"
        );
        assert_eq!(sql[2].text(), "SELECT 1");
        // The last statement ends with the script, without a ';'.
        let vars = script.initial_values(&VARS);
        assert_eq!(sql[3].render_simple(&vars), "SELECT '--' || 3");
    }

    #[test]
    fn meta_command_ends_an_open_statement_and_continues_lines() {
        let script = Script::parse(
            "c",
            "SELECT 1\n\\set x 1 + \\\n   2\n\\sleep :x ms\nSELECT :x;\n",
        )
        .unwrap();
        let commands = script.commands();
        assert_eq!(commands.len(), 4);
        assert!(matches!(&commands[0].kind, CommandKind::Sql(s) if s.text() == "SELECT 1"));
        let mut vars = script.initial_values(&VARS);
        let mut rng = fastrand::Rng::with_seed(0);
        let CommandKind::Set { slot, expr } = &commands[1].kind else {
            panic!("not a \\set");
        };
        vars[*slot] = expr.eval(&vars, &mut rng).unwrap();
        assert_eq!(vars[*slot], Value::Int(3));
        let CommandKind::Sleep(sleep) = &commands[2].kind else {
            panic!("not a \\sleep");
        };
        assert_eq!(sleep.duration(&vars), Ok(Duration::from_millis(3)));
        assert_eq!(commands[3].line, 5);
    }

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
        assert_eq!(
            eval_str("9223372036854775807 + 1"),
            Err(EvalError::Overflow("addition"))
        );
        assert_eq!(
            eval_str("-9223372036854775808 - 1"),
            Err(EvalError::Overflow("subtraction"))
        );
        assert_eq!(
            eval_str("4611686018427387904 * 2"),
            Err(EvalError::Overflow("multiplication"))
        );
        assert_eq!(
            eval_str("-9223372036854775808 / -1"),
            Err(EvalError::Overflow("division"))
        );
        // -x is 0 - x, as in pgbench.
        assert_eq!(
            eval_str("-(-9223372036854775807 - 1)"),
            Err(EvalError::Overflow("subtraction"))
        );
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

    #[test]
    fn simple_protocol_literals() {
        let script = Script::parse(
            "lit",
            "\\set a 5\n\\set b -3\n\\set c 0.1\nSELECT :a-:b, :a+:b, :c*:b, :c, f(:b), :b;\n",
        )
        .unwrap();
        let sql = sqls(&script)[0];
        let mut vars = script.initial_values(&VARS);
        let slot = |n: &str| script.slot(n).unwrap();
        vars[slot("a")] = Value::Int(5);
        vars[slot("b")] = Value::Int(-3);
        vars[slot("c")] = Value::Double(0.1);
        assert_eq!(
            sql.render_simple(&vars),
            "SELECT 5- -3, 5+ -3, 0.1* -3, 0.1, f(-3), -3"
        );
        let mut out = String::from("prefix ");
        vars[slot("c")] = Value::Double(1e20);
        vars[slot("b")] = Value::Double(-2.5);
        sql.write_simple(&vars, &mut out);
        assert_eq!(
            out,
            "prefix SELECT 5- -2.5, 5+ -2.5, 1e+20* -2.5, 1e+20, f(-2.5), -2.5"
        );
        vars[slot("c")] = Value::Double(f64::NAN);
        vars[slot("b")] = Value::Double(f64::NEG_INFINITY);
        assert_eq!(
            sql.render_simple(&vars),
            "SELECT 5-'-Infinity'::float8, 5+'-Infinity'::float8, 'NaN'::float8*'-Infinity'::float8, 'NaN'::float8, f('-Infinity'::float8), '-Infinity'::float8"
        );
        // Extended and prepared parameters in PostgreSQL's text form.
        let texts: Vec<String> = [
            Value::Int(-7),
            Value::Double(0.1),
            Value::Double(f64::INFINITY),
            Value::Double(f64::NAN),
        ]
        .iter()
        .map(|v| v.to_string())
        .collect();
        assert_eq!(texts, ["-7", "0.1", "Infinity", "NaN"]);
    }

    #[test]
    fn predefined_variables() {
        let script = Script::parse(
            "p",
            "\\set s :scale * 2\nSELECT :client_id, :random_seed, :s;\n",
        )
        .unwrap();
        assert_eq!(
            &script.variables()[..3],
            ["scale", "client_id", "random_seed"]
        );
        assert_eq!(script.slot("s"), Some(3));
        let mut vars = script.initial_values(&VARS);
        let mut rng = fastrand::Rng::with_seed(0);
        let CommandKind::Set { slot, expr } = &script.commands()[0].kind else {
            panic!("not a \\set");
        };
        vars[*slot] = expr.eval(&vars, &mut rng).unwrap();
        assert_eq!(sqls(&script)[0].render_simple(&vars), "SELECT 3, 42, 20");
        // Setting a predefined variable reuses its slot.
        let script = Script::parse("p", "\\set scale 2\nSELECT :scale;\n").unwrap();
        assert_eq!(script.variables().len(), 3);
    }

    /// Draws `count` values of `expr` from a seeded generator.
    fn draws(expr: &str, count: usize) -> Vec<i64> {
        let script = Script::parse("r", &format!("\\set x {expr}\n")).unwrap();
        let CommandKind::Set { expr, .. } = &script.commands()[0].kind else {
            panic!("not a \\set");
        };
        let vars = script.initial_values(&VARS);
        let mut rng = fastrand::Rng::with_seed(12_345);
        (0..count)
            .map(|_| match expr.eval(&vars, &mut rng) {
                Ok(Value::Int(i)) => i,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    fn histogram(values: &[i64], lb: i64, ub: i64) -> Vec<usize> {
        let mut counts = vec![0; (ub - lb + 1) as usize];
        for &v in values {
            assert!((lb..=ub).contains(&v), "{v} outside [{lb}, {ub}]");
            counts[(v - lb) as usize] += 1;
        }
        counts
    }

    /// Asserts that each observed frequency lies within 5 standard errors
    /// of the expected probability.
    fn assert_distribution(counts: &[usize], expected: &[f64]) {
        let total: usize = counts.iter().sum();
        let total = total as f64;
        for (k, (&count, &p)) in counts.iter().zip(expected).enumerate() {
            let observed = count as f64 / total;
            let sigma = (p * (1.0 - p) / total).sqrt();
            assert!(
                (observed - p).abs() <= 5.0 * sigma + 1e-9,
                "value {k}: observed {observed}, expected {p}"
            );
        }
    }

    #[test]
    fn random_is_uniform_and_inclusive() {
        let counts = histogram(&draws("random(-3, 6)", 100_000), -3, 6);
        assert_distribution(&counts, &[0.1; 10]);
        assert!(draws("random(5, 5)", 100).iter().all(|&v| v == 5));
        // The widest range pgbench takes holds i64::MAX values.
        let wide = draws("random(-4611686018427387904, 4611686018427387902)", 1000);
        assert!(wide.iter().any(|&v| v < 0) && wide.iter().any(|&v| v > 0));
        // One more is too large, as is the full 64-bit range.
        for range in [
            "-4611686018427387904, 4611686018427387903",
            "-9223372036854775808, 9223372036854775807",
            "0, 9223372036854775807",
        ] {
            assert!(
                matches!(
                    eval_str(&format!("random({range})")),
                    Err(EvalError::RangeTooLarge { .. })
                ),
                "{range}"
            );
        }
        // Double bounds are rounded, as with int(): 1.9 to 2, 3.2 to 3.
        let rounded = draws("random(1.9, 3.2)", 1000);
        assert!(rounded.iter().all(|&v| (2..=3).contains(&v)));
        assert!(rounded.contains(&2) && rounded.contains(&3));
        assert!(draws("random(0.6, 0.6)", 10).iter().all(|&v| v == 1));
        assert_eq!(
            eval_str("random(3, 1)"),
            Err(EvalError::EmptyRange {
                function: "random()",
                lb: 3,
                ub: 1
            })
        );
    }

    #[test]
    fn random_exponential_matches_its_distribution() {
        let counts = histogram(&draws("random_exponential(1, 10, 2.5)", 200_000), 1, 10);
        let (p, n) = (2.5_f64, 10.0);
        let expected: Vec<f64> = (0..10)
            .map(|i| {
                let i = f64::from(i);
                ((-p * i / n).exp() - (-p * (i + 1.0) / n).exp()) / (1.0 - (-p).exp())
            })
            .collect();
        assert_distribution(&counts, &expected);
        assert!(counts.windows(2).all(|w| w[0] > w[1]), "{counts:?}");
        // A tiny parameter is nearly uniform, not everything on lb.
        let counts = histogram(&draws("random_exponential(1, 10, 1e-12)", 100_000), 1, 10);
        assert_distribution(&counts, &[0.1; 10]);
        // A steep parameter crowds nearly everything onto lb.
        let steep = draws("random_exponential(100, 1000000, 50)", 10_000);
        assert!(steep.iter().all(|&v| (100..=1_000_000).contains(&v)));
        assert!(steep.iter().filter(|&&v| v < 100 + 100_000).count() > 9_900);
        for bad in ["0", "-1", "0.0"] {
            assert!(matches!(
                eval_str(&format!("random_exponential(1, 10, {bad})")),
                Err(EvalError::BadParameter { .. })
            ));
        }
        assert!(matches!(
            eval_str("random_exponential(10, 1, 1)"),
            Err(EvalError::EmptyRange { .. })
        ));
    }

    #[test]
    fn random_gaussian_centres_on_the_middle() {
        let values = draws("random_gaussian(1, 1000, 2.5)", 100_000);
        let counts = histogram(&values, 1, 1000);
        let mean = values.iter().sum::<i64>() as f64 / values.len() as f64;
        assert!((mean - 500.5).abs() < 3.0, "mean {mean}");
        // The middle tenth is denser than either end's tenth.
        let middle: usize = counts[450..550].iter().sum();
        let low: usize = counts[..100].iter().sum();
        let high: usize = counts[900..].iter().sum();
        assert!(
            middle > 3 * low && middle > 3 * high,
            "{middle} {low} {high}"
        );
        assert!(low > 0 && high > 0);
        assert!(
            draws("random_gaussian(-5, 5, 2)", 10_000)
                .iter()
                .all(|v| v.abs() <= 5)
        );
        assert!(matches!(
            eval_str("random_gaussian(1, 10, 1.9)"),
            Err(EvalError::BadParameter { .. })
        ));
        let message = eval_str("random_gaussian(1, 10, 1.5)")
            .unwrap_err()
            .to_string();
        assert!(message.contains("at least 2.0"), "{message}");
    }

    fn zipf_probabilities(n: usize, s: f64) -> Vec<f64> {
        let weights: Vec<f64> = (1..=n).map(|k| (k as f64).powf(-s)).collect();
        let total: f64 = weights.iter().sum();
        weights.iter().map(|w| w / total).collect()
    }

    #[test]
    fn random_zipfian_matches_zipfs_law() {
        for s in [1.001, 1.5, 3.0] {
            let counts = histogram(&draws(&format!("random_zipfian(1, 8, {s})"), 200_000), 1, 8);
            assert_distribution(&counts, &zipf_probabilities(8, s));
        }
        // s = 1.5 over 1..1000: P(1) = 1 / H(1000, 1.5), about 0.392.
        let counts = histogram(&draws("random_zipfian(1, 1000, 1.5)", 200_000), 1, 1000);
        let expected = zipf_probabilities(1000, 1.5);
        let p1 = counts[0] as f64 / 200_000.0;
        assert!(
            (p1 - expected[0]).abs() < 0.005,
            "P(1) = {p1}, expected {}",
            expected[0]
        );
        assert_eq!(counts.iter().max(), Some(&counts[0]));
        assert!(counts[0] > counts[1] && counts[1] > counts[2] && counts[2] > counts[9]);
        // The offset from lb is what follows the law.
        let shifted = draws("random_zipfian(-10, 10, 2)", 10_000);
        assert!(shifted.iter().all(|v| (-10..=10).contains(v)));
        assert!(shifted.iter().filter(|&&v| v == -10).count() > 5_000);
        assert!(draws("random_zipfian(4, 4, 2)", 10).iter().all(|&v| v == 4));
        for bad in ["1.0", "1", "0.5", "1000.5"] {
            assert!(matches!(
                eval_str(&format!("random_zipfian(1, 10, {bad})")),
                Err(EvalError::BadParameter { .. })
            ));
        }
        assert!(
            draws("random_zipfian(1, 1000000000, 1000)", 10_000)
                .iter()
                .all(|&v| v == 1)
        );
    }

    #[test]
    fn random_zipfian_is_constant_time_in_the_range() {
        // A billion values: a table or a harmonic sum over them would take
        // seconds per draw; rejection-inversion takes the same few
        // operations as for ten.
        let started = std::time::Instant::now();
        let values = draws("random_zipfian(1, 1000000000, 1.1)", 100_000);
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(values.iter().all(|v| (1..=1_000_000_000).contains(v)));
        let ones = values.iter().filter(|&&v| v == 1).count() as f64 / 1e5;
        // P(1) = 1 / H(10^9, 1.1); H is ζ(1.1) ≈ 10.58 less a tail of
        // about 10 · 10^-0.9 ≈ 1.26.
        assert!((ones - 1.0 / 9.32).abs() < 0.01, "P(1) = {ones}");
        assert!(values.iter().any(|&v| v > 1_000_000));
        let full = draws("random_zipfian(-9223372036854775808, -2, 1.5)", 1000);
        assert!(full.iter().filter(|&&v| v == i64::MIN).count() > 300);
    }

    #[test]
    fn parse_errors_name_the_line_and_the_problem() {
        let err = parse_err("SELECT 1;\n\n\\setshell x echo 1\n");
        assert_eq!(err.line(), 3);
        assert_eq!(err.name(), "t.sql");
        assert!(
            err.message()
                .contains("\\setshell is not supported by dyno yet"),
            "{err}"
        );
        assert!(err.to_string().starts_with("t.sql:3: \\setshell"), "{err}");

        let err = parse_err("\\set x 1\n\\if :x\n");
        assert_eq!(
            (err.line(), err.message().contains("\\if is not supported")),
            (2, true)
        );
        let err = parse_err("\\bogus\n");
        assert!(
            err.message().contains("unknown meta-command \\bogus"),
            "{err}"
        );
        let err = parse_err("SELECT 1 AS one \\gset\n");
        assert!(err.message().contains("\\gset is not supported"), "{err}");
        let err = parse_err("SELECT 1 \\;\nSELECT 2;\n");
        assert!(err.message().contains("compound"), "{err}");

        let err = parse_err("\\set a 1\n\\set x foo(1)\n");
        assert_eq!(err.line(), 2);
        assert!(err.message().contains("unknown function 'foo'"), "{err}");
        assert!(parse_message("hash(1)").contains("hash() is not supported by dyno yet"));
        assert!(parse_message("permute(1, 2)").contains("not supported"));

        assert_eq!(
            parse_message("random(1)"),
            "random() takes 2 arguments, but is given 1"
        );
        assert_eq!(
            parse_message("abs(1, 2)"),
            "abs() takes 1 argument, but is given 2"
        );
        assert_eq!(
            parse_message("pi(1)"),
            "pi() takes 0 arguments, but is given 1"
        );
        assert!(parse_message("greatest()").contains("at least one"));

        let err = parse_err("\\set a 1\nSELECT 1;\n\\set x :a + :y\n");
        assert_eq!(err.line(), 3);
        assert!(
            err.message()
                .contains("variable 'y' is used before any \\set"),
            "{err}"
        );
        let err = parse_err("\\set x :x + 1\n");
        assert!(err.message().contains("variable 'x'"), "{err}");
        let err = parse_err("BEGIN;\nSELECT *\nFROM t WHERE id = :id;\n\\set id 1\n");
        assert_eq!(err.line(), 3);
        assert!(
            err.message().contains("'id'") && err.message().contains("space after"),
            "{err}"
        );

        assert!(parse_message("(1 + 2").contains("never closed"));
        assert!(parse_message("random(1, 2").contains("never closed"));
        assert!(parse_message("1 + 2)").contains("no '(' to close"));
        assert!(parse_message("(1 + 2))").contains("no '(' to close"));
        assert!(parse_message("1 2").contains("unexpected '2' after the end"));
        assert!(parse_message("random(1, 2) abc").contains("unexpected 'abc'"));
        assert!(parse_message("1 +").contains("ends where a value was expected"));
        assert!(parse_message("* 2").contains("expected a value but found '*'"));
        assert!(parse_message("1 < 2 < 3").contains("do not chain"));
        assert!(parse_message("aid + 1").contains("written :aid"));
        assert!(parse_message("random").contains("call it as random(…)"));
        assert!(parse_message("99999999999999999999").contains("bigint constant overflow"));
        assert!(parse_message("1e").contains("exponent"));
        assert!(parse_message("1 @ 2").contains("unexpected character '@'"));
        assert!(parse_message("'x'").contains("strings"));

        assert!(parse_message("CASE 1 THEN 2 END").contains("at least one WHEN"));
        assert!(parse_message("CASE WHEN 1 THEN 2").contains("expected END"));
        assert!(parse_message("CASE WHEN 1 2 END").contains("expected THEN"));
        assert!(parse_message("1 + END").contains("outside a CASE"));
        assert!(parse_message("null").contains("NULL is not supported"));
        assert!(parse_message("1 == 1").contains("'='"));

        let deep = format!("{}1{}", "(".repeat(200), ")".repeat(200));
        assert!(parse_message(&deep).contains("levels deep"));
        let long = vec!["1"; 500].join(" + ");
        assert!(parse_message(&long).contains("levels deep"));

        let err = parse_err("\\set\n");
        assert!(err.message().contains("needs a variable name"), "{err}");
        let err = parse_err("\\set :x 1\n");
        assert!(err.message().contains("without the ':'"), "{err}");
        let err = parse_err("\\set x-y 1\n");
        assert!(err.message().contains("not a variable name"), "{err}");

        let err = parse_err("SELECT 1;\nSELECT 'open\n;\n");
        assert_eq!(err.line(), 2);
        assert!(err.message().contains("never closed"), "{err}");

        let err = parse_err("-- nothing\n\n");
        assert!(err.message().contains("no commands"), "{err}");
    }

    #[test]
    fn blank_lines_inside_strings_are_kept() {
        let script = Script::parse("b", "INSERT INTO t VALUES ('a\n\n  b  \n');\n").unwrap();
        assert_eq!(
            sqls(&script)[0].text(),
            "INSERT INTO t VALUES ('a\n\n  b  \n')"
        );
    }

    #[test]
    fn meta_commands_ignore_case() {
        let script = Script::parse("c", "\\SET x 1\n\\Sleep :x MS\n").unwrap();
        assert_eq!(script.commands().len(), 2);
        let err = parse_err("\\SetShell x echo 1\n");
        assert!(
            err.message().contains("\\SetShell is not supported"),
            "{err}"
        );
    }

    #[test]
    fn keywords_and_functions_ignore_case() {
        assert_eq!(int("RANDOM(1, 1) + Mod(7, 4) + GREATEST(1, 2)"), 6);
        assert!(boolean("tRuE aNd 1 = 1"));
    }
}
