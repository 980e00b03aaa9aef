//! A curve's analysis: per-point speedup and efficiency, the Amdahl and
//! USL fits, and the metrics and warnings of the `scale` run.

use dyno_model::names::{label, scale};
use dyno_model::{Direction, Kind, Merge, Metric, Run, Samples, Unit};
use dyno_stats::scaling::{
    self, AmdahlFit, Analysis, Bound, Measure, Point, ScalingError, USL_MIN_POINTS,
    USL_RECOMMENDED_POINTS, UslFit,
};

use crate::{Curve, Measured};

/// Efficiency above this is super-linear beyond noise (5% over N).
const SUPERLINEAR_EFFICIENCY: f64 = 1.05;

/// A USL penalty term smaller than this at the largest N is indistinguishable
/// from zero.
const NEGLIGIBLE_PENALTY: f64 = 1e-6;

/// A USL fit explaining less than this share of the variance is poor.
const POOR_FIT: f64 = 0.9;

/// Why a curve cannot be analysed.
#[derive(Debug, thiserror::Error)]
pub enum AnalyseError {
    #[error(
        "a scaling analysis needs at least 2 values of N, but there is {0}: measure more (3 for the USL fit, 6 or more recommended)"
    )]
    TooFewPoints(usize),
    #[error(transparent)]
    Scaling(#[from] ScalingError),
}

/// The scale run of a curve: per-point figures, the fits, warnings. Fewer
/// than two points are refused.
pub fn analyse(curve: Curve) -> Result<Run, AnalyseError> {
    if curve.points.len() < 2 {
        return Err(AnalyseError::TooFewPoints(curve.points.len()));
    }
    let Curve {
        mut points,
        measure,
        settings,
        description,
        environment,
        warnings,
        extra,
    } = curve;
    points.sort_by(|a, b| a.n.total_cmp(&b.n));
    let plain: Vec<Point> = points
        .iter()
        .map(|p| Point {
            n: p.n,
            value: p.value,
        })
        .collect();
    let analysis = scaling::analyse(&plain, measure)?;
    let amdahl = scaling::amdahl_fit(&plain, measure)?;
    let usl = if plain.len() >= USL_MIN_POINTS {
        Some(scaling::usl_fit(&plain, measure)?)
    } else {
        None
    };

    let mut run = Run::new(Kind::Scale, description);
    run.environment = environment;
    run.set_record(&settings);
    run.warnings = warnings;
    run.metrics = metrics(&points, &analysis, &amdahl, usl.as_ref(), measure);
    run.metrics.extend(extra);
    run.headline = Some(scale::BEST_SPEEDUP.into());

    let count = plain.len();
    if count < USL_MIN_POINTS {
        run.warn(
            "too_few_points",
            format!(
                "only {count} values of N: the USL (three parameters) needs at least {USL_MIN_POINTS}, so it was not fitted, and the Amdahl fit passes exactly through both points; measure {USL_RECOMMENDED_POINTS} or more"
            ),
        );
    } else if count < USL_RECOMMENDED_POINTS {
        run.warn(
            "few_points",
            format!(
                "the fits rest on {count} values of N ({USL_RECOMMENDED_POINTS} or more recommended): treat σ, κ and the peak as rough; measure more values of N"
            ),
        );
    }
    if analysis.baseline_n != 1.0 {
        run.warn(
            "no_baseline_at_1",
            format!(
                "there is no point at N = 1: speedups are relative to N = {}, assuming perfect scaling up to it, which overstates every speedup if that is not so",
                fmt_n(analysis.baseline_n)
            ),
        );
    }
    let above: Vec<String> = analysis
        .points
        .iter()
        .filter(|p| p.efficiency > SUPERLINEAR_EFFICIENCY)
        .map(|p| format!("N = {} ({:.0}%)", fmt_n(p.n), 100.0 * p.efficiency))
        .collect();
    if !above.is_empty() {
        run.warn(
            "superlinear",
            format!(
                "super-linear scaling: efficiency above 100% at {}. More units did more than their share, which usually means cache effects (the working set fits in the caches of more cores or nodes), a slowed baseline or noise; Amdahl and the USL assume speedup ≤ N and cannot describe it (their σ = κ = 0 is a floor, not linear scaling)",
                above.join(", ")
            ),
        );
    }
    if let Some(fit) = &usl
        && fit.r_squared < POOR_FIT
    {
        run.warn(
            "poor_fit",
            format!(
                "the USL explains the points poorly (R² = {:.3}): they may be noisy or follow another law; read σ, κ and the peak with care",
                fit.r_squared
            ),
        );
    }
    Ok(run)
}

/// How N is written in labels: `4`, `2.5`.
pub(crate) fn fmt_n(n: f64) -> String {
    format!("{n}")
}

/// The metrics of a scale run (names and labels are the contract the report
/// and the JSON readers rely on). Nothing non-finite is ever emitted: a
/// figure that is infinite or undefined is left out.
fn metrics(
    points: &[Measured],
    analysis: &Analysis,
    amdahl: &AmdahlFit,
    usl: Option<&UslFit>,
    measure: Measure,
) -> Vec<Metric> {
    use Direction::{HigherIsBetter as Higher, LowerIsBetter as Lower};
    let mut out = Vec::new();
    // A scale run is never split into segments: nothing merges.
    let mut push = |m: Metric| {
        if m.value.is_finite() && m.samples.iter().all(|s| s.is_finite()) {
            out.push(m.merged(Merge::None));
        }
    };
    // The fits and their predictions explain the measured points: shown
    // and compared as diagnostics, never a score's figure.
    let ratio = |name: &str, direction, value| {
        Metric::new(name, Unit::Ratio, direction, value).diagnostic()
    };
    for (measured, p) in points.iter().zip(&analysis.points) {
        let n = fmt_n(p.n);
        // The measured time (or throughput) at each N is what the run
        // exists for; its samples are the repetitions.
        let mut point = measured.metric.clone().primary().with_label(label::N, &n);
        if !point.samples.is_empty() {
            point = point.samples_are(Samples::Runs);
        }
        let measured_name = point.name.clone();
        push(point);
        // Speedup and efficiency are the same points seen against N = 1.
        push(
            ratio(scale::SPEEDUP, Higher, p.speedup)
                .derived_of(&measured_name)
                .with_label(label::N, &n),
        );
        push(
            ratio(scale::EFFICIENCY, Higher, p.efficiency)
                .derived_of(scale::SPEEDUP)
                .with_label(label::N, &n),
        );
        if let Some(f) = p.amdahl_parallel_fraction {
            push(
                ratio(scale::AMDAHL_PARALLEL_FRACTION, Higher, f)
                    .derived_of(scale::SPEEDUP)
                    .with_label(label::N, &n),
            );
        }
        if let Some(e) = p.karp_flatt_serial_fraction {
            push(
                ratio(scale::KARP_FLATT_SERIAL_FRACTION, Lower, e)
                    .derived_of(scale::SPEEDUP)
                    .with_label(label::N, &n),
            );
        }
    }
    let best = &analysis.points[analysis.best];
    push(
        ratio(scale::BEST_SPEEDUP, Higher, best.speedup)
            .derived_of(scale::SPEEDUP)
            .with_label(label::N, fmt_n(best.n)),
    );

    push(ratio(
        scale::AMDAHL_FIT_PARALLEL_FRACTION,
        Higher,
        amdahl.parallel_fraction,
    ));
    // The ceiling is the limit as N grows without bound: always a prediction,
    // and infinite (left out) when p = 1.
    push(
        ratio(scale::AMDAHL_FIT_CEILING, Higher, amdahl.ceiling)
            .with_label(label::PREDICTED, "true"),
    );
    if points.len() >= USL_MIN_POINTS {
        // Through two points the fit is exact: its R² says nothing.
        push(ratio(scale::AMDAHL_FIT_R_SQUARED, Higher, amdahl.r_squared));
    }

    if let Some(fit) = usl {
        let lowest = analysis.points[0].n;
        let highest = analysis.points[analysis.points.len() - 1].n;
        // Speedups are relative to the rate of one unit at the baseline.
        let unit_rate = analysis.points[0].throughput / analysis.baseline_n;
        push(ratio(scale::USL_SIGMA, Lower, fit.sigma));
        push(ratio(scale::USL_KAPPA, Lower, fit.kappa));
        push(Metric::new(scale::USL_LAMBDA, Unit::OpsPerSec, Higher, fit.lambda).diagnostic());
        push(ratio(scale::USL_R_SQUARED, Higher, fit.r_squared));
        // Super-linear points pin σ = κ = 0: that is not "almost linear".
        let superlinear = analysis
            .points
            .iter()
            .any(|p| p.efficiency > SUPERLINEAR_EFFICIENCY);
        let (code, name) = match fit.bound {
            Bound::Linear if superlinear => (0.0, scale::BOUND_SUPERLINEAR),
            Bound::Linear => (0.0, scale::BOUND_LINEAR),
            Bound::Contention => (1.0, scale::BOUND_CONTENTION),
            Bound::Coherency => (2.0, scale::BOUND_COHERENCY),
        };
        push(
            Metric::new(scale::USL_BOUND, Unit::Count, Lower, code)
                .context()
                .with_label(label::BOUND, name),
        );
        // A κ whose penalty over the measured range is below a millionth is
        // the fit's rounding noise (an exact Amdahl curve gives κ ≈ 1e-17),
        // and its "peak" would lie millions of N away: report none.
        let negligible = fit.kappa * highest * (highest - 1.0) < NEGLIGIBLE_PENALTY;
        if let (Some(peak), Some(x), false) = (fit.peak_n, fit.peak_throughput, negligible) {
            let label = |m: Metric| {
                if peak < lowest || peak > highest {
                    m.with_label(label::PREDICTED, "true")
                } else {
                    m
                }
            };
            push(label(Metric::new(
                scale::USL_PEAK_N,
                Unit::Count,
                Higher,
                peak,
            )));
            push(label(Metric::new(
                scale::USL_PEAK_THROUGHPUT,
                Unit::OpsPerSec,
                Higher,
                x,
            )));
            push(label(ratio(scale::USL_PEAK_SPEEDUP, Higher, x / unit_rate)));
            if measure == Measure::Time {
                push(label(Metric::new(
                    scale::USL_PEAK_TIME,
                    Unit::Ns,
                    Lower,
                    1e9 / x,
                )));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::Environment;
    use dyno_model::record::{FileSource, ScaleRecord};

    fn amdahl_curve(ns: &[f64]) -> Curve {
        Curve {
            points: ns
                .iter()
                .map(|&n| Measured::time(n, 0.1 + 0.9 / n))
                .collect(),
            measure: Measure::Time,
            settings: ScaleRecord::File(FileSource::default()),
            description: "test".into(),
            environment: Environment::default(),
            warnings: Vec::new(),
            extra: Vec::new(),
        }
    }

    fn value(run: &Run, name: &str, n: Option<&str>) -> Option<f64> {
        run.metrics
            .iter()
            .find(|m| m.name == name && m.label("n") == n)
            .map(|m| m.value)
    }

    #[test]
    fn an_amdahl_curve_gives_its_p_at_every_point_and_in_the_fit() {
        let ns: Vec<f64> = (1..=8).map(f64::from).collect();
        let run = analyse(amdahl_curve(&ns)).unwrap();
        assert_eq!(run.kind, Kind::Scale);
        for n in 2..=8 {
            let p = value(&run, "amdahl_parallel_fraction", Some(&n.to_string())).unwrap();
            assert!((p - 0.9).abs() < 1e-9, "N = {n}: {p}");
            let e = value(&run, "karp_flatt_serial_fraction", Some(&n.to_string())).unwrap();
            assert!((e - 0.1).abs() < 1e-9, "N = {n}: {e}");
        }
        assert_eq!(value(&run, "amdahl_parallel_fraction", Some("1")), None);
        assert!((value(&run, "amdahl_fit_parallel_fraction", None).unwrap() - 0.9).abs() < 1e-9);
        assert!((value(&run, "amdahl_fit_ceiling", None).unwrap() - 10.0).abs() < 1e-6);
        let t8 = value(&run, "time_ns", Some("8")).unwrap();
        assert!((t8 - (0.1 + 0.9 / 8.0) * 1e9).abs() < 1.0);
        let best = run.headline_metric().unwrap();
        assert_eq!(best.label("n"), Some("8"));
        assert!((best.value - 1.0 / (0.1 + 0.9 / 8.0)).abs() < 1e-9);
        for name in ["usl_sigma", "usl_kappa", "usl_lambda", "usl_r_squared"] {
            assert!(value(&run, name, None).unwrap().is_finite(), "{name}");
        }
        assert!(run.metrics.iter().all(|m| m.value.is_finite()));
        assert!(run.warnings.is_empty(), "{:?}", run.warnings);
    }

    #[test]
    fn a_perfect_curve_leaves_out_the_infinite_ceiling() {
        let mut curve = amdahl_curve(&[1.0, 2.0, 4.0]);
        for p in &mut curve.points {
            *p = Measured::time(p.n, 1.0 / p.n);
        }
        let run = analyse(curve).unwrap();
        assert_eq!(value(&run, "amdahl_fit_parallel_fraction", None), Some(1.0));
        assert_eq!(value(&run, "amdahl_fit_ceiling", None), None);
        assert!(run.metrics.iter().all(|m| m.value.is_finite()));
        assert!(run.warnings.iter().any(|w| w.code == "few_points"));
    }

    #[test]
    fn two_points_skip_the_usl_and_say_so() {
        let run = analyse(amdahl_curve(&[1.0, 2.0])).unwrap();
        assert!(value(&run, "speedup", Some("2")).is_some());
        assert!(value(&run, "amdahl_fit_parallel_fraction", None).is_some());
        assert_eq!(value(&run, "amdahl_fit_r_squared", None), None);
        assert_eq!(value(&run, "usl_sigma", None), None);
        assert!(run.warnings.iter().any(|w| w.code == "too_few_points"));
    }

    #[test]
    fn a_peak_beyond_the_measured_range_is_labelled_predicted() {
        // X(N) = N / (1 + 0.02(N − 1) + 0.001 N(N − 1)): the peak is at 31.
        let usl = |n: f64| n / (1.0 + 0.02 * (n - 1.0) + 0.001 * n * (n - 1.0));
        let mut curve = amdahl_curve(&[1.0]);
        curve.measure = Measure::Throughput;
        curve.points = [1.0, 2.0, 4.0, 8.0, 12.0, 16.0]
            .iter()
            .map(|&n| Measured::throughput(n, 1000.0 * usl(n)))
            .collect();
        let run = analyse(curve).unwrap();
        let peak = run.metric("usl_peak_n").unwrap();
        assert_eq!(peak.value, 31.0);
        assert_eq!(peak.label("predicted"), Some("true"));
        // Over N ≤ 16 the contention penalty (0.3) still exceeds the
        // coherency penalty (0.24), and the peak lies beyond: contention.
        assert_eq!(
            run.metric("usl_bound").unwrap().label("bound"),
            Some("contention")
        );
        assert!(run.metric("usl_peak_time_ns").is_none());
        let x = run.metric("usl_peak_throughput").unwrap().value;
        assert!((x / (1000.0 * usl(31.0)) - 1.0).abs() < 1e-3, "{x}");
    }

    #[test]
    fn without_n1_the_baseline_is_named() {
        let run = analyse(amdahl_curve(&[2.0, 4.0, 8.0])).unwrap();
        assert!(run.warnings.iter().any(|w| w.code == "no_baseline_at_1"));
        assert_eq!(value(&run, "speedup", Some("2")), Some(2.0));
    }

    #[test]
    fn one_point_is_refused_before_any_fit() {
        let err = analyse(amdahl_curve(&[1.0])).unwrap_err();
        assert!(matches!(err, AnalyseError::TooFewPoints(1)), "{err}");
        assert!(
            err.to_string()
                .starts_with("a scaling analysis needs at least 2 values of N, but there is 1:"),
            "{err}"
        );
    }
}
