//! The charts of a `dyno quick` run: its CPU figures as a table, then its
//! HTTP, PostgreSQL and disk lines drawn as those kinds are (their metrics
//! carry the prefixes `http_`, `db_` and `disk_`).

use dyno_model::Run;

use super::{db, disk, http, metric_table};

pub(super) fn charts(run: &Run) -> Vec<String> {
    let mut out = vec![
        "<h3>CPU (int64)</h3>".to_owned(),
        metric_table(run, |m| m.name.starts_with("int64_")),
    ];
    let has = |prefix: &str| run.metrics.iter().any(|m| m.name.starts_with(prefix));
    if has("http_") {
        out.push("<h3>HTTP on loopback</h3>".into());
        out.extend(http::charts(run, "http_"));
    }
    if has("db_") {
        out.push("<h3>PostgreSQL (select-only)</h3>".into());
        out.extend(db::charts(run, "db_"));
    }
    if has("disk_") {
        out.push("<h3>Disk</h3>".into());
        out.extend(disk::charts(run, "disk_"));
    }
    out
}
