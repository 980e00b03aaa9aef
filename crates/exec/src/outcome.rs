//! Turns an [`Outcome`] into the metrics, warnings and plan of a `Run`, so
//! every view (the report, hyperfine's JSON, CSV, Markdown, comparisons
//! later) reads one record.
//!
//! Each benchmark's metrics carry the labels `command` (its name) and
//! `param.NAME` per parameter (repeated names are numbered by the engine, so
//! the labels tell every benchmark apart). Times are in nanoseconds with 95%
//! intervals of the mean (Student t below 10 runs, bootstrap from 10); the
//! comparison with the reference is a ratio of means with its bootstrap
//! interval, a Mann–Whitney p-value and a verdict, +1 / −1 / 0 with a
//! `verdict` label naming it (so "too few runs to test" is not read as "no
//! significant difference").

use std::time::Duration;

use dyno_model::names::{exec, label};
use dyno_model::record::PlannedBenchmark;
use dyno_model::{Direction, Merge, Metric, Samples, Unit, Warning};
use dyno_stats::compare::{
    Comparison, compare, mean_metric, runs_needed_to_test, smallest_p_value,
};
use dyno_stats::outliers::{first_is_outlier, outliers};
use dyno_stats::{Summary, sampled_metric};

use crate::child::Status;
use crate::engine::{BenchResult, Benchmark, Outcome};
use crate::settings::{Policy, Settings};
use dyno_model::units;

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
    let mut m = metric.with_label(label::COMMAND, &b.name);
    for (name, value) in &b.parameters {
        m = m.with_label(format!("{}{name}", label::PARAM_PREFIX), value);
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
    /// Benchmark `i`'s wall times against the reference's, seeded per
    /// benchmark, as the metrics record it and the warnings judge it.
    fn compare_wall(&self, i: usize, reference: usize, how: &Compare) -> Option<Comparison> {
        compare(
            &self.results[i].wall_ns(),
            &self.results[reference].wall_ns(),
            Direction::LowerIsBetter,
            how.noise_band,
            ALPHA,
            how.seed.wrapping_add(i as u64),
        )
    }

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
            out.push(
                sampled_metric(
                    exec::SHELL_STARTUP,
                    Unit::Ns,
                    Direction::LowerIsBetter,
                    shell.samples_ns.clone(),
                )
                .context()
                .merged(Merge::None)
                .samples_are(Samples::Runs),
            );
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
            // A Student-t interval of a few times can reach below zero,
            // which no time can: cut it there.
            let time = |name: &str, samples: Vec<f64>| {
                let mut m = mean_metric(name, Unit::Ns, lower, samples, seed)
                    .merged(Merge::None)
                    .samples_are(Samples::Runs);
                if let Some(u) = &mut m.uncertainty {
                    u.low = u.low.max(0.0);
                }
                labelled(m, b)
            };
            // The wall time is what `dyno run` measures; CPU time, CPU share
            // and memory explain it. CPU% moves against wall time whenever
            // the CPU time stays put, so it must never count beside it.
            out.push(time(exec::WALL, r.wall_ns()).primary());
            out.push(time(exec::USER, series(|s| ns(s.user))).diagnostic());
            out.push(time(exec::SYSTEM, series(|s| ns(s.system))).diagnostic());
            if let Some(cpu) = self.cpu_percent(r) {
                out.push(labelled(
                    Metric::new(exec::CPU_PERCENT, Unit::Percent, lower, cpu)
                        .diagnostic()
                        .merged(Merge::None),
                    b,
                ));
            }
            out.push(labelled(
                sampled_metric(
                    exec::PEAK_RSS,
                    Unit::Bytes,
                    lower,
                    series(|s| s.max_rss_bytes as f64),
                )
                .diagnostic()
                .merged(Merge::None)
                .samples_are(Samples::Runs),
                b,
            ));
            let mut failed =
                Metric::new(exec::FAILED_RUNS, Unit::Count, lower, r.failures() as f64)
                    .context()
                    .merged(Merge::None)
                    .samples_are(Samples::Runs);
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
            let Some(c) = self.compare_wall(i, reference, how) else {
                continue;
            };
            // The comparison within this run: read by its own views, never
            // compared across runs (the runs' wall times are).
            let with_reference = |m: Metric| {
                labelled(m.context().merged(Merge::None), b)
                    .with_label(label::REFERENCE, &base.benchmark.name)
            };
            let mut ratio = Metric::new(exec::RATIO_TO_REFERENCE, Unit::Ratio, lower, c.ratio);
            ratio.uncertainty =
                (c.low.is_finite() && c.high.is_finite()).then_some(dyno_model::Uncertainty {
                    method: c.method,
                    confidence: 1.0 - ALPHA,
                    low: c.low,
                    high: c.high,
                    n: r.samples.len() as u64,
                    stddev: None,
                });
            out.push(with_reference(ratio));
            out.push(with_reference(Metric::new(
                exec::P_VALUE,
                Unit::Ratio,
                lower,
                c.p_value,
            )));
            // +1 faster, −1 slower, 0 otherwise; the label names the verdict,
            // so "too few runs to test" is not read as "no difference".
            out.push(
                with_reference(Metric::new(
                    exec::VERDICT,
                    Unit::Ratio,
                    Direction::HigherIsBetter,
                    c.verdict.value(),
                ))
                .with_label(label::VERDICT, c.verdict.code()),
            );
        }
        out
    }

    /// CPU use as a percentage of wall time: total user + system time over
    /// total wall time of the timed runs, both with the shell's start-up
    /// subtracted (so measured the same way), as a ratio of sums rather
    /// than a mean of per-run ratios, which one near-zero run would swamp.
    ///
    /// `None` (shown as n/a) when the wall time is zero, or, under a shell,
    /// when the command's own time is below the shell's start-up: then both
    /// sides of the ratio are the difference of two close numbers, mostly
    /// noise (the audit saw 1338% for `echo hi`).
    fn cpu_percent(&self, r: &BenchResult) -> Option<f64> {
        let wall: f64 = r.samples.iter().map(|s| ns(s.wall)).sum();
        let cpu: f64 = r.samples.iter().map(|s| ns(s.user) + ns(s.system)).sum();
        let floor = self
            .shell_startup
            .as_ref()
            .map_or(0.0, |shell| ns(shell.wall) * r.samples.len() as f64);
        (wall > 0.0 && wall >= floor).then(|| 100.0 * cpu / wall)
    }

    /// What each benchmark ran and which rule ended it, for the run's
    /// settings (so the run can be repeated and its stopping explained).
    pub fn plan(&self) -> Vec<PlannedBenchmark> {
        self.results
            .iter()
            .map(|r| PlannedBenchmark {
                name: r.benchmark.name.clone(),
                command: r.benchmark.command.clone(),
                parameters: r.benchmark.parameters.iter().cloned().collect(),
                runs: r.samples.len() as u64,
                stopped_by: r.stopped_by.as_str().to_owned(),
            })
            .collect()
    }

    /// Everything that makes the figures less trustworthy; `how` is the
    /// comparison [`Outcome::metrics`] made.
    pub fn warnings(&self, settings: &Settings, how: &Compare) -> Vec<Warning> {
        let mut out = Vec::new();
        let mut warn = |code: &str, message: String| {
            out.push(Warning {
                code: code.to_owned(),
                message,
            })
        };
        let mut near_floor: Vec<&str> = Vec::new();
        let mut not_run: Vec<&str> = Vec::new();
        for r in &self.results {
            let name = &r.benchmark.name;
            let walls = r.wall_ns();
            let Some(summary) = Summary::of(&walls) else {
                not_run.push(name);
                continue;
            };
            if first_is_outlier(&walls) {
                warn(
                    "first_run_slow",
                    format!(
                        "the first run of '{name}' was much slower than the rest ({} against a median of {}): caches were probably cold; use --warmup",
                        units::duration(walls[0]),
                        units::duration(summary.median)
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
                        units::duration(summary.mean),
                        units::duration(ns(shell.wall))
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
                near_floor.push(name);
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
        if let Some(floor) = self.spawner_rss_bytes
            && !near_floor.is_empty()
        {
            warn(
                "peak_rss_floor",
                format!(
                    "the peak RSS of {} is close to dyno's own ({:.1} MiB), which Linux counts in every child it starts: read it as an upper bound",
                    quoted(&near_floor),
                    floor as f64 / 1048576.0
                ),
            );
        }
        if !not_run.is_empty() {
            warn(
                "not_run",
                format!(
                    "{} finished no timed run{}, so {} left out of the figures and comparisons",
                    quoted(&not_run),
                    if self.interrupted {
                        " before the stop"
                    } else {
                        ""
                    },
                    if not_run.len() == 1 {
                        "it is"
                    } else {
                        "they are"
                    }
                ),
            );
        }
        self.interleave_warning(settings, &mut warn);
        self.comparison_warnings(how, &mut warn);
        if self.skipped_conclude {
            warn(
                "conclude_skipped",
                "the run was stopped, so the --conclude command of the run it cut short did not run (the --cleanup commands did)"
                    .to_owned(),
            );
        }
        for failure in &self.cleanup_failures {
            warn(
                "cleanup_failed",
                format!("after the stop, the --cleanup command {failure}"),
            );
        }
        out
    }
}

/// Names quoted and joined: 'a', 'b' and 'c'.
fn quoted(names: &[&str]) -> String {
    let q: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    match q.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// Interleaved commands whose mean times differ by more than this factor
/// get a warning: the short one runs right after the long one.
pub const INTERLEAVE_RATIO_WARNING: f64 = 10.0;

impl Outcome {
    /// Interleaving times the short command right after the long one, whose
    /// wake (caches, CPU frequency, scheduler state) it inherits: `true`
    /// took 1.15 ms after `sleep 0.05` but 0.84 ms on its own. With very
    /// different lengths that bias outweighs the drift interleaving guards
    /// against, so say so.
    fn interleave_warning(&self, settings: &Settings, warn: &mut impl FnMut(&str, String)) {
        if !settings.interleave {
            return;
        }
        let means: Vec<(&str, f64)> = self
            .results
            .iter()
            .filter_map(|r| Some((r.benchmark.name.as_str(), Summary::of(&r.wall_ns())?.mean)))
            .collect();
        let (Some(short), Some(long)) = (
            means.iter().min_by(|a, b| a.1.total_cmp(&b.1)),
            means.iter().max_by(|a, b| a.1.total_cmp(&b.1)),
        ) else {
            return;
        };
        if means.len() < 2 || long.1 <= short.1 * INTERLEAVE_RATIO_WARNING {
            return;
        }
        warn(
            "interleaved_lengths",
            format!(
                "'{}' ({}) was timed in turns with '{}' ({}), more than {INTERLEAVE_RATIO_WARNING:.0}× longer, so each of its runs starts in the wake of a long one (caches, CPU frequency); interleaving guards against drift, but for commands this different in length --no-interleave times the short one more faithfully",
                short.0,
                units::duration(short.1),
                long.0,
                units::duration(long.1)
            ),
        );
    }

    /// Why a comparison that was asked for is missing or cannot be called.
    fn comparison_warnings(&self, how: &Compare, warn: &mut impl FnMut(&str, String)) {
        // A command that ran once has its own `single_run` warning.
        let timed: Vec<&BenchResult> = self
            .results
            .iter()
            .filter(|r| r.samples.len() >= 2)
            .collect();
        if timed.len() < 2 {
            return;
        }
        if let Some(reference) = self.reference(how.reference) {
            let base = &self.results[reference];
            let uncompared: Vec<&str> = self
                .results
                .iter()
                .enumerate()
                .filter(|&(i, r)| i != reference && r.samples.len() >= 2)
                .filter(|&(i, _)| self.compare_wall(i, reference, how).is_none())
                .map(|(_, r)| r.benchmark.name.as_str())
                .collect();
            if !uncompared.is_empty() && base.samples.len() >= 2 {
                let why = if base.samples.iter().any(|s| s.wall.is_zero()) {
                    "some of its runs measured 0 ns (below what the shell subtraction resolves), so the ratio has no interval"
                } else {
                    "the ratio of their means has no interval"
                };
                warn(
                    "no_comparison",
                    format!(
                        "{} could not be compared with '{}': {why}; use --shell none, more runs, or more work per run",
                        quoted(&uncompared),
                        base.benchmark.name
                    ),
                );
                return;
            }
        }
        let needed = runs_needed_to_test(ALPHA);
        let few = timed.iter().map(|r| r.samples.len()).min().unwrap_or(0);
        let untestable = timed.iter().enumerate().any(|(i, a)| {
            timed[..i]
                .iter()
                .any(|b| smallest_p_value(a.samples.len(), b.samples.len()) >= ALPHA)
        });
        if untestable {
            warn(
                "too_few_runs",
                format!(
                    "{few} runs of a command are too few to test a difference at p < {ALPHA} (Mann–Whitney needs at least {needed} runs per command): such comparisons give a ratio but no verdict; use --runs {needed} or more"
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{ShellStartup, StopRule, benchmarks};
    use crate::settings::Shell;
    use crate::{Sample, Status};

    fn ms(v: f64) -> Duration {
        Duration::from_secs_f64(v / 1e3)
    }

    /// An outcome of `commands`, each with its (wall, cpu) runs in ms.
    fn outcome(commands: &[(&str, &[(f64, f64)])], shell_ms: Option<f64>) -> Outcome {
        let settings = Settings::new(commands.iter().map(|c| c.0));
        let results = benchmarks(&settings)
            .unwrap()
            .into_iter()
            .zip(commands)
            .map(|(benchmark, (_, runs))| BenchResult {
                benchmark,
                samples: runs
                    .iter()
                    .map(|&(wall, cpu)| Sample {
                        wall: ms(wall),
                        user: ms(cpu),
                        system: Duration::ZERO,
                        max_rss_bytes: 1 << 20,
                        status: Status::Exited(0),
                        stdout: None,
                    })
                    .collect(),
                stopped_by: StopRule::Runs,
            })
            .collect();
        Outcome {
            results,
            shell_startup: shell_ms.map(|w| ShellStartup {
                shell: Shell::Sh,
                wall: ms(w),
                user: ms(w / 2.0),
                system: Duration::ZERO,
                samples_ns: vec![w * 1e6; 3],
            }),
            interrupted: false,
            skipped_conclude: false,
            cleanup_failures: Vec::new(),
            spawner_rss_bytes: Some(1 << 20),
            started_at: jiff::Timestamp::UNIX_EPOCH,
            duration: Duration::from_secs(1),
        }
    }

    fn how() -> Compare {
        Compare {
            reference: None,
            noise_band: 0.02,
            seed: 1,
        }
    }

    fn find<'a>(metrics: &'a [Metric], name: &str, command: &str) -> Option<&'a Metric> {
        metrics
            .iter()
            .find(|m| m.name == name && m.label("command") == Some(command))
    }

    #[test]
    fn cpu_percent_is_a_ratio_of_sums_and_na_under_the_shell_floor() {
        // The audit's `echo hi`: after subtracting a 1 ms shell start-up the
        // wall time is a few µs while the CPU time's noise is 70 µs; the
        // ratio was 1338%. Below the shell's start-up it is n/a.
        let echo: &[(f64, f64)] = &[(0.005, 0.07), (0.004, 0.0), (0.006, 0.08)];
        let busy: &[(f64, f64)] = &[(20.0, 19.0), (22.0, 21.0)];
        let o = outcome(&[("echo hi", echo), ("loop", busy)], Some(1.0));
        let m = o.metrics(&how());
        assert!(find(&m, "cpu_percent", "echo hi").is_none());
        let cpu = find(&m, "cpu_percent", "loop").unwrap().value;
        assert!((cpu - 100.0 * 40.0 / 42.0).abs() < 1e-9, "{cpu}");
        // Without a shell only a zero wall time is n/a.
        let o = outcome(&[("echo hi", echo), ("zero", &[(0.0, 0.0)])], None);
        let m = o.metrics(&how());
        assert!(find(&m, "cpu_percent", "echo hi").is_some());
        assert!(find(&m, "cpu_percent", "zero").is_none());
    }

    #[test]
    fn verdicts_are_labelled_so_too_few_runs_is_not_no_difference() {
        let fast: &[(f64, f64)] = &[(11.2, 1.0), (11.5, 1.0), (11.9, 1.0)];
        let slow: &[(f64, f64)] = &[(268.0, 1.0), (271.0, 1.0), (275.0, 1.0)];
        let o = outcome(&[("sleep 0.01", fast), ("sleep 0.3", slow)], None);
        let m = o.metrics(&how());
        let v = find(&m, "verdict", "sleep 0.3").unwrap();
        assert_eq!(v.value, 0.0);
        assert_eq!(v.label("verdict"), Some("too_few_runs"));
        let w = o.warnings(&Settings::new(["sleep 0.01", "sleep 0.3"]), &how());
        let few = w.iter().find(|w| w.code == "too_few_runs").unwrap();
        assert!(few.message.contains("at least 4 runs"), "{}", few.message);
    }

    #[test]
    fn warnings_name_commands_once_and_say_what_was_not_run() {
        let runs: &[(f64, f64)] = &[(10.0, 1.0), (11.0, 1.0), (10.5, 1.0), (10.2, 1.0)];
        let mut o = outcome(&[("a", runs), ("b", runs), ("c", &[])], None);
        o.interrupted = true;
        let w = o.warnings(&Settings::new(["a", "b", "c"]), &how());
        let floors: Vec<_> = w.iter().filter(|w| w.code == "peak_rss_floor").collect();
        assert_eq!(floors.len(), 1, "{w:?}");
        assert!(
            floors[0].message.contains("'a' and 'b'"),
            "{}",
            floors[0].message
        );
        let not_run = w.iter().find(|w| w.code == "not_run").unwrap();
        // Single runs: one `single_run` warning each, nothing more about
        // the comparison they cannot have.
        let o = outcome(&[("a", &[(10.0, 1.0)]), ("b", &[(20.0, 1.0)])], None);
        let codes: Vec<String> = o
            .warnings(&Settings::new(["a", "b"]), &how())
            .into_iter()
            .map(|w| w.code)
            .collect();
        assert_eq!(
            codes.iter().filter(|c| *c == "single_run").count(),
            2,
            "{codes:?}"
        );
        assert!(
            codes
                .iter()
                .all(|c| c != "too_few_runs" && c != "no_comparison"),
            "{codes:?}"
        );
        assert!(
            not_run
                .message
                .starts_with("'c' finished no timed run before the stop")
        );
    }

    #[test]
    fn interleaving_commands_of_very_different_length_is_warned() {
        let short: &[(f64, f64)] = &[(1.1, 1.0), (1.2, 1.0), (1.15, 1.0), (1.1, 1.0)];
        let long: &[(f64, f64)] = &[(50.0, 1.0), (51.0, 1.0), (50.5, 1.0), (50.2, 1.0)];
        let o = outcome(&[("true", short), ("sleep 0.05", long)], None);
        let mut s = Settings::new(["true", "sleep 0.05"]);
        let w = o.warnings(&s, &how());
        let lengths = w.iter().find(|w| w.code == "interleaved_lengths").unwrap();
        assert!(
            lengths.message.contains("--no-interleave"),
            "{}",
            lengths.message
        );
        assert!(lengths.message.starts_with("'true'"), "{}", lengths.message);
        s.interleave = false;
        assert!(
            o.warnings(&s, &how())
                .iter()
                .all(|w| w.code != "interleaved_lengths")
        );
        // Within 10×: no warning.
        let o = outcome(
            &[("true", short), ("near", &[(5.0, 1.0), (6.0, 1.0)])],
            None,
        );
        let w = o.warnings(&Settings::new(["true", "near"]), &how());
        assert!(w.iter().all(|w| w.code != "interleaved_lengths"));
    }

    #[test]
    fn all_zero_times_are_not_compared_and_say_why() {
        let zero: &[(f64, f64)] = &[(0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)];
        let o = outcome(&[("true", zero), (":", zero)], Some(1.0));
        let m = o.metrics(&how());
        assert!(m.iter().all(|m| m.name != "ratio_to_reference"));
        let w = o.warnings(&Settings::new(["true", ":"]), &how());
        assert!(w.iter().any(|w| w.code == "no_comparison"), "{w:?}");
        // Some zeros in the reference: still compared (Mann–Whitney, and a
        // Student-t interval for so few runs), never "no comparison".
        let some: &[(f64, f64)] = &[(0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (5.0, 0.0)];
        let ten: &[(f64, f64)] = &[(10.0, 0.0), (11.0, 0.0), (12.0, 0.0), (10.5, 0.0)];
        let o = outcome(&[("echo hi", some), ("sleep 0.01", ten)], Some(1.0));
        let metrics = o.metrics(&how());
        let ratio = metrics
            .iter()
            .find(|m| m.name == "ratio_to_reference")
            .expect("compared");
        assert!(ratio.value > 1.0, "{ratio:?}");
        let w = o.warnings(&Settings::new(["echo hi", "sleep 0.01"]), &how());
        assert!(w.iter().all(|w| w.code != "no_comparison"), "{w:?}");
    }
}
