//! Is latency rising within a step? A queue that grows is not sustainable
//! even while its percentiles still meet the target: given a longer step
//! they would not. The test is Mann–Kendall's (rank-based, so one slow
//! second does not make a trend), one-sided at 5%, with Sen's slope giving
//! the size of the rise; whether that size matters is the caller's call.

/// A significant upward trend: the fitted line's value at the first and
/// the last point, and the test's z score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rise {
    pub from: f64,
    pub to: f64,
    pub z: f64,
}

/// One-sided 5% critical value of the standard normal.
const Z_CRITICAL: f64 = 1.645;

/// The fewest points the test can call significant (with four, even a
/// perfectly monotone series has z = 1.70, barely; fewer cannot).
pub const MIN_POINTS: usize = 4;

/// A significant upward trend in `series` (equally spaced in time), or
/// `None`. Non-finite points are left out.
pub fn rising(series: &[f64]) -> Option<Rise> {
    let points: Vec<(f64, f64)> = series
        .iter()
        .enumerate()
        .filter(|(_, y)| y.is_finite())
        .map(|(i, &y)| (i as f64, y))
        .collect();
    let n = points.len();
    if n < MIN_POINTS {
        return None;
    }
    let mut s: i64 = 0;
    let mut slopes = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            let (dx, dy) = (points[j].0 - points[i].0, points[j].1 - points[i].1);
            s += if dy > 0.0 {
                1
            } else if dy < 0.0 {
                -1
            } else {
                0
            };
            slopes.push(dy / dx);
        }
    }
    // Ties are not corrected for: that overstates the variance, so a tie
    // can only make the test more cautious.
    let nf = n as f64;
    let variance = nf * (nf - 1.0) * (2.0 * nf + 5.0) / 18.0;
    if s <= 0 {
        return None;
    }
    let z = (s as f64 - 1.0) / variance.sqrt();
    if z < Z_CRITICAL {
        return None;
    }
    let slope = median(&mut slopes);
    let mut intercepts: Vec<f64> = points.iter().map(|(x, y)| y - slope * x).collect();
    let intercept = median(&mut intercepts);
    let last = points[n - 1].0;
    Some(Rise {
        from: intercept,
        to: intercept + slope * last,
        z,
    })
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_growing_queue_is_rising() {
        let series: Vec<f64> = (0..10).map(|i| 1.0 + 0.5 * i as f64).collect();
        let rise = rising(&series).unwrap();
        assert!((rise.from - 1.0).abs() < 1e-9);
        assert!((rise.to - 5.5).abs() < 1e-9);
        assert!(rise.z > 3.0);
    }

    #[test]
    fn flat_falling_and_noisy_series_are_not() {
        assert_eq!(rising(&[2.0; 10]), None);
        let falling: Vec<f64> = (0..10).map(|i| 10.0 - i as f64).collect();
        assert_eq!(rising(&falling), None);
        // Noise around a level, one slow second in the middle.
        assert_eq!(
            rising(&[5.0, 5.2, 4.9, 5.1, 9.0, 5.0, 4.8, 5.2, 4.9, 5.0]),
            None
        );
        // Too short to tell.
        assert_eq!(rising(&[1.0, 2.0, 3.0]), None);
    }

    #[test]
    fn one_outlier_does_not_make_a_flat_series_rise() {
        // Rank-based: a single huge last value adds at most n - 1 to S.
        let mut series = vec![5.0, 5.1, 4.9, 5.0, 5.05, 4.95, 5.0, 5.1, 4.9];
        series.push(500.0);
        assert_eq!(rising(&series), None);
    }

    #[test]
    fn seeded_noise_without_trend_is_rarely_called_rising() {
        // About 5% of trendless series may be called rising; far more
        // would mean the test is miscalibrated.
        let mut rng = fastrand::Rng::with_seed(7);
        let called = (0..2000)
            .filter(|_| {
                let series: Vec<f64> = (0..10).map(|_| rng.f64()).collect();
                rising(&series).is_some()
            })
            .count();
        assert!((40..=160).contains(&called), "{called} of 2000");
    }

    #[test]
    fn non_finite_points_are_left_out() {
        let series = [1.0, f64::NAN, 2.0, 3.0, f64::INFINITY, 4.0, 5.0];
        assert!(rising(&series).is_some());
    }
}
