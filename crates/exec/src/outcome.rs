//! Turns an [`Outcome`] into the metrics, warnings and plan of a `Run`, so
//! every view (the report, hyperfine's JSON, CSV, Markdown, comparisons
//! later) reads one record.
//!
//! Each benchmark's metrics carry the labels `command` (its name) and
//! `param.NAME` per parameter. Times are in nanoseconds with 95% bootstrap
//! intervals of the mean; the comparison with the reference is a ratio of
//! means with its bootstrap interval, a Mann–Whitney p-value and a verdict.

use std::time::Duration;

use dyno_model::{Direction, Metric, Unit, Warning};
use dyno_stats::compare::{Verdict, bootstrap_metric, compare};
use dyno_stats::outliers::{first_is_outlier, outliers};
use dyno_stats::{Summary, sampled_metric};
use serde_json::json;

use crate::child::Status;
use crate::engine::{BenchResult, Benchmark, Outcome};
use crate::settings::{Policy, Settings};

/// Under a shell, a command shorter than this is mostly shell start-up
/// (hyperfine's threshold).
pub const SHORT_UNDER_SHELL: Duration = Duration::from_millis(5);

/// Significance level of the comparisons.
pub const ALPHA: f64 = 0.05;

/// How the comparisons are made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Compare {
    /// Index of the reference benchmark; the fastest when `None`.
    pub reference: Option<usize>,
    /// Relative differences below this are never called (0.02 = 2%).
    pub noise_band: f64,
    /// Seeds the bootstrap resampling.
    pub seed: u64,
}

/// The labels of a benchmark's metrics.
fn labelled(metric: Metric, b: &Benchmark) -> Metric {
    let mut m = metric.with_label("command", &b.name);
    for (name, value) in &b.parameters {
        m = m.with_label(format!("param.{name}"), value);
    }
    m
}

fn ns(d: Duration) -> f64 {
    d.as_nanos() as f64
}

impl BenchResult {
    /// Wall times of the timed runs, in nanoseconds.
    pub fn wall_ns(&self) -> Vec<f64> {
        self.samples.iter().map(|s| ns(s.wall)).collect()
    }

    fn failures(&self) -> usize {
        self.samples.iter().filter(|s| !s.status.success()).count()
    }
}

impl Outcome {
    /// The benchmark the others are compared with: the one given, or the
    /// one with the lowest mean wall time. `None` when nothing was timed.
    pub fn reference(&self, given: Option<usize>) -> Option<usize> {
        if let Some(i) =
            given.filter(|&i| self.results.get(i).is_some_and(|r| !r.samples.is_empty()))
        {
            return Some(i);
        }
        self.results
            .iter()
            .enumerate()
            .filter_map(|(i, r)| Summary::of(&r.wall_ns()).map(|s| (i, s.mean)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(i, _)| i)
    }

    /// Every metric of the run.
    pub fn metrics(&self, how: &Compare) -> Vec<Metric> {
        let mut out = Vec::new();
        if let Some(shell) = &self.shell_startup {
            out.push(sampled_metric(
                "shell_startup_ns",
                Unit::Ns,
                Direction::LowerIsBetter,
                shell.samples_ns.clone(),
            ));
        }
        let reference = self.reference(how.reference);
        for (i, r) in self.results.iter().enumerate() {
            if r.samples.is_empty() {
                continue;
            }
            let b = &r.benchmark;
            let seed = how.seed.wrapping_add(i as u64);
            let series =
                |f: fn(&crate::Sample) -> f64| r.samples.iter().map(f).collect::<Vec<f64>>();
            let lower = Direction::LowerIsBetter;
            out.push(labelled(
                bootstrap_metric("wall_ns", Unit::Ns, lower, r.wall_ns(), seed),
                b,
            ));
            out.push(labelled(
                bootstrap_metric("user_ns", Unit::Ns, lower, series(|s| ns(s.user)), seed),
                b,
            ));
            out.push(labelled(
                bootstrap_metric("system_ns", Unit::Ns, lower, series(|s| ns(s.system)), seed),
                b,
            ));
            let cpu: Vec<f64> = r
                .samples
                .iter()
                .filter(|s| !s.wall.is_zero())
                .map(|s| 100.0 * (ns(s.user) + ns(s.system)) / ns(s.wall))
                .collect();
            if !cpu.is_empty() {
                out.push(labelled(
                    sampled_metric("cpu_percent", Unit::Percent, lower, cpu),
                    b,
                ));
            }
            out.push(labelled(
                sampled_metric(
                    "peak_rss_bytes",
                    Unit::Bytes,
                    lower,
                    series(|s| s.max_rss_bytes as f64),
                ),
                b,
            ));
            let mut failed = Metric::new("failed_runs", Unit::Count, lower, r.failures() as f64);
            failed.samples = r
                .samples
                .iter()
                .map(|s| s.status.recorded_code() as f64)
                .collect();
            out.push(labelled(failed, b));

            let Some(reference) = reference.filter(|&j| j != i) else {
                continue;
            };
            let base = &self.results[reference];
            let Some(c) = compare(
                &r.wall_ns(),
                &base.wall_ns(),
                lower,
                how.noise_band,
                ALPHA,
                seed,
            ) else {
                continue;
            };
            let with_reference =
                |m: Metric| labelled(m, b).with_label("reference", &base.benchmark.name);
            let mut ratio = Metric::new("ratio_to_reference", Unit::Ratio, lower, c.ratio);
            ratio.uncertainty = Some(dyno_model::Uncertainty {
                method: dyno_model::UncertaintyMethod::Bootstrap,
                confidence: 1.0 - ALPHA,
                low: c.low,
                high: c.high,
                n: r.samples.len() as u64,
                stddev: None,
            });
            out.push(with_reference(ratio));
            out.push(with_reference(Metric::new(
                "p_value",
                Unit::Ratio,
                lower,
                c.p_value,
            )));
            let verdict = match c.verdict {
                Verdict::Faster => 1.0,
                Verdict::Slower => -1.0,
                Verdict::NoSignificantDifference => 0.0,
            };
            out.push(with_reference(Metric::new(
                "verdict",
                Unit::Ratio,
                Direction::HigherIsBetter,
                verdict,
            )));
        }
        out
    }

    /// What each benchmark ran and which rule ended it, for the run's
    /// settings (so the run can be repeated and its stopping explained).
    pub fn plan(&self) -> serde_json::Value {
        self.results
            .iter()
            .map(|r| {
                json!({
                    "name": r.benchmark.name,
                    "command": r.benchmark.command,
                    "parameters": r.benchmark.parameters.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
                    "runs": r.samples.len(),
                    "stopped_by": r.stopped_by.as_str(),
                })
            })
            .collect()
    }

    /// Everything that makes the figures less trustworthy.
    pub fn warnings(&self, settings: &Settings) -> Vec<Warning> {
        let mut out = Vec::new();
        let mut warn = |code: &str, message: String| {
            out.push(Warning {
                code: code.to_owned(),
                message,
            })
        };
        for r in &self.results {
            let name = &r.benchmark.name;
            let walls = r.wall_ns();
            let Some(summary) = Summary::of(&walls) else {
                continue;
            };
            if first_is_outlier(&walls) {
                warn(
                    "first_run_slow",
                    format!(
                        "the first run of '{name}' was much slower than the rest ({} against a median of {}): caches were probably cold; use --warmup",
                        fmt_ns(walls[0]),
                        fmt_ns(summary.median)
                    ),
                );
            }
            let flagged = outliers(&walls);
            let count = flagged.mad.len().max(flagged.tukey_severe.len());
            if count > 0 {
                warn(
                    "outliers",
                    format!(
                        "'{name}': {count} of {} runs are statistical outliers, likely interference from other programs; prefer the median, or rerun on a quiet machine",
                        walls.len()
                    ),
                );
            }
            if let Some(shell) = &self.shell_startup
                && summary.mean < ns(SHORT_UNDER_SHELL)
            {
                warn(
                    "too_short_for_shell",
                    format!(
                        "'{name}' takes {} while the shell's own start-up ({}) was subtracted from it: the figure is mostly calibration; use --shell none",
                        fmt_ns(summary.mean),
                        fmt_ns(ns(shell.wall))
                    ),
                );
            }
            if let Policy::Adaptive { target_rse, .. } = settings.policy {
                let rse = summary.relative_standard_error();
                if walls.len() >= 2 && rse > target_rse {
                    warn(
                        "high_variance",
                        format!(
                            "'{name}': the relative standard error of the mean is {:.1}% after {} runs ({}), above the {:.1}% target",
                            rse * 100.0,
                            walls.len(),
                            r.stopped_by.as_str().replace('_', "-"),
                            target_rse * 100.0
                        ),
                    );
                }
            }
            let rss = r.samples.iter().map(|s| s.max_rss_bytes).max().unwrap_or(0);
            if let Some(floor) = self.spawner_rss_bytes
                && rss as f64 <= floor as f64 * 1.25
            {
                warn(
                    "peak_rss_floor",
                    format!(
                        "'{name}': its peak RSS ({:.1} MiB) is close to dyno's own ({:.1} MiB), which Linux counts in every child it starts: read it as an upper bound",
                        rss as f64 / 1048576.0,
                        floor as f64 / 1048576.0
                    ),
                );
            }
            if walls.len() == 1 {
                warn(
                    "single_run",
                    format!("'{name}' ran once: there is no interval and no comparison"),
                );
            }
            let failures = r.failures();
            if failures > 0 {
                let timed_out = r
                    .samples
                    .iter()
                    .filter(|s| s.status == Status::TimedOut)
                    .count();
                let mut message = format!("'{name}': {failures} of {} runs failed", walls.len());
                if timed_out > 0 {
                    message.push_str(&format!(
                        " ({timed_out} ran past the timeout; their time is the timeout)"
                    ));
                }
                message.push_str(" and are included in the figures (--ignore-failure)");
                warn("failed_runs", message);
            }
        }
        if self.skipped_cleanup {
            warn(
                "cleanup_skipped",
                "the run was stopped, so the --conclude / --cleanup commands did not run"
                    .to_owned(),
            );
        }
        out
    }
}

fn fmt_ns(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.3} s", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.1} ms", v / 1e6)
    } else {
        format!("{:.1} µs", v / 1e3)
    }
}
