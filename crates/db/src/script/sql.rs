//! SQL statements: reading them from a script, and rendering them.
//!
//! `Script::parse` feeds a statement's lines to [`SqlBuilder`], which
//! keeps quotes, comments and `::` casts as text and resolves each
//! `:name` to a variable slot, then makes the parameterized text once.
//! At run time [`Sql`] renders the statement on each pass: for `-M simple`
//! with the values written in, and for `-M extended` and `-M prepared` as
//! the `$1, $2, …` text and the parameters' values.

use std::fmt::Write as _;

use super::{Command, CommandKind, ScriptError, Value, Vars, is_name_char, undefined_variable};

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
    store: Option<Store>,
    /// Statements joined by `\;`: sent as one query (`-M simple` only).
    compound: bool,
}

/// `\gset [PREFIX]` or `\aset [PREFIX]` after a statement: its result's
/// columns go into variables named PREFIX followed by the column's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    /// `\aset`: a result without rows stores nothing, and of several rows
    /// the last is stored. `\gset` wants exactly one row.
    pub all: bool,
    pub prefix: String,
}

impl Store {
    /// Reads `\gset` or `\aset` (`word`) and its arguments.
    pub(super) fn parse(word: &str, args: &str) -> Result<Store, String> {
        let args = args.trim();
        if !args.chars().all(is_name_char) {
            return Err(format!(
                "\\{word} takes at most one argument, a prefix for the variables' names made of letters, digits and '_'; '{args}' is not one"
            ));
        }
        Ok(Store {
            all: word == "aset",
            prefix: args.to_owned(),
        })
    }
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

    /// A `\\gset` or `\\aset` on the line after the statement (ended by
    /// its `;`) stores its result: whether it could (it has none yet).
    pub(super) fn set_store(&mut self, store: Store) -> bool {
        if self.store.is_some() {
            return false;
        }
        self.store = Some(store);
        true
    }

    /// Where the statement's result goes (`\gset`, `\aset`), if anywhere.
    pub fn store(&self) -> Option<&Store> {
        self.store.as_ref()
    }

    /// Whether `\;` joined statements into this one command.
    pub fn is_compound(&self) -> bool {
        self.compound
    }

    /// The parameters' values, `$1` first; [`Value`]'s `Display` is their
    /// text form.
    ///
    /// # Panics
    ///
    /// If `vars` is shorter than the script's variables (make it with
    /// [`Script::initial_values`](super::Script::initial_values)).
    pub fn params<'a>(
        &'a self,
        vars: &'a [Value],
    ) -> impl ExactSizeIterator<Item = &'a Value> + 'a {
        self.params.iter().map(move |&slot| &vars[slot])
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
                    let value = &vars[*slot];
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
pub(super) enum Quote {
    #[default]
    None,
    /// In a '…' string, opened on the line.
    Single(usize),
    /// In a "…" identifier, opened on the line.
    Double(usize),
}

/// An SQL statement being read, line by line.
#[derive(Debug, Default)]
pub(super) struct SqlBuilder {
    line: usize,
    text: String,
    parts: Vec<SqlPart>,
    pub(super) quote: Quote,
    /// The `\gset` or `\aset` that ended the statement.
    pub(super) store: Option<Store>,
    /// A `\;` joined statements into one command.
    pub(super) compound: bool,
}

/// The error of a `\\gset` or `\\aset` (`word`) with no statement before
/// it to store.
pub(super) fn must_follow(word: &str) -> String {
    format!(
        "\\{word} must follow an SQL command, at its end or on the line after it, e.g. SELECT abalance FROM pgbench_accounts WHERE aid = :aid \\{word}"
    )
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

/// One line of a statement, scanned.
#[derive(Default)]
struct Scanned {
    parts: Vec<SqlPart>,
    /// The line as written (variables by name), for the statement's text.
    text: String,
    /// Where the text after the line's last `\;` starts: a line that ends
    /// in `\;` goes on on the next line.
    escaped_end: Option<usize>,
}

/// The meta-command after a `\` in SQL: `gset`/`aset` (with its prefix)
/// ends the statement and stores its result; any other is refused.
fn stored(rest: &str, err: &dyn Fn(String) -> ScriptError) -> Result<Store, ScriptError> {
    let name: String = rest.chars().take_while(|&c| is_name_char(c)).collect();
    let word = name.to_ascii_lowercase();
    if word == "gset" || word == "aset" {
        return Store::parse(&word, &rest[name.len()..]).map_err(err);
    }
    Err(err(if name.is_empty() {
        format!(
            "'\\{}' in SQL is not supported by dyno yet (\\; compound statements included); end each statement with ';' at the end of its line",
            rest.chars().next().map(String::from).unwrap_or_default()
        )
    } else {
        format!("\\{name} is not supported by dyno yet; dyno runs SQL, \\set and \\sleep")
    }))
}

impl SqlBuilder {
    /// Adds one line of the statement; true when the line ends it.
    ///
    /// Outside quotes, `--` starts a comment to the end of the line, `::`
    /// is a cast and `:name` a variable; in '…' strings and "…"
    /// identifiers everything is text. A quote left open carries over to
    /// the next line, as a string may span lines.
    pub(super) fn push_line(
        &mut self,
        script: &str,
        line_no: usize,
        line: &str,
        vars: &mut Vars,
    ) -> Result<bool, ScriptError> {
        let err = |message: String| ScriptError::new(script, line_no, message);
        let started_in_quote = self.quote != Quote::None;
        let mut scanned = self.scan(line_no, line, vars, &err)?;
        let ended = self.ends(&mut scanned, &err)?;
        if scanned.parts.is_empty() && !started_in_quote {
            // A blank or comment line between a statement's lines (inside a
            // string, a blank line is part of the string).
            return Ok(ended);
        }
        self.append(line_no, scanned);
        Ok(ended)
    }

    /// One line cut into text and variables, up to a comment or `\gset`.
    fn scan(
        &mut self,
        line_no: usize,
        line: &str,
        vars: &mut Vars,
        err: &dyn Fn(String) -> ScriptError,
    ) -> Result<Scanned, ScriptError> {
        let mut out = Scanned::default();
        let Scanned {
            parts,
            text,
            escaped_end,
        } = &mut out;
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
                        push_text(parts, &line[literal_start..i]);
                        text.push_str(&line[literal_start..i]);
                        literal_start = line.len();
                        break;
                    }
                    '\\' if line[i + 1..].starts_with(';') => {
                        // `\;`: a semicolon that joins two statements into
                        // one command, sent as one query.
                        push_text(parts, &line[literal_start..i]);
                        text.push_str(&line[literal_start..i]);
                        push_text(parts, ";");
                        text.push(';');
                        chars.next();
                        literal_start = i + 2;
                        *escaped_end = Some(text.len());
                        self.compound = true;
                    }
                    '\\' => {
                        // The statement ends here, its result stored.
                        self.store = Some(stored(&line[i + 1..], err)?);
                        // As pgbench: `SELECT …; \\gset` stores too.
                        let before = line[literal_start..i].trim_end();
                        let before = before.strip_suffix(';').unwrap_or(before).trim_end();
                        push_text(parts, before);
                        text.push_str(before);
                        literal_start = line.len();
                        break;
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
                            push_text(parts, &line[literal_start..i]);
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
        push_text(parts, &line[literal_start..]);
        text.push_str(&line[literal_start..]);
        Ok(out)
    }

    /// Whether the scanned line ends the statement: a `\gset` or `\aset`
    /// (which must follow a statement), or a `;` at its end outside quotes
    /// and not escaped, which is cut off.
    fn ends(
        &self,
        scanned: &mut Scanned,
        err: &dyn Fn(String) -> ScriptError,
    ) -> Result<bool, ScriptError> {
        let Scanned {
            parts,
            text,
            escaped_end,
        } = scanned;
        if self.store.is_some() {
            if parts.is_empty() && self.parts.is_empty() {
                let all = self.store.as_ref().is_some_and(|s| s.all);
                return Err(err(must_follow(if all { "aset" } else { "gset" })));
            }
            return Ok(true);
        }
        if self.quote != Quote::None {
            return Ok(false);
        }
        trim_end(parts, text);
        let tail_escaped = escaped_end.is_some_and(|e| text.len() <= e);
        if let Some(SqlPart::Text(last)) = parts.last_mut()
            && last.ends_with(';')
            && !tail_escaped
        {
            last.pop();
            text.pop();
            trim_end(parts, text);
            return Ok(true);
        }
        Ok(false)
    }

    /// Adds the scanned line to the statement: the first line without its
    /// indentation, the others after a newline.
    fn append(&mut self, line_no: usize, scanned: Scanned) {
        let Scanned {
            mut parts,
            mut text,
            ..
        } = scanned;
        if self.parts.is_empty() {
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
    }

    /// The statement, or nothing for an empty one (a lone `;`).
    pub(super) fn finish(self, script: &str) -> Result<Option<Command>, ScriptError> {
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
                store: self.store,
                compound: self.compound,
            }),
        }))
    }
}

#[cfg(test)]
mod tests {
    use crate::script::testing::{VARS, parsed, sqls};
    use crate::script::{Script, SqlPart, Value};

    #[test]
    fn casts_and_quoted_colons_stay_text() {
        let source = "\\set aid 5\nSELECT :aid::int, 'a:b :aid', \"col:aid\", x::text, ':' FROM t WHERE y = :aid;\n";
        let script = parsed("q", source, 2);
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
    fn simple_protocol_literals() {
        let source =
            "\\set a 5\n\\set b -3\n\\set c 0.1\nSELECT :a-:b, :a+:b, :c*:b, :c, f(:b), :b;\n";
        let script = parsed("lit", source, 4);
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
    fn blank_lines_inside_strings_are_kept() {
        let script = Script::parse("b", "INSERT INTO t VALUES ('a\n\n  b  \n');\n").unwrap();
        assert_eq!(
            sqls(&script)[0].text(),
            "INSERT INTO t VALUES ('a\n\n  b  \n')"
        );
    }
}
