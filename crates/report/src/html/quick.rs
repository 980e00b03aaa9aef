//! The charts of a `dyno quick` run: its CPU figures as a table, then its
//! HTTP, PostgreSQL and disk lines drawn as those kinds are (their metrics
//! keep those kinds' names and are of the parts `http`, `db` and `disk`).

use dyno_model::Run;
use dyno_model::names::quick::{DB, DISK, HTTP, INT64_PREFIX};

use super::{db, disk, http, metric_table};

pub(super) fn charts(run: &Run) -> Vec<String> {
    let mut out = vec![
        "<h3>CPU (int64)</h3>".to_owned(),
        metric_table(run, |m| m.name.starts_with(INT64_PREFIX)),
    ];
    type Charts = fn(&Run, Option<&str>) -> Vec<String>;
    let lines: [(&str, &str, Charts); 3] = [
        (HTTP, "HTTP on loopback", http::charts),
        (DB, "PostgreSQL (select-only)", db::charts),
        (DISK, "Disk", disk::charts),
    ];
    for (line, heading, charts) in lines {
        // A line's metrics carry its name as their part.
        if run.metrics.iter().any(|m| m.part() == Some(line)) {
            out.push(format!("<h3>{heading}</h3>"));
            out.extend(charts(run, Some(line)));
        }
    }
    out
}
