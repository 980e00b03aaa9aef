//! `dyno quick`'s view: one summary table, a line per workload and thread
//! count (int64, its scaling, HTTP, PostgreSQL, the disk), read from the
//! run's [`QuickRecord`] and metrics.

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
        "http",
        "requests_per_sec",
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
            "db",
            "transactions_per_sec",
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
    let row = |label: String, prefix: &str, note: String| {
        let time = run.metric(&format!("{prefix}_ns"))?;
        let rate = run.metric(&format!("{prefix}_ops_per_sec"))?;
        Some(SummaryRow {
            test: label,
            result: format_value(time.value, time.unit),
            uncertainty: format_interval(time).unwrap_or_default(),
            rate: format_value(rate.value, rate.unit),
            note,
        })
    };
    let mut rows: Vec<SummaryRow> = row("int64, 1 thread".into(), "int64_1t", String::new())
        .into_iter()
        .collect();
    if threads <= 1 {
        return rows;
    }
    rows.extend(row(
        format!("int64, {threads} threads"),
        "int64_nt",
        format!("{threads} copies at once"),
    ));
    // The scaling line: weak scaling (N copies), so the speedup is of
    // throughput, and p is what Amdahl's law would make of it.
    if let (Some(s), Some(e)) = (
        run.metric("int64_speedup"),
        run.metric("int64_efficiency_percent"),
    ) {
        let p = run
            .metric("int64_amdahl_parallel_fraction")
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

/// The line of a load test (`prefix` http or db): mean latency, the rate,
/// p99 and the client's CPU.
fn load_row(run: &Run, prefix: &str, rate: &str, test: String, note: &str) -> Option<SummaryRow> {
    let rate = run.metric(&format!("{prefix}_{rate}"))?;
    let latency = run.metric(&format!("{prefix}_latency_ns"))?;
    let p99 = latency
        .histogram
        .as_ref()
        .and_then(|h| h.percentiles.iter().find(|p| p.percentile == 99.0))
        .map(|p| format_value(p.value, Unit::Ns))
        .unwrap_or_default();
    let cpu = run
        .metric(&format!("{prefix}_client_cpu_percent"))
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
        let get = |name: &str, op: &str| {
            run.metrics.iter().find(|m| {
                m.name == name && m.label("test") == Some(test) && m.label("op") == Some(op)
            })
        };
        let (Some(read), Some(write)) = (
            get("disk_throughput_bytes_per_sec", "read"),
            get("disk_throughput_bytes_per_sec", "write"),
        ) else {
            continue;
        };
        let iops = |op| get("disk_iops", op).map_or(0.0, |m| m.value);
        let latency = get("disk_latency_ns", "read")
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
    fn a_run_without_the_optional_lines_has_only_its_own() {
        let mut run = fixture();
        run.metrics
            .retain(|m| !m.name.starts_with("db_") && !m.name.starts_with("disk_"));
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
