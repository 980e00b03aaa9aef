//! pgbench's random functions and their distributions: `random` (uniform),
//! `random_exponential`, `random_gaussian` and `random_zipfian`.
//!
//! `eval` calls these once it has coerced a call's bounds and parameter;
//! they check the range and the parameter as pgbench does and draw from
//! the `fastrand::Rng` the client owns, so a seeded run replays.

use super::EvalError;

/// The number of integers in [lb, ub], which may not fit in an i64.
/// pgbench's limit: the count must fit in an i64.
pub(super) fn range_len(function: &'static str, lb: i64, ub: i64) -> Result<i128, EvalError> {
    if lb > ub {
        return Err(EvalError::EmptyRange { function, lb, ub });
    }
    let n = i128::from(ub) - i128::from(lb) + 1;
    if n > i128::from(i64::MAX) {
        return Err(EvalError::RangeTooLarge { function, lb, ub });
    }
    Ok(n)
}

/// `lb + floor(n * r)` for `r` in [0, 1), kept in [lb, ub] where rounding
/// would push `n * r` up to `n` (or a NaN would make it 0).
fn scale_unit(lb: i64, n: i128, r: f64) -> i64 {
    let offset = ((n as f64 * r).floor() as i128).clamp(0, n - 1);
    // lb + offset ≤ ub, so the sum fits.
    (i128::from(lb) + offset) as i64
}

/// `random(lb, ub)`: every integer of [lb, ub] equally likely.
pub(super) fn random(rng: &mut fastrand::Rng, lb: i64, ub: i64) -> Result<i64, EvalError> {
    range_len("random()", lb, ub)?;
    Ok(rng.i64(lb..=ub))
}

/// `random_exponential(lb, ub, p)`: values fall off exponentially from lb,
/// the density at ub being `exp(-p)` times that at lb.
///
/// With `v` uniform in (e^-p, 1], `x = -ln(v) / p` is exponentially
/// distributed truncated to [0, 1): `P(x < t) = (1 - e^(-p t)) / (1 -
/// e^-p)`. The result is `lb + floor(n x)` with `n = ub - lb + 1`, so the
/// value `lb + i` has probability `(e^(-p i/n) - e^(-p (i+1)/n)) / (1 -
/// e^-p)`: the largest at lb, and always inside [lb, ub]. (`v` is made
/// from `u` uniform in [0, 1) as `1 - (1 - e^-p) u`, so that `u = 0`
/// gives `x = 0` and no draw gives `x = 1`; should rounding still make
/// `n x` reach n, the result is clamped to ub.)
pub(super) fn random_exponential(
    rng: &mut fastrand::Rng,
    lb: i64,
    ub: i64,
    p: f64,
) -> Result<i64, EvalError> {
    let n = range_len("random_exponential()", lb, ub)?;
    if !(p > 0.0 && p.is_finite()) {
        return Err(EvalError::BadParameter {
            function: "random_exponential()",
            value: p,
            requirement: "greater than 0 (larger values crowd the draws nearer lb)",
        });
    }
    // -ln(1 - (1 - e^-p) u) / p, through ln_1p and exp_m1 so that a small
    // p (a nearly uniform draw) loses no precision to 1 - e^-p.
    let x = -((-p).exp_m1() * rng.f64()).ln_1p() / p;
    Ok(scale_unit(lb, n, x))
}

/// `random_gaussian(lb, ub, p)`: a normal distribution centred on the
/// middle of [lb, ub], truncated at `p` standard deviations either side.
///
/// A standard normal `z` is drawn by the Box–Muller transform, again until
/// it falls in [-p, p); `r = (z + p) / 2p` maps it onto [0, 1) and the
/// result is `lb + floor(n r)`. Requiring `p >= 2` keeps the redraws rare
/// (under 5% of draws fall outside ±2).
pub(super) fn random_gaussian(
    rng: &mut fastrand::Rng,
    lb: i64,
    ub: i64,
    p: f64,
) -> Result<i64, EvalError> {
    let n = range_len("random_gaussian()", lb, ub)?;
    if !(p >= 2.0 && p.is_finite()) {
        return Err(EvalError::BadParameter {
            function: "random_gaussian()",
            value: p,
            requirement: "at least 2.0 (the range is that many standard deviations either side of its middle)",
        });
    }
    let z = loop {
        // 1 - u lies in (0, 1], where the logarithm is finite.
        let radius = (-2.0 * (1.0 - rng.f64()).ln()).sqrt();
        let z = radius * (std::f64::consts::TAU * rng.f64()).cos();
        if (-p..p).contains(&z) {
            break z;
        }
    };
    Ok(scale_unit(lb, n, (z + p) / (2.0 * p)))
}

/// `random_zipfian(lb, ub, s)`: Zipf's law over the `n = ub - lb + 1`
/// values, `lb + k - 1` drawn with probability proportional to `k^-s`
/// (k = 1..n), so lb is the most likely and `lb + 1` is `2^s` times less.
///
/// A table of the n probabilities would cost O(n) per range; this is
/// Hörmann and Derflinger's rejection-inversion ("Rejection-inversion to
/// generate variates from monotone discrete distributions", ACM TOMACS
/// 6(3), 1996), O(1) a draw for any n. With `h(x) = x^-s` and `H` its
/// integral (`H(1) = 0`), the hat is the continuous density `h` itself:
/// each k owns the area `H(k + ½) - H(k - ½)` under it, which is at least
/// `h(k)` because `h` is convex. A point `u` is drawn uniformly from the
/// whole area, mapped back through `H⁻¹` to `x` and rounded to `k`; it is
/// accepted when it lies in the top `h(k)` of its k's strip, `u >= H(k +
/// ½) - h(k)`, so that each k is accepted with probability proportional
/// to `h(k)` exactly. k = 1's strip is cut to exactly `h(1)` (the area
/// starts at `H(1.5) - h(1)`), so it is always accepted. The paper's
/// squeeze accepts without computing `H(k + ½)` when `k - x` is at most
/// `2 - H⁻¹(H(2.5) - h(2))`, the narrowest accepting distance, which is
/// k = 2's.
///
/// Over 98% of the points drawn are accepted, nearly all by the squeeze
/// (measured for s from 1.001 to 1000 and n from 2 to 2^62), so a draw
/// costs a few logarithms and exponentials whatever n is. s must be at
/// least 1.001, as in pgbench, where the sum of `k^-s` stays finite for
/// any n. For large s the values past lb are all but impossible (lb + 1
/// has probability below 2^-s), and so they come out: a million draws at
/// s = 40, 55, 60, 100, 500 and 1000, with n = 10 and 10^9, gave lb every
/// time, so the doubles' rounding at such s makes no stray values.
pub(super) fn random_zipfian(
    rng: &mut fastrand::Rng,
    lb: i64,
    ub: i64,
    s: f64,
) -> Result<i64, EvalError> {
    let n = range_len("random_zipfian()", lb, ub)?;
    if !(1.001..=1000.0).contains(&s) {
        return Err(EvalError::BadParameter {
            function: "random_zipfian()",
            value: s,
            requirement: "in [1.001, 1000] (larger values crowd the draws nearer lb)",
        });
    }
    if n == 1 {
        return Ok(lb);
    }
    let zipf = Zipf::new(s);
    let n_f = n as f64;
    let area_start = zipf.big_h(1.5) - 1.0;
    let area_end = zipf.big_h(n_f + 0.5);
    loop {
        // u runs over (area_start, area_end]: rng.f64() = 0 gives the end.
        let u = area_end + rng.f64() * (area_start - area_end);
        let x = zipf.big_h_inv(u);
        let k = (x + 0.5).floor().clamp(1.0, n_f);
        if k - x <= zipf.squeeze || u >= zipf.big_h(k + 0.5) - zipf.h(k) {
            let offset = (k as i128 - 1).clamp(0, n - 1);
            return Ok((i128::from(lb) + offset) as i64);
        }
    }
}

/// The functions of one Zipf exponent that [`random_zipfian`] uses.
struct Zipf {
    s: f64,
    /// Accept at once when `k - x` is at most this.
    squeeze: f64,
}

impl Zipf {
    fn new(s: f64) -> Self {
        let mut zipf = Zipf { s, squeeze: 0.0 };
        zipf.squeeze = 2.0 - zipf.big_h_inv(zipf.big_h(2.5) - zipf.h(2.0));
        zipf
    }

    /// `h(x) = x^-s`.
    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    /// `H(x) = (x^(1-s) - 1) / (1 - s)`, the integral of `h` from 1,
    /// written as `ln x · g((1-s) ln x)` with `g(t) = (e^t - 1) / t` so it
    /// stays accurate when s is close to 1.
    fn big_h(&self, x: f64) -> f64 {
        let log_x = x.ln();
        expm1_over((1.0 - self.s) * log_x) * log_x
    }

    /// The inverse of `H`: `(1 + (1-s) y)^(1/(1-s))`, written as
    /// `exp(y · f((1-s) y))` with `f(t) = ln(1 + t) / t`.
    fn big_h_inv(&self, y: f64) -> f64 {
        // (1-s) y > -1 for every y the sampler draws; rounding may touch it.
        let t = ((1.0 - self.s) * y).max(-1.0);
        (log1p_over(t) * y).exp()
    }
}

/// `ln(1 + t) / t`, 1 at t = 0.
fn log1p_over(t: f64) -> f64 {
    if t.abs() > 1e-8 {
        t.ln_1p() / t
    } else {
        1.0 - t * (0.5 - t / 3.0)
    }
}

/// `(e^t - 1) / t`, 1 at t = 0.
fn expm1_over(t: f64) -> f64 {
    if t.abs() > 1e-8 {
        t.exp_m1() / t
    } else {
        1.0 + t * (0.5 + t / 6.0)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::script::testing::{VARS, eval_str};
    use crate::script::{CommandKind, EvalError, Script, Value};

    /// Draws `count` values of `expr` from a seeded generator.
    fn draws(expr: &str, count: usize) -> Vec<i64> {
        let script = Script::parse("r", &format!("\\set x {expr}\n")).unwrap();
        let CommandKind::Set { expr, .. } = &script.commands()[0].kind else {
            panic!("not a \\set");
        };
        let vars = script.initial_values(&VARS);
        let mut rng = fastrand::Rng::with_seed(12_345);
        (0..count)
            .map(|_| match expr.eval(&vars, &mut rng) {
                Ok(Value::Int(i)) => i,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    fn histogram(values: &[i64], lb: i64, ub: i64) -> Vec<usize> {
        let mut counts = vec![0; (ub - lb + 1) as usize];
        for &v in values {
            assert!((lb..=ub).contains(&v), "{v} outside [{lb}, {ub}]");
            counts[(v - lb) as usize] += 1;
        }
        counts
    }

    /// Asserts that each observed frequency lies within 5 standard errors
    /// of the expected probability.
    fn assert_distribution(counts: &[usize], expected: &[f64]) {
        let total: usize = counts.iter().sum();
        let total = total as f64;
        for (k, (&count, &p)) in counts.iter().zip(expected).enumerate() {
            let observed = count as f64 / total;
            let sigma = (p * (1.0 - p) / total).sqrt();
            assert!(
                (observed - p).abs() <= 5.0 * sigma + 1e-9,
                "value {k}: observed {observed}, expected {p}"
            );
        }
    }

    #[test]
    fn random_is_uniform_and_inclusive() {
        let counts = histogram(&draws("random(-3, 6)", 100_000), -3, 6);
        assert_distribution(&counts, &[0.1; 10]);
        assert!(draws("random(5, 5)", 100).iter().all(|&v| v == 5));
        // The widest range pgbench takes holds i64::MAX values.
        let wide = draws("random(-4611686018427387904, 4611686018427387902)", 1000);
        assert!(wide.iter().any(|&v| v < 0) && wide.iter().any(|&v| v > 0));
        // One more is too large, as is the full 64-bit range.
        for range in [
            "-4611686018427387904, 4611686018427387903",
            "-9223372036854775808, 9223372036854775807",
            "0, 9223372036854775807",
        ] {
            assert!(
                matches!(
                    eval_str(&format!("random({range})")),
                    Err(EvalError::RangeTooLarge { .. })
                ),
                "{range}"
            );
        }
        // Double bounds are rounded, as with int(): 1.9 to 2, 3.2 to 3.
        let rounded = draws("random(1.9, 3.2)", 1000);
        assert!(rounded.iter().all(|&v| (2..=3).contains(&v)));
        assert!(rounded.contains(&2) && rounded.contains(&3));
        assert!(draws("random(0.6, 0.6)", 10).iter().all(|&v| v == 1));
        assert_eq!(
            eval_str("random(3, 1)"),
            Err(EvalError::EmptyRange {
                function: "random()",
                lb: 3,
                ub: 1
            })
        );
    }

    #[test]
    fn random_exponential_matches_its_distribution() {
        let counts = histogram(&draws("random_exponential(1, 10, 2.5)", 200_000), 1, 10);
        let (p, n) = (2.5_f64, 10.0);
        let expected: Vec<f64> = (0..10)
            .map(|i| {
                let i = f64::from(i);
                ((-p * i / n).exp() - (-p * (i + 1.0) / n).exp()) / (1.0 - (-p).exp())
            })
            .collect();
        assert_distribution(&counts, &expected);
        assert!(counts.windows(2).all(|w| w[0] > w[1]), "{counts:?}");
        // A tiny parameter is nearly uniform, not everything on lb.
        let counts = histogram(&draws("random_exponential(1, 10, 1e-12)", 100_000), 1, 10);
        assert_distribution(&counts, &[0.1; 10]);
        // A steep parameter crowds nearly everything onto lb.
        let steep = draws("random_exponential(100, 1000000, 50)", 10_000);
        assert!(steep.iter().all(|&v| (100..=1_000_000).contains(&v)));
        assert!(steep.iter().filter(|&&v| v < 100 + 100_000).count() > 9_900);
        for bad in ["0", "-1", "0.0"] {
            assert!(matches!(
                eval_str(&format!("random_exponential(1, 10, {bad})")),
                Err(EvalError::BadParameter { .. })
            ));
        }
        assert!(matches!(
            eval_str("random_exponential(10, 1, 1)"),
            Err(EvalError::EmptyRange { .. })
        ));
    }

    #[test]
    fn random_gaussian_centres_on_the_middle() {
        let values = draws("random_gaussian(1, 1000, 2.5)", 100_000);
        let counts = histogram(&values, 1, 1000);
        let mean = values.iter().sum::<i64>() as f64 / values.len() as f64;
        assert!((mean - 500.5).abs() < 3.0, "mean {mean}");
        // The middle tenth is denser than either end's tenth.
        let middle: usize = counts[450..550].iter().sum();
        let low: usize = counts[..100].iter().sum();
        let high: usize = counts[900..].iter().sum();
        assert!(
            middle > 3 * low && middle > 3 * high,
            "{middle} {low} {high}"
        );
        assert!(low > 0 && high > 0);
        assert!(
            draws("random_gaussian(-5, 5, 2)", 10_000)
                .iter()
                .all(|v| v.abs() <= 5)
        );
        assert!(matches!(
            eval_str("random_gaussian(1, 10, 1.9)"),
            Err(EvalError::BadParameter { .. })
        ));
        let message = eval_str("random_gaussian(1, 10, 1.5)")
            .unwrap_err()
            .to_string();
        assert!(message.contains("at least 2.0"), "{message}");
    }

    fn zipf_probabilities(n: usize, s: f64) -> Vec<f64> {
        let weights: Vec<f64> = (1..=n).map(|k| (k as f64).powf(-s)).collect();
        let total: f64 = weights.iter().sum();
        weights.iter().map(|w| w / total).collect()
    }

    #[test]
    fn random_zipfian_matches_zipfs_law() {
        for s in [1.001, 1.5, 3.0] {
            let counts = histogram(&draws(&format!("random_zipfian(1, 8, {s})"), 200_000), 1, 8);
            assert_distribution(&counts, &zipf_probabilities(8, s));
        }
        // s = 1.5 over 1..1000: P(1) = 1 / H(1000, 1.5), about 0.392.
        let counts = histogram(&draws("random_zipfian(1, 1000, 1.5)", 200_000), 1, 1000);
        let expected = zipf_probabilities(1000, 1.5);
        let p1 = counts[0] as f64 / 200_000.0;
        assert!(
            (p1 - expected[0]).abs() < 0.005,
            "P(1) = {p1}, expected {}",
            expected[0]
        );
        assert_eq!(counts.iter().max(), Some(&counts[0]));
        assert!(counts[0] > counts[1] && counts[1] > counts[2] && counts[2] > counts[9]);
        // The offset from lb is what follows the law.
        let shifted = draws("random_zipfian(-10, 10, 2)", 10_000);
        assert!(shifted.iter().all(|v| (-10..=10).contains(v)));
        assert!(shifted.iter().filter(|&&v| v == -10).count() > 5_000);
        assert!(draws("random_zipfian(4, 4, 2)", 10).iter().all(|&v| v == 4));
        for bad in ["1.0", "1", "0.5", "1000.5"] {
            assert!(matches!(
                eval_str(&format!("random_zipfian(1, 10, {bad})")),
                Err(EvalError::BadParameter { .. })
            ));
        }
        assert!(
            draws("random_zipfian(1, 1000000000, 1000)", 10_000)
                .iter()
                .all(|&v| v == 1)
        );
    }

    #[test]
    fn random_zipfian_is_constant_time_in_the_range() {
        // A billion values: a table or a harmonic sum over them would take
        // seconds per draw; rejection-inversion takes the same few
        // operations as for ten.
        let started = std::time::Instant::now();
        let values = draws("random_zipfian(1, 1000000000, 1.1)", 100_000);
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(values.iter().all(|v| (1..=1_000_000_000).contains(v)));
        let ones = values.iter().filter(|&&v| v == 1).count() as f64 / 1e5;
        // P(1) = 1 / H(10^9, 1.1); H is ζ(1.1) ≈ 10.58 less a tail of
        // about 10 · 10^-0.9 ≈ 1.26.
        assert!((ones - 1.0 / 9.32).abs() < 0.01, "P(1) = {ones}");
        assert!(values.iter().any(|&v| v > 1_000_000));
        let full = draws("random_zipfian(-9223372036854775808, -2, 1.5)", 1000);
        assert!(full.iter().filter(|&&v| v == i64::MIN).count() > 300);
    }
}
