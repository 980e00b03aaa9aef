//! Percentiles of two HDR histograms compared: the ratio of a percentile,
//! its interval and a p-value, when each side is one run that kept its
//! whole latency distribution rather than a few samples.
//!
//! The sample q-quantile of n values is the order statistic of rank ⌈nq⌉.
//! Resampling the n values with replacement moves that rank by a
//! Binomial(n, q) count, which for the counts a latency histogram holds is
//! normal with mean nq and variance nq(1 − q): so each bootstrap replicate
//! draws a rank from that normal and reads the value of that rank from the
//! histogram's cumulative counts. This is the distribution-free
//! (order-statistic) interval of a quantile, drawn so that two of them
//! combine into an interval of a ratio, at a cost that does not grow with
//! the number of requests.
//!
//! It treats the requests of a run as independent draws, which they are
//! not quite (a stall slows many requests at once): it says how precisely
//! this run pinned its percentile, not how much another run would differ.
//! Repeated runs per side give the honest between-run comparison.

use hdrhistogram::Histogram;

/// Cumulative counts of a histogram, for reading the value at a rank.
#[derive(Debug, Clone, PartialEq)]
pub struct Cdf {
    /// The highest value equivalent to each recorded bucket, ascending.
    values: Vec<f64>,
    /// Values recorded at or below the bucket.
    cumulative: Vec<u64>,
}

impl Cdf {
    /// The cumulative counts of `h`; `None` when it is empty.
    pub fn of(h: &Histogram<u64>) -> Option<Cdf> {
        let mut values = Vec::new();
        let mut cumulative = Vec::new();
        let mut total = 0u64;
        for v in h.iter_recorded() {
            total += v.count_at_value();
            values.push(h.highest_equivalent(v.value_iterated_to()) as f64);
            cumulative.push(total);
        }
        (total > 0).then_some(Cdf { values, cumulative })
    }

    /// How many values were recorded.
    pub fn count(&self) -> u64 {
        *self.cumulative.last().expect("a Cdf is never empty")
    }

    /// The value of rank `rank` (1-based, clamped to 1 ..= count).
    pub fn at_rank(&self, rank: u64) -> f64 {
        let rank = rank.clamp(1, self.count());
        let i = self.cumulative.partition_point(|&c| c < rank);
        self.values[i]
    }

    /// The `percentile` (0–100): the value of the rank HdrHistogram's
    /// reference reads ([`crate::hdr::percentile_rank`]).
    pub fn percentile(&self, percentile: f64) -> f64 {
        self.at_rank(crate::hdr::percentile_rank(self.count(), percentile))
    }

    /// One bootstrap replicate of the `percentile`: the value at a rank
    /// drawn from the normal approximation of its resampling distribution.
    fn replicate(&self, percentile: f64, rng: &mut fastrand::Rng) -> f64 {
        let n = self.count() as f64;
        let q = (percentile / 100.0).clamp(0.0, 1.0);
        let rank = n * q + (n * q * (1.0 - q)).sqrt() * standard_normal(rng);
        self.at_rank(rank.ceil().max(1.0) as u64)
    }

    /// The 95%-style interval of the `percentile` at `confidence`: the
    /// values at ranks nq ∓ z·sqrt(nq(1 − q)).
    pub fn percentile_interval(&self, percentile: f64, confidence: f64) -> (f64, f64) {
        let n = self.count() as f64;
        let q = (percentile / 100.0).clamp(0.0, 1.0);
        let z = normal_quantile(0.5 + confidence / 2.0);
        let half = z * (n * q * (1.0 - q)).sqrt();
        (
            self.at_rank((n * q - half).floor().max(1.0) as u64),
            self.at_rank((n * q + half).ceil() as u64),
        )
    }
}

/// A percentile of a candidate against the same percentile of a reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuantileComparison {
    /// candidate percentile / reference percentile.
    pub ratio: f64,
    /// The percentile-bootstrap interval of the ratio.
    pub low: f64,
    pub high: f64,
    /// Two-sided bootstrap p-value of "the ratio is 1": twice the share of
    /// replicates on the far side of 1 (ties counted half), at least one
    /// over the number of replicates.
    pub p_value: f64,
    /// Share of replicates below 1, to say which way the evidence leans.
    pub below_one: f64,
}

/// Compares the `percentile` of `candidate` with that of `reference` by
/// `resamples` bootstrap replicates seeded with `seed`. `None` when the
/// reference's percentile is zero.
pub fn compare_percentile(
    candidate: &Cdf,
    reference: &Cdf,
    percentile: f64,
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<QuantileComparison> {
    let base = reference.percentile(percentile);
    if base <= 0.0 || resamples == 0 {
        return None;
    }
    let ratio = candidate.percentile(percentile) / base;
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut ratios = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let r =
            candidate.replicate(percentile, &mut rng) / reference.replicate(percentile, &mut rng);
        if r.is_finite() {
            ratios.push(r);
        }
    }
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let n = ratios.len() as f64;
    let below = ratios.iter().filter(|&&r| r < 1.0).count() as f64;
    let ties = ratios.iter().filter(|&&r| r == 1.0).count() as f64;
    let tail = (below + ties / 2.0).min(n - below - ties / 2.0);
    let p_value = (2.0 * tail / n).clamp(1.0 / n, 1.0);
    let alpha = 1.0 - confidence;
    let at = |p: f64| crate::outliers::quantile_sorted(&ratios, p).expect("non-empty");
    Some(QuantileComparison {
        ratio,
        low: at(alpha / 2.0),
        high: at(1.0 - alpha / 2.0),
        p_value,
        below_one: (below + ties / 2.0) / n,
    })
}

/// A standard normal draw (Box–Muller).
fn standard_normal(rng: &mut fastrand::Rng) -> f64 {
    let u1 = 1.0 - rng.f64(); // (0, 1]: ln stays finite
    let u2 = rng.f64();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// The standard normal quantile.
fn normal_quantile(p: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    Normal::standard().inverse_cdf(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hdr::latency_histogram;

    fn cdf(values: impl IntoIterator<Item = u64>) -> Cdf {
        let mut h = latency_histogram();
        for v in values {
            h.record(v).unwrap();
        }
        Cdf::of(&h).unwrap()
    }

    #[test]
    fn percentiles_read_as_hdrhistogram_reads_them() {
        let mut h = latency_histogram();
        for v in 1..=10_000u64 {
            h.record(v * 100).unwrap();
        }
        let c = Cdf::of(&h).unwrap();
        assert_eq!(c.count(), 10_000);
        for p in [0.01, 50.0, 90.0, 99.0, 99.9, 100.0] {
            assert_eq!(
                c.percentile(p),
                crate::hdr::value_at_percentile(&h, p) as f64,
                "p{p}"
            );
        }
        assert_eq!(c.at_rank(0), c.at_rank(1), "ranks clamp at 1");
        assert_eq!(c.at_rank(99_999), c.percentile(100.0));
        assert!(Cdf::of(&latency_histogram()).is_none());
    }

    #[test]
    fn the_interval_of_a_percentile_brackets_it_and_narrows_with_more_values() {
        let small = cdf((1..=100u64).map(|v| v * 1000));
        let large = cdf(1..=100_000u64);
        let (lo, hi) = small.percentile_interval(50.0, 0.95);
        assert!(lo < small.percentile(50.0) && small.percentile(50.0) < hi);
        // n = 100, q = 0.5: ranks 50 ∓ 9.8, so about 40 … 60.
        assert!((39_000.0..=41_000.0).contains(&lo), "{lo}");
        assert!((59_000.0..=61_000.0).contains(&hi), "{hi}");
        let (lo, hi) = large.percentile_interval(50.0, 0.95);
        let rel = (hi - lo) / large.percentile(50.0);
        assert!(rel < 0.02, "{rel}");
    }

    #[test]
    fn a_shifted_distribution_is_called_and_the_same_one_is_not() {
        let a = cdf((0..20_000u64).map(|i| 100_000 + (i * 7919) % 50_000));
        let slower = cdf((0..20_000u64).map(|i| 130_000 + (i * 7919) % 50_000));
        let c = compare_percentile(&slower, &a, 99.0, 0.95, 2_000, 1).unwrap();
        assert!(c.ratio > 1.15 && c.ratio < 1.25, "{c:?}");
        assert!(c.low > 1.1 && c.high < 1.3, "{c:?}");
        assert!(c.p_value <= 0.001, "{c:?}");
        assert!(c.below_one < 0.01);
        let same = compare_percentile(&a, &a, 99.0, 0.95, 2_000, 1).unwrap();
        assert_eq!(same.ratio, 1.0);
        assert!(same.low <= 1.0 && same.high >= 1.0, "{same:?}");
        assert!(same.p_value > 0.2, "{same:?}");
    }

    #[test]
    fn a_zero_reference_has_no_ratio() {
        let zero = cdf([0u64, 0, 0]);
        let one = cdf([5u64, 6, 7]);
        assert!(compare_percentile(&one, &zero, 50.0, 0.95, 100, 1).is_none());
    }
}
