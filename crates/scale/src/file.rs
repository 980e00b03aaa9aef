//! Points from the text of a file: CSV with a header row, or JSON (an
//! array of objects with the same keys). The columns are found by name;
//! every bad cell is reported with its line (CSV) or item (JSON) and its
//! column. [`read`] reads a file and names it in every message; a
//! [`FileError`] says what is wrong with the text, to follow the name.

use std::collections::BTreeSet;

use dyno_model::record::{FileSource, ScaleRecord};
use dyno_model::{DynoBuild, Environment};
use dyno_stats::scaling::Measure;
use serde_json::Value;

use crate::{Curve, Measured, fmt_n};

/// Names an N column may have (compared ignoring case): what people call
/// the thing they vary, from thread counts to load-test clients.
const N_NAMES: [&str; 8] = [
    "n",
    "threads",
    "jobs",
    "concurrency",
    "clients",
    "cpus",
    "processes",
    "load",
];
/// Names of a time column, in seconds.
const TIME_NAMES: [&str; 3] = ["seconds", "time", "time_s"];
/// Names of a throughput column.
const THROUGHPUT_NAMES: [&str; 3] = ["throughput", "ops_per_sec", "rate"];

/// The columns asked for on the command line.
#[derive(Debug, Clone, Default)]
pub struct Columns {
    pub n: Option<String>,
    pub value: Option<String>,
    pub measure: Option<Measure>,
}

/// What is wrong with a file's points. [`FileError::follows_name`] says how
/// the caller joins it to the file's name.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("it is not valid JSON")]
    NotJson(#[source] serde_json::Error),
    #[error("the JSON must be an array of objects, e.g. [{{\"threads\": 1, \"seconds\": 9.5}}, …]")]
    NotAnArray,
    #[error("item {0} is not an object with named fields")]
    NotAnObject(usize),
    #[error("the JSON array is empty: there are no points")]
    EmptyArray,
    #[error("its header is not valid CSV")]
    BadHeader(#[source] csv::Error),
    #[error("it has no header: the first line must name the columns, e.g. threads,seconds")]
    NoHeader,
    #[error("it is not valid CSV")]
    NotCsv(#[source] csv::Error),
    #[error(transparent)]
    Columns(#[from] ColumnError),
    /// A bad cell, or a value out of range: `line 4, column 'seconds': …`.
    #[error("{place}, column '{column}': {problem}")]
    Cell {
        place: String,
        column: String,
        problem: CellProblem,
    },
    #[error(
        "{first} and {second} both have N = {}; give one row per N (average repeated measurements first)",
        fmt_n(*.n)
    )]
    SameN {
        first: String,
        second: String,
        n: f64,
    },
    #[error("has a header but no rows of points")]
    NoRows,
}

impl FileError {
    /// Whether the message follows the file's name after a space (`'a.csv'
    /// line 4, column …`, `'a.csv' has a header …`) rather than as the cause
    /// after a colon (`'a.csv': it is not valid CSV: …`).
    pub fn follows_name(&self) -> bool {
        matches!(self, FileError::Cell { .. } | FileError::NoRows)
    }
}

/// Why the N or the value column cannot be chosen from a header.
#[derive(Debug, thiserror::Error)]
pub enum ColumnError {
    #[error("the columns {0} differ only in case: rename one")]
    DifferInCase(String),
    #[error("--n-column '{name}' is not a column; the columns are {has}")]
    NoNColumnNamed { name: String, has: String },
    #[error(
        "no column holds N: the columns are {0}; name one n, threads, jobs, concurrency, clients, cpus, processes or load (any case), or give --n-column"
    )]
    NoNColumn(String),
    #[error("the columns {0} could each be N: say which with --n-column")]
    ManyNColumns(String),
    #[error("--value-column '{name}' is not a column; the columns are {has}")]
    NoValueColumnNamed { name: String, has: String },
    #[error("say what column '{0}' holds with --measure time (seconds) or --measure throughput")]
    UnknownMeasure(String),
    #[error(
        "no column holds the values that --measure asks for: the column '{found}' holds {holds}; use --measure {flag} (or leave --measure out), or --value-column '{found}' --measure with what it really holds"
    )]
    OtherMeasure {
        found: String,
        holds: &'static str,
        flag: &'static str,
    },
    #[error(
        "no column holds the values: the columns are {0}; name one seconds, time or time_s (a time in seconds) or throughput, ops_per_sec or rate, or give --value-column with --measure"
    )]
    NoValueColumn(String),
    #[error("the columns {0} could each be the value: say which with --value-column")]
    ManyValueColumns(String),
    #[error("column '{0}' cannot be both N and the value")]
    BothNAndValue(String),
}

/// What is wrong with one cell.
#[derive(Debug, thiserror::Error)]
pub enum CellProblem {
    #[error("the value is missing")]
    Missing,
    #[error("the cell is empty")]
    Empty,
    #[error("{0} is not a number")]
    NotANumberJson(Value),
    #[error("'{0}' is not a finite number")]
    NotFinite(String),
    #[error("'{0}' is not a number")]
    NotANumber(String),
    #[error(
        "N = {} is below 1; N counts threads, jobs or processors, so it is at least 1",
        fmt_n(*.0)
    )]
    BelowOne(f64),
    #[error(
        "N = {} is not a whole number; N counts threads, jobs or processors, so it is a whole number of at least 1",
        fmt_n(*.0)
    )]
    NotWhole(f64),
    #[error("{} is not {what} above zero; re-measure or drop that row", fmt_n(*.value))]
    NotAboveZero { value: f64, what: &'static str },
}

/// The points of a file, before they are a [`Curve`].
#[derive(Debug)]
pub struct Points {
    pub points: Vec<Measured>,
    pub measure: Measure,
    /// `csv` or `json`.
    pub format: &'static str,
    /// The header's names of the N and the value columns.
    pub n_column: String,
    pub value_column: String,
}

impl Points {
    /// The curve of the file at `path` (as shown to the user), called `name`
    /// in the description.
    ///
    /// The figures were measured who knows where: the curve records no
    /// machine, only the dyno that analysed them (`build`). The machine that
    /// ran the analysis is not the measured one, so its description would
    /// be a false record; settings.environment says so.
    pub fn curve(self, path: &str, name: &str, build: DynoBuild) -> Curve {
        let measure = match self.measure {
            Measure::Time => "time",
            Measure::Throughput => "throughput",
        };
        Curve {
            points: self.points,
            measure: self.measure,
            settings: ScaleRecord::File(FileSource {
                path: path.to_owned(),
                format: self.format.to_owned(),
                n_column: self.n_column.clone(),
                value_column: self.value_column.clone(),
                measure: measure.to_owned(),
                environment: "not recorded: the points were measured outside dyno, on a machine dyno cannot describe; host and environment show as unknown".to_owned(),
            }),
            description: format!(
                "scaling from {name} ({}, {})",
                self.n_column, self.value_column
            ),
            environment: Environment {
                dyno: build,
                ..Environment::default()
            },
            warnings: Vec::new(),
            extra: Vec::new(),
        }
    }
}

/// One row of the file: where it is (`line 4`, `item 3`) and its two cells.
struct Row {
    place: String,
    n: Cell,
    value: Cell,
}

enum Cell {
    Missing,
    Text(String),
    Json(Value),
}

/// A file whose points could not be read, named as it was given.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("could not read '{0}'")]
    Io(String, #[source] std::io::Error),
    /// `'a.csv' line 4, column 'n': …`: the problem follows the name.
    #[error("'{0}' {1}")]
    Named(String, FileError),
    /// `'a.csv': it is not valid CSV: …`: the problem is the cause.
    #[error("'{0}'")]
    Text(String, #[source] FileError),
}

/// The curve of the points in the file at `path` ([`read_text`] decides
/// JSON or CSV), measured by `dyno`'s build.
pub fn read(
    path: &std::path::Path,
    columns: &Columns,
    dyno: DynoBuild,
) -> Result<Curve, ReadError> {
    let shown = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => return Err(ReadError::Io(shown, e)),
    };
    let points = match read_text(&shown, &text, columns) {
        Ok(points) => points,
        Err(e) if e.follows_name() => return Err(ReadError::Named(shown, e)),
        Err(e) => return Err(ReadError::Text(shown, e)),
    };
    let name = path
        .file_name()
        .map_or_else(|| shown.clone(), |n| n.to_string_lossy().into_owned());
    Ok(points.curve(&shown, &name, dyno))
}

/// The points of the file named `name` whose text is `text`: JSON when
/// the name ends in `.json` (any case) or the text starts like JSON (`[`
/// or `{`), else CSV.
pub fn read_text(name: &str, text: &str, columns: &Columns) -> Result<Points, FileError> {
    let is_json = std::path::Path::new(name)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        || text.trim_start().starts_with(['[', '{']);
    if is_json {
        read_json(text, columns)
    } else {
        read_csv(text, columns)
    }
}

/// The points of a JSON array of objects.
pub fn read_json(text: &str, columns: &Columns) -> Result<Points, FileError> {
    let (header, records) = json_records(text)?;
    let chosen = choose(&header, columns)?;
    let rows = records
        .into_iter()
        .enumerate()
        .map(|(i, mut object)| Row {
            place: format!("item {}", i + 1),
            n: object.remove(&chosen.n).map_or(Cell::Missing, Cell::Json),
            value: object
                .remove(&chosen.value)
                .map_or(Cell::Missing, Cell::Json),
        })
        .collect();
    points("json", chosen, rows)
}

/// The points of a CSV text with a header row (`#` starts a comment).
pub fn read_csv(text: &str, columns: &Columns) -> Result<Points, FileError> {
    let (chosen, rows) = csv_rows(text, columns)?;
    points("csv", chosen, rows)
}

/// The points of the rows, each checked.
fn points(format: &'static str, header: Chosen, rows: Vec<Row>) -> Result<Points, FileError> {
    let mut points: Vec<(Measured, String)> = Vec::with_capacity(rows.len());
    for row in rows {
        let at = |column: &str, problem| FileError::Cell {
            place: row.place.clone(),
            column: column.to_owned(),
            problem,
        };
        let n = number(&row.n).map_err(|p| at(&header.n, p))?;
        let value = number(&row.value).map_err(|p| at(&header.value, p))?;
        // number() let only finite values through.
        if n < 1.0 {
            return Err(at(&header.n, CellProblem::BelowOne(n)));
        }
        if n.fract() != 0.0 {
            return Err(at(&header.n, CellProblem::NotWhole(n)));
        }
        if value <= 0.0 {
            let what = match header.measure {
                Measure::Time => "a time",
                Measure::Throughput => "a throughput",
            };
            return Err(at(&header.value, CellProblem::NotAboveZero { value, what }));
        }
        if let Some((_, first)) = points.iter().find(|(p, _)| p.n == n) {
            return Err(FileError::SameN {
                first: first.clone(),
                second: row.place,
                n,
            });
        }
        let point = match header.measure {
            Measure::Time => Measured::time(n, value),
            Measure::Throughput => Measured::throughput(n, value),
        };
        points.push((point, row.place));
    }
    if points.is_empty() {
        return Err(FileError::NoRows);
    }
    Ok(Points {
        points: points.into_iter().map(|(p, _)| p).collect(),
        measure: header.measure,
        format,
        n_column: header.n,
        value_column: header.value,
    })
}

/// The columns chosen from a header.
struct Chosen {
    n: String,
    value: String,
    measure: Measure,
}

/// The CSV rows, with the header's columns chosen.
fn csv_rows(text: &str, columns: &Columns) -> Result<(Chosen, Vec<Row>), FileError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .map_err(FileError::BadHeader)?
        .iter()
        .map(str::to_owned)
        .collect();
    if header.iter().all(String::is_empty) {
        return Err(FileError::NoHeader);
    }
    let chosen = choose(&header, columns)?;
    let n_at = header.iter().position(|h| *h == chosen.n).expect("chosen");
    let value_at = header
        .iter()
        .position(|h| *h == chosen.value)
        .expect("chosen");
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(FileError::NotCsv)?;
        let line = record.position().map_or(0, csv::Position::line);
        let cell = |i: usize| {
            record
                .get(i)
                .map_or(Cell::Missing, |s| Cell::Text(s.to_owned()))
        };
        rows.push(Row {
            place: format!("line {line}"),
            n: cell(n_at),
            value: cell(value_at),
        });
    }
    Ok((chosen, rows))
}

/// One JSON object: a row of the file.
type Object = serde_json::Map<String, Value>;

/// The objects of a JSON array, and every key any of them has.
fn json_records(text: &str) -> Result<(Vec<String>, Vec<Object>), FileError> {
    let value: Value = serde_json::from_str(text).map_err(FileError::NotJson)?;
    let Value::Array(items) = value else {
        return Err(FileError::NotAnArray);
    };
    let mut keys = BTreeSet::new();
    let mut records = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let Value::Object(object) = item else {
            return Err(FileError::NotAnObject(i + 1));
        };
        keys.extend(object.keys().cloned());
        records.push(object);
    }
    if records.is_empty() {
        return Err(FileError::EmptyArray);
    }
    Ok((keys.into_iter().collect(), records))
}

/// A cell as a finite number.
fn number(cell: &Cell) -> Result<f64, CellProblem> {
    let parsed = match cell {
        Cell::Missing => return Err(CellProblem::Missing),
        Cell::Text(t) if t.is_empty() => return Err(CellProblem::Empty),
        Cell::Text(t) => t.parse::<f64>().ok().map(|v| (v, t.clone())),
        Cell::Json(Value::Number(v)) => v.as_f64().map(|f| (f, v.to_string())),
        Cell::Json(Value::String(t)) => t.trim().parse::<f64>().ok().map(|v| (v, t.clone())),
        Cell::Json(other) => return Err(CellProblem::NotANumberJson(other.clone())),
    };
    match parsed {
        Some((v, _)) if v.is_finite() => Ok(v),
        Some((_, raw)) => Err(CellProblem::NotFinite(raw)),
        None => {
            let raw = match cell {
                Cell::Text(t) => t.clone(),
                Cell::Json(Value::String(t)) => t.clone(),
                _ => String::new(),
            };
            Err(CellProblem::NotANumber(raw))
        }
    }
}

/// Finds a column: exactly as given, else the one that matches ignoring
/// case.
fn find(header: &[String], name: &str) -> Result<Option<String>, ColumnError> {
    if let Some(h) = header.iter().find(|h| *h == name) {
        return Ok(Some(h.clone()));
    }
    let matches: Vec<&String> = header
        .iter()
        .filter(|h| h.eq_ignore_ascii_case(name))
        .collect();
    match matches.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some((*one).clone())),
        many => Err(ColumnError::DifferInCase(quoted(
            many.iter().map(|s| s.as_str()),
        ))),
    }
}

/// The columns among `names` that the header has.
fn candidates(header: &[String], names: &[&str]) -> Result<Vec<String>, ColumnError> {
    let mut out = Vec::new();
    for name in names {
        if let Some(h) = find(header, name)? {
            out.push(h);
        }
    }
    Ok(out)
}

fn quoted<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Chooses the N and value columns from the header and the flags.
fn choose(header: &[String], columns: &Columns) -> Result<Chosen, ColumnError> {
    let has = quoted(header.iter().map(String::as_str));
    let n = match &columns.n {
        Some(name) => find(header, name)?.ok_or_else(|| ColumnError::NoNColumnNamed {
            name: name.clone(),
            has: has.clone(),
        })?,
        None => match candidates(header, &N_NAMES)?.as_slice() {
            [one] => one.clone(),
            [] => return Err(ColumnError::NoNColumn(has)),
            many => {
                return Err(ColumnError::ManyNColumns(quoted(
                    many.iter().map(String::as_str),
                )));
            }
        },
    };
    let kind = |name: &str| {
        if TIME_NAMES.iter().any(|t| t.eq_ignore_ascii_case(name)) {
            Some(Measure::Time)
        } else if THROUGHPUT_NAMES
            .iter()
            .any(|t| t.eq_ignore_ascii_case(name))
        {
            Some(Measure::Throughput)
        } else {
            None
        }
    };
    let (value, measure) = match (&columns.value, columns.measure) {
        (Some(name), measure) => {
            let column = find(header, name)?.ok_or_else(|| ColumnError::NoValueColumnNamed {
                name: name.clone(),
                has: has.clone(),
            })?;
            let measure = measure
                .or_else(|| kind(&column))
                .ok_or_else(|| ColumnError::UnknownMeasure(column.clone()))?;
            (column, measure)
        }
        (None, measure) => {
            let names: Vec<&str> = match measure {
                Some(Measure::Time) => TIME_NAMES.to_vec(),
                Some(Measure::Throughput) => THROUGHPUT_NAMES.to_vec(),
                None => TIME_NAMES
                    .iter()
                    .chain(&THROUGHPUT_NAMES)
                    .copied()
                    .collect(),
            };
            match candidates(header, &names)?.as_slice() {
                [one] => (
                    one.clone(),
                    measure.or_else(|| kind(one)).expect("a known name"),
                ),
                [] => {
                    // --measure names one kind; a column of the other kind
                    // is the likely mistake.
                    let other: &[&str] = match measure {
                        Some(Measure::Time) => &THROUGHPUT_NAMES,
                        Some(Measure::Throughput) => &TIME_NAMES,
                        None => &[],
                    };
                    if let [found, ..] = candidates(header, other)?.as_slice() {
                        let (holds, flag) = match measure {
                            Some(Measure::Time) => ("a throughput", "throughput"),
                            _ => ("a time in seconds", "time"),
                        };
                        return Err(ColumnError::OtherMeasure {
                            found: found.clone(),
                            holds,
                            flag,
                        });
                    }
                    return Err(ColumnError::NoValueColumn(has));
                }
                many => {
                    return Err(ColumnError::ManyValueColumns(quoted(
                        many.iter().map(String::as_str),
                    )));
                }
            }
        }
    };
    if value == n {
        return Err(ColumnError::BothNAndValue(n));
    }
    Ok(Chosen { n, value, measure })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where `curve` says its points came from: a file.
    fn source(curve: &Curve) -> &FileSource {
        match &curve.settings {
            ScaleRecord::File(file) => file,
            other => panic!("not a file's curve: {other:?}"),
        }
    }

    fn curve(name: &str, text: &str, columns: &Columns) -> Result<Curve, FileError> {
        read_text(name, text, columns).map(|p| p.curve(name, name, DynoBuild::default()))
    }

    /// The message and its causes, as the binary shows them.
    fn error(name: &str, text: &str, columns: &Columns) -> String {
        let err = read_text(name, text, columns).unwrap_err();
        let mut out = err.to_string();
        let mut source = std::error::Error::source(&err);
        while let Some(s) = source {
            out.push_str(&format!(": {s}"));
            source = s.source();
        }
        out
    }

    #[test]
    fn the_format_follows_the_name_or_the_text() {
        let json = r#"[{"n": 1, "seconds": 2.0}, {"n": 2, "seconds": 1.0}]"#;
        let csv = "n,seconds\n1,2.0\n2,1.0\n";
        let columns = Columns::default();
        for (name, text, format) in [
            ("a.json", json, "json"),
            ("A.JSON", json, "json"),
            // Named otherwise, but JSON by its first character.
            ("points.txt", &format!("\n  {json}"), "json"),
            ("points", csv, "csv"),
            ("a.csv", csv, "csv"),
        ] {
            let curve = curve(name, text, &columns).unwrap();
            assert_eq!(source(&curve).format, format, "{name}");
            assert_eq!(curve.points.len(), 2, "{name}");
        }
        // A CSV text named .json is read as JSON, and says so.
        let err = error("a.json", csv, &columns);
        assert!(err.contains("JSON"), "{err}");
    }

    #[test]
    fn csv_columns_are_found_by_name() {
        let curve = curve(
            "a.csv",
            "# a comment\nThreads , Seconds, note\n1, 2.0, x\n2, 1.0, y\n",
            &Columns::default(),
        )
        .unwrap();
        assert_eq!(curve.measure, Measure::Time);
        let ns: Vec<f64> = curve.points.iter().map(|p| p.n).collect();
        assert_eq!(ns, [1.0, 2.0]);
        assert_eq!(curve.points[1].value, 1.0);
        assert_eq!(curve.points[1].metric.value, 1e9);
        assert_eq!(source(&curve).n_column, "Threads");
        let c = self::curve("b.csv", "jobs,rate\n1,10\n4,30\n", &Columns::default()).unwrap();
        assert_eq!(c.measure, Measure::Throughput);
        assert_eq!(c.points[1].metric.name, "throughput");
    }

    #[test]
    fn every_usual_name_for_n_is_found_in_any_case() {
        for name in [
            "concurrency",
            "clients",
            "cpus",
            "processes",
            "load",
            "Concurrency",
            "CLIENTS",
            "Cpus",
            "PROCESSES",
            "Load",
            "n",
            "N",
            "threads",
            "Jobs",
        ] {
            let text = format!("{name},throughput\n1,100\n4,350\n");
            let c = curve("u.csv", &text, &Columns::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(source(&c).n_column, name);
            let ns: Vec<f64> = c.points.iter().map(|p| p.n).collect();
            assert_eq!(ns, [1.0, 4.0], "{name}");
            let json = format!(r#"[{{"{name}": 1, "seconds": 2}}, {{"{name}": 2, "seconds": 1}}]"#);
            let c = curve("u.json", &json, &Columns::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(source(&c).n_column, name);
        }
        // Two usual names are ambiguous, as before.
        let err = error(
            "v.csv",
            "clients,cpus,seconds\n1,1,1\n",
            &Columns::default(),
        );
        assert!(
            err.contains("'clients', 'cpus'") && err.contains("--n-column"),
            "{err}"
        );
    }

    #[test]
    fn flags_pick_columns_and_say_what_they_hold() {
        let columns = Columns {
            n: Some("clients".into()),
            value: Some("rps".into()),
            measure: Some(Measure::Throughput),
        };
        let c = curve("c.csv", "clients,rps,n\n1,100,9\n2,190,9\n", &columns).unwrap();
        assert_eq!(c.points[1].value, 190.0);
        let err = error(
            "d.csv",
            "n,rps\n1,100\n",
            &Columns {
                value: Some("rps".into()),
                ..Columns::default()
            },
        );
        assert!(err.contains("--measure"), "{err}");
        let err = error("e.csv", "n,seconds,rate\n1,1,1\n", &Columns::default());
        assert!(
            err.contains("'seconds', 'rate'") && err.contains("--value-column"),
            "{err}"
        );
        let err = error("f.csv", "x,seconds\n1,1\n", &Columns::default());
        assert!(
            err.contains("'x', 'seconds'") && err.contains("--n-column"),
            "{err}"
        );
    }

    #[test]
    fn bad_cells_name_their_line_and_column() {
        let text = "n,seconds\n1,1.0\n2,0.6\n3,abc\n";
        let err = error("g.csv", text, &Columns::default());
        assert_eq!(err, "line 4, column 'seconds': 'abc' is not a number");
        let err = error("h.csv", "n,seconds\n1,1.0\n0,0.5\n", &Columns::default());
        assert!(err.contains("line 3") && err.contains("below 1"), "{err}");
        let err = error("i.csv", "n,seconds\n1,1.0\n2,-1\n", &Columns::default());
        assert!(
            err.contains("line 3") && err.contains("above zero"),
            "{err}"
        );
        let err = error(
            "j.csv",
            "n,seconds\n1,1.0\n2,0.5\n2,0.6\n",
            &Columns::default(),
        );
        assert!(err.contains("line 3 and line 4 both have N = 2"), "{err}");
        let err = error("k.csv", "n,seconds\n1,1.0\n2,0.5,7\n", &Columns::default());
        assert!(err.contains("line: 3"), "{err}");
        let err = error("l.csv", "n,seconds\n1,inf\n", &Columns::default());
        assert!(err.contains("finite"), "{err}");
        let err = error("m.csv", "n,seconds\n1,\n", &Columns::default());
        assert!(err.contains("empty"), "{err}");
        let err = read_text("n.csv", "n,seconds\n", &Columns::default()).unwrap_err();
        assert!(matches!(err, FileError::NoRows) && err.follows_name());
    }

    #[test]
    fn json_arrays_of_objects_are_read_like_csv() {
        let text = r#"[{"threads": 1, "seconds": 2}, {"threads": 2, "seconds": "1.1"}]"#;
        let c = curve("p.json", text, &Columns::default()).unwrap();
        assert_eq!(c.points[1].value, 1.1);
        assert_eq!(source(&c).format, "json");
        let err = error(
            "q.json",
            r#"[{"n": 1, "seconds": 2}, {"n": 2}]"#,
            &Columns::default(),
        );
        assert!(err.contains("item 2") && err.contains("missing"), "{err}");
        let err = error("r.json", r#"{"n": 1}"#, &Columns::default());
        assert!(err.contains("array of objects"), "{err}");
        let err = error(
            "s.json",
            "[{\"n\": 1,\n  \"seconds\": }]",
            &Columns::default(),
        );
        assert!(err.contains("line 2"), "{err}");
        let err = error(
            "t.json",
            r#"[{"n": 1, "seconds": true}]"#,
            &Columns::default(),
        );
        assert!(
            err.contains("item 1") && err.contains("not a number"),
            "{err}"
        );
    }
}
