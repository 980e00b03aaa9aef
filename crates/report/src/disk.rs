//! `dyno disk`'s report: CrystalDiskMark's table in a terminal — a row per
//! test, reads and writes side by side, the best pass's MB/s and IOPS with
//! the latency over all timed passes — then every pass, with the median.

use std::fmt::Write as _;

use comfy_table::{Cell, CellAlignment};
use dyno_model::names::{common, disk, label};
use dyno_model::record::DiskRecord;
use dyno_model::{Metric, Run};
use dyno_stats::hdr;

use crate::text::{render, table, warnings};

/// The (test, op) pairs of the run, in the order they were measured.
fn rows(run: &Run) -> Vec<(String, Vec<String>)> {
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    for m in &run.metrics {
        let (Some(test), Some(op)) = (m.label(label::TEST), m.label(label::OP)) else {
            continue;
        };
        match rows.iter_mut().find(|(t, _)| t == test) {
            Some((_, ops)) if !ops.iter().any(|o| o == op) => ops.push(op.to_owned()),
            Some(_) => {}
            None => rows.push((test.to_owned(), vec![op.to_owned()])),
        }
    }
    rows
}

fn find<'a>(run: &'a Run, name: &str, test: &str, op: &str) -> Option<&'a Metric> {
    run.metrics.iter().find(|m| {
        m.name == name && m.label(label::TEST) == Some(test) && m.label(label::OP) == Some(op)
    })
}

/// "1234.56" MB/s (10^6 bytes per second).
fn mb(bytes_per_sec: f64) -> String {
    format!("{:.2}", bytes_per_sec / 1e6)
}

/// Mean and p99 of a latency metric, in µs.
fn latency(m: Option<&Metric>) -> (String, String) {
    let Some(m) = m else {
        return ("-".into(), "-".into());
    };
    let p99 = m
        .histogram
        .as_ref()
        .and_then(|h| hdr::from_model(h).ok())
        .map_or("-".into(), |h| {
            format!(
                "{:.1}",
                dyno_stats::hdr::value_at_percentile(&h, 99.0) as f64 / 1e3
            )
        });
    (format!("{:.1}", m.value / 1e3), p99)
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// A text setting, `?` where the record has none.
fn or_unknown(text: &str) -> &str {
    if text.is_empty() { "?" } else { text }
}

/// The human report of a `dyno disk` run.
pub fn disk_report(run: &Run) -> String {
    let rec: DiskRecord = run.record().unwrap_or_default();
    let mut out = String::new();
    let preset = or_unknown(&rec.preset);
    let _ = writeln!(out, "dyno disk — {}", run.description);
    if let Some(file) = &rec.observed.file {
        let _ = writeln!(out, "File        {file}");
    }
    storage_line(&mut out, run);
    io_line(&mut out, &rec, preset);
    passes_line(&mut out, &rec, preset);
    out.push('\n');

    let rows = rows(run);
    match preset {
        "meta" | "sync" => ops_table(&mut out, run, &rows, preset),
        _ => cdm_table(&mut out, run, &rows),
    }
    every_pass_section(&mut out, run, &rows, preset);
    latency_section(&mut out, run, &rows);
    crate::text::watched(run, "operation", &mut out);
    warnings(run, &mut out);
    out
}

/// The storage the file is on, as the environment captured it.
fn storage_line(out: &mut String, run: &Run) {
    let Some(st) = &run.environment.storage else {
        return;
    };
    let unknown = "?";
    let kind = match st.rotational {
        Some(true) => ", rotational",
        Some(false) => ", non-rotational",
        None => "",
    };
    let device = st.device.as_deref().map_or(String::new(), |d| {
        let model = st
            .model
            .as_deref()
            .map_or(String::new(), |m| format!(" {m}"));
        let sched = st
            .scheduler
            .as_deref()
            .map_or(String::new(), |s| format!(", scheduler {s}"));
        format!(" — {d}{model}{kind}{sched}")
    });
    let _ = writeln!(
        out,
        "Storage     {} on {} ({}){device}",
        st.filesystem.as_deref().unwrap_or(unknown),
        st.source.as_deref().unwrap_or(unknown),
        st.mount_options.as_deref().unwrap_or(unknown),
    );
}

/// How the data moved: the sync preset's writes, or direct or buffered
/// I/O with the engine, the fill and the seed (none for meta).
fn io_line(out: &mut String, rec: &DiskRecord, preset: &str) {
    if preset == "sync" {
        let _ = writeln!(
            out,
            "I/O         buffered 8 KiB writes over 16 MiB, each made durable by the call named (as pg_test_fsync)"
        );
    } else if preset != "meta" {
        let observed = &rec.observed;
        let io = match observed.direct_io {
            Some(true) => format!(
                "direct I/O (O_DIRECT, {}-byte alignment)",
                observed
                    .alignment_bytes
                    .map_or_else(|| "null".to_owned(), |a| a.to_string())
            ),
            _ => format!(
                "BUFFERED I/O: {}",
                observed
                    .buffered_reason
                    .as_deref()
                    .unwrap_or("direct I/O unavailable")
            ),
        };
        let engine_name = observed.engine.as_deref().unwrap_or("?");
        let engine = match &observed.engine_reason {
            Some(why) => format!("{engine_name} engine ({why})"),
            None => engine_name.to_owned(),
        };
        let _ = writeln!(
            out,
            "I/O         {io}; {engine}; {} fill; seed {}",
            or_unknown(&rec.fill),
            rec.seed
        );
    }
}

/// The passes: how many, how long, how far apart, after what warm-up.
fn passes_line(out: &mut String, rec: &DiskRecord, preset: &str) {
    let ns = |ns: u64| dyno_model::units::duration(ns as f64);
    let warmup = if rec.warmup_ns == 0 {
        "no warm-up".to_owned()
    } else if preset == "meta" {
        "after a warm-up pass (discarded)".to_owned()
    } else {
        format!("after a {} warm-up pass (discarded)", ns(rec.warmup_ns))
    };
    let apart = if rec.interval_ns == 0 {
        "no pause between them".to_owned()
    } else {
        format!("{} apart", ns(rec.interval_ns))
    };
    let passes = if preset == "meta" {
        let files = rec
            .files
            .map_or_else(|| "null".to_owned(), |f| f.to_string());
        format!("best of {} passes of {files} files", rec.runs)
    } else {
        format!("best of {} × {}", rec.runs, ns(rec.duration_ns))
    };
    let _ = writeln!(out, "Passes      {passes}, {apart}, {warmup}");
}

/// The figure a preset's passes are compared by, its unit in the report,
/// and the scale from the stored value to that unit.
fn pass_figure(preset: &str) -> (&'static str, &'static str, f64) {
    match preset {
        "meta" => (disk::FILES_PER_SEC, "files/s", 1.0),
        "sync" => (disk::IOPS, "ops/s", 1.0),
        _ => (disk::THROUGHPUT_BYTES_PER_SEC, "MB/s", 1e6),
    }
}

fn right(text: String) -> Cell {
    Cell::new(text).set_alignment(CellAlignment::Right)
}

/// The meta and sync presets' table: a row per test and operation, its
/// best rate and the median over the passes, with the latency.
fn ops_table(out: &mut String, run: &Run, rows: &[(String, Vec<String>)], preset: &str) {
    let (name, rate, _) = pass_figure(preset);
    let mut t = table(&["Test", "Op", rate, "median", "mean µs", "p99 µs"]);
    for (test, ops) in rows {
        for op in ops {
            let Some(r) = find(run, name, test, op) else {
                continue;
            };
            let (mean, p99) = latency(find(run, common::LATENCY, test, op));
            t.add_row(vec![
                Cell::new(test),
                Cell::new(op),
                right(format!("{:.0}", r.value)),
                right(format!("{:.0}", median(&r.samples))),
                right(mean),
                right(p99),
            ]);
        }
    }
    out.push_str(&render(&t));
}

/// CrystalDiskMark's table: a row per test, each operation's MB/s, IOPS
/// and latency side by side.
fn cdm_table(out: &mut String, run: &Run, rows: &[(String, Vec<String>)]) {
    let ops: Vec<String> = rows.first().map(|(_, o)| o.clone()).unwrap_or_default();
    let mut header = vec!["Test".to_owned()];
    for op in &ops {
        let op = capitalise(op);
        header.extend([
            format!("{op} MB/s"),
            "IOPS".into(),
            "mean µs".into(),
            "p99 µs".into(),
        ]);
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = table(&header);
    for (test, _) in rows {
        let mut cells = vec![Cell::new(test)];
        for op in &ops {
            let t = find(run, disk::THROUGHPUT_BYTES_PER_SEC, test, op);
            let iops = find(run, disk::IOPS, test, op);
            let (mean, p99) = latency(find(run, common::LATENCY, test, op));
            cells.extend([
                right(t.map_or("-".into(), |m| mb(m.value))),
                right(iops.map_or("-".into(), |m| format!("{:.0}", m.value))),
                right(mean),
                right(p99),
            ]);
        }
        t.add_row(cells);
    }
    out.push_str(&render(&t));
    out.push_str("\nMB/s = 1,000,000 bytes/s; best pass shown, as CrystalDiskMark does.\n");
}

/// Every pass of each test and operation, the best marked, and the
/// median.
fn every_pass_section(out: &mut String, run: &Run, rows: &[(String, Vec<String>)], preset: &str) {
    let (name, unit, scale) = pass_figure(preset);
    let _ = writeln!(out, "\nEvery pass ({unit}, * best):");
    for (test, ops) in rows {
        for op in ops {
            let Some(m) = find(run, name, test, op) else {
                continue;
            };
            let best = m.samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let passes: Vec<String> = m
                .samples
                .iter()
                .map(|&v| {
                    let mark = if v == best { "*" } else { "" };
                    format!("{:.2}{mark}", v / scale)
                })
                .collect();
            let _ = writeln!(
                out,
                "  {test} {op}: {}  (median {:.2})",
                passes.join("  "),
                median(&m.samples) / scale
            );
        }
    }
}

/// The latency distribution behind the tables' mean and p99.
fn latency_section(out: &mut String, run: &Run, rows: &[(String, Vec<String>)]) {
    let _ = writeln!(out, "\nLatency per I/O over all timed passes (µs):");
    let mut t = table(&["Test", "Op", "mean", "p50", "p99", "p99.9", "max"]);
    for (test, ops) in rows {
        for op in ops {
            let Some(h) = find(run, common::LATENCY, test, op)
                .and_then(|m| m.histogram.as_ref())
                .and_then(|h| hdr::from_model(h).ok())
            else {
                continue;
            };
            let us = |ns: f64| right(format!("{:.1}", ns / 1e3));
            t.add_row(vec![
                Cell::new(test),
                Cell::new(op),
                us(h.mean()),
                us(dyno_stats::hdr::value_at_percentile(&h, 50.0) as f64),
                us(dyno_stats::hdr::value_at_percentile(&h, 99.0) as f64),
                us(dyno_stats::hdr::value_at_percentile(&h, 99.9) as f64),
                us(h.max() as f64),
            ]);
        }
    }
    out.push_str(&render(&t));
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use dyno_model::{Direction, Kind, Unit};

    use super::*;

    fn metric(name: &str, unit: Unit, value: f64, samples: &[f64], test: &str, op: &str) -> Metric {
        let mut m = Metric::new(name, unit, Direction::HigherIsBetter, value)
            .with_label("test", test)
            .with_label("op", op);
        m.samples = samples.to_vec();
        m
    }

    fn latency_metric(test: &str, op: &str, us: u64) -> Metric {
        let mut h = hdr::latency_histogram();
        for k in 0..100 {
            h.record(us * 1000 + k).unwrap();
        }
        let mut m = Metric::new("latency_ns", Unit::Ns, Direction::LowerIsBetter, h.mean())
            .with_label("test", test)
            .with_label("op", op);
        m.histogram = Some(hdr::to_model(&h));
        m
    }

    fn cdm_run() -> Run {
        let mut run = Run::new(Kind::Disk, "cdm8: 1.00 GiB on /mnt/ssd");
        run.settings = serde_json::json!({
            "preset": "cdm8", "file": "/mnt/ssd/dyno-disk-1-0000abcd.tmp",
            "direct_io": true, "alignment_bytes": 512, "engine": "io_uring",
            "fill": "random", "seed": 42, "runs": 3, "duration_ns": 5_000_000_000u64,
            "interval_ns": 5_000_000_000u64, "warmup_ns": 1_000_000_000u64,
        });
        for (test, block, read, write) in [
            ("SEQ1M Q8T1", 1048576.0, 3500e6, 3000e6),
            ("RND4K Q1T1", 4096.0, 60e6, 150e6),
        ] {
            for (op, best) in [("read", read), ("write", write)] {
                run.metrics.push(metric(
                    "throughput_bytes_per_sec",
                    Unit::BytesPerSec,
                    best,
                    &[best * 0.98, best, best * 0.99],
                    test,
                    op,
                ));
                run.metrics
                    .push(metric("iops", Unit::OpsPerSec, best / block, &[], test, op));
                run.metrics.push(latency_metric(
                    test,
                    op,
                    if block > 4096.0 { 2400 } else { 68 },
                ));
            }
        }
        run
    }

    #[test]
    fn cdm_table_puts_reads_and_writes_side_by_side() {
        insta::assert_snapshot!(disk_report(&cdm_run()));
    }

    #[test]
    fn buffered_runs_say_so_in_the_header() {
        let mut run = cdm_run();
        run.settings["direct_io"] = serde_json::json!(false);
        run.settings["buffered_reason"] = serde_json::json!("tmpfs keeps files in memory");
        let text = disk_report(&run);
        assert!(
            text.contains("BUFFERED I/O: tmpfs keeps files in memory"),
            "{text}"
        );
    }

    #[test]
    fn meta_rows_are_operations_in_files_per_second() {
        let mut run = Run::new(Kind::Disk, "meta: 1000 files in /srv");
        run.settings = serde_json::json!({
            "preset": "meta", "files": 1000, "runs": 2,
            "interval_ns": 0, "warmup_ns": 1_000_000_000u64,
        });
        for (op, rate) in [
            ("create", 50_000.0),
            ("stat", 900_000.0),
            ("unlink", 70_000.0),
        ] {
            run.metrics.push(metric(
                "files_per_sec",
                Unit::OpsPerSec,
                rate,
                &[rate, rate * 0.9],
                "files",
                op,
            ));
            run.metrics.push(latency_metric("files", op, 20));
        }
        insta::assert_snapshot!(disk_report(&run));
    }
}
