//! The charts of a `dyno db run`, drawn as an HTTP run's are: the
//! transaction latency spectrum from the stored histogram (corrected and
//! uncorrected for an open-model run), tps and p99 over time from the
//! per-second timeline (`timeline_transactions_per_sec`,
//! `timeline_latency_p99_ns`), then every metric in a table.

use dyno_model::Run;
use dyno_model::names::db;

use super::http::{self, Flow};
use super::latency;

/// The timeline of a database run.
const DB: Flow = Flow {
    id: "db",
    what: "Database",
    rate_metric: db::TIMELINE_TRANSACTIONS_PER_SEC,
    rate_words: "transactions per second",
    rate_short: "tps",
    done: "commit",
    corrected: "the corrected latency, from each transaction's due time, as the spectrum's first line",
};

/// The charts of `run`, reading its metrics of quick's part `part` (`None`:
/// a database run's own; `dyno quick`'s db line is the part `db`).
pub(super) fn charts(run: &Run, part: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    let (series, open) = latency::corrected_and_not(run, part, "start");
    match latency::spectrum(
        "db-latency-spectrum",
        "Transaction latency by percentile",
        &series,
    ) {
        Some(c) if open => {
            let note = c.note.clone().unwrap_or_default();
            out.push(
                c.note(format!(
                    "{note} Open model (--rate): the corrected latency counts from each transaction's due time, so a stall shows; the uncorrected one from its start."
                ))
                .html(),
            );
        }
        Some(c) => out.push(c.html()),
        None => out.push(http::note(
            "No transaction committed, or the record keeps no latency histogram: no latency to draw.",
        )),
    }
    out.extend(http::timeline(run, part, &DB, open, None));
    out.extend(super::every_metric(run, part));
    out
}
