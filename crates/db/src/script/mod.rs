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
//! its expressions (pgbench's integers, doubles, booleans and NULL,
//! operators, `IS` tests, `CASE` and functions, `debug()` included, with
//! its rounding and coercion rules) and the random distributions,
//! `\sleep`, `\if` blocks, `\gset` and `\aset`, `\setshell` and
//! `\shell`, pipelines with `\syncpipeline`, `\;` compound statements,
//! and variables defined with `-D`. Anything else is refused at parse time,
//! with its line, so a script never half-runs.
//! docs/src/pgbench-scripts.md lists where dyno differs from pgbench, and why.
//!
//! [`builtin`](fn@builtin) holds pgbench's three built-in scripts and
//! [`weighted`] reads its `NAME@WEIGHT` arguments.
//!
//! The modules follow the data. [`Script::parse`] (here) walks a file's
//! lines: `\` lines go to `meta` (`\set`, `\sleep`), whose expressions
//! `lex` cuts into tokens and `expr` parses into trees; the other lines go
//! to `sql`'s statement builder. At run time, `eval` evaluates the trees
//! over a client's [`Value`]s (`value`: pgbench's types and coercions),
//! drawing through `random`, and `sql` renders the statements. `builtin`
//! holds the built-in scripts, which reach [`Script::parse`] as a file
//! does.

mod builtin;
mod eval;
mod expr;
mod hash;
mod lex;
mod meta;
mod random;
mod sql;
#[cfg(test)]
mod testing;
mod value;

pub use builtin::{builtin, builtin_names, weighted};
pub use eval::At;
pub use expr::Expr;
pub use meta::{Shell, ShellArg, Sleep};
pub use sql::{Sql, SqlPart, Store};
pub use value::{EvalError, Value};

use meta::parse_meta;
use sql::{Quote, SqlBuilder};

/// The slot of the predefined variable `scale` (pgbench's scale factor).
pub const SCALE: usize = 0;
/// The slot of the predefined variable `client_id` (numbered from 0).
pub const CLIENT_ID: usize = 1;
/// The slot of the predefined variable `random_seed`.
pub const RANDOM_SEED: usize = 2;
/// The slot of the predefined variable `default_seed`: the seed of
/// `hash()` and `permute()` when a call leaves it out.
pub const DEFAULT_SEED: usize = 3;
const PREDEFINED: [&str; 4] = ["scale", "client_id", "random_seed", "default_seed"];

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

/// A parsed script: its commands, in order, and the names of its variable
/// slots.
#[derive(Debug, Clone)]
pub struct Script {
    name: String,
    commands: Vec<Command>,
    variables: Vec<String>,
    /// The `-D NAME=VALUE` definitions, by slot.
    defined: Vec<(usize, Value)>,
    /// By command: the variables it reads that may not be set when it
    /// runs (a `\gset` or `\aset` may be what sets them), checked then.
    checks: Vec<Vec<usize>>,
    /// Every variable of `checks`, unset until something sets it.
    dynamic: Vec<usize>,
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
    /// The seed of `hash()` and `permute()` when a call leaves it out:
    /// drawn from the run's seed, the same for every client (as pgbench
    /// draws it from its base seed); `-D default_seed=N` sets it.
    pub default_seed: i64,
}

/// The `default_seed` of a run of seed `seed` and `clients` clients (the
/// whole run's `-c`), as pgbench 15 draws it: its base generator
/// (PostgreSQL's `pg_prng`, xoroshiro128** seeded through splitmix64) is
/// seeded with `seed`, gives one draw to each client's own generator, and
/// its next draw is the default seed. So `hash(x)` and `permute(i, n)`
/// without a seed give pgbench's values under the same `--random-seed`
/// and `-c`. The same for every client and segment of the run.
pub fn default_seed(seed: u64, clients: u64) -> i64 {
    fn splitmix64(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    let mut state = seed;
    let (mut s0, mut s1) = (splitmix64(&mut state), splitmix64(&mut state));
    // pg_prng_seed_check: an all-zero state would draw zeros forever.
    if s0 == 0 && s1 == 0 {
        s0 = 0x5851_f42d_4c95_7f2d;
        s1 = 0x1405_7b7e_f767_814f;
    }
    let mut draw = || {
        let value = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let sx = s1 ^ s0;
        s0 = s0.rotate_left(24) ^ sx ^ (sx << 16);
        s1 = sx.rotate_left(37);
        value
    };
    for _ in 0..clients {
        draw();
    }
    draw() as i64
}

#[cfg(test)]
#[test]
fn the_default_seed_is_pgbenchs() {
    // `\set d :default_seed` under pgbench 15 with --random-seed S -c C.
    for (seed, clients, pgbench) in [
        (1, 1, -4_077_769_369_618_924_625),
        (2, 1, 7_093_424_810_544_874_805),
        (42, 1, 4_306_334_408_478_191_133),
        (1, 2, -1_564_547_434_871_682_003),
        (1, 3, -3_060_036_491_186_211_434),
    ] {
        assert_eq!(
            default_seed(seed, clients),
            pgbench,
            "seed {seed}, -c {clients}"
        );
    }
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
    /// `\if COND` and `\elif COND`: when `cond` is not true (pgbench's
    /// truth: a boolean, a number other than 0), go on at command
    /// `on_false` (the next branch's test, or after the block).
    Branch { cond: Expr, on_false: usize },
    /// The end of a branch that ran: go on at command `.0`, after its
    /// `\endif`.
    Jump(usize),
    /// `\shell` and `\setshell`.
    Shell(Shell),
    /// `\startpipeline`: the SQL commands up to command `end` (the
    /// `\endpipeline`) are sent at once, behind one Sync, and their
    /// answers read after; the run goes on at `end`.
    Pipeline { end: usize },
    /// `\syncpipeline` inside a pipeline: a Sync there, which ends one
    /// implicit transaction of the pipeline and starts the next.
    SyncPipeline,
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
        let mut vars = Vars::new();
        let mut blocks: Vec<Block> = Vec::new();
        let defined: Vec<(usize, Value)> = definitions
            .iter()
            .map(|(n, v)| (vars.define(n), v.clone()))
            .collect();
        let mut commands = Vec::new();
        let mut pending: Option<SqlBuilder> = None;
        // An open `\startpipeline`: its line and command.
        let mut pipeline: Option<(usize, usize)> = None;
        // The command count at the last `\endpipeline`.
        let mut sealed = 0;
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
                // `\;` starts SQL: an empty statement joined to the next.
                if let Some(meta) = trimmed.strip_prefix('\\').filter(|m| !m.starts_with(';')) {
                    let word: String = meta.chars().take_while(|&c| is_name_char(c)).collect();
                    let word = word.to_ascii_lowercase();
                    if word == "gset" || word == "aset" {
                        // The statement before, left without its `;`, ends
                        // here and stores its result.
                        let store = sql::Store::parse(&word, &meta[word.len()..])
                            .map_err(|e| ScriptError::new(name, line_no, e))?;
                        vars.stores.push(store.prefix.clone());
                        if let Some(mut sql) = pending.take() {
                            sql.store = Some(store);
                            commands.extend(sql.finish(name)?);
                            continue;
                        }
                        // pgbench takes it after a statement its `;` ended
                        // too, if that statement is the command just before.
                        // Not the last statement of a closed pipeline.
                        let open = commands.len() > sealed;
                        let stored = match commands.last_mut().map(|c| &mut c.kind) {
                            Some(CommandKind::Sql(sql)) if open => sql.set_store(store),
                            _ => false,
                        };
                        if !stored {
                            return Err(ScriptError::new(name, line_no, sql::must_follow(&word)));
                        }
                        continue;
                    }
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
                    let (word, args) = first_word(&meta);
                    let word = word.to_ascii_lowercase();
                    if word == "startpipeline" || word == "endpipeline" || word == "syncpipeline" {
                        let err = |m: &str| Err(ScriptError::new(name, line_no, m));
                        if !args.is_empty() {
                            return err(&format!("\\{word} takes no argument"));
                        }
                        match (word.as_str(), pipeline) {
                            ("syncpipeline", None) => {
                                return err(
                                    "\\syncpipeline outside a pipeline: it goes between \\startpipeline and \\endpipeline",
                                );
                            }
                            ("syncpipeline", Some(_)) => {
                                commands.push(Command {
                                    line: line_no,
                                    kind: CommandKind::SyncPipeline,
                                });
                            }
                            ("startpipeline", None) => {
                                pipeline = Some((line_no, commands.len()));
                                commands.push(Command {
                                    line: line_no,
                                    kind: CommandKind::Pipeline { end: usize::MAX },
                                });
                            }
                            ("startpipeline", Some((line, _))) => {
                                return err(&format!(
                                    "\\startpipeline inside the pipeline line {line} started; end it with \\endpipeline first"
                                ));
                            }
                            (_, None) => return err("\\endpipeline without a \\startpipeline"),
                            (_, Some((_, start))) => {
                                if let Some(c) = commands[start + 1..].iter().find(|c| {
                                    !matches!(&c.kind, CommandKind::Set { .. } | CommandKind::SyncPipeline)
                                        && !matches!(&c.kind, CommandKind::Sql(s) if s.store().is_none())
                                }) {
                                    return Err(ScriptError::new(
                                        name,
                                        c.line,
                                        "a pipeline holds SQL statements and \\set only (pgbench refuses \\gset and \\aset there too): move this out of the pipeline",
                                    ));
                                }
                                let end = commands.len();
                                commands[start].kind = CommandKind::Pipeline { end };
                                pipeline = None;
                                sealed = end;
                            }
                        }
                        continue;
                    }
                    if matches!(word.as_str(), "if" | "elif" | "else" | "endif") {
                        control(
                            name,
                            line_no,
                            (&word, args),
                            &mut vars,
                            &mut blocks,
                            &mut commands,
                        )?;
                        continue;
                    }
                    commands.push(parse_meta(name, line_no, &meta, &mut vars)?);
                    continue;
                }
            }
            let sql = pending.get_or_insert_with(SqlBuilder::default);
            if sql.push_line(name, line_no, line, &mut vars)?
                && let Some(sql) = pending.take()
            {
                if let Some(store) = &sql.store {
                    vars.stores.push(store.prefix.clone());
                }
                commands.extend(sql.finish(name)?);
            }
        }
        if let Some(sql) = pending.take() {
            commands.extend(sql.finish(name)?);
        }
        if let Some((line, _)) = pipeline {
            return Err(ScriptError::new(
                name,
                line,
                "\\startpipeline without \\endpipeline: the pipeline must end in the same script",
            ));
        }
        if let Some(b) = blocks.last() {
            return Err(ScriptError::new(
                name,
                b.line,
                "\\if without \\endif: the block must end in the same script",
            ));
        }
        if commands.is_empty() {
            return Err(ScriptError::new(
                name,
                lines.len().max(1),
                "the script has no commands; write SQL statements ending in ';' or \\set and \\sleep lines",
            ));
        }
        let checks = commands
            .iter()
            .map(|c| {
                let mut reads = Vec::new();
                match &c.kind {
                    CommandKind::Set { expr, .. } | CommandKind::Branch { cond: expr, .. } => {
                        expr.0.slots(&mut reads);
                    }
                    CommandKind::Sleep(sleep) => reads.extend(sleep.slot()),
                    CommandKind::Shell(shell) => reads.extend(shell.slots()),
                    CommandKind::Sql(sql) => reads.extend(sql.param_slots()),
                    CommandKind::Jump(_)
                    | CommandKind::Pipeline { .. }
                    | CommandKind::SyncPipeline => {}
                }
                reads.retain(|&s| vars.dynamic[s]);
                reads.sort_unstable();
                reads.dedup();
                reads
            })
            .collect();
        let dynamic = (0..vars.names.len()).filter(|&s| vars.dynamic[s]).collect();
        Ok(Script {
            name: name.to_owned(),
            commands,
            variables: vars.names,
            defined,
            checks,
            dynamic,
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
            CommandKind::Branch { .. } => "\\if".to_owned(),
            CommandKind::Jump(_) => "\\endif".to_owned(),
            CommandKind::Pipeline { .. } => "\\startpipeline".to_owned(),
            CommandKind::SyncPipeline => "\\syncpipeline".to_owned(),
            CommandKind::Shell(shell) => match shell.target {
                Some(slot) => format!("\\setshell {}", self.variables[slot]),
                None => "\\shell".to_owned(),
            },
            CommandKind::Sql(sql) => sql.text().split_whitespace().collect::<Vec<_>>().join(" "),
        }
    }

    /// The variables command `index` reads that may not be set when it
    /// runs: a `\gset` or `\aset` may be what sets them. The runner keeps
    /// which are set ([`Script::unset`]) and fails the command on one that
    /// is not, as pgbench fails on an undefined variable.
    pub fn checks(&self, index: usize) -> &[usize] {
        &self.checks[index]
    }

    /// A client's flags of which variables are not set yet, by slot: those
    /// of [`Script::checks`] before anything sets them.
    pub fn unset(&self) -> Vec<bool> {
        let mut unset = vec![false; self.variables.len()];
        for &slot in &self.dynamic {
            unset[slot] = true;
        }
        unset
    }

    /// The line of the script's first `\\startpipeline`, if it has one.
    pub fn pipeline_line(&self) -> Option<usize> {
        self.commands
            .iter()
            .find(|c| matches!(c.kind, CommandKind::Pipeline { .. }))
            .map(|c| c.line)
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
        values[DEFAULT_SEED] = Value::Int(predefined.default_seed);
        for (slot, value) in &self.defined {
            values[*slot] = value.clone();
        }
        values
    }

    /// Checks the script against the limits of the extended and prepared
    /// protocols as pgbench has them: at most 255 parameters (variable
    /// references) in a statement. `-M simple` has no such limit.
    pub fn check_parameters(&self) -> Result<(), ScriptError> {
        for command in &self.commands {
            if let CommandKind::Sql(sql) = &command.kind
                && sql.param_slots().len() > MAX_PARAMS
            {
                return Err(ScriptError::new(
                    &self.name,
                    command.line,
                    format!(
                        "the statement has {} variable references, but -M extended and -M prepared take at most {MAX_PARAMS} (as pgbench); use -M simple, or fewer references",
                        sql.param_slots().len()
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
    /// Whether each is surely set at this point of the script: set on
    /// every path to it (a `\set` in one branch of an `\if` only is not).
    live: Vec<bool>,
    /// The prefixes of the `\gset` and `\aset` read so far: a variable
    /// one of them may set, whose name only the server's answer tells.
    stores: Vec<String>,
    /// The variables read where they may not be set, since a `\gset` or
    /// `\aset` may be what sets them: checked when a command reads them.
    dynamic: Vec<bool>,
}

impl Vars {
    fn new() -> Vars {
        Vars {
            names: PREDEFINED.iter().map(|s| (*s).to_owned()).collect(),
            live: vec![true; PREDEFINED.len()],
            stores: Vec::new(),
            dynamic: vec![false; PREDEFINED.len()],
        }
    }

    /// The slot of `name`, if it is surely set here, or may be set by a
    /// `\gset` or `\aset` before (then it is checked at run time, as
    /// pgbench checks every variable).
    fn slot(&mut self, name: &str) -> Option<usize> {
        let known = self.names.iter().position(|v| v == name);
        if let Some(i) = known
            && (self.live[i] || self.dynamic[i])
        {
            return Some(i);
        }
        if !self
            .stores
            .iter()
            .any(|p| name.len() > p.len() && name.starts_with(p.as_str()))
        {
            return None;
        }
        let i = known.unwrap_or_else(|| {
            self.names.push(name.to_owned());
            self.live.push(false);
            self.dynamic.push(false);
            self.names.len() - 1
        });
        self.dynamic[i] = true;
        Some(i)
    }

    fn define(&mut self, name: &str) -> usize {
        let i = match self.names.iter().position(|v| v == name) {
            Some(i) => i,
            None => {
                self.names.push(name.to_owned());
                self.live.push(false);
                self.dynamic.push(false);
                self.names.len() - 1
            }
        };
        self.live[i] = true;
        i
    }
}

/// An `\if` block being read: what was set before it, what each finished
/// branch had set, and the commands whose targets its end decides.
struct Block {
    line: usize,
    before: Vec<bool>,
    branches: Vec<Vec<bool>>,
    has_else: bool,
    /// The last branch's test, which goes on at the next branch (or after
    /// the block) when false.
    test: Option<usize>,
    /// The jumps to after the block that end each taken branch.
    jumps: Vec<usize>,
}

/// Reads `\if`, `\elif`, `\else` and `\endif` (`word`, with `args`) into
/// `commands`: a test that goes on at the next branch when false, and a
/// jump after the block at the end of each branch. Which variables are
/// surely set after a block is what every branch set (and, without an
/// `\else`, what was set before it).
fn control(
    name: &str,
    line: usize,
    (word, args): (&str, &str),
    vars: &mut Vars,
    blocks: &mut Vec<Block>,
    commands: &mut Vec<Command>,
) -> Result<(), ScriptError> {
    let err = |message: String| ScriptError::new(name, line, message);
    let test = |vars: &mut Vars| {
        if args.is_empty() {
            return Err(err(format!(
                "\\{word} needs a condition, e.g. \\{word} :x > 0"
            )));
        }
        expr::parse_expr(args, vars).map_err(err)
    };
    let open = |blocks: &mut Vec<Block>, what: &str| -> Result<usize, ScriptError> {
        match blocks.last() {
            None => Err(err(format!("\\{what} without a matching \\if"))),
            Some(b) if b.has_else && what != "endif" => Err(err(format!(
                "\\{what} after \\else (line {}'s \\if has had its \\else)",
                b.line
            ))),
            Some(_) => Ok(blocks.len() - 1),
        }
    };
    // The end of a branch: what it set is kept, and the next one starts
    // from what was set before the block.
    let close_branch = |b: &mut Block, vars: &mut Vars, commands: &mut Vec<Command>, last: bool| {
        b.branches.push(vars.live.clone());
        if !last {
            b.jumps.push(commands.len());
            commands.push(Command {
                line,
                kind: CommandKind::Jump(usize::MAX),
            });
        }
        vars.live = b.before.clone();
        vars.live.resize(vars.names.len(), false);
        if let Some(t) = b.test.take() {
            let next = commands.len();
            if let CommandKind::Branch { on_false, .. } = &mut commands[t].kind {
                *on_false = next;
            }
        }
    };
    match word {
        "if" => {
            let cond = test(vars)?;
            blocks.push(Block {
                line,
                before: vars.live.clone(),
                branches: Vec::new(),
                has_else: false,
                test: Some(commands.len()),
                jumps: Vec::new(),
            });
            commands.push(Command {
                line,
                kind: CommandKind::Branch {
                    cond,
                    on_false: usize::MAX,
                },
            });
        }
        "elif" => {
            let b = open(blocks, "elif")?;
            close_branch(&mut blocks[b], vars, commands, false);
            let cond = test(vars)?;
            blocks[b].test = Some(commands.len());
            commands.push(Command {
                line,
                kind: CommandKind::Branch {
                    cond,
                    on_false: usize::MAX,
                },
            });
        }
        "else" => {
            if !args.is_empty() {
                return Err(err("\\else takes no condition (write \\elif COND)".into()));
            }
            let b = open(blocks, "else")?;
            close_branch(&mut blocks[b], vars, commands, false);
            blocks[b].has_else = true;
        }
        _ => {
            if !args.is_empty() {
                return Err(err("\\endif takes nothing after it".into()));
            }
            let b = open(blocks, "endif")?;
            let mut block = blocks.remove(b);
            close_branch(&mut block, vars, commands, true);
            let end = commands.len();
            for j in &block.jumps {
                commands[*j].kind = CommandKind::Jump(end);
            }
            let mut live = if block.has_else {
                vec![true; vars.names.len()]
            } else {
                let mut before = block.before.clone();
                before.resize(vars.names.len(), false);
                before
            };
            for branch in &block.branches {
                for (i, l) in live.iter_mut().enumerate() {
                    *l &= branch.get(i).copied().unwrap_or(false);
                }
            }
            vars.live = live;
        }
    }
    Ok(())
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `text` split at its first white space: the first word, and the rest
/// trimmed (empty when there is no more).
pub(super) fn first_word(text: &str) -> (&str, &str) {
    text.split_once(char::is_whitespace)
        .map_or((text, ""), |(word, rest)| (word, rest.trim()))
}

/// Whether `name` may name a variable, as pgbench's `valid_variable_name`
/// says: letters, digits and '_', not a digit first, and not empty.
pub fn is_variable_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| !c.is_ascii_digit()) && name.chars().all(is_name_char)
}

fn undefined_variable(name: &str) -> String {
    format!(
        "variable '{name}' is used before any \\set of it; set it on an earlier line (the predefined variables are scale, client_id and random_seed)"
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::script::testing::{VARS, assert_refused, parse_err, parsed, sqls};

    fn parse_message(expr: &str) -> String {
        parse_err(&format!("\\set x {expr}\n")).message().to_owned()
    }

    #[test]
    fn gset_and_aset_end_their_statement_and_defer_the_check_of_what_they_set() {
        let source = "SELECT 1 AS a \\gset p_\nSELECT 2 AS b;\n\\aset\n\\set x :p_a + :b\nSELECT :x, :p_c;\n";
        let script = parsed("g", source, 4);
        let commands = script.commands();
        let store = |i: usize| match &commands[i].kind {
            CommandKind::Sql(s) => (s.text().to_owned(), s.store().cloned()),
            _ => panic!("not SQL"),
        };
        // `\gset p_` stores one row under the prefix, `\aset` every row.
        let stores = [("SELECT 1 AS a", false, "p_"), ("SELECT 2 AS b", true, "")];
        for (i, (sql, all, prefix)) in stores.into_iter().enumerate() {
            let (text, stored) = store(i);
            assert_eq!(text, sql);
            let prefix = prefix.into();
            assert_eq!(stored, Some(Store { all, prefix }));
        }
        // What only the answers can set is checked where it is read, and
        // is unset until then; `x`, set by `\set`, is not checked.
        let slot = |n: &str| script.slot(n).unwrap();
        assert_eq!(script.checks(2), &[slot("p_a"), slot("b")]);
        assert_eq!(script.checks(3), &[slot("p_c")]);
        let unset = script.unset();
        assert!(unset[slot("p_a")] && unset[slot("b")] && !unset[slot("x")]);
        // Without a store that may set it, a name is still refused at once.
        let err = parse_err("SELECT 1 AS a \\gset p_\nSELECT :q_a;\n");
        assert!(err.message().contains("'q_a'"), "{err}");
    }

    #[test]
    fn a_pipeline_spans_its_statements_and_refuses_what_needs_answers() {
        let source =
            "\\startpipeline\nSELECT 1;\n\\set x 2\nSELECT :x;\n\\endpipeline\nSELECT 3;\n";
        let script = parsed("p", source, 5);
        let commands = script.commands();
        assert!(matches!(commands[0].kind, CommandKind::Pipeline { end: 4 }));
        assert_eq!(script.pipeline_line(), Some(1));
        assert_refused(&[
            ("\\startpipeline\nSELECT 1;\n", 1, "without \\endpipeline"),
            ("SELECT 1;\n\\endpipeline\n", 2, "without a \\startpipeline"),
            (
                "\\startpipeline\n\\startpipeline\n",
                2,
                "inside the pipeline line 1",
            ),
            (
                "\\startpipeline\n\\sleep 1\n\\endpipeline\n",
                2,
                "SQL statements and \\set only",
            ),
            (
                "\\startpipeline\nSELECT 1 AS a \\gset\n\\endpipeline\n",
                2,
                "\\gset",
            ),
            (
                "\\startpipeline\nSELECT 1;\n\\endpipeline\n\\gset\n",
                4,
                "must follow",
            ),
            ("\\startpipeline x\n\\endpipeline\n", 1, "takes no argument"),
        ]);
    }

    #[test]
    fn meta_command_ends_an_open_statement_and_continues_lines() {
        let source = "SELECT 1\n\\set x 1 + \\\n   2\n\\sleep :x ms\nSELECT :x;\n";
        let script = parsed("c", source, 4);
        let commands = script.commands();
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
    fn predefined_variables() {
        let script = Script::parse(
            "p",
            "\\set s :scale * 2\nSELECT :client_id, :random_seed, :s;\n",
        )
        .unwrap();
        assert_eq!(
            &script.variables()[..4],
            ["scale", "client_id", "random_seed", "default_seed"]
        );
        assert_eq!(script.slot("s"), Some(4));
        let mut vars = script.initial_values(&VARS);
        let mut rng = fastrand::Rng::with_seed(0);
        let CommandKind::Set { slot, expr } = &script.commands()[0].kind else {
            panic!("not a \\set");
        };
        vars[*slot] = expr.eval(&vars, &mut rng).unwrap();
        assert_eq!(sqls(&script)[0].render_simple(&vars), "SELECT 3, 42, 20");
        // Setting a predefined variable reuses its slot.
        let script = Script::parse("p", "\\set scale 2\nSELECT :scale;\n").unwrap();
        assert_eq!(script.variables().len(), 4);
    }

    #[test]
    fn parse_errors_name_the_line_and_the_problem() {
        let err = parse_err("SELECT 1;\n\n\\syncpipeline\n");
        assert_eq!(err.line(), 3);
        assert_eq!(err.name(), "t.sql");
        assert!(
            err.message().contains("\\syncpipeline outside a pipeline"),
            "{err}"
        );
        assert!(
            err.to_string().starts_with("t.sql:3: \\syncpipeline"),
            "{err}"
        );
        let err = parse_err("\\setshell x echo :y\n");
        assert!(err.message().contains("'y'"), "{err}");

        let err = parse_err("\\set x 1\n\\if :x\nSELECT 1;\n");
        assert_eq!(
            (err.line(), err.message().contains("\\if without \\endif")),
            (2, true),
            "{err}"
        );
        let err = parse_err("\\bogus\n");
        assert!(
            err.message().contains("unknown meta-command \\bogus"),
            "{err}"
        );
        let err = parse_err("SELECT 1 AS one;\n\\set x 1\n\\gset\n");
        assert_eq!(err.line(), 3);
        assert!(
            err.message().contains("\\gset must follow an SQL command"),
            "{err}"
        );
        let err = parse_err("SELECT 1 AS one \\aset a b\n");
        assert!(err.message().contains("at most one argument"), "{err}");
        // `\;` joins statements into one command, over lines too.
        let source = "SELECT 1 \\;\nSELECT 2;\n\\; SELECT 3 \\; SELECT 4;\n";
        let script = parsed("t.sql", source, 2);
        for command in script.commands() {
            let CommandKind::Sql(sql) = &command.kind else {
                panic!("{command:?}");
            };
            assert!(sql.is_compound());
        }

        let err = parse_err("\\set a 1\n\\set x foo(1)\n");
        assert_eq!(err.line(), 2);
        assert!(err.message().contains("unknown function 'foo'"), "{err}");
        assert!(parse_message("permute(1)").contains("takes 2 or 3 arguments"));
        assert!(parse_message("hash(1, 2, 3)").contains("takes 1 or 2 arguments"));

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

    /// The commands a pass runs from `script`, by line, with `x` set first.
    fn lines_run(script: &Script, x: i64) -> Vec<usize> {
        let commands = script.commands();
        let mut vars = script.initial_values(&VARS);
        vars[script.slot("x").unwrap()] = Value::Int(x);
        let mut rng = fastrand::Rng::with_seed(0);
        let (mut i, mut out) = (0, Vec::new());
        while i < commands.len() {
            let mut next = i + 1;
            match &commands[i].kind {
                CommandKind::Branch { cond, on_false }
                    if !cond.eval(&vars, &mut rng).unwrap().truth().unwrap() =>
                {
                    next = *on_false;
                }
                CommandKind::Jump(to) => next = *to,
                CommandKind::Sql(_) => out.push(commands[i].line),
                _ => {}
            }
            i = next;
        }
        out
    }

    #[test]
    fn if_elif_else_run_one_branch_and_nest() {
        let script = Script::parse_with(
            "t.sql",
            "\\if :x = 1\nSELECT 1;\n\\elif :x = 2\nSELECT 2;\n\\if :x\nSELECT 22;\n\\endif\n\\else\nSELECT 3;\n\\endif\nSELECT 4;\n",
            &[("x".into(), Value::Int(0))],
        )
        .unwrap();
        assert_eq!(lines_run(&script, 1), [2, 11]);
        assert_eq!(lines_run(&script, 2), [4, 6, 11]);
        assert_eq!(lines_run(&script, 7), [9, 11]);
        // Without an \else, nothing may run; a number is true unless 0.
        let script = Script::parse_with(
            "t.sql",
            "\\if :x\nSELECT 1;\n\\endif\nSELECT 2;\n",
            &[("x".into(), Value::Int(0))],
        )
        .unwrap();
        assert_eq!(lines_run(&script, 0), [4]);
        assert_eq!(lines_run(&script, -3), [2, 4]);
    }

    #[test]
    fn a_variable_set_in_one_branch_only_is_not_set_after_the_block() {
        let err = parse_err("\\set x 1\n\\if :x\n\\set y 2\n\\endif\nSELECT :y;\n");
        assert_eq!(err.line(), 5, "{err}");
        assert!(err.message().contains("variable 'y'"), "{err}");
        // Set in every branch, \else included: set after it.
        Script::parse(
            "t.sql",
            "\\set x 1\n\\if :x\n\\set y 2\n\\elif :x > 5\n\\set y 3\n\\else\n\\set y 4\n\\endif\nSELECT :y;\n",
        )
        .unwrap();
        // A branch does not see what an earlier branch set.
        let err = parse_err("\\set x 1\n\\if :x\n\\set y 2\n\\else\nSELECT :y;\n\\endif\n");
        assert_eq!(err.line(), 5, "{err}");
    }

    #[test]
    fn if_blocks_that_do_not_match_say_where() {
        assert_refused(&[
            ("\\endif\n", 1, "\\endif without a matching \\if"),
            ("\\else\n", 1, "\\else without a matching \\if"),
            (
                "\\if 1\n\\else\n\\elif 1\n\\endif\n",
                3,
                "\\elif after \\else",
            ),
            (
                "\\if 1\n\\else\n\\else\n\\endif\n",
                3,
                "\\else after \\else",
            ),
            ("\\if\n\\endif\n", 1, "needs a condition"),
            ("\\if 1\n\\else 2\n\\endif\n", 2, "takes no condition"),
            ("\\if 1\nSELECT 1;\n", 1, "without \\endif"),
            ("\\if 1 +\n\\endif\n", 1, "expected"),
        ]);
    }
}
