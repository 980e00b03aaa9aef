//! Runs read back from their JSON form, as `dyno export` writes them and
//! `dyno import` reads them: one Run, an array of Runs, or one Run per line
//! (any sequence of those).

use crate::{Run, SCHEMA_VERSION};

/// Why a text of Runs could not be read: the line where the bad record
/// starts, and what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum ReadRunsError {
    #[error("line {line} is not valid JSON")]
    Json {
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("the record at line {line}")]
    Record {
        line: usize,
        #[source]
        source: RecordError,
    },
}

/// Why one JSON record is not a Run this build reads.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("it has no schema_version: it is not a dyno Run record")]
    NoSchemaVersion,
    #[error(
        "it was written by a newer dyno (schema version {0}; this build reads up to {SCHEMA_VERSION}): upgrade dyno"
    )]
    Newer(u64),
    #[error("it is not a valid Run record")]
    Invalid(#[source] serde_json::Error),
}

/// Reads every Run in `text`; all are checked before any is returned, so
/// a bad record costs the whole text, never part of it.
pub fn read_runs(text: &str) -> Result<Vec<Run>, ReadRunsError> {
    let mut runs = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
    loop {
        // The next record starts at the first non-blank byte after the last.
        let rest = &text[stream.byte_offset()..];
        let start = text.len() - rest.trim_start().len();
        let line = text[..start].matches('\n').count() + 1;
        let Some(value) = stream.next() else { break };
        let value = value.map_err(|source| ReadRunsError::Json { line, source })?;
        let records = match value {
            serde_json::Value::Array(items) => items,
            other => vec![other],
        };
        for record in records {
            runs.push(read_run(record).map_err(|source| ReadRunsError::Record { line, source })?);
        }
    }
    Ok(runs)
}

/// One record as a Run, if its schema version is one this build reads.
pub fn read_run(record: serde_json::Value) -> Result<Run, RecordError> {
    let version = record
        .get("schema_version")
        .and_then(serde_json::Value::as_u64)
        .ok_or(RecordError::NoSchemaVersion)?;
    if version > u64::from(SCHEMA_VERSION) {
        return Err(RecordError::Newer(version));
    }
    serde_json::from_value(record).map_err(RecordError::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Kind;

    fn record(desc: &str) -> String {
        serde_json::to_string(&Run::new(Kind::Cpu, desc)).unwrap()
    }

    /// The error and its causes, as the binary prints them.
    fn said(err: &dyn std::error::Error) -> String {
        let mut out = err.to_string();
        let mut cause = err.source();
        while let Some(c) = cause {
            out.push_str(": ");
            out.push_str(&c.to_string());
            cause = c.source();
        }
        out
    }

    #[test]
    fn reads_one_run_an_array_and_json_lines() {
        let one = record("a");
        assert_eq!(read_runs(&one).unwrap().len(), 1);
        let array = format!("[{}, {}]", record("a"), record("b"));
        assert_eq!(read_runs(&array).unwrap().len(), 2);
        let lines = format!("{}\n{}\n\n{}\n", record("a"), record("b"), record("c"));
        let runs = read_runs(&lines).unwrap();
        assert_eq!(
            runs.iter()
                .map(|r| r.description.as_str())
                .collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
    }

    #[test]
    fn names_the_line_of_a_bad_record() {
        let text = format!("{}\n{{\"schema_version\": 1}}\n", record("a"));
        let err = said(&read_runs(&text).unwrap_err());
        assert!(
            err.contains("line 2") && err.contains("not a valid Run"),
            "{err}"
        );
        let err = said(&read_runs("{\"x\": 1}").unwrap_err());
        assert!(err.contains("no schema_version"), "{err}");
        let err = said(&read_runs(&format!("{}\n{{oops", record("a"))).unwrap_err());
        assert!(
            err.contains("line 2") && err.contains("not valid JSON"),
            "{err}"
        );
    }

    #[test]
    fn refuses_records_from_a_newer_schema() {
        let mut value: serde_json::Value = serde_json::from_str(&record("a")).unwrap();
        value["schema_version"] = serde_json::json!(SCHEMA_VERSION + 1);
        let err = said(&read_runs(&value.to_string()).unwrap_err());
        assert!(
            err.contains("newer dyno") && err.contains("upgrade"),
            "{err}"
        );
    }
}
