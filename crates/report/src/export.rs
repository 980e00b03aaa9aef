//! Machine formats behind one trait: JSON (an array of runs), JSON Lines
//! (one run per line) and CSV (one row per metric of each run, the tidy
//! layout that spreadsheets and data frames pivot easily; a metric's labels,
//! such as the command of a `dyno run`, are one `k=v;k=v` column, with `%`,
//! `;` and `=` inside a key or value percent-escaped as `%25`, `%3B` and
//! `%3D`, so the cell always splits back into its pairs).

use std::io::{self, Write};

use dyno_model::{Direction, Run};

/// Writes runs in one format.
pub trait Exporter {
    /// Writes every run to `out`.
    fn write(&self, runs: &[Run], out: &mut dyn Write) -> io::Result<()>;
}

/// A JSON array of runs (a single run is still an array, so readers need
/// one code path).
#[derive(Debug, Clone, Copy, Default)]
pub struct Json;

/// One run per line.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonLines;

/// One row per metric of each run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Csv;

/// The exporter for a format name (`json`, `jsonl`, `csv`).
pub fn exporter(format: &str) -> Option<Box<dyn Exporter>> {
    match format {
        "json" => Some(Box::new(Json)),
        "jsonl" => Some(Box::new(JsonLines)),
        "csv" => Some(Box::new(Csv)),
        _ => None,
    }
}

impl Exporter for Json {
    fn write(&self, runs: &[Run], out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, runs)?;
        out.write_all(b"\n")
    }
}

impl Exporter for JsonLines {
    fn write(&self, runs: &[Run], out: &mut dyn Write) -> io::Result<()> {
        for run in runs {
            serde_json::to_writer(&mut *out, run)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }
}

impl Exporter for Csv {
    fn write(&self, runs: &[Run], out: &mut dyn Write) -> io::Result<()> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record([
            "run_id",
            "kind",
            "started_at",
            "host",
            "description",
            "tags",
            "metric",
            "labels",
            "unit",
            "direction",
            "value",
            "ci_low",
            "ci_high",
            "ci_confidence",
            "samples",
        ])?;
        for run in runs {
            for m in &run.metrics {
                let (low, high, confidence) = m.uncertainty.as_ref().map_or_else(
                    || (String::new(), String::new(), String::new()),
                    |u| {
                        (
                            u.low.to_string(),
                            u.high.to_string(),
                            u.confidence.to_string(),
                        )
                    },
                );
                let samples = if m.samples.is_empty() {
                    m.histogram.as_ref().map_or(0, |h| h.count)
                } else {
                    m.samples.len() as u64
                };
                w.write_record([
                    run.id.to_string(),
                    run.kind.to_string(),
                    run.started_at.to_string(),
                    run.environment.hostname.clone().unwrap_or_default(),
                    run.description.clone(),
                    run.tags.join(";"),
                    m.name.clone(),
                    labels_cell(&m.labels),
                    m.unit.as_str().to_owned(),
                    match m.direction {
                        Direction::HigherIsBetter => "higher_is_better",
                        Direction::LowerIsBetter => "lower_is_better",
                    }
                    .to_owned(),
                    m.value.to_string(),
                    low,
                    high,
                    confidence,
                    samples.to_string(),
                ])?;
            }
        }
        w.flush()
    }
}

/// The CSV `labels` cell: `k=v;k=v`, sorted by key, with `%`, `;` and `=`
/// inside keys and values percent-escaped. Split on `;`, then on the first
/// `=`, then percent-decode each part (Python: `urllib.parse.unquote`).
fn labels_cell(labels: &std::collections::BTreeMap<String, String>) -> String {
    fn escape(s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            match c {
                '%' => out.push_str("%25"),
                ';' => out.push_str("%3B"),
                '=' => out.push_str("%3D"),
                c => out.push(c),
            }
        }
        out
    }
    labels
        .iter()
        .map(|(k, v)| format!("{}={}", escape(k), escape(v)))
        .collect::<Vec<_>>()
        .join(";")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    fn export(format: &str) -> String {
        let mut out = Vec::new();
        let runs = [fixture::run()];
        exporter(format).unwrap().write(&runs, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn csv_has_one_row_per_metric() {
        insta::assert_snapshot!(export("csv"));
    }

    #[test]
    fn json_and_json_lines_carry_the_whole_run() {
        let json: Vec<Run> = serde_json::from_str(&export("json")).unwrap();
        assert_eq!(json, vec![fixture::run()]);
        let lines = export("jsonl");
        assert_eq!(lines.lines().count(), 1);
        let run: Run = serde_json::from_str(lines.trim_end()).unwrap();
        assert_eq!(run, fixture::run());
        insta::assert_snapshot!(lines);
    }

    /// The reader's side of [`labels_cell`], as a script would write it.
    fn split_labels(cell: &str) -> Vec<(String, String)> {
        fn unescape(s: &str) -> String {
            s.replace("%3B", ";")
                .replace("%3D", "=")
                .replace("%25", "%")
        }
        cell.split(';')
            .map(|pair| {
                let (k, v) = pair.split_once('=').unwrap();
                (unescape(k), unescape(v))
            })
            .collect()
    }

    #[test]
    fn csv_labels_split_back_into_their_pairs() {
        let mut labels = std::collections::BTreeMap::new();
        labels.insert("command".to_owned(), "sleep 0.01; kill -9 $$".to_owned());
        labels.insert("a=b;c".to_owned(), "x=1;y=%3B 100%".to_owned());
        labels.insert("plain".to_owned(), "echo hi".to_owned());
        let cell = labels_cell(&labels);
        assert_eq!(
            cell,
            "a%3Db%3Bc=x%3D1%3By%3D%253B 100%25;command=sleep 0.01%3B kill -9 $$;plain=echo hi"
        );
        let back: std::collections::BTreeMap<_, _> = split_labels(&cell).into_iter().collect();
        assert_eq!(back, labels);
    }

    #[test]
    fn unknown_formats_have_no_exporter() {
        assert!(exporter("xml").is_none());
    }
}
