//! `dyno quick`'s int64 line: the loop on one thread and on every core,
//! interleaved repetition by repetition, turned into metrics (times,
//! throughputs, the speedup, the efficiency and Amdahl's parallel
//! fraction), with the warnings that judge them ([`judge`]).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

use dyno_model::names::quick as name;
use dyno_model::record::QuickInt64;
use dyno_model::{Direction, Judgement, Merge, Metric, Samples, Unit};
use dyno_stats::sampled_metric;
use dyno_stats::scaling::{self, Measure, Point};

use crate::int64;

/// What the int64 line runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub iterations: u64,
    pub repetitions: usize,
    /// Threads of the all-cores line.
    pub threads: usize,
}

impl Settings {
    /// The part of quick's record that describes this line.
    pub fn record(&self) -> QuickInt64 {
        QuickInt64 {
            iterations: self.iterations,
            repetitions: self.repetitions as u64,
            warmup_repetitions: 1,
            threads: vec![1, self.threads as u64],
            interleaved: true,
        }
    }
}

/// Above this relative half-width of a time's interval the line is noisy.
const NOISY: f64 = 0.05;

/// One warning about the int64 line.
#[derive(Debug, Clone, PartialEq)]
pub enum Int64Warning {
    /// Not [`int64::STANDARD_ITERATIONS`]: not comparable with standard runs.
    NonstandardIterations { iterations: u64 },
    /// A time whose interval's half-width is above 5% of its value.
    Noisy { metric: String, half_width: f64 },
    /// More threads than the CPUs this process may use.
    Oversubscribed { threads: usize, cpus: usize },
    /// One repetition: no interval.
    SingleRepetition,
    /// An efficiency above what N copies can reach.
    Superlinear { efficiency: f64, threads: usize },
}

impl Judgement for Int64Warning {
    /// The stable, machine-readable code.
    fn code(&self) -> &'static str {
        match self {
            Int64Warning::NonstandardIterations { .. } => "nonstandard_iterations",
            Int64Warning::Noisy { .. } => "noisy",
            Int64Warning::Oversubscribed { .. } => "oversubscribed",
            Int64Warning::SingleRepetition => "single_repetition",
            Int64Warning::Superlinear { .. } => "superlinear",
        }
    }
}

impl fmt::Display for Int64Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Int64Warning::NonstandardIterations { iterations } => write!(
                f,
                "int64 ran {iterations} iterations instead of the standard {}: its times are not comparable with standard runs",
                int64::STANDARD_ITERATIONS
            ),
            Int64Warning::Noisy { metric, half_width } => write!(
                f,
                "{metric} varies by ±{:.1}% between repetitions: the machine is busy or its clock changes; close other work or add --repetitions",
                half_width * 100.0
            ),
            Int64Warning::Oversubscribed { threads, cpus } => write!(
                f,
                "--threads {threads} is more than the {cpus} CPU{} this process may use: the copies take turns, so the speedup cannot pass {cpus} and no Amdahl parallel fraction is given (it would describe the oversubscription, not the machine)",
                if *cpus == 1 { "" } else { "s" },
            ),
            Int64Warning::SingleRepetition => f.write_str(
                "one repetition (--repetitions 1): the figures have no confidence interval and a single disturbance moves them; use 3 or more to compare",
            ),
            Int64Warning::Superlinear {
                efficiency,
                threads,
            } => write!(
                f,
                "int64 efficiency {efficiency:.1}% is above 100%: {threads} copies cannot do more than {threads} times one copy's work, so the excess (and a parallel fraction above 100%) is noise or a change of clock speed between the lines, not a property of the machine",
            ),
        }
    }
}

/// Warnings about the line's `metrics` (what [`measure`] returned), on a
/// machine with `cpus` CPUs: nonstandard iterations, noisy times, more
/// threads than CPUs, a single repetition, and a super-linear figure (N
/// copies on N threads cannot do more than N times one copy's work, so an
/// efficiency above 100% — 105% with several repetitions — is noise or a
/// clock change, never a property of the machine).
pub fn judge(settings: &Settings, metrics: &[Metric], cpus: usize) -> Vec<Int64Warning> {
    let mut warnings = Vec::new();
    if settings.iterations != int64::STANDARD_ITERATIONS {
        warnings.push(Int64Warning::NonstandardIterations {
            iterations: settings.iterations,
        });
    }
    for m in metrics.iter().filter(|m| m.unit == Unit::Ns) {
        if let Some(half_width) = relative_half_width(m).filter(|w| *w > NOISY) {
            warnings.push(Int64Warning::Noisy {
                // With its part, should a quick line's time be the noisy
                // one (`latency_ns{part=disk, …}`).
                metric: m.display_name(),
                half_width,
            });
        }
    }
    if settings.threads > cpus {
        warnings.push(Int64Warning::Oversubscribed {
            threads: settings.threads,
            cpus,
        });
    }
    if settings.repetitions == 1 {
        warnings.push(Int64Warning::SingleRepetition);
    }
    // With one repetition any excess is unexplained noise; with several,
    // a few percent is within it (as the scaling analysis allows 5%).
    let limit = if settings.repetitions == 1 {
        100.0
    } else {
        105.0
    };
    if let Some(efficiency) = metrics
        .iter()
        .find(|m| m.name == name::INT64_EFFICIENCY_PERCENT)
        .map(|m| m.value)
        .filter(|e| *e > limit)
    {
        warnings.push(Int64Warning::Superlinear {
            efficiency,
            threads: settings.threads,
        });
    }
    warnings
}

fn relative_half_width(m: &Metric) -> Option<f64> {
    let u = m.uncertainty.as_ref()?;
    Some((u.high - u.low) / 2.0 / m.value.abs())
}

/// Runs the int64 loop on one thread and on all threads, interleaved
/// repetition by repetition after one discarded warm-up of each, so drift of
/// the machine's clock affects both lines alike. `cpus` is what this
/// process may use; `progress` hears each step.
/// An interrupt ends the repetitions early; with none finished the result
/// is empty.
pub fn measure(
    settings: &Settings,
    cpus: usize,
    interrupted: &AtomicBool,
    progress: &mut dyn FnMut(&str),
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
    let mut metrics = lines((name::INT64_1T, name::INT64_1T_OPS_PER_SEC), &single);
    if parallel {
        metrics.extend(lines((name::INT64_NT, name::INT64_NT_OPS_PER_SEC), &multi));
        metrics.extend(scaling_metrics(
            &single,
            &multi,
            settings.threads,
            settings.threads > cpus,
        ));
    }
    Ok(metrics)
}

/// The speedup, the efficiency and Amdahl's parallel fraction of the
/// interleaved pairs (`oversubscribed`: more threads than CPUs, so no
/// parallel fraction).
fn scaling_metrics(
    single: &[int64::Measurement],
    multi: &[int64::Measurement],
    threads: usize,
    oversubscribed: bool,
) -> Vec<Metric> {
    // Speedup per interleaved pair of repetitions, so its interval
    // reflects how the two lines moved together.
    let speedup: Vec<f64> = single
        .iter()
        .zip(multi)
        .flat_map(|(one, all)| {
            one.throughput_per_sec()
                .into_iter()
                .zip(all.throughput_per_sec())
                .map(|(t1, tn)| tn / t1)
        })
        .collect();
    let efficiency = speedup.iter().map(|s| 100.0 * s / threads as f64).collect();
    // Views of the two lines' times: shown and compared, never counted
    // beside them in a score.
    let speedup = view(name::INT64_SPEEDUP, Unit::Ratio, speedup, name::INT64_NT);
    let mean = speedup.value;
    let mut metrics = vec![
        speedup,
        view(
            name::INT64_EFFICIENCY_PERCENT,
            Unit::Percent,
            efficiency,
            name::INT64_SPEEDUP,
        ),
    ];
    // Amdahl's parallel fraction that would explain the mean speedup, by
    // the per-point formula of the scaling analysis (taken of the mean, so
    // it matches the speedup shown beside it). The all-cores line runs N
    // copies (weak scaling), so this p says how much of the machine's
    // throughput grows with cores, not how well one job splits. With more
    // threads than CPUs the copies take turns: the speedup is capped by the
    // CPUs, and a p fitted to it describes the oversubscription, not the
    // machine (judge says so).
    let points = [
        Point { n: 1.0, value: 1.0 },
        Point {
            n: threads as f64,
            value: mean,
        },
    ];
    if let Some(p) = scaling::analyse(&points, Measure::Throughput)
        .ok()
        .and_then(|a| a.points.get(1)?.amdahl_parallel_fraction)
        .filter(|p| p.is_finite() && !oversubscribed)
    {
        metrics.push(
            Metric::new(
                name::INT64_AMDAHL_PARALLEL_FRACTION,
                Unit::Ratio,
                Direction::HigherIsBetter,
                p,
            )
            .derived_of(name::INT64_SPEEDUP)
            .merged(Merge::None),
        );
    }
    metrics
}

/// A view of the two lines' times, `name` (higher is better) from one
/// value a run, derived from the metric `of`: shown and compared, never
/// merged.
fn view(name: &str, unit: Unit, samples: Vec<f64>, of: &str) -> Metric {
    sampled_metric(name, unit, Direction::HigherIsBetter, samples)
        .derived_of(of)
        .merged(Merge::None)
        .samples_are(Samples::Runs)
}

/// The wall-time and throughput metrics of one line of repetitions, named
/// `time` and `rate` ([`name::INT64_1T`] and [`name::INT64_1T_OPS_PER_SEC`],
/// or the N threads' pair).
fn lines((time, rate): (&str, &str), measurements: &[int64::Measurement]) -> Vec<Metric> {
    let wall: Vec<f64> = measurements
        .iter()
        .flat_map(|m| m.wall.iter().map(|w| w.as_nanos() as f64))
        .collect();
    let throughput: Vec<f64> = measurements
        .iter()
        .flat_map(int64::Measurement::throughput_per_sec)
        .collect();
    vec![
        sampled_metric(time, Unit::Ns, Direction::LowerIsBetter, wall)
            .primary()
            .merged(Merge::None)
            .samples_are(Samples::Runs),
        sampled_metric(rate, Unit::OpsPerSec, Direction::HigherIsBetter, throughput)
            .reciprocal_of(time)
            .merged(Merge::None)
            .samples_are(Samples::Runs),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(iterations: u64, repetitions: usize, threads: usize) -> Settings {
        Settings {
            iterations,
            repetitions,
            threads,
        }
    }

    #[test]
    fn a_small_line_measures_both_thread_counts_and_their_scaling() {
        let s = settings(100_000, 3, 2);
        let mut heard = Vec::new();
        let metrics = measure(&s, 2, &AtomicBool::new(false), &mut |p| {
            heard.push(p.to_owned())
        })
        .unwrap();
        let names: Vec<&str> = metrics.iter().map(|m| m.name.as_str()).collect();
        for name in [
            "int64_1t_ns",
            "int64_1t_ops_per_sec",
            "int64_nt_ns",
            "int64_nt_ops_per_sec",
            "int64_speedup",
            "int64_efficiency_percent",
        ] {
            assert!(names.contains(&name), "{name} missing from {names:?}");
        }
        let wall = metrics.iter().find(|m| m.name == "int64_1t_ns").unwrap();
        assert_eq!(wall.samples.len(), 3);
        assert_eq!(
            heard,
            [
                "int64: warm-up",
                "int64: repetition 1 of 3",
                "int64: repetition 2 of 3",
                "int64: repetition 3 of 3"
            ]
        );
        // Twice the threads of the CPUs: no parallel fraction.
        let over = measure(
            &settings(100_000, 2, 4),
            2,
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .unwrap();
        assert!(
            over.iter()
                .all(|m| m.name != "int64_amdahl_parallel_fraction")
        );
    }

    #[test]
    fn an_interrupt_before_the_first_pair_leaves_nothing() {
        let metrics = measure(
            &settings(1_000, 3, 2),
            2,
            &AtomicBool::new(true),
            &mut |_| {},
        )
        .unwrap();
        assert!(metrics.is_empty());
    }

    #[test]
    fn judge_names_each_doubt_with_its_code() {
        let efficiency = Metric::new(
            "int64_efficiency_percent",
            Unit::Percent,
            Direction::HigherIsBetter,
            103.0,
        );
        let codes = |s: Settings, metrics: &[Metric], cpus| {
            judge(&s, metrics, cpus)
                .iter()
                .map(Int64Warning::code)
                .collect::<Vec<_>>()
        };
        assert!(
            codes(
                settings(int64::STANDARD_ITERATIONS, 5, 2),
                std::slice::from_ref(&efficiency),
                2
            )
            .is_empty(),
            "103% with five repetitions is within noise"
        );
        assert_eq!(
            codes(settings(1_000, 1, 4), &[efficiency], 2),
            [
                "nonstandard_iterations",
                "oversubscribed",
                "single_repetition",
                "superlinear"
            ]
        );
        let noisy = sampled_metric(
            "int64_1t_ns",
            Unit::Ns,
            Direction::LowerIsBetter,
            vec![1.0e9, 1.5e9, 0.6e9],
        );
        let found = judge(&settings(int64::STANDARD_ITERATIONS, 3, 1), &[noisy], 2);
        assert_eq!(found.len(), 1);
        assert!(
            found[0].to_string().starts_with("int64_1t_ns varies by ±"),
            "{}",
            found[0]
        );
    }
}
