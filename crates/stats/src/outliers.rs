//! Robust outlier flags for repeated samples: the median/MAD modified
//! z-score and Tukey's fences, both computed from order statistics so a few
//! wild values cannot hide themselves by inflating the spread.
//!
//! Flags are reported next to a figure and never used to delete samples (the
//! methodology's rule): a slow run is data, and the reader decides what it
//! means. `dyno run` also asks [`first_is_outlier`] whether the first run
//! was slow, the usual sign of a cold cache that `--warmup` takes away.

/// Iglewicz & Hoaglin's cut-off: a sample whose modified z-score exceeds
/// this in magnitude is flagged ("How to Detect and Handle Outliers", ASQC
/// Basic References in Quality Control vol. 16, 1993).
pub const MODIFIED_Z_THRESHOLD: f64 = 3.5;

/// The least spread assumed, as a fraction of |median|: both the MAD and the
/// IQR are raised to at least `RELATIVE_FLOOR · |median|` before use.
///
/// Without it a sample of nearly identical values (a command whose runs all
/// take 100.000 ms) has a MAD or IQR of almost nothing, and the first tiny
/// jitter is "infinitely" far out. With a floor of 0.1% of the median, a
/// value must differ from the median by more than 3.5 / 0.6745 · 0.1% ≈
/// 0.52% before the MAD rule can flag it, and by more than 1.5 · 0.1% beyond
/// a quartile before Tukey's inner fence can.
pub const RELATIVE_FLOOR: f64 = 1e-3;

/// Tukey's inner fences lie this many IQRs outside the quartiles.
pub const TUKEY_MILD_IQRS: f64 = 1.5;

/// Tukey's outer fences lie this many IQRs outside the quartiles.
pub const TUKEY_SEVERE_IQRS: f64 = 3.0;

/// Φ⁻¹(0.75): for normal data MAD ≈ 0.6745 σ, so 0.6745 · (x − median) / MAD
/// reads like an ordinary z-score.
const MAD_TO_Z: f64 = 0.6745;

/// Which samples each rule flags, as indices into the samples given, in
/// increasing order. A sample may appear under both rules; it appears under
/// at most one of `tukey_mild` and `tukey_severe`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outliers {
    /// Indices whose modified z-score |0.6745 · (x − median) / MAD| exceeds
    /// [`MODIFIED_Z_THRESHOLD`], the MAD raised to the [`RELATIVE_FLOOR`].
    pub mad: Vec<usize>,
    /// Indices outside Tukey's inner fences but inside the outer ones.
    pub tukey_mild: Vec<usize>,
    /// Indices outside Tukey's outer fences.
    pub tukey_severe: Vec<usize>,
}

impl Outliers {
    /// Whether no rule flagged anything.
    pub fn is_empty(&self) -> bool {
        self.mad.is_empty() && self.tukey_mild.is_empty() && self.tukey_severe.is_empty()
    }
}

/// Tukey's fences of a sample. Quartiles are the type 7 quantiles of
/// [`quantile_sorted`]; the fences use the IQR raised to the
/// [`RELATIVE_FLOOR`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TukeyFences {
    /// First quartile.
    pub q1: f64,
    /// Third quartile.
    pub q3: f64,
    /// Q3 − Q1 as measured, before the floor.
    pub iqr: f64,
    /// Q1 − 1.5 · IQR: below it a sample is at least a mild outlier.
    pub lower_inner: f64,
    /// Q3 + 1.5 · IQR: above it a sample is at least a mild outlier.
    pub upper_inner: f64,
    /// Q1 − 3 · IQR: below it a sample is a severe outlier.
    pub lower_outer: f64,
    /// Q3 + 3 · IQR: above it a sample is a severe outlier.
    pub upper_outer: f64,
}

/// Flags the outliers of `samples` by both rules. Nothing is flagged when
/// `samples` is empty or holds a non-finite value (order statistics of such a
/// sample mean nothing); one or two samples are never flagged.
pub fn outliers(samples: &[f64]) -> Outliers {
    let (Some(z), Some(fences)) = (modified_z_scores(samples), tukey_fences(samples)) else {
        return Outliers::default();
    };
    let mut flags = Outliers::default();
    for (i, (&x, z)) in samples.iter().zip(z).enumerate() {
        if z.abs() > MODIFIED_Z_THRESHOLD {
            flags.mad.push(i);
        }
        if x < fences.lower_outer || x > fences.upper_outer {
            flags.tukey_severe.push(i);
        } else if x < fences.lower_inner || x > fences.upper_inner {
            flags.tukey_mild.push(i);
        }
    }
    flags
}

/// Whether the first sample is flagged high by the median/MAD rule: it is
/// slower (larger) than the rest by more than [`MODIFIED_Z_THRESHOLD`]
/// robust standard deviations. This is the check behind "the first run was
/// slower than the rest: use --warmup". False for an empty or non-finite
/// sample, and for a first sample that is an outlier on the low side.
pub fn first_is_outlier(samples: &[f64]) -> bool {
    modified_z_scores(samples).is_some_and(|z| z[0] > MODIFIED_Z_THRESHOLD)
}

/// The modified z-score of each sample, 0.6745 · (x − median) / MAD, where
/// MAD is the median absolute deviation from the median raised to
/// [`RELATIVE_FLOOR`] · |median|. When even that is zero (over half the
/// samples are exactly 0), a sample equal to the median scores 0 and any
/// other ±∞. `None` for an empty sample or a non-finite value.
pub fn modified_z_scores(samples: &[f64]) -> Option<Vec<f64>> {
    let median = median(samples)?;
    let deviations: Vec<f64> = samples.iter().map(|x| (x - median).abs()).collect();
    let mad = median_of_finite(deviations)?;
    let scale = mad.max(RELATIVE_FLOOR * median.abs());
    Some(
        samples
            .iter()
            .map(|&x| {
                let d = x - median;
                if scale > 0.0 {
                    MAD_TO_Z * d / scale
                } else if d == 0.0 {
                    0.0
                } else {
                    f64::INFINITY.copysign(d)
                }
            })
            .collect(),
    )
}

/// Tukey's fences of `samples`; `None` for an empty sample or a non-finite
/// value.
pub fn tukey_fences(samples: &[f64]) -> Option<TukeyFences> {
    let sorted = sorted_finite(samples)?;
    let q1 = quantile_sorted(&sorted, 0.25)?;
    let median = quantile_sorted(&sorted, 0.5)?;
    let q3 = quantile_sorted(&sorted, 0.75)?;
    let iqr = q3 - q1;
    let spread = iqr.max(RELATIVE_FLOOR * median.abs());
    Some(TukeyFences {
        q1,
        q3,
        iqr,
        lower_inner: q1 - TUKEY_MILD_IQRS * spread,
        upper_inner: q3 + TUKEY_MILD_IQRS * spread,
        lower_outer: q1 - TUKEY_SEVERE_IQRS * spread,
        upper_outer: q3 + TUKEY_SEVERE_IQRS * spread,
    })
}

/// The `p`-quantile (0 ≤ p ≤ 1) of `sorted`, which must be in ascending
/// order, by linear interpolation between order statistics: with h =
/// (n − 1) · p, x[⌊h⌋] + (h − ⌊h⌋) · (x[⌊h⌋ + 1] − x[⌊h⌋]) (0-based).
///
/// This is definition 7 of Hyndman & Fan ("Sample quantiles in statistical
/// packages", The American Statistician 50(4), 1996), the default of R's
/// `quantile` and of NumPy's `percentile`, so figures can be checked there.
/// Its 0.5-quantile is the usual median. `None` for an empty slice or `p`
/// outside [0, 1].
pub fn quantile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=1.0).contains(&p) {
        return None;
    }
    let h = (sorted.len() - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

fn sorted_finite(samples: &[f64]) -> Option<Vec<f64>> {
    if samples.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(sorted)
}

fn median(samples: &[f64]) -> Option<f64> {
    quantile_sorted(&sorted_finite(samples)?, 0.5)
}

fn median_of_finite(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    quantile_sorted(&values, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn quantiles_follow_hyndman_fan_type_7() {
        // 1, 2, 3, 4: h = 3p. p = 0.25 → h = 0.75 → 1 + 0.75 · 1 = 1.75;
        // p = 0.5 → 2.5 (the median); p = 0.75 → h = 2.25 → 3.25.
        // R: quantile(1:4) prints 1.00 1.75 2.50 3.25 4.00.
        let x = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&x, 0.0), Some(1.0));
        assert_eq!(quantile_sorted(&x, 0.25), Some(1.75));
        assert_eq!(quantile_sorted(&x, 0.5), Some(2.5));
        assert_eq!(quantile_sorted(&x, 0.75), Some(3.25));
        assert_eq!(quantile_sorted(&x, 1.0), Some(4.0));
        assert_eq!(quantile_sorted(&[7.0], 0.3), Some(7.0));
        assert_eq!(quantile_sorted(&[], 0.5), None);
        assert_eq!(quantile_sorted(&x, -0.1), None);
        assert_eq!(quantile_sorted(&x, 1.1), None);
        assert_eq!(quantile_sorted(&x, f64::NAN), None);
    }

    #[test]
    fn tukey_fences_match_the_textbook_example() {
        // Wikipedia, "Interquartile range", data set in a table: 13 values,
        // Q1 = 31, median = 87, Q3 = 119, IQR = 88. With n − 1 = 12 the
        // type 7 quartiles fall on x[3] and x[9], so they agree with the
        // article's method. Fences: 31 − 1.5 · 88 = −101, 119 + 132 = 251;
        // outer 31 − 264 = −233, 119 + 264 = 383.
        let data = [
            7.0, 7.0, 31.0, 31.0, 47.0, 75.0, 87.0, 115.0, 116.0, 119.0, 119.0, 155.0, 177.0,
        ];
        let f = tukey_fences(&data).unwrap();
        assert_eq!((f.q1, f.q3, f.iqr), (31.0, 119.0, 88.0));
        assert_eq!((f.lower_inner, f.upper_inner), (-101.0, 251.0));
        assert_eq!((f.lower_outer, f.upper_outer), (-233.0, 383.0));
        assert!(outliers(&data).is_empty());

        // Replace the extremes without changing any rank, so the quartiles
        // (and fences) stay put: 300 lies between 251 and 383 (mild), −250
        // below −233 (severe).
        let mut flagged = data;
        flagged[0] = -250.0;
        flagged[12] = 300.0;
        assert_eq!(tukey_fences(&flagged), Some(f));
        let o = outliers(&flagged);
        assert_eq!(o.tukey_mild, vec![12]);
        assert_eq!(o.tukey_severe, vec![0]);
        // The same sample by median/MAD: median 87; absolute deviations
        // 337, 80, 56, 56, 40, 12, 0, 28, 29, 32, 32, 68, 213 have median
        // 40. z(300) = 0.6745 · 213 / 40 = 3.59 and z(−250) = 0.6745 · −337
        // / 40 = −5.68 are flagged; z(7) = 0.6745 · −80 / 40 = −1.35 is not.
        assert_eq!(o.mad, vec![0, 12]);
        let z = modified_z_scores(&flagged).unwrap();
        assert!(close(z[12], 0.6745 * 213.0 / 40.0, 1e-12));
        assert!(close(z[0], -0.6745 * 337.0 / 40.0, 1e-12));
        assert!(close(z[1], -0.6745 * 2.0, 1e-12));
    }

    #[test]
    fn mad_rule_flags_a_slow_first_run() {
        // 30, 10, 11, 12, 13, 14: median 12.5; absolute deviations 17.5,
        // 2.5, 1.5, 0.5, 0.5, 1.5 have median 1.5. z(30) = 0.6745 · 17.5 /
        // 1.5 = 7.87; z(10) = 0.6745 · −2.5 / 1.5 = −1.12.
        let samples = [30.0, 10.0, 11.0, 12.0, 13.0, 14.0];
        let z = modified_z_scores(&samples).unwrap();
        assert!(close(z[0], 0.6745 * 17.5 / 1.5, 1e-12));
        assert!(close(z[1], -0.6745 * 2.5 / 1.5, 1e-12));
        let o = outliers(&samples);
        assert_eq!(o.mad, vec![0]);
        // Type 7 quartiles: h = 1.25 → 11.25, h = 3.75 → 13 + 0.75 · 1 =
        // 13.75 (sorted 10, 11, 12, 13, 14, 30); IQR 2.5; inner fence 17.5,
        // outer 21.25: 30 is severe.
        assert_eq!(o.tukey_severe, vec![0]);
        assert!(o.tukey_mild.is_empty());
        assert!(first_is_outlier(&samples));

        // The same slow run later on is not the first run.
        assert!(!first_is_outlier(&[10.0, 30.0, 11.0, 12.0, 13.0, 14.0]));
        // A first run that is fast, not slow, does not call for a warm-up.
        assert!(!first_is_outlier(&[1.0, 10.0, 11.0, 12.0, 13.0, 14.0]));
        assert!(!first_is_outlier(&[]));
        assert!(!first_is_outlier(&[f64::NAN, 1.0, 1.0]));
        assert!(!first_is_outlier(&[5.0]));
    }

    #[test]
    fn relative_floor_keeps_jitter_on_constant_samples_unflagged() {
        // Nine identical runs and one 0.01% slower: MAD and IQR are both 0,
        // so without a floor the odd one out is infinitely far away. With
        // the floor the spread is 0.001 · 100 = 0.1: z = 0.6745 · 0.01 / 0.1
        // = 0.067, and the inner fence is 100 + 0.15.
        let mut samples = vec![100.0; 10];
        samples[3] = 100.01;
        assert!(outliers(&samples).is_empty());
        let z = modified_z_scores(&samples).unwrap();
        assert!(close(z[3], 0.6745 * 0.01 / 0.1, 1e-9));
        let f = tukey_fences(&samples).unwrap();
        assert_eq!(f.iqr, 0.0);
        assert!(close(f.upper_inner, 100.15, 1e-9));
        assert!(close(f.upper_outer, 100.3, 1e-9));

        // A real excursion on the same sample is still caught: 101 is 1%
        // off, z = 0.6745 · 1 / 0.1 = 6.7, and beyond 100.3.
        samples[0] = 101.0;
        let o = outliers(&samples);
        assert_eq!(o.mad, vec![0]);
        assert_eq!(o.tukey_severe, vec![0]);
        assert!(first_is_outlier(&samples));

        // Exactly constant: nothing at all.
        assert!(outliers(&[42.0; 7]).is_empty());
        assert_eq!(modified_z_scores(&[42.0; 3]), Some(vec![0.0; 3]));
    }

    #[test]
    fn zero_median_with_zero_mad_scores_infinitely() {
        // Over half the values are exactly 0, so MAD = 0 and the floor
        // 0.001 · |0| = 0: any other value is infinitely far out.
        let z = modified_z_scores(&[0.0, 0.0, 0.0, 5.0, -1.0]).unwrap();
        assert_eq!(z, vec![0.0, 0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY]);
        assert_eq!(outliers(&[0.0, 0.0, 0.0, 5.0, -1.0]).mad, vec![3, 4]);
    }

    #[test]
    fn small_and_invalid_samples_flag_nothing() {
        assert_eq!(outliers(&[]), Outliers::default());
        assert!(outliers(&[1.0]).is_empty());
        // Two values: z = ±0.6745 and the fences lie half a range outside.
        assert!(outliers(&[1.0, 1000.0]).is_empty());
        assert!(outliers(&[1.0, f64::NAN, 1.0, 50.0]).is_empty());
        assert!(outliers(&[1.0, f64::INFINITY, 1.0]).is_empty());
        assert_eq!(modified_z_scores(&[]), None);
        assert_eq!(modified_z_scores(&[1.0, f64::NAN]), None);
        assert_eq!(tukey_fences(&[]), None);
        assert_eq!(tukey_fences(&[f64::NEG_INFINITY]), None);
    }
}
