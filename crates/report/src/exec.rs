//! The report of a `dyno run` (kind `exec`): one block per benchmark with
//! its time, interval, range, CPU and memory, then the comparison with the
//! reference. Everything is read back from the Run's labelled metrics, so a
//! stored run prints the same as a fresh one.

use std::fmt::Write as _;

use dyno_model::names::{exec, label};
use dyno_model::record::ExecRecord;
use dyno_model::units;
use dyno_model::{Metric, Run, UncertaintyMethod};
use dyno_stats::Summary;
use dyno_stats::compare::{Verdict, runs_needed_to_test};

/// Significance level of `dyno run`'s comparisons (the exec engine's
/// `ALPHA`; the report crate does not depend on the engine).
const ALPHA: f64 = 0.05;

use crate::format::{counted, format_value};

use dyno_model::record::{Bench, benches};

/// The wall-time summary of a benchmark: a method here, since the model
/// crate that holds [`Bench`] does not depend on the statistics.
pub(crate) trait BenchSummary {
    /// The wall-time summary (ns) of its runs.
    fn summary(&self) -> Option<Summary>;
}

impl BenchSummary for Bench<'_> {
    fn summary(&self) -> Option<Summary> {
        Summary::of(&self.wall.samples)
    }
}

fn stop_reason(rule: &str) -> &str {
    match rule {
        "runs" => "the runs asked for",
        "target_rse" => "target error reached",
        "max_time" => "--max-time reached",
        "max_runs" => "--max-runs reached",
        "interrupted" => "interrupted",
        other => other,
    }
}

/// The human report of an exec run.
pub fn exec_report(run: &Run) -> String {
    let mut out = String::new();
    if let Some(shell) = run.metric(exec::SHELL_STARTUP) {
        let sd = shell
            .uncertainty
            .as_ref()
            .and_then(|u| u.stddev)
            .map_or_else(String::new, |sd| format!(" ± {}", units::duration(sd)));
        let _ = writeln!(
            out,
            "Shell start-up: {}{sd} ({} runs), subtracted from every run\n",
            units::duration(shell.value),
            shell.samples.len()
        );
    }
    let benches = benches(run);
    for (i, b) in benches.iter().enumerate() {
        let _ = writeln!(out, "Benchmark {}: {}", i + 1, b.name);
        let Some(s) = b.summary() else { continue };
        let ci = b.wall.uncertainty.as_ref().map_or_else(String::new, |u| {
            format!(
                "    {:.0}% CI {} … {} ({})",
                u.confidence * 100.0,
                units::duration(u.low),
                units::duration(u.high),
                match u.method {
                    UncertaintyMethod::Bootstrap => "bootstrap",
                    UncertaintyMethod::StudentT => "Student t",
                    UncertaintyMethod::OrderStatistic => "order statistic",
                    UncertaintyMethod::Delta => "delta method",
                }
            )
        });
        // One run has no spread to show.
        let sd = if s.n > 1 {
            units::duration(s.stddev)
        } else {
            "n/a".to_owned()
        };
        let _ = writeln!(
            out,
            "  Time (mean ± σ):   {} ± {sd}{ci}",
            units::duration(s.mean)
        );
        let stopped = b
            .stopped_by
            .as_deref()
            .map_or_else(String::new, |r| format!(" ({})", stop_reason(r)));
        let _ = writeln!(
            out,
            "  Range (min … max): {} … {}    median {}    {}{stopped}",
            units::duration(s.min),
            units::duration(s.max),
            units::duration(s.median),
            counted(s.n as u64, "run")
        );
        let value = |m: Option<&Metric>| {
            m.map_or_else(|| "n/a".to_owned(), |m| format_value(m.value, m.unit))
        };
        let _ = writeln!(
            out,
            "  CPU: user {}, system {}, {}    peak RSS {}",
            value(b.user),
            value(b.system),
            value(b.cpu),
            value(b.rss)
        );
        if let Some(f) = b.failed.filter(|f| f.value > 0.0) {
            let _ = writeln!(out, "  Failed runs: {} of {}", f.value, s.n);
        }
        out.push('\n');
    }
    not_run(run, &benches, &mut out);
    comparison(&benches, &mut out);
    // Without a comparison the last block's blank line already separates
    // the warnings.
    if out.ends_with("\n\n") {
        out.pop();
    }
    crate::text::watched(run, "run", &mut out);
    crate::text::warnings(run, &mut out);
    out
}

/// Benchmarks in the run's plan that finished no timed run (an interrupt
/// came first): they have no metrics, but are named rather than dropped.
fn not_run(run: &Run, benches: &[Bench<'_>], out: &mut String) {
    for p in ExecRecord::planned(run) {
        let name = p.name.as_str();
        if p.runs != 0 {
            continue;
        }
        if benches.iter().all(|b| b.name != name) {
            let _ = writeln!(
                out,
                "Not run: {name}
  no timed run finished before the stop
"
            );
        }
    }
}

/// The comparison with the reference, one line per other benchmark.
fn comparison(benches: &[Bench<'_>], out: &mut String) {
    let Some(reference) = benches
        .iter()
        .find_map(|b| b.ratio.and_then(|r| r.label(label::REFERENCE)))
    else {
        return;
    };
    let _ = writeln!(out, "Compared with '{reference}':");
    for b in benches {
        let (Some(ratio), Some(p), Some(verdict)) = (b.ratio, b.p_value, b.verdict) else {
            continue;
        };
        let ci = ratio.uncertainty.as_ref().map_or_else(String::new, |u| {
            format!(" (95% CI {:.3}–{:.3}, bootstrap)", u.low, u.high)
        });
        let words = match Verdict::of_metric(verdict) {
            Verdict::TooFewRuns => format!(
                "too few runs to test (need ≥ {} per command)",
                runs_needed_to_test(ALPHA)
            ),
            Verdict::Inconclusive => {
                "inconclusive (the interval excludes no difference, the rank test does not confirm it)"
                    .to_owned()
            }
            v => v.to_string(),
        };
        let p = if p.value < 0.001 {
            "p < 0.001".to_owned()
        } else {
            format!("p = {:.3}", p.value)
        };
        let _ = writeln!(
            out,
            "  '{}' takes {:.3}× the time{ci}, {p}: {words}",
            b.name, ratio.value
        );
    }
}

#[cfg(test)]
mod tests {
    use dyno_model::{Direction, Kind, Uncertainty, Unit};

    use super::*;
    use crate::{hyperfine_csv, hyperfine_json, hyperfine_markdown};

    fn bench_metrics(name: &str, n: &str, walls: &[f64], ratio: Option<(f64, f64)>) -> Vec<Metric> {
        let label = |m: Metric| m.with_label("command", name).with_label("param.n", n);
        let mut wall = Metric::new(
            "wall_ns",
            Unit::Ns,
            Direction::LowerIsBetter,
            walls.iter().sum::<f64>() / walls.len() as f64,
        );
        wall.samples = walls.to_vec();
        wall.uncertainty = Some(Uncertainty {
            method: UncertaintyMethod::Bootstrap,
            confidence: 0.95,
            low: wall.value * 0.99,
            high: wall.value * 1.01,
            n: walls.len() as u64,
            stddev: None,
        });
        let mut rss = Metric::new(
            "peak_rss_bytes",
            Unit::Bytes,
            Direction::LowerIsBetter,
            4.0 * 1048576.0,
        );
        rss.samples = vec![4.0 * 1048576.0; walls.len()];
        let mut failed = Metric::new("failed_runs", Unit::Count, Direction::LowerIsBetter, 1.0);
        failed.samples = vec![0.0; walls.len()];
        failed.samples[0] = -9.0;
        let mut out = vec![
            label(wall),
            label(Metric::new(
                "user_ns",
                Unit::Ns,
                Direction::LowerIsBetter,
                1.5e6,
            )),
            label(Metric::new(
                "system_ns",
                Unit::Ns,
                Direction::LowerIsBetter,
                0.5e6,
            )),
            label(Metric::new(
                "cpu_percent",
                Unit::Percent,
                Direction::LowerIsBetter,
                4.0,
            )),
            label(rss),
            label(failed),
        ];
        if let Some((value, p)) = ratio {
            let mut r = Metric::new(
                "ratio_to_reference",
                Unit::Ratio,
                Direction::LowerIsBetter,
                value,
            );
            r.uncertainty = Some(Uncertainty {
                method: UncertaintyMethod::Bootstrap,
                confidence: 0.95,
                low: value - 0.05,
                high: value + 0.05,
                n: walls.len() as u64,
                stddev: None,
            });
            for m in [
                r,
                Metric::new("p_value", Unit::Ratio, Direction::LowerIsBetter, p),
                Metric::new("verdict", Unit::Ratio, Direction::HigherIsBetter, -1.0),
            ] {
                out.push(label(m).with_label("reference", "make -j 2"));
            }
        }
        out
    }

    fn fixture() -> Run {
        let mut run = Run::new(Kind::Exec, "time 2 commands");
        let mut shell = Metric::new(
            "shell_startup_ns",
            Unit::Ns,
            Direction::LowerIsBetter,
            6.0e5,
        );
        shell.samples = vec![6.0e5; 50];
        run.metrics.push(shell);
        run.metrics
            .extend(bench_metrics("make -j 2", "2", &[40e6, 42e6, 41e6], None));
        run.metrics.extend(bench_metrics(
            "make -j 1",
            "1",
            &[80e6, 81e6, 82e6],
            Some((1.95, 0.0004)),
        ));
        run.settings = serde_json::json!({"benchmarks": [
            {"name": "make -j 2", "stopped_by": "target_rse"},
            {"name": "make -j 1", "stopped_by": "max_runs"},
        ]});
        run.warn("failed_runs", "'make -j 2': 1 of 3 runs failed");
        run
    }

    #[test]
    fn benches_group_metrics_by_their_labels() {
        let run = fixture();
        let b = benches(&run);
        assert_eq!(b.len(), 2);
        assert_eq!(b[1].name, "make -j 1");
        assert_eq!(b[1].parameters.get("n"), Some(&"1"));
        assert_eq!(b[1].ratio.unwrap().value, 1.95);
        assert!(b[0].ratio.is_none());
        assert_eq!(b[0].stopped_by.as_deref(), Some("target_rse"));
        assert_eq!(b[0].exit_codes(), vec![None, Some(0), Some(0)]);
    }

    #[test]
    fn report_names_the_verdict_method_single_runs_and_what_did_not_run() {
        let mut run = Run::new(Kind::Exec, "time 3 commands");
        run.metrics.extend(bench_metrics("once", "1", &[5e6], None));
        let mut slow = bench_metrics("slow", "2", &[80e6, 81e6, 82e6], Some((16.2, 0.1)));
        for m in &mut slow {
            if let Some(u) = &mut m.uncertainty
                && m.name == "wall_ns"
            {
                u.method = UncertaintyMethod::StudentT;
            }
            if m.name == "verdict" {
                m.value = 0.0;
                m.labels.insert("verdict".into(), "too_few_runs".into());
            }
        }
        run.metrics.extend(slow);
        run.settings = serde_json::json!({"benchmarks": [
            {"name": "once", "runs": 1, "stopped_by": "interrupted"},
            {"name": "slow", "runs": 3, "stopped_by": "runs"},
            {"name": "never", "runs": 0, "stopped_by": "interrupted"},
        ]});
        let text = exec_report(&run);
        assert!(text.contains("5.000 ms ± n/a"), "{text}");
        assert!(text.contains("(Student t)"), "{text}");
        assert!(
            text.contains("p = 0.100: too few runs to test (need ≥ 4 per command)"),
            "{text}"
        );
        assert!(!text.contains("no significant difference"), "{text}");
        assert!(text.contains("Not run: never"), "{text}");
        let md = hyperfine_markdown(&run);
        assert!(md.contains("| `once` | 5.0 | 5.0 | 5.0 |"), "{md}");
        assert!(md.contains("| `slow` | 81.0 ± 1.0 |"), "{md}");
        // A run saved before the label existed reads its value.
        for m in &mut run.metrics {
            m.labels.remove("verdict");
        }
        assert!(exec_report(&run).contains("no significant difference"));
    }

    #[test]
    fn repeated_labels_of_an_old_run_pair_by_position() {
        // Saved before names were numbered: two benchmarks both labelled
        // "same", the second with other CPU figures. Each keeps its own.
        let mut run = Run::new(Kind::Exec, "time 2 commands");
        run.metrics
            .extend(bench_metrics("same", "1", &[1e6, 1.1e6, 1.2e6], None));
        let mut second = bench_metrics("same", "1", &[9e6, 9.1e6, 9.2e6], None);
        for m in &mut second {
            if m.name == "user_ns" {
                m.value = 7.5e6;
            }
        }
        run.metrics.extend(second);
        let b = benches(&run);
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].user.unwrap().value, 1.5e6);
        assert_eq!(b[1].user.unwrap().value, 7.5e6);
        assert_eq!(b[1].wall.value, b[1].summary().unwrap().mean);
    }

    #[test]
    fn exec_report_snapshot() {
        insta::assert_snapshot!(exec_report(&fixture()));
    }

    #[test]
    fn hyperfine_layouts_snapshot() {
        let run = fixture();
        let mut csv = Vec::new();
        hyperfine_csv(&run, &mut csv).unwrap();
        insta::assert_snapshot!("hyperfine_csv", String::from_utf8(csv).unwrap());
        insta::assert_snapshot!("hyperfine_markdown", hyperfine_markdown(&run));
        insta::assert_json_snapshot!("hyperfine_json", hyperfine_json(&run));
    }
}
