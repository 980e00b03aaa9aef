//! `dyno quick`: benchmark this machine on built-in defaults and print one
//! summary table: int64 on one and all threads, HTTP on loopback, the
//! disk, and select-only on PostgreSQL when the environment names a server.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::Result;
use dyno_cpu::int64;
use dyno_model::{Direction, Kind, Merge, Metric, Run, Samples, Unit};
use dyno_report::{SummaryRow, format_interval, format_parallel_fraction, format_value, summary};
use dyno_stats::sampled_metric;
use dyno_stats::scaling::{self, Measure, Point};
use serde_json::json;

use super::interrupt::{Interrupt, Second};
use super::{Context, environment, finish, progress};
use crate::ExitStatus;
use crate::cli::QuickArgs;

/// Connections of the HTTP line.
const HTTP_CONNECTIONS: usize = 16;

/// What `dyno quick` runs, resolved from its flags.
#[derive(Debug, Clone, Copy)]
struct QuickSettings {
    iterations: u64,
    repetitions: usize,
    /// Threads for the all-cores line.
    threads: usize,
}

pub(super) fn run(ctx: &Context, args: QuickArgs) -> Result<ExitStatus> {
    let QuickArgs {
        save,
        repetitions,
        threads,
        int64_iterations,
        http_duration,
        disk_duration,
        db_duration,
    } = args;
    let settings = QuickSettings {
        iterations: int64_iterations,
        repetitions: repetitions as usize,
        threads: threads.map_or_else(dyno_env::available_cpus, |t| t as usize),
    };
    let store = ctx.store_for(&save)?;

    let started = Instant::now();
    let mut run = Run::new(
        Kind::Quick,
        format!(
            "int64 on 1 and {}{}{}{}",
            dyno_report::counted(settings.threads as u64, "thread"),
            // A line given 0 s is skipped, and not named.
            if http_duration.is_zero() {
                ""
            } else {
                ", HTTP on loopback"
            },
            if disk_duration.is_zero() {
                ""
            } else {
                ", disk"
            },
            if super::db::configured() && !db_duration.is_zero() {
                ", PostgreSQL"
            } else {
                ""
            }
        ),
    );
    run.environment = environment();
    run.warnings = dyno_env::preflight(&run.environment);
    run.settings = json!({
        "int64": {
            "iterations": settings.iterations,
            "repetitions": settings.repetitions,
            "warmup_repetitions": 1,
            "threads": [1, settings.threads],
            "interleaved": true,
        },
        "http": {
            "target": "built-in server, GET /hello, loopback",
            "duration_ns": http_duration.as_nanos() as u64,
            "warmup_ns": 500_000_000u64,
            "connections": HTTP_CONNECTIONS,
            "model": "closed",
            "expect_status": "200-399",
        }
    });

    // An interrupt (Ctrl-C, SIGTERM, SIGHUP) ends the current line early and
    // skips the rest; the lines measured so far are printed and saved. Not
    // a second-interrupt exit: the disk line must remove its file.
    let interrupt = Interrupt::install(Second::Waits)?;
    match measure_int64(&settings, &interrupt.flag()) {
        Ok(metrics) if metrics.is_empty() => {
            eprintln!("dyno: interrupted before the first repetition; nothing was saved");
            return Ok(ExitStatus::Interrupted);
        }
        Ok(metrics) => run.metrics.extend(metrics),
        Err(e) => {
            eprintln!("dyno: check failed: {e}");
            return Ok(ExitStatus::ChecksFailed);
        }
    }
    if !http_duration.is_zero() && !interrupt.is_set() {
        progress("http: dyno's client against its built-in server on loopback");
        let (http_settings, outcome) =
            super::http::quick_load(http_duration, HTTP_CONNECTIONS, interrupt.flag())?;
        for m in outcome.metrics(&http_settings) {
            run.metrics.push(m.with_prefix("http"));
        }
        for w in dyno_http::warnings::judge(&outcome, &http_settings) {
            run.warn(w.code(), format!("http line: {w}"));
        }
    }
    if !disk_duration.is_zero() && !interrupt.is_set() {
        progress("disk: a 64 MiB file in the current directory, SEQ1M Q8T1 and RND4K Q1T1");
        // A directory that cannot hold the file costs the disk line, not
        // the whole run.
        match super::disk::quick_measure(disk_duration, interrupt.flag()) {
            Ok((metrics, warnings, disk_settings)) => {
                run.metrics.extend(metrics);
                run.settings["disk"] = disk_settings;
                for mut w in warnings {
                    w.message = format!("disk line: {}", w.message);
                    run.warnings.push(w);
                }
            }
            Err(e) => run.warn(
                "disk_line_skipped",
                format!("the disk line was skipped: {e:#}"),
            ),
        }
    }
    if !db_duration.is_zero() && !interrupt.is_set() {
        if super::db::configured() {
            progress("db: select-only on the PostgreSQL server of PGHOST/PGPORT/PGDATABASE");
            // A server that cannot be used costs the db line, not the run.
            match super::db::quick_measure(db_duration, interrupt.flag()) {
                Ok((metrics, warnings, db_settings)) => {
                    run.metrics.extend(metrics);
                    run.settings["db"] = db_settings;
                    for mut w in warnings {
                        w.message = format!("db line: {}", w.message);
                        run.warnings.push(w);
                    }
                }
                Err(e) => run.warn("db_line_skipped", format!("the db line was skipped: {e:#}")),
            }
        } else if !save.json {
            eprintln!("dyno: {}", super::db::NOT_CONFIGURED);
        }
    }
    if settings.iterations != int64::STANDARD_ITERATIONS {
        run.warn(
            "nonstandard_iterations",
            format!(
                "int64 ran {} iterations instead of the standard {}: its times are not comparable with standard runs",
                settings.iterations,
                int64::STANDARD_ITERATIONS
            ),
        );
    }
    let noisy: Vec<(String, f64)> = run
        .metrics
        .iter()
        .filter(|m| m.unit == Unit::Ns)
        .filter_map(|m| Some((m.name.clone(), relative_half_width(m)?)))
        .filter(|(_, width)| *width > 0.05)
        .collect();
    for (name, width) in noisy {
        run.warn(
            "noisy",
            format!(
                "{name} varies by ±{:.1}% between repetitions: the machine is busy or its clock changes; close other work or add --repetitions",
                width * 100.0
            ),
        );
    }
    judge_int64(&mut run, &settings);
    run.headline = Some("int64_1t_ns".into());
    run.duration_ns = started.elapsed().as_nanos() as u64;

    if interrupt.is_set() {
        run.warn(
            "interrupted",
            "the run was stopped early by an interrupt (Ctrl-C, SIGTERM or SIGHUP): lines after the interrupted one are missing",
        );
    }
    let run = finish(run, &save, store, table)?;
    if interrupt.is_set() {
        eprintln!("dyno: interrupted; the partial run {} was kept", run.id);
        return Ok(ExitStatus::Interrupted);
    }
    Ok(ExitStatus::Success)
}

/// Warnings about the int64 lines: more threads than CPUs, a single
/// repetition, and a super-linear figure (N copies on N threads cannot do
/// more than N times one copy's work, so an efficiency above 100% — 105%
/// with several repetitions — is noise or a clock change, never a property
/// of the machine).
fn judge_int64(run: &mut Run, settings: &QuickSettings) {
    let cpus = dyno_env::available_cpus();
    if settings.threads > cpus {
        run.warn(
            "oversubscribed",
            format!(
                "--threads {} is more than the {cpus} CPU{} this process may use: the copies take turns, so the speedup cannot pass {cpus} and no Amdahl parallel fraction is given (it would describe the oversubscription, not the machine)",
                settings.threads,
                if cpus == 1 { "" } else { "s" },
            ),
        );
    }
    if settings.repetitions == 1 {
        run.warn(
            "single_repetition",
            "one repetition (--repetitions 1): the figures have no confidence interval and a single disturbance moves them; use 3 or more to compare",
        );
    }
    let efficiency = run
        .metrics
        .iter()
        .find(|m| m.name == "int64_efficiency_percent")
        .map(|m| m.value);
    // With one repetition any excess is unexplained noise; with several,
    // a few percent is within it (as the scaling analysis allows 5%).
    let limit = if settings.repetitions == 1 {
        100.0
    } else {
        105.0
    };
    if let Some(e) = efficiency.filter(|e| *e > limit) {
        run.warn(
            "superlinear",
            format!(
                "int64 efficiency {e:.1}% is above 100%: {} copies cannot do more than {} times one copy's work, so the excess (and a parallel fraction above 100%) is noise or a change of clock speed between the lines, not a property of the machine",
                settings.threads, settings.threads,
            ),
        );
    }
}

/// Runs the int64 loop on one thread and on all threads, interleaved
/// repetition by repetition after one discarded warm-up of each, so drift of
/// the machine's clock affects both lines alike.
/// An interrupt ends the repetitions early; with none finished the result
/// is empty.
fn measure_int64(
    settings: &QuickSettings,
    interrupted: &AtomicBool,
) -> Result<Vec<Metric>, int64::Error> {
    let one = |threads: usize| {
        int64::measure(int64::Settings {
            iterations: settings.iterations,
            threads,
            repetitions: 1,
        })
    };
    let parallel = settings.threads > 1;
    progress("int64: warm-up");
    one(1)?;
    if parallel {
        one(settings.threads)?;
    }
    let mut single = Vec::new();
    let mut multi = Vec::new();
    for rep in 1..=settings.repetitions {
        if interrupted.load(Ordering::Relaxed) {
            break;
        }
        progress(&format!(
            "int64: repetition {rep} of {}",
            settings.repetitions
        ));
        single.push(one(1)?);
        if parallel {
            multi.push(one(settings.threads)?);
        }
    }
    // The interrupt is checked between pairs, so every pair is whole.
    if single.is_empty() {
        return Ok(Vec::new());
    }
    let mut metrics = lines("int64_1t", &single);
    if parallel {
        metrics.extend(lines("int64_nt", &multi));
        // Speedup per interleaved pair of repetitions, so its interval
        // reflects how the two lines moved together.
        let speedup: Vec<f64> = single
            .iter()
            .zip(&multi)
            .flat_map(|(one, all)| {
                one.throughput_per_sec()
                    .into_iter()
                    .zip(all.throughput_per_sec())
                    .map(|(t1, tn)| tn / t1)
            })
            .collect();
        let efficiency = speedup
            .iter()
            .map(|s| 100.0 * s / settings.threads as f64)
            .collect();
        // Views of the two lines' times: shown and compared, never
        // counted beside them in a score.
        metrics.push(
            sampled_metric(
                "int64_speedup",
                Unit::Ratio,
                Direction::HigherIsBetter,
                speedup,
            )
            .derived_of("int64_nt_ns")
            .merged(Merge::None)
            .samples_are(Samples::Runs),
        );
        metrics.push(
            sampled_metric(
                "int64_efficiency_percent",
                Unit::Percent,
                Direction::HigherIsBetter,
                efficiency,
            )
            .derived_of("int64_speedup")
            .merged(Merge::None)
            .samples_are(Samples::Runs),
        );
        // Amdahl's parallel fraction that would explain the mean speedup, by
        // the per-point formula of the scaling analysis (taken of the mean,
        // so it matches the speedup shown beside it). The all-cores line runs
        // N copies (weak scaling), so this p says how much of the machine's
        // throughput grows with cores, not how well one job splits.
        let n = settings.threads as f64;
        let mean = metrics
            .iter()
            .find(|m| m.name == "int64_speedup")
            .map_or(f64::NAN, |m| m.value);
        let points = [Point { n: 1.0, value: 1.0 }, Point { n, value: mean }];
        // With more threads than CPUs the copies take turns: the speedup
        // is capped by the CPUs, and a p fitted to it describes the
        // oversubscription, not the machine (judge_int64 says so).
        let oversubscribed = settings.threads > dyno_env::available_cpus();
        if let Some(p) = scaling::analyse(&points, Measure::Throughput)
            .ok()
            .and_then(|a| a.points.get(1)?.amdahl_parallel_fraction)
            .filter(|p| p.is_finite() && !oversubscribed)
        {
            metrics.push(
                Metric::new(
                    "int64_amdahl_parallel_fraction",
                    Unit::Ratio,
                    Direction::HigherIsBetter,
                    p,
                )
                .derived_of("int64_speedup")
                .merged(Merge::None),
            );
        }
    }
    Ok(metrics)
}

/// The wall-time and throughput metrics of one line of repetitions.
fn lines(prefix: &str, measurements: &[int64::Measurement]) -> Vec<Metric> {
    let wall: Vec<f64> = measurements
        .iter()
        .flat_map(|m| m.wall.iter().map(|w| w.as_nanos() as f64))
        .collect();
    let throughput: Vec<f64> = measurements
        .iter()
        .flat_map(int64::Measurement::throughput_per_sec)
        .collect();
    vec![
        sampled_metric(
            format!("{prefix}_ns"),
            Unit::Ns,
            Direction::LowerIsBetter,
            wall,
        )
        .primary()
        .merged(Merge::None)
        .samples_are(Samples::Runs),
        sampled_metric(
            format!("{prefix}_ops_per_sec"),
            Unit::OpsPerSec,
            Direction::HigherIsBetter,
            throughput,
        )
        .reciprocal_of(format!("{prefix}_ns"))
        .merged(Merge::None)
        .samples_are(Samples::Runs),
    ]
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

fn relative_half_width(m: &Metric) -> Option<f64> {
    let u = m.uncertainty.as_ref()?;
    Some((u.high - u.low) / 2.0 / m.value.abs())
}

/// The summary table: one line per workload and thread count (also what
/// `dyno show` prints for a quick run).
pub(super) fn table(run: &Run) -> String {
    let threads = run.settings["int64"]["threads"][1].as_u64().unwrap_or(1);
    let mut rows = Vec::new();
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
    rows.extend(row("int64, 1 thread".into(), "int64_1t", String::new()));
    if threads > 1 {
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
                result: String::new(),
                uncertainty: String::new(),
                rate: String::new(),
                note: format!(
                    "throughput speedup {} (weak scaling: {threads} copies), efficiency {}{p}",
                    format_value(s.value, s.unit),
                    format_value(e.value, e.unit)
                ),
            });
        }
    }
    rows.extend(load_row(
        run,
        "http",
        "requests_per_sec",
        format!("http /hello, c={HTTP_CONNECTIONS}"),
        "",
    ));
    let version = run.settings["db"]["server_version"]
        .as_str()
        .and_then(|v| v.split_whitespace().next())
        .unwrap_or("?");
    rows.extend(load_row(
        run,
        "db",
        "transactions_per_sec",
        format!("db select-only, c={}", super::db::QUICK_CLIENTS),
        &format!("PostgreSQL {version}; "),
    ));
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
        let direct = if run.settings["disk"]["direct_io"] == json!(true) {
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
    summary(run, &rows)
}
