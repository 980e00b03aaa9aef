//! `dyno http --replay`'s part of the report: what of the log was sent,
//! each path template's figures, and the log's own status mix beside the
//! target's.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use dyno_model::names::{http, label};
use dyno_model::record::ReplayRecord;
use dyno_model::{Metric, Run, units};
use dyno_stats::hdr;
use hdrhistogram::Histogram;

use crate::format::counted;
use crate::http::{DASH, class_counts, rate};

/// The log, what of it was sent and left out, and the per-template table.
pub(crate) fn replay_section(out: &mut String, run: &Run, r: &ReplayRecord) {
    let format = if r.format.is_empty() {
        String::new()
    } else {
        format!(" ({})", r.format)
    };
    let passes = if r.passes > 1 {
        format!(", read {} times", r.passes)
    } else {
        String::new()
    };
    let cut = if r.cut {
        "; the run ended before the log did"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "Replay      {}{format}: {} read, {} of them replayed{passes}{cut}",
        r.file,
        counted(r.lines, "line"),
        counted(r.requests, "request"),
    );
    // The log's seconds and span are what the reader went through: the
    // whole log's, or, in a run cut short, up to where it stopped reading.
    let peak = r.log_per_second.iter().copied().max().unwrap_or(0);
    let noted: u64 = r.log_per_second.iter().sum();
    let span_ns = r.log_span_s / r.speed * 1e9;
    let mean = if span_ns > 0.0 {
        rate(noted as f64 / span_ns * 1e9)
    } else {
        DASH.to_owned()
    };
    // A span under a second has no busiest second to speak of.
    let busiest = if span_ns >= 1e9 {
        format!(", its busiest second {peak} req/s")
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "            at {}× the log spans {}: mean {mean} req/s{busiest}",
        r.speed,
        units::duration(span_ns),
    );
    let mut left: Vec<String> = Vec::new();
    for (method, n) in &r.skipped_methods {
        left.push(format!("{n} {method} (not in --methods)"));
    }
    if r.outside_window > 0 {
        left.push(format!("{} outside --window", r.outside_window));
    }
    if r.other_segments > 0 {
        left.push(format!("{} of other segments", r.other_segments));
    }
    if !left.is_empty() {
        let _ = writeln!(out, "Left out    {}", left.join(", "));
    }
    if r.bad_lines > 0 {
        let _ = writeln!(
            out,
            "Bad lines   {} could not be read or sent (not replayed); the first:",
            r.bad_lines
        );
        for quoted in &r.bad_quoted {
            let _ = writeln!(out, "              {quoted}");
        }
    }
    if r.without_body > 0 {
        let _ = writeln!(
            out,
            "No body     {} sent without a body: the log keeps none (HAR and JSON lines can)",
            counted(r.without_body, "request")
        );
    }
    out.push('\n');
    endpoint_table(out, run, r);
}

/// Each path template's rate, latency and errors, busiest first.
fn endpoint_table(out: &mut String, run: &Run, r: &ReplayRecord) {
    let mut by: BTreeMap<&str, Vec<&Metric>> = BTreeMap::new();
    for m in &run.metrics {
        if let Some(endpoint) = m.label(label::ENDPOINT) {
            by.entry(endpoint).or_default().push(m);
        }
    }
    let get = |endpoint: &str, name: &str| {
        by.get(endpoint)
            .and_then(|ms| {
                ms.iter()
                    .find(|m| m.name == name && m.label(label::CLASS).is_none())
            })
            .copied()
    };
    let value = |endpoint: &str, name: &str| get(endpoint, name).map_or(0.0, |m| m.value);
    let mut rows: Vec<&str> = r.endpoints.iter().map(String::as_str).collect();
    rows.sort_by(|a, b| {
        value(b, http::ENDPOINT_RESPONSES)
            .total_cmp(&value(a, http::ENDPOINT_RESPONSES))
            .then(a.cmp(b))
    });
    if rows.is_empty() {
        return;
    }
    let width = rows.iter().map(|e| e.len()).max().unwrap_or(8).clamp(8, 40);
    let _ = writeln!(
        out,
        "{:<width$}  {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}  by class",
        "Endpoint", "req/s", "p50", "p90", "p99", "max", "errors"
    );
    let pct = |h: &Histogram<u64>, p: f64| {
        if h.is_empty() {
            DASH.to_owned()
        } else {
            units::duration_short(hdr::value_at_percentile(h, p) as f64)
        }
    };
    for endpoint in rows {
        let latency = get(endpoint, http::ENDPOINT_LATENCY)
            .and_then(|m| m.histogram.as_ref())
            .and_then(|h| hdr::from_model(h).ok());
        let cell = |p: f64| latency.as_ref().map_or(DASH.to_owned(), |h| pct(h, p));
        let classes = class_counts(
            by.get(endpoint)
                .into_iter()
                .flatten()
                .copied()
                .filter(|m| m.name == http::ENDPOINT_ERRORS_BY_CLASS),
        );
        let shown: String = if endpoint.chars().count() > width {
            let cut: String = endpoint.chars().take(width - 1).collect();
            format!("{cut}…")
        } else {
            endpoint.to_owned()
        };
        let _ = writeln!(
            out,
            "{shown:<width$}  {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}  {}",
            rate(value(endpoint, http::ENDPOINT_REQUESTS_PER_SEC)),
            cell(50.0),
            cell(90.0),
            cell(99.0),
            cell(100.0),
            value(endpoint, http::ENDPOINT_ERRORS) as u64,
            classes.join(", "),
        );
    }
    out.push('\n');
}

/// The log's own statuses of the requests replayed, under the target's.
pub(crate) fn log_status_line(out: &mut String, r: &ReplayRecord) {
    if r.log_statuses.is_empty() {
        return;
    }
    let statuses: Vec<String> = r
        .log_statuses
        .iter()
        .map(|(code, n)| format!("{code}: {n}"))
        .collect();
    let _ = writeln!(out, "Log status  {} (as logged)", statuses.join(", "));
}
