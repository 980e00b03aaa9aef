//! The report of a scaling analysis (kind `scale`): where the points came
//! from, one line per N (time or throughput, speedup, efficiency, Amdahl and
//! Karp–Flatt fractions), the best N, the Amdahl fit and the USL fit.
//!
//! Everything is read back from the Run: per-point metrics carry the label
//! `n`, fit metrics are unlabelled, and model values outside the measured
//! range carry `predicted=true` and print "(predicted)". A stored run prints
//! the same as a fresh one.

use std::fmt::Write as _;

use comfy_table::{Cell, CellAlignment};
use dyno_model::names::{label, scale};
use dyno_model::record::ScaleRecord;
use dyno_model::{Metric, Run, Unit};

use crate::format::{format_parallel_fraction, format_value};
use crate::text::{render, table};
use dyno_model::units;

/// The metric `name` of the point at `n` (`None` for the fit metrics).
fn at<'a>(run: &'a Run, name: &str, n: Option<&str>) -> Option<&'a Metric> {
    run.metrics
        .iter()
        .find(|m| m.name == name && m.label(label::N) == n)
}

fn value(run: &Run, name: &str) -> Option<f64> {
    at(run, name, None).map(|m| m.value)
}

fn predicted(m: &Metric) -> &'static str {
    if m.label(label::PREDICTED) == Some("true") {
        " (predicted)"
    } else {
        ""
    }
}

/// A fraction as a percentage: `90.0%`.
fn percent(f: f64) -> String {
    format!("{:.1}%", f * 100.0)
}

/// Four significant figures, switching to an exponent for very large or
/// small magnitudes (κ is often 1e-5).
fn sig(v: f64) -> String {
    if v == 0.0 {
        return "0".to_owned();
    }
    // The magnitude after rounding, so 0.099999 prints as 0.1000.
    let rounded: f64 = format!("{v:.3e}").parse().unwrap_or(v);
    let magnitude = rounded.abs().log10().floor() as i32;
    if (-3..6).contains(&magnitude) {
        let decimals = (3 - magnitude).max(0) as usize;
        format!("{v:.decimals$}")
    } else {
        format!("{v:.3e}")
    }
}

/// The human report of a scale run.
pub fn scale_report(run: &Run) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", run.description);
    let _ = writeln!(out, "Source     {}", source(run));

    // The points, in order of N.
    let mut ns: Vec<(f64, &str)> = run
        .metrics
        .iter()
        .filter(|m| m.name == scale::SPEEDUP)
        .filter_map(|m| {
            let n = m.label(label::N)?;
            Some((n.parse::<f64>().ok()?, n))
        })
        .collect();
    ns.sort_by(|a, b| a.0.total_cmp(&b.0));
    let time = ns
        .first()
        .is_some_and(|(_, n)| at(run, scale::TIME, Some(n)).is_some());
    if let Some(&(baseline, label)) = ns.first()
        && baseline != 1.0
    {
        let _ = writeln!(
            out,
            "Baseline   N = {label}: there is no point at N = 1, so speedups assume perfect scaling up to N = {label}"
        );
    }
    out.push('\n');

    let mut t = table(&[
        "N",
        if time { "TIME" } else { "THROUGHPUT" },
        "SPEEDUP",
        "EFFICIENCY",
        "AMDAHL p",
        "KARP-FLATT e",
    ]);
    for &(_, n) in &ns {
        let shown = |name: &str, f: &dyn Fn(&Metric) -> String| {
            at(run, name, Some(n)).map_or_else(|| "–".to_owned(), f)
        };
        let measured = if time {
            shown(scale::TIME, &|m| units::duration(m.value))
        } else {
            shown(scale::THROUGHPUT, &|m| {
                format_value(m.value, Unit::OpsPerSec)
            })
        };
        let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
        t.add_row(vec![
            right(n.to_owned()),
            right(measured),
            right(shown(scale::SPEEDUP, &|m| format!("{:.2}×", m.value))),
            right(shown(scale::EFFICIENCY, &|m| percent(m.value))),
            right(shown(scale::AMDAHL_PARALLEL_FRACTION, &|m| {
                format_parallel_fraction(m.value)
            })),
            right(shown(scale::KARP_FLATT_SERIAL_FRACTION, &|m| {
                percent(m.value)
            })),
        ]);
    }
    out.push_str(&render(&t));
    out.push('\n');
    database(run, &ns, &mut out);

    if let Some(best) = run.metric(scale::BEST_SPEEDUP) {
        let n = best.label(label::N).unwrap_or("?");
        let figure = if time {
            at(run, scale::TIME, Some(n)).map(|m| format!(", {}", units::duration(m.value)))
        } else {
            at(run, scale::THROUGHPUT, Some(n))
                .map(|m| format!(", {}", format_value(m.value, Unit::OpsPerSec)))
        };
        let _ = writeln!(
            out,
            "Best       N = {n}: speedup {:.2}×{}",
            best.value,
            figure.unwrap_or_default()
        );
    }

    if let Some(p) = value(run, scale::AMDAHL_FIT_PARALLEL_FRACTION) {
        let r2 = value(run, scale::AMDAHL_FIT_R_SQUARED)
            .map_or_else(String::new, |r| format!(", R² = {r:.4}"));
        let ceiling = at(run, scale::AMDAHL_FIT_CEILING, None).map_or_else(
            || "no ceiling: the fit finds no serial part".to_owned(),
            |c| {
                format!(
                    "ceiling 1/(1 − p) = {:.2}× as N grows without bound{}",
                    c.value,
                    predicted(c)
                )
            },
        );
        let _ = writeln!(
            out,
            "Amdahl     parallel fraction p = {}{r2}; {ceiling}",
            format_parallel_fraction(p)
        );
    }

    usl(run, time, ns.len(), &mut out);
    crate::text::warnings(run, &mut out);
    out
}

/// The durable write workload's figures per N: commits per second, fsyncs
/// per commit (below 1 when group commit shares them), log bytes per
/// commit and retries; nothing for other sources.
fn database(run: &Run, ns: &[(f64, &str)], out: &mut String) {
    if at(run, scale::COMMITS_PER_SEC, ns.first().map(|n| n.1)).is_none() {
        return;
    }
    let mut t = table(&[
        "N",
        "COMMITS/S",
        "FSYNCS/COMMIT",
        "LOG BYTES/COMMIT",
        "RETRIES",
    ]);
    for &(_, n) in ns {
        let shown = |name: &str, f: &dyn Fn(f64) -> String| {
            at(run, name, Some(n)).map_or_else(|| "–".to_owned(), |m| f(m.value))
        };
        let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
        t.add_row(vec![
            right(n.to_owned()),
            right(shown(scale::COMMITS_PER_SEC, &|v| {
                format_value(v, Unit::OpsPerSec)
            })),
            right(shown(scale::FSYNCS_PER_COMMIT, &|v| format!("{v:.3}"))),
            right(shown(scale::LOG_BYTES_PER_COMMIT, &|v| {
                format_value(v, Unit::Bytes)
            })),
            right(shown(scale::RETRIES, &|v| format!("{v:.0}"))),
        ]);
    }
    out.push_str(&render(&t));
    out.push('\n');
}

/// The USL lines: parameters and bound, then the peak (or why there is none).
fn usl(run: &Run, time: bool, points: usize, out: &mut String) {
    let (Some(sigma), Some(kappa), Some(lambda), Some(r2)) = (
        value(run, scale::USL_SIGMA),
        value(run, scale::USL_KAPPA),
        value(run, scale::USL_LAMBDA),
        value(run, scale::USL_R_SQUARED),
    ) else {
        let _ = writeln!(
            out,
            "USL        not fitted: it has three parameters and needs at least 3 values of N ({points} measured)"
        );
        return;
    };
    let bound = at(run, scale::USL_BOUND, None)
        .and_then(|m| m.label(label::BOUND))
        .map_or_else(String::new, |b| match b {
            scale::BOUND_LINEAR => ": scales almost linearly over the measured N".to_owned(),
            scale::BOUND_SUPERLINEAR => {
                ": super-linear (efficiency above 100%), which the USL cannot follow".to_owned()
            }
            other => format!(": {other}-bound"),
        });
    let lambda = if time {
        format!(
            "λ = {}/s (1/λ = {})",
            sig(lambda),
            units::duration(1e9 / lambda)
        )
    } else {
        format!("λ = {}", format_value(lambda, Unit::OpsPerSec))
    };
    let _ = writeln!(
        out,
        "USL        σ = {} (contention), κ = {} (coherency), {lambda}, R² = {r2:.4}{bound}",
        sig(sigma),
        sig(kappa)
    );
    match (
        at(run, scale::USL_PEAK_N, None),
        at(run, scale::USL_PEAK_THROUGHPUT, None),
    ) {
        (Some(peak), Some(x)) => {
            let speedup = at(run, scale::USL_PEAK_SPEEDUP, None)
                .map_or_else(String::new, |s| format!(", speedup {:.2}×", s.value));
            let figure = if time {
                at(run, scale::USL_PEAK_TIME, None).map_or_else(String::new, |t| {
                    format!(", time {}", units::duration(t.value))
                })
            } else {
                format!(", X(N*) = {}", format_value(x.value, Unit::OpsPerSec))
            };
            let _ = writeln!(
                out,
                "           peak at N* = {}{speedup}{figure}{}",
                peak.value,
                predicted(peak)
            );
        }
        _ if sigma > 0.0 => {
            let time = if time {
                format!(", time {}", units::duration(1e9 * sigma / lambda_of(run)))
            } else {
                format!(
                    ", {}",
                    format_value(lambda_of(run) / sigma, Unit::OpsPerSec)
                )
            };
            let _ = writeln!(
                out,
                "           no peak (κ ≈ 0): throughput levels off towards λ/σ (speedup {:.2}×{time}) (predicted)",
                speedup_per_lambda(run) / sigma
            );
        }
        _ => {
            let _ = writeln!(out, "           no peak: σ = κ = 0, linear scaling");
        }
    }
}

/// λ as a speedup: λ over the measured rate of one unit at the baseline.
fn speedup_per_lambda(run: &Run) -> f64 {
    let baseline = run
        .metrics
        .iter()
        .filter(|m| m.name == scale::SPEEDUP)
        .filter_map(|m| Some((m.label(label::N)?.parse::<f64>().ok()?, m.label(label::N)?)))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let Some((n, label)) = baseline else {
        return f64::NAN;
    };
    let rate = match (
        at(run, scale::TIME, Some(label)),
        at(run, scale::THROUGHPUT, Some(label)),
    ) {
        (Some(t), _) => 1e9 / t.value,
        (None, Some(x)) => x.value,
        _ => return f64::NAN,
    };
    lambda_of(run) / (rate / n)
}

fn lambda_of(run: &Run) -> f64 {
    value(run, scale::USL_LAMBDA).unwrap_or(f64::NAN)
}

/// Where the points came from, from the run's record.
fn source(run: &Run) -> String {
    let Ok(record) = run.record::<ScaleRecord>() else {
        return "unknown".to_owned();
    };
    // Text shows `?` where the record has none, a number `null`.
    let s = |text: &str| if text.is_empty() { "?" } else { text }.to_owned();
    let n = |v: Option<u64>| v.map_or_else(|| "null".to_owned(), |v| v.to_string());
    match record {
        ScaleRecord::Run(r) => {
            let fixed = if r.fixed.is_empty() {
                String::new()
            } else {
                let pairs: Vec<String> = r.fixed.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!(" with {}", pairs.join(", "))
            };
            format!(
                "run {}: '{}'{fixed}, N = parameter {}, value = mean wall time (imported from that run)",
                s(&r.run_id),
                s(&r.command),
                s(&r.parameter)
            )
        }
        ScaleRecord::File(f) => format!(
            "file {}: N = column '{}', {} = column '{}' (imported figures)",
            s(&f.path),
            s(&f.n_column),
            s(&f.measure),
            s(&f.value_column)
        ),
        ScaleRecord::Workload(w) if w.workload == "tree-read" => format!(
            "tree-read measured now, strong scaling: {} tasks at every N, each counting every node of its own version of a tree of depth {} ({} nodes) while a writer adds one node per task; every count checked; {} repetitions of each N after a warm-up",
            n(w.tasks),
            n(w.depth),
            n(w.nodes),
            w.repetitions
        ),
        ScaleRecord::Workload(w) if w.workload == "tree-write" => format!(
            "tree-write measured now, strong scaling, durable (fsync on {}, {}): {} tasks at every N, each building a tree node by node to depth {} and registering it ({} nodes in all); every tree counted back; {} repetitions of each N after a warm-up",
            s(w.dir.as_deref().unwrap_or_default()),
            s(w.filesystem.as_deref().unwrap_or_default()),
            n(w.tasks),
            n(w.depth),
            n(w.nodes),
            w.repetitions
        ),
        ScaleRecord::Workload(w) => format!(
            "{} measured now, strong scaling: {} iterations in total at every N, cut into {} tasks; {} repetitions of each N after a warm-up",
            s(&w.workload),
            n(w.iterations),
            n(w.tasks),
            w.repetitions
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::{Direction, Kind};

    use crate::fixture;

    fn ratio(name: &str, v: f64) -> Metric {
        Metric::new(name, Unit::Ratio, Direction::HigherIsBetter, v)
    }

    /// A USL fit as a scale run records it: σ, κ and λ, its R², and what
    /// bounds it (its code and its name).
    fn usl_metrics(
        [sigma, kappa, lambda]: [f64; 3],
        r_squared: f64,
        (code, bound): (f64, &str),
    ) -> [Metric; 5] {
        let lambda = Metric::new(
            "usl_lambda",
            Unit::OpsPerSec,
            Direction::HigherIsBetter,
            lambda,
        );
        let bound = Metric::new("usl_bound", Unit::Count, Direction::LowerIsBetter, code)
            .with_label("bound", bound);
        [
            ratio("usl_sigma", sigma),
            ratio("usl_kappa", kappa),
            lambda,
            ratio("usl_r_squared", r_squared),
            bound,
        ]
    }

    /// A run as `dyno scale --file` makes it from T(N) = 0.1 + 0.9/N, the
    /// figures worked out by hand.
    fn amdahl_run(ns: &[f64]) -> Run {
        let mut run = Run::new(Kind::Scale, "scaling from sweep.csv (threads, seconds)");
        run.id = "01JD5Z7M3Q8XK2V4N6R9T0W1YC".parse().unwrap();
        run.started_at = "2026-11-22T09:30:00Z".parse().unwrap();
        run.environment = fixture::environment();
        run.settings = serde_json::json!({
            "source": "file", "path": "sweep.csv", "format": "csv",
            "n_column": "threads", "value_column": "seconds", "measure": "time",
        });
        let base = ns[0];
        let t = |n: f64| 0.1 + 0.9 / n;
        for &n in ns {
            let label = format!("{n}");
            let speedup = base * t(base) / t(n);
            run.metrics.push(
                Metric::new("time_ns", Unit::Ns, Direction::LowerIsBetter, t(n) * 1e9)
                    .with_label("n", &label),
            );
            run.metrics
                .push(ratio("speedup", speedup).with_label("n", &label));
            run.metrics
                .push(ratio("efficiency", speedup / n).with_label("n", &label));
            if n != 1.0 {
                let d = 1.0 - 1.0 / n;
                run.metrics.push(
                    ratio("amdahl_parallel_fraction", (1.0 - 1.0 / speedup) / d)
                        .with_label("n", &label),
                );
                run.metrics.push(
                    ratio("karp_flatt_serial_fraction", (1.0 / speedup - 1.0 / n) / d)
                        .with_label("n", &label),
                );
            }
        }
        let last = ns[ns.len() - 1];
        run.metrics.push(
            ratio("best_speedup", base * t(base) / t(last)).with_label("n", format!("{last}")),
        );
        run.headline = Some("best_speedup".into());
        run.metrics.push(ratio("amdahl_fit_parallel_fraction", 0.9));
        run.metrics
            .push(ratio("amdahl_fit_ceiling", 10.0).with_label("predicted", "true"));
        run
    }

    #[test]
    fn report_of_a_full_sweep() {
        let mut run = amdahl_run(&[1.0, 2.0, 4.0, 8.0]);
        run.metrics.push(ratio("amdahl_fit_r_squared", 1.0));
        let usl = usl_metrics([0.0917, 0.000_123_4, 1.0021], 0.9991, (1.0, "contention"));
        run.metrics.extend(usl);
        for m in [
            Metric::new("usl_peak_n", Unit::Count, Direction::HigherIsBetter, 85.0),
            Metric::new(
                "usl_peak_throughput",
                Unit::OpsPerSec,
                Direction::HigherIsBetter,
                8.9,
            ),
            ratio("usl_peak_speedup", 8.9),
            Metric::new(
                "usl_peak_time_ns",
                Unit::Ns,
                Direction::LowerIsBetter,
                112_359_550.0,
            ),
        ] {
            run.metrics.push(m.with_label("predicted", "true"));
        }
        run.warn(
            "few_points",
            "the fits rest on 4 values of N (6 or more recommended): treat σ, κ and the peak as rough; measure more values of N",
        );
        insta::assert_snapshot!(scale_report(&run));
    }

    #[test]
    fn report_of_two_points_without_n1() {
        let mut run = amdahl_run(&[2.0, 4.0]);
        run.settings = serde_json::json!({
            "source": "run", "run_id": "01JD5Z7M3Q8XK2V4N6R9T0W1YB", "parameter": "j",
            "command": "make -j {j}", "where": {"cc": "gcc"}, "measure": "time",
        });
        run.description = "scaling of 'make -j {j}' with cc=gcc over j".into();
        let report = scale_report(&run);
        assert!(report.contains("Baseline   N = 2"), "{report}");
        assert!(report.contains("USL        not fitted"), "{report}");
        insta::assert_snapshot!(report);
    }

    #[test]
    fn report_of_throughputs_with_a_measured_peak() {
        let mut run = Run::new(Kind::Scale, "scaling from rps.json (clients, rps)");
        run.settings = serde_json::json!({
            "source": "workload", "workload": "int64", "iterations": 150_000_000u64,
            "tasks": 64, "repetitions": 3,
        });
        for (n, x, s) in [("1", 1000.0, 1.0), ("2", 1900.0, 1.9), ("4", 1500.0, 1.5)] {
            run.metrics.push(
                Metric::new("throughput", Unit::OpsPerSec, Direction::HigherIsBetter, x)
                    .with_label("n", n),
            );
            run.metrics.push(ratio("speedup", s).with_label("n", n));
        }
        run.metrics
            .push(ratio("best_speedup", 1.9).with_label("n", "2"));
        let usl = usl_metrics([0.05, 0.1, 1000.0], 0.98, (2.0, "coherency"));
        run.metrics.extend(usl);
        run.metrics.push(Metric::new(
            "usl_peak_n",
            Unit::Count,
            Direction::HigherIsBetter,
            3.0,
        ));
        run.metrics.push(Metric::new(
            "usl_peak_throughput",
            Unit::OpsPerSec,
            Direction::HigherIsBetter,
            1850.0,
        ));
        let report = scale_report(&run);
        assert!(report.contains("THROUGHPUT"), "{report}");
        assert!(report.contains("peak at N* = 3, "), "{report}");
        assert!(!report.contains("(predicted)"), "{report}");
        assert!(report.contains("coherency-bound"), "{report}");
        assert!(report.contains("strong scaling"), "{report}");
    }

    #[test]
    fn significant_figures() {
        assert_eq!(sig(0.0917), "0.09170");
        assert_eq!(sig(0.000_123_4), "1.234e-4");
        assert_eq!(sig(1.0021), "1.002");
        assert_eq!(sig(12345.0), "12345");
        assert_eq!(sig(0.0), "0");
        assert_eq!(sig(0.099_999_9), "0.1000");
    }
}
