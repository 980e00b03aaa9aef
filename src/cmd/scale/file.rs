//! Points from a file: CSV with a header row, or JSON (an array of objects
//! with the same keys). The columns are found by name; every bad cell is
//! reported with its line (CSV) or item (JSON) and its column.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result, bail};
use dyno_model::Environment;
use dyno_stats::scaling::Measure;
use serde_json::{Value, json};

use super::{Curve, Measured, fmt_n};

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

/// Reads the points of `path`.
pub fn read(path: &Path, columns: &Columns) -> Result<Curve> {
    let shown = path.display().to_string();
    let text =
        std::fs::read_to_string(path).with_context(|| format!("could not read '{shown}'"))?;
    let is_json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        || text.trim_start().starts_with(['[', '{']);
    let (format, header, rows) = if is_json {
        let (header, records) = json_records(&text).with_context(|| format!("'{shown}'"))?;
        let chosen = choose(&header, columns).with_context(|| format!("'{shown}'"))?;
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
        ("json", chosen, rows)
    } else {
        csv_rows(&text, columns).with_context(|| format!("'{shown}'"))?
    };
    let mut points: Vec<(Measured, String)> = Vec::with_capacity(rows.len());
    for row in rows {
        let at = |column: &str| format!("'{shown}' {}, column '{column}'", row.place);
        let n = number(&row.n).with_context(|| at(&header.n))?;
        let value = number(&row.value).with_context(|| at(&header.value))?;
        // number() let only finite values through.
        if n < 1.0 {
            bail!(
                "{}: N = {} is below 1; N counts threads, jobs or processors, so it is at least 1",
                at(&header.n),
                fmt_n(n)
            );
        }
        if n.fract() != 0.0 {
            bail!(
                "{}: N = {} is not a whole number; N counts threads, jobs or processors, so it is a whole number of at least 1",
                at(&header.n),
                fmt_n(n)
            );
        }
        if value <= 0.0 {
            let what = match header.measure {
                Measure::Time => "a time",
                Measure::Throughput => "a throughput",
            };
            bail!(
                "{}: {} is not {what} above zero; re-measure or drop that row",
                at(&header.value),
                fmt_n(value)
            );
        }
        if let Some((_, first)) = points.iter().find(|(p, _)| p.n == n) {
            bail!(
                "'{shown}': {first} and {} both have N = {}; give one row per N (average repeated measurements first)",
                row.place,
                fmt_n(n)
            );
        }
        let point = match header.measure {
            Measure::Time => Measured::time(n, value),
            Measure::Throughput => Measured::throughput(n, value),
        };
        points.push((point, row.place));
    }
    if points.is_empty() {
        bail!("'{shown}' has a header but no rows of points");
    }
    let measure = match header.measure {
        Measure::Time => "time",
        Measure::Throughput => "throughput",
    };
    let name = path
        .file_name()
        .map_or_else(|| shown.clone(), |n| n.to_string_lossy().into_owned());
    Ok(Curve {
        points: points.into_iter().map(|(p, _)| p).collect(),
        measure: header.measure,
        settings: json!({
            "source": "file",
            "path": shown,
            "format": format,
            "n_column": header.n,
            "value_column": header.value,
            "measure": measure,
            "environment": "not recorded: the points were measured outside dyno, on a machine dyno cannot describe; host and environment show as unknown",
        }),
        description: format!("scaling from {name} ({}, {})", header.n, header.value),
        // The figures were measured who knows where: record no machine, only
        // the dyno that analysed them. The machine that ran this command is
        // not the measured one, so its description would be a false record;
        // settings.environment says so.
        environment: Environment {
            dyno: crate::cmd::build(),
            ..Environment::default()
        },
        warnings: Vec::new(),
        extra: Vec::new(),
    })
}

/// The columns chosen from a header.
struct Chosen {
    n: String,
    value: String,
    measure: Measure,
}

/// The CSV rows, with the header's columns chosen.
fn csv_rows(text: &str, columns: &Columns) -> Result<(&'static str, Chosen, Vec<Row>)> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .context("its header is not valid CSV")?
        .iter()
        .map(str::to_owned)
        .collect();
    if header.iter().all(String::is_empty) {
        bail!("it has no header: the first line must name the columns, e.g. threads,seconds");
    }
    let chosen = choose(&header, columns)?;
    let n_at = header.iter().position(|h| *h == chosen.n).expect("chosen");
    let value_at = header
        .iter()
        .position(|h| *h == chosen.value)
        .expect("chosen");
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.context("it is not valid CSV")?;
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
    Ok(("csv", chosen, rows))
}

/// One JSON object: a row of the file.
type Object = serde_json::Map<String, Value>;

/// The objects of a JSON array, and every key any of them has.
fn json_records(text: &str) -> Result<(Vec<String>, Vec<Object>)> {
    let value: Value = serde_json::from_str(text).context("it is not valid JSON")?;
    let Value::Array(items) = value else {
        bail!(
            "the JSON must be an array of objects, e.g. [{{\"threads\": 1, \"seconds\": 9.5}}, …]"
        );
    };
    let mut keys = BTreeSet::new();
    let mut records = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let Value::Object(object) = item else {
            bail!("item {} is not an object with named fields", i + 1);
        };
        keys.extend(object.keys().cloned());
        records.push(object);
    }
    if records.is_empty() {
        bail!("the JSON array is empty: there are no points");
    }
    Ok((keys.into_iter().collect(), records))
}

/// A cell as a finite number.
fn number(cell: &Cell) -> Result<f64> {
    let parsed = match cell {
        Cell::Missing => bail!("the value is missing"),
        Cell::Text(t) if t.is_empty() => bail!("the cell is empty"),
        Cell::Text(t) => t.parse::<f64>().ok().map(|v| (v, t.clone())),
        Cell::Json(Value::Number(v)) => v.as_f64().map(|f| (f, v.to_string())),
        Cell::Json(Value::String(t)) => t.trim().parse::<f64>().ok().map(|v| (v, t.clone())),
        Cell::Json(other) => bail!("{other} is not a number"),
    };
    match parsed {
        Some((v, _)) if v.is_finite() => Ok(v),
        Some((_, raw)) => bail!("'{raw}' is not a finite number"),
        None => {
            let raw = match cell {
                Cell::Text(t) => t.clone(),
                Cell::Json(Value::String(t)) => t.clone(),
                _ => String::new(),
            };
            bail!("'{raw}' is not a number")
        }
    }
}

/// Finds a column: exactly as given, else the one that matches ignoring
/// case.
fn find(header: &[String], name: &str) -> Result<Option<String>> {
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
        many => bail!(
            "the columns {} differ only in case: rename one",
            quoted(many.iter().map(|s| s.as_str()))
        ),
    }
}

/// The columns among `names` that the header has.
fn candidates(header: &[String], names: &[&str]) -> Result<Vec<String>> {
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
fn choose(header: &[String], columns: &Columns) -> Result<Chosen> {
    let has = quoted(header.iter().map(String::as_str));
    let n = match &columns.n {
        Some(name) => find(header, name)?.with_context(|| {
            format!("--n-column '{name}' is not a column; the columns are {has}")
        })?,
        None => match candidates(header, &N_NAMES)?.as_slice() {
            [one] => one.clone(),
            [] => bail!(
                "no column holds N: the columns are {has}; name one n, threads, jobs, concurrency, clients, cpus, processes or load (any case), or give --n-column"
            ),
            many => bail!(
                "the columns {} could each be N: say which with --n-column",
                quoted(many.iter().map(String::as_str))
            ),
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
            let column = find(header, name)?.with_context(|| {
                format!("--value-column '{name}' is not a column; the columns are {has}")
            })?;
            let measure = measure.or_else(|| kind(&column)).with_context(|| {
                format!(
                    "say what column '{column}' holds with --measure time (seconds) or --measure throughput"
                )
            })?;
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
                        bail!(
                            "no column holds the values that --measure asks for: the column '{found}' holds {holds}; use --measure {flag} (or leave --measure out), or --value-column '{found}' --measure with what it really holds"
                        );
                    }
                    bail!(
                        "no column holds the values: the columns are {has}; name one seconds, time or time_s (a time in seconds) or throughput, ops_per_sec or rate, or give --value-column with --measure"
                    )
                }
                many => bail!(
                    "the columns {} could each be the value: say which with --value-column",
                    quoted(many.iter().map(String::as_str))
                ),
            }
        }
    };
    if value == n {
        bail!("column '{n}' cannot be both N and the value");
    }
    Ok(Chosen { n, value, measure })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    fn read_text(name: &str, text: &str, columns: &Columns) -> Result<Curve> {
        let (_dir, path) = write(name, text);
        read(&path, columns)
    }

    fn error(name: &str, text: &str, columns: &Columns) -> String {
        format!("{:#}", read_text(name, text, columns).unwrap_err())
    }

    #[test]
    fn csv_columns_are_found_by_name() {
        let curve = read_text(
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
        assert_eq!(curve.settings["n_column"], "Threads");
        let curve = read_text("b.csv", "jobs,rate\n1,10\n4,30\n", &Columns::default()).unwrap();
        assert_eq!(curve.measure, Measure::Throughput);
        assert_eq!(curve.points[1].metric.name, "throughput");
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
            let curve = read_text("u.csv", &text, &Columns::default())
                .unwrap_or_else(|e| panic!("{name}: {e:#}"));
            assert_eq!(curve.settings["n_column"], name);
            let ns: Vec<f64> = curve.points.iter().map(|p| p.n).collect();
            assert_eq!(ns, [1.0, 4.0], "{name}");
            let json = format!(r#"[{{"{name}": 1, "seconds": 2}}, {{"{name}": 2, "seconds": 1}}]"#);
            let curve = read_text("u.json", &json, &Columns::default())
                .unwrap_or_else(|e| panic!("{name}: {e:#}"));
            assert_eq!(curve.settings["n_column"], name);
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
        let curve = read_text("c.csv", "clients,rps,n\n1,100,9\n2,190,9\n", &columns).unwrap();
        assert_eq!(curve.points[1].value, 190.0);
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
        assert!(
            err.contains("line 4") && err.contains("column 'seconds'") && err.contains("'abc'"),
            "{err}"
        );
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
        let err = error("n.csv", "n,seconds\n", &Columns::default());
        assert!(err.contains("no rows"), "{err}");
    }

    #[test]
    fn json_arrays_of_objects_are_read_like_csv() {
        let text = r#"[{"threads": 1, "seconds": 2}, {"threads": 2, "seconds": "1.1"}]"#;
        let curve = read_text("p.json", text, &Columns::default()).unwrap();
        assert_eq!(curve.points[1].value, 1.1);
        assert_eq!(curve.settings["format"], "json");
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
