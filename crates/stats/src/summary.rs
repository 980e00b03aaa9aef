//! Descriptive statistics of a sample and the Student-t interval of its mean.

use dyno_model::{Direction, Metric, Uncertainty, UncertaintyMethod, Unit};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Descriptive statistics of a sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1 in the denominator); 0 for one sample.
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
    pub median: f64,
}

impl Summary {
    /// Summarises `samples`; `None` when there are none or one is not finite.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let n = samples.len();
        let mean = samples.iter().sum::<f64>() / n as f64;
        let stddev = if n > 1 {
            let ss: f64 = samples.iter().map(|x| (x - mean).powi(2)).sum();
            (ss / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Some(Summary {
            n,
            mean,
            stddev,
            min: sorted[0],
            max: sorted[n - 1],
            median,
        })
    }

    /// Relative standard error of the mean (stddev / sqrt(n) / mean).
    pub fn relative_standard_error(&self) -> f64 {
        if self.mean == 0.0 {
            return f64::INFINITY;
        }
        self.stddev / (self.n as f64).sqrt() / self.mean.abs()
    }
}

/// The two-sided Student-t confidence interval of the mean at `confidence`
/// (e.g. 0.95). `None` for fewer than two samples, where no interval exists.
pub fn student_t_interval(summary: &Summary, confidence: f64) -> Option<(f64, f64)> {
    if summary.n < 2 || !(0.0..1.0).contains(&confidence) {
        return None;
    }
    let df = (summary.n - 1) as f64;
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    let q = t.inverse_cdf(0.5 + confidence / 2.0);
    let half = q * summary.stddev / (summary.n as f64).sqrt();
    Some((summary.mean - half, summary.mean + half))
}

/// A metric whose value is the mean of `samples`, with every sample kept and
/// a 95% Student-t interval when there are at least two.
///
/// `samples` must be non-empty and finite (a metric is only made from what
/// was measured); otherwise the value is NaN, which JSON cannot carry.
pub fn sampled_metric(
    name: impl Into<String>,
    unit: Unit,
    direction: Direction,
    samples: Vec<f64>,
) -> Metric {
    interval_metric(
        name,
        unit,
        direction,
        samples,
        UncertaintyMethod::StudentT,
        |_, summary| student_t_interval(summary, 0.95),
    )
}

/// A metric whose value is the mean of `samples`, with every sample kept and
/// the 95% interval that `interval` finds from the samples and their summary,
/// labelled `method`: the body of [`sampled_metric`] and
/// [`crate::bootstrap_metric`].
pub(crate) fn interval_metric(
    name: impl Into<String>,
    unit: Unit,
    direction: Direction,
    samples: Vec<f64>,
    method: UncertaintyMethod,
    interval: impl FnOnce(&[f64], &Summary) -> Option<(f64, f64)>,
) -> Metric {
    let summary = Summary::of(&samples);
    debug_assert!(summary.is_some(), "a metric needs finite samples");
    let mut metric = Metric::new(name, unit, direction, summary.map_or(f64::NAN, |s| s.mean));
    if let Some(summary) = summary {
        metric.uncertainty = interval(&samples, &summary).map(|(low, high)| Uncertainty {
            method,
            confidence: 0.95,
            low,
            high,
            n: summary.n as u64,
            stddev: Some(summary.stddev),
        });
    }
    metric.samples = samples;
    metric
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn summarises_a_worked_example() {
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, population sd 2, sample sd sqrt(32/7).
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert_eq!(s.mean, 5.0);
        assert!(close(s.stddev, (32.0f64 / 7.0).sqrt(), 1e-12));
        assert_eq!((s.min, s.max, s.median), (2.0, 9.0, 4.5));
        let odd = Summary::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!(odd.median, 2.0);
    }

    #[test]
    fn refuses_empty_and_non_finite_samples() {
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
        let one = Summary::of(&[4.0]).unwrap();
        assert_eq!(one.stddev, 0.0);
        assert!(student_t_interval(&one, 0.95).is_none());
    }

    #[test]
    fn student_t_interval_matches_tables() {
        // n = 5, t(0.975, 4) = 2.776445; mean 10, sd 1: half width 2.776445/sqrt(5).
        let s = Summary::of(&[9.0, 9.0, 10.0, 11.0, 11.0]).unwrap();
        assert!(close(s.mean, 10.0, 1e-12));
        assert!(close(s.stddev, 1.0, 1e-12));
        let (low, high) = student_t_interval(&s, 0.95).unwrap();
        let half = 2.776_445 / 5f64.sqrt();
        assert!(close(low, 10.0 - half, 1e-5), "{low}");
        assert!(close(high, 10.0 + half, 1e-5), "{high}");
        // n = 2: t(0.975, 1) = 12.7062.
        let s = Summary::of(&[1.0, 3.0]).unwrap();
        let (low, high) = student_t_interval(&s, 0.95).unwrap();
        // sd = sqrt(2), half width = 12.706205 * sqrt(2) / sqrt(2).
        let half = 12.706_205;
        assert!(close(high - 2.0, half, 1e-4) && close(2.0 - low, half, 1e-4));
    }

    #[test]
    fn relative_standard_error() {
        let s = Summary::of(&[9.0, 11.0, 9.0, 11.0]).unwrap();
        // sd = sqrt(4/3), se = sd/2, rse = se/10.
        assert!(close(
            s.relative_standard_error(),
            (4.0f64 / 3.0).sqrt() / 2.0 / 10.0,
            1e-12
        ));
    }

    #[test]
    fn sampled_metric_keeps_samples_and_interval() {
        let m = sampled_metric(
            "t_ns",
            Unit::Ns,
            Direction::LowerIsBetter,
            vec![1.0, 2.0, 3.0],
        );
        assert_eq!(m.value, 2.0);
        assert_eq!(m.samples, vec![1.0, 2.0, 3.0]);
        let u = m.uncertainty.unwrap();
        assert_eq!(u.n, 3);
        assert_eq!(u.method, UncertaintyMethod::StudentT);
        assert!(u.low < 2.0 && u.high > 2.0);
        let single = sampled_metric("t_ns", Unit::Ns, Direction::LowerIsBetter, vec![5.0]);
        assert_eq!(single.value, 5.0);
        assert!(single.uncertainty.is_none());
    }
}
