//! `dyno quick`'s view: one summary table, a line per workload and thread
//! count (int64, its scaling, HTTP, PostgreSQL, the disk), read from the
//! run's [`QuickRecord`] and metrics.

use dyno_model::names::quick::{self as name, DB, DISK, HTTP};
use dyno_model::names::{common, db, disk, http, label};
use dyno_model::record::QuickRecord;
use dyno_model::{Run, Unit};

use crate::format::{format_interval, format_parallel_fraction, format_value};
use crate::text::{SummaryRow, summary};

/// The table `dyno quick` prints (and `dyno show` for a quick run).
pub fn quick_report(run: &Run) -> String {
    let record: QuickRecord = run.record().unwrap_or_default();
    let threads = record.int64.threads.last().copied().unwrap_or(1);
    let mut rows = int64_rows(run, threads);
    rows.extend(load_row(
        run,
        HTTP,
        http::REQUESTS_PER_SEC,
        format!("http /hello, c={}", record.http.connections),
        "",
    ));
    if let Some(db) = &record.db {
        let version = db
            .observed
            .server_version
            .split_whitespace()
            .next()
            .unwrap_or("?");
        rows.extend(load_row(
            run,
            DB,
            db::TRANSACTIONS_PER_SEC,
            format!("db select-only, c={}", db.clients),
            &format!("PostgreSQL {version}; "),
        ));
    }
    let direct = record
        .disk
        .as_ref()
        .and_then(|d| d.observed.direct_io)
        .unwrap_or(false);
    rows.extend(disk_rows(run, direct));
    summary(run, &rows)
}

/// The int64 lines: one thread, `threads` threads, and the scaling line.
fn int64_rows(run: &Run, threads: u64) -> Vec<SummaryRow> {
    let row = |label: String, (time, rate): (&str, &str), note: String| {
        let time = run.metric(time)?;
        let rate = run.metric(rate)?;
        Some(SummaryRow {
            test: label,
            result: format_value(time.value, time.unit),
            uncertainty: format_interval(time).unwrap_or_default(),
            rate: format_value(rate.value, rate.unit),
            note,
        })
    };
    let mut rows: Vec<SummaryRow> = row(
        "int64, 1 thread".into(),
        (name::INT64_1T, name::INT64_1T_OPS_PER_SEC),
        String::new(),
    )
    .into_iter()
    .collect();
    if threads <= 1 {
        return rows;
    }
    rows.extend(row(
        format!("int64, {threads} threads"),
        (name::INT64_NT, name::INT64_NT_OPS_PER_SEC),
        format!("{threads} copies at once"),
    ));
    // The scaling line: weak scaling (N copies), so the speedup is of
    // throughput, and p is what Amdahl's law would make of it.
    if let (Some(s), Some(e)) = (
        run.metric(name::INT64_SPEEDUP),
        run.metric(name::INT64_EFFICIENCY_PERCENT),
    ) {
        let p = run
            .metric(name::INT64_AMDAHL_PARALLEL_FRACTION)
            .map_or_else(String::new, |p| {
                format!(
                    ", Amdahl parallel fraction {}",
                    format_parallel_fraction(p.value)
                )
            });
        rows.push(SummaryRow {
            test: format!("int64 scaling, 1→{threads} threads"),
            note: format!(
                "throughput speedup {} (weak scaling: {threads} copies), efficiency {}{p}",
                format_value(s.value, s.unit),
                format_value(e.value, e.unit)
            ),
            ..SummaryRow::default()
        });
    }
    rows
}

/// The line of a load test (`line` http or db, the part of its metrics):
/// mean latency, the rate (its engine's metric `rate`), p99 and the
/// client's CPU.
fn load_row(run: &Run, line: &str, rate: &str, test: String, note: &str) -> Option<SummaryRow> {
    let rate = run.metric_of(Some(line), rate)?;
    let latency = run.metric_of(Some(line), common::LATENCY)?;
    let p99 = latency
        .histogram
        .as_ref()
        .and_then(|h| h.percentiles.iter().find(|p| p.percentile == 99.0))
        .map(|p| format_value(p.value, Unit::Ns))
        .unwrap_or_default();
    let cpu = run
        .metric_of(Some(line), common::CLIENT_CPU_PERCENT)
        .map_or(0.0, |m| m.value);
    Some(SummaryRow {
        test,
        result: format_value(latency.value, latency.unit),
        uncertainty: String::new(),
        rate: format_value(rate.value, rate.unit),
        note: format!("mean latency; p99 {p99}; {note}client CPU {cpu:.0}%"),
    })
}

/// The disk lines: SEQ1M Q8T1 and RND4K Q1T1, read and write.
fn disk_rows(run: &Run, direct_io: bool) -> Vec<SummaryRow> {
    let mut rows = Vec::new();
    for test in ["SEQ1M Q8T1", "RND4K Q1T1"] {
        // The disk line's metric `name`, of this test and operation `op`.
        let get = |name: &str, op: &str| {
            run.metrics.iter().find(|m| {
                m.name == name
                    && m.part() == Some(DISK)
                    && m.label(label::TEST) == Some(test)
                    && m.label(label::OP) == Some(op)
            })
        };
        let (Some(read), Some(write)) = (
            get(disk::THROUGHPUT_BYTES_PER_SEC, "read"),
            get(disk::THROUGHPUT_BYTES_PER_SEC, "write"),
        ) else {
            continue;
        };
        let iops = |op| get(disk::IOPS, op).map_or(0.0, |m| m.value);
        let latency = get(common::LATENCY, "read")
            .map_or_else(String::new, |m| format_value(m.value, m.unit));
        let direct = if direct_io {
            "direct I/O"
        } else {
            "BUFFERED I/O"
        };
        rows.push(SummaryRow {
            test: format!("disk {test}"),
            result: latency,
            uncertainty: String::new(),
            rate: format!("{:.1} MB/s", read.value / 1e6),
            note: format!(
                "mean read latency; read {:.0} IOPS, write {:.1} MB/s ({:.0} IOPS); {direct}",
                iops("read"),
                write.value / 1e6,
                iops("write")
            ),
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quick run `scripts/fixtures` made with a real dyno: every line,
    /// PostgreSQL's included.
    fn fixture() -> Run {
        serde_json::from_str(include_str!("../../model/tests/fixtures/quick.json")).unwrap()
    }

    #[test]
    fn the_table_has_a_line_per_workload_from_the_record() {
        let run = fixture();
        let record: QuickRecord = run.record().unwrap();
        let out = quick_report(&run);
        let threads = record.int64.threads[1];
        for line in [
            "int64, 1 thread".to_owned(),
            format!("http /hello, c={}", record.http.connections),
            format!("db select-only, c={}", record.db.as_ref().unwrap().clients),
            "PostgreSQL 15".to_owned(),
            "disk SEQ1M Q8T1".to_owned(),
            "disk RND4K Q1T1".to_owned(),
        ] {
            assert!(out.contains(&line), "{line} missing from\n{out}");
        }
        assert_eq!(
            out.contains(&format!("int64 scaling, 1→{threads} threads")),
            threads > 1,
            "{out}"
        );
        let direct = record.disk.unwrap().observed.direct_io == Some(true);
        assert!(out.contains(if direct {
            "; direct I/O"
        } else {
            "BUFFERED I/O"
        }));
    }

    #[test]
    fn each_load_line_reads_its_own_parts_figures() {
        // The fixture was saved with prefixed names (`http_latency_ns`,
        // `db_latency_ns`): read, they are `latency_ns` of two parts.
        let run = fixture();
        let figure = |part: &str, name: &str| {
            let m = run.metric_of(Some(part), name).unwrap();
            format_value(m.value, m.unit)
        };
        let (http_latency, db_latency) = (figure(HTTP, "latency_ns"), figure(DB, "latency_ns"));
        assert_ne!(http_latency, db_latency, "the fixture tells them apart");
        let out = quick_report(&run);
        let row = |start: &str| {
            out.lines()
                .find(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("no {start} row in\n{out}"))
                .to_owned()
        };
        let (http_row, db_row) = (row("http /hello"), row("db select-only"));
        assert!(http_row.contains(&http_latency), "{http_row}");
        assert!(
            http_row.contains(&figure(HTTP, "requests_per_sec")),
            "{http_row}"
        );
        assert!(db_row.contains(&db_latency), "{db_row}");
        assert!(
            db_row.contains(&figure(DB, "transactions_per_sec")),
            "{db_row}"
        );
    }

    #[test]
    fn a_run_without_the_optional_lines_has_only_its_own() {
        let mut run = fixture();
        run.metrics.retain(|m| !matches!(m.part(), Some(DB | DISK)));
        let mut record: QuickRecord = run.record().unwrap();
        record.db = None;
        record.disk = None;
        run.settings = serde_json::to_value(&record).unwrap();
        let out = quick_report(&run);
        assert!(
            !out.contains("db select-only") && !out.contains("disk "),
            "{out}"
        );
        assert!(out.contains("http /hello"), "{out}");
    }
}
