//! Scaling analysis: how a time or a throughput changes with the number of
//! threads, jobs or processors N (methodology.md, "Scaling").
//!
//! Three pure functions over `(N, value)` points: [`analyse`] gives speedup,
//! efficiency and the per-point Amdahl and Karp–Flatt fractions;
//! [`amdahl_fit`] fits Amdahl's law over all points by linear least squares;
//! [`usl_fit`] fits the Universal Scalability Law by bounded non-linear least
//! squares. The scaling command measures the points; the report renders what
//! these return.
//!
//! Points are validated the same way everywhere: N must be finite and at least
//! 1, values finite and positive, and each N may appear only once (average the
//! repetitions of one N before calling; the fits weight every point equally).

use std::fmt;

/// The USL has three parameters, so a fit needs at least this many points.
pub const USL_MIN_POINTS: usize = 3;

/// Below this many points a USL fit is possible but weak; callers should warn
/// (methodology.md).
pub const USL_RECOMMENDED_POINTS: usize = 6;

/// A model whose penalty terms add less than this to the denominator at the
/// largest measured N (efficiency above about 95%) is called [`Bound::Linear`].
pub const LINEAR_PENALTY: f64 = 0.05;

/// What the measured values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// A duration for a fixed amount of work (seconds): lower is better.
    Time,
    /// Work per unit of time: higher is better.
    Throughput,
}

/// One measurement: `value` observed with `n` threads, jobs or processors.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// The degree of parallelism, at least 1 (need not be an integer).
    pub n: f64,
    /// The time or throughput measured at `n`, finite and positive.
    pub value: f64,
}

/// The scaling figures of one point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointAnalysis {
    /// The degree of parallelism.
    pub n: f64,
    /// The value as given.
    pub value: f64,
    /// The rate: the value for throughputs, 1/T for times.
    pub throughput: f64,
    /// S(N) = T(1)/T(N), or X(N)/X(1) for throughputs, against
    /// [`Analysis::baseline_n`].
    pub speedup: f64,
    /// S(N)/N: 1 is perfect scaling.
    pub efficiency: f64,
    /// Amdahl's parallel fraction p = (1 − 1/S)/(1 − 1/N) that would explain
    /// this speedup; `None` at N = 1, where it is undefined.
    pub amdahl_parallel_fraction: Option<f64>,
    /// The Karp–Flatt serial fraction e = (1/S − 1/N)/(1 − 1/N) (= 1 − p); a
    /// value growing with N points to overhead beyond a fixed serial part.
    /// `None` at N = 1.
    pub karp_flatt_serial_fraction: Option<f64>,
}

/// Speedup and efficiency of every point, from [`analyse`].
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// The N the speedups are relative to: 1 when there is a point at N = 1.
    /// Otherwise the smallest measured N, assuming perfect scaling up to it
    /// (its speedup is N itself), which overstates every speedup if that
    /// assumption is wrong; show it to the reader.
    pub baseline_n: f64,
    /// One entry per input point, sorted by N.
    pub points: Vec<PointAnalysis>,
    /// Index into `points` of the best point (shortest time, highest
    /// throughput; the smallest N among equals).
    pub best: usize,
}

/// Amdahl's law T(N) = a + b/N fitted over all points.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AmdahlFit {
    /// p = b/(a + b), clamped to [0, 1]: 0 when times do not fall with N
    /// (b ≤ 0), 1 when the fitted serial time a is not positive.
    pub parallel_fraction: f64,
    /// The largest speedup any N can give, 1/(1 − p); infinite when p = 1.
    pub ceiling: f64,
    /// Coefficient of determination of the fit on T (on 1/X for throughputs).
    pub r_squared: f64,
}

/// Which term of the USL limits scaling over the measured range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Neither term matters: at the largest measured N the penalties add less
    /// than [`LINEAR_PENALTY`] to the denominator.
    Linear,
    /// Contention (σ, queueing on a shared resource): throughput levels off
    /// towards λ/σ.
    Contention,
    /// Coherency (κ, crosstalk): throughput peaks and then falls. Chosen when
    /// κ > 0 and either the peak lies within the measured N or, at the largest
    /// measured N, the coherency penalty κN(N−1) is at least the contention
    /// penalty σ(N−1).
    Coherency,
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Bound::Linear => "linear",
            Bound::Contention => "contention",
            Bound::Coherency => "coherency",
        })
    }
}

/// The Universal Scalability Law X(N) = λN / (1 + σ(N−1) + κN(N−1)) fitted
/// to the throughputs (1/T for times).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UslFit {
    /// Contention, in [0, 1].
    pub sigma: f64,
    /// Coherency, at least 0.
    pub kappa: f64,
    /// Throughput at N = 1 (in 1/time units for times), positive.
    pub lambda: f64,
    /// Coefficient of determination of the fit on the throughputs.
    pub r_squared: f64,
    /// N* = floor(sqrt((1 − σ)/κ)), at least 1; `None` when κ = 0 (no peak).
    pub peak_n: Option<f64>,
    /// X(N*), when there is a peak.
    pub peak_throughput: Option<f64>,
    /// Which term limits scaling.
    pub bound: Bound,
}

impl UslFit {
    /// The modelled throughput at `n` (1/T for times).
    pub fn predict(&self, n: f64) -> f64 {
        usl([self.sigma, self.kappa, self.lambda], n)
    }
}

/// Why points could not be analysed or fitted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScalingError {
    /// Fewer points than the analysis has parameters.
    #[error(
        "{analysis} needs at least {need} points with distinct N, but got {got}; \
         measure more values of N"
    )]
    TooFewPoints {
        analysis: &'static str,
        need: usize,
        got: usize,
    },
    /// N is below 1 or not finite.
    #[error(
        "N = {n} is not a valid degree of parallelism; N must be a finite number of at least 1"
    )]
    InvalidN { n: f64 },
    /// A time or throughput is zero, negative or not finite.
    #[error(
        "the value at N = {n} is {value}; times and throughputs must be finite and greater \
         than zero, so re-measure or drop that point"
    )]
    InvalidValue { n: f64, value: f64 },
    /// Two points share one N.
    #[error(
        "N = {n} appears more than once; average the repeated measurements into one point \
         per N before the analysis"
    )]
    DuplicateN { n: f64 },
    /// The arithmetic overflowed; never expected for sane data.
    #[error(
        "the {analysis} gave a non-finite result; the values may span too many orders of \
         magnitude to fit"
    )]
    NotFinite { analysis: &'static str },
}

/// Speedup, efficiency and the Amdahl and Karp–Flatt fractions of each point
/// (at least one), relative to the point at N = 1 or, failing that, to the
/// smallest N (see [`Analysis::baseline_n`]).
pub fn analyse(points: &[Point], measure: Measure) -> Result<Analysis, ScalingError> {
    let sorted = validate(points, measure, 1, "a scaling analysis")?;
    let baseline = sorted[0];
    // Perfect scaling up to the baseline: the rate of one unit is the
    // baseline's rate divided by its N (exact when the baseline is N = 1).
    let unit_rate = rate(baseline, measure) / baseline.n;
    let analysed: Vec<PointAnalysis> = sorted
        .iter()
        .map(|&p| {
            let throughput = rate(p, measure);
            let speedup = throughput / unit_rate;
            let (amdahl, karp_flatt) = if p.n == 1.0 {
                (None, None)
            } else {
                let d = 1.0 - 1.0 / p.n;
                (
                    Some((1.0 - 1.0 / speedup) / d),
                    Some((1.0 / speedup - 1.0 / p.n) / d),
                )
            };
            PointAnalysis {
                n: p.n,
                value: p.value,
                throughput,
                speedup,
                efficiency: speedup / p.n,
                amdahl_parallel_fraction: amdahl,
                karp_flatt_serial_fraction: karp_flatt,
            }
        })
        .collect();
    let mut best = 0;
    for (i, p) in analysed.iter().enumerate() {
        if p.throughput > analysed[best].throughput {
            best = i;
        }
    }
    Ok(Analysis {
        baseline_n: baseline.n,
        points: analysed,
        best,
    })
}

/// Fits Amdahl's law T(N) = a + b/N to at least two points by linear least
/// squares in 1/N (throughputs are fitted as T = 1/X) and returns the parallel
/// fraction p = b/(a + b), clamped to [0, 1].
pub fn amdahl_fit(points: &[Point], measure: Measure) -> Result<AmdahlFit, ScalingError> {
    const ANALYSIS: &str = "Amdahl fit";
    let sorted = validate(points, measure, 2, "an Amdahl fit")?;
    let xs: Vec<f64> = sorted.iter().map(|p| 1.0 / p.n).collect();
    let ts: Vec<f64> = sorted.iter().map(|&p| 1.0 / rate(p, measure)).collect();
    let count = xs.len() as f64;
    let mean_x = xs.iter().sum::<f64>() / count;
    let mean_t = ts.iter().sum::<f64>() / count;
    let sxx: f64 = xs.iter().map(|x| (x - mean_x).powi(2)).sum();
    let sxt: f64 = xs
        .iter()
        .zip(&ts)
        .map(|(x, t)| (x - mean_x) * (t - mean_t))
        .sum();
    // Distinct N ≥ 1 make sxx > 0.
    let b = sxt / sxx;
    let a = mean_t - b * mean_x;
    let parallel_fraction = if b <= 0.0 {
        0.0
    } else if a <= 0.0 {
        1.0
    } else {
        b / (a + b)
    };
    let fitted: Vec<f64> = xs.iter().map(|x| a + b * x).collect();
    let fit = AmdahlFit {
        parallel_fraction,
        ceiling: 1.0 / (1.0 - parallel_fraction),
        r_squared: r_squared(&ts, &fitted),
    };
    if !(fit.parallel_fraction.is_finite() && fit.r_squared.is_finite()) {
        return Err(ScalingError::NotFinite { analysis: ANALYSIS });
    }
    Ok(fit)
}

/// Fits the Universal Scalability Law to at least [`USL_MIN_POINTS`] points
/// (warn the reader under [`USL_RECOMMENDED_POINTS`]).
///
/// All three parameters are fitted by unweighted least squares on the
/// throughputs (1/T for times), as R's `usl` package does: Levenberg–Marquardt
/// with σ ∈ [0, 1], κ ≥ 0 and λ > 0 kept by projection, started both from the
/// linearised fit and from a generic guess, keeping the better result.
pub fn usl_fit(points: &[Point], measure: Measure) -> Result<UslFit, ScalingError> {
    const ANALYSIS: &str = "USL fit";
    let sorted = validate(points, measure, USL_MIN_POINTS, "a USL fit")?;
    let rates: Vec<f64> = sorted.iter().map(|&p| rate(p, measure)).collect();
    // Fit throughputs scaled to at most 1, so λ starts near 1 whatever the
    // units; σ and κ do not depend on the scale.
    let scale = rates.iter().copied().fold(0.0, f64::max);
    let data: Vec<(f64, f64)> = sorted
        .iter()
        .zip(&rates)
        .map(|(p, x)| (p.n, x / scale))
        .collect();
    let (theta, _) = [linearised_seed(&data), generic_seed(&data)]
        .into_iter()
        .map(|seed| levenberg_marquardt(&data, seed))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("two seeds");
    let [sigma, kappa, scaled_lambda] = theta;
    let lambda = scaled_lambda * scale;
    let params = [sigma, kappa, lambda];
    let fitted: Vec<f64> = sorted.iter().map(|p| usl(params, p.n)).collect();
    let peak_n = (kappa > 0.0).then(|| ((1.0 - sigma) / kappa).sqrt().floor().max(1.0));
    let n_max = sorted[sorted.len() - 1].n;
    let fit = UslFit {
        sigma,
        kappa,
        lambda,
        r_squared: r_squared(&rates, &fitted),
        peak_n,
        peak_throughput: peak_n.map(|n| usl(params, n)),
        bound: classify(sigma, kappa, peak_n, n_max),
    };
    let finite = [sigma, kappa, lambda, fit.r_squared]
        .into_iter()
        .chain(fit.peak_n)
        .chain(fit.peak_throughput)
        .all(f64::is_finite);
    if !finite {
        return Err(ScalingError::NotFinite { analysis: ANALYSIS });
    }
    Ok(fit)
}

/// Checks every point and returns them sorted by N.
fn validate(
    points: &[Point],
    measure: Measure,
    need: usize,
    analysis: &'static str,
) -> Result<Vec<Point>, ScalingError> {
    for &p in points {
        if !(p.n.is_finite() && p.n >= 1.0) {
            return Err(ScalingError::InvalidN { n: p.n });
        }
        // The rate check catches times so small that 1/T overflows.
        if !(p.value.is_finite() && p.value > 0.0 && rate(p, measure).is_finite()) {
            return Err(ScalingError::InvalidValue {
                n: p.n,
                value: p.value,
            });
        }
    }
    let mut sorted = points.to_vec();
    sorted.sort_by(|a, b| a.n.total_cmp(&b.n));
    if let Some(w) = sorted.windows(2).find(|w| w[0].n == w[1].n) {
        return Err(ScalingError::DuplicateN { n: w[0].n });
    }
    if sorted.len() < need {
        return Err(ScalingError::TooFewPoints {
            analysis,
            need,
            got: sorted.len(),
        });
    }
    Ok(sorted)
}

/// The rate of a point: higher is better.
fn rate(p: Point, measure: Measure) -> f64 {
    match measure {
        Measure::Time => 1.0 / p.value,
        Measure::Throughput => p.value,
    }
}

/// 1 − SS_res/SS_tot. Constant observations have no variance to explain:
/// then 1 if the fit reproduces them, else 0.
fn r_squared(observed: &[f64], fitted: &[f64]) -> f64 {
    let mean = observed.iter().sum::<f64>() / observed.len() as f64;
    let ss_tot: f64 = observed.iter().map(|y| (y - mean).powi(2)).sum();
    let ss_res: f64 = observed
        .iter()
        .zip(fitted)
        .map(|(y, f)| (y - f).powi(2))
        .sum();
    let size: f64 = observed.iter().map(|y| y * y).sum();
    if ss_tot > 1e-24 * size {
        1.0 - ss_res / ss_tot
    } else if ss_res <= 1e-24 * size {
        1.0
    } else {
        0.0
    }
}

/// X(N) for θ = [σ, κ, λ].
fn usl([sigma, kappa, lambda]: [f64; 3], n: f64) -> f64 {
    lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

/// Which term limits scaling; see [`Bound`] for the rule.
fn classify(sigma: f64, kappa: f64, peak_n: Option<f64>, n_max: f64) -> Bound {
    let contention = sigma * (n_max - 1.0);
    let coherency = kappa * n_max * (n_max - 1.0);
    if contention + coherency < LINEAR_PENALTY {
        Bound::Linear
    } else if peak_n.is_some_and(|peak| peak <= n_max) || (kappa > 0.0 && coherency >= contention) {
        Bound::Coherency
    } else {
        Bound::Contention
    }
}

const LOWER: [f64; 3] = [0.0, 0.0, 1e-12];
const UPPER: [f64; 3] = [1.0, f64::INFINITY, f64::INFINITY];

fn project(theta: [f64; 3]) -> [f64; 3] {
    std::array::from_fn(|j| theta[j].clamp(LOWER[j], UPPER[j]))
}

/// The seed from the linearised USL: with C = X/λ₀, N/C − 1 = σ(N−1) +
/// κN(N−1), a least-squares quadratic through the origin in N − 1. λ₀ is X
/// at the smallest N divided by that N (X(1) when N = 1 was measured).
fn linearised_seed(data: &[(f64, f64)]) -> [f64; 3] {
    let (n0, x0) = data[0];
    let lambda = x0 / n0;
    let (mut suu, mut suv, mut svv, mut suz, mut svz) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(n, x) in data {
        let (u, v, z) = (n - 1.0, n * (n - 1.0), n * lambda / x - 1.0);
        suu += u * u;
        suv += u * v;
        svv += v * v;
        suz += u * z;
        svz += v * z;
    }
    let det = suu * svv - suv * suv;
    if det.is_nan() || det.abs() <= 1e-12 * suu * svv {
        return generic_seed(data);
    }
    let sigma = (suz * svv - svz * suv) / det;
    let kappa = (svz * suu - suz * suv) / det;
    project([sigma, kappa, lambda])
}

/// The usual generic start (as in R's `usl`): λ = max X/N, small σ and κ.
fn generic_seed(data: &[(f64, f64)]) -> [f64; 3] {
    let lambda = data.iter().map(|&(n, x)| x / n).fold(0.0, f64::max);
    project([0.01, 1e-4, lambda])
}

fn sum_of_squares(data: &[(f64, f64)], theta: [f64; 3]) -> f64 {
    data.iter().map(|&(n, x)| (x - usl(theta, n)).powi(2)).sum()
}

/// Bounded Levenberg–Marquardt from `start`; returns θ and its sum of squares.
///
/// Each step solves the damped normal equations in Jacobi-scaled variables
/// (Marquardt's scaling, so κ ~ 1e-4 and λ ~ 1 are treated alike), holding a
/// parameter fixed while it sits on a bound and the gradient pushes outward,
/// and projects the result back into the bounds. Steps that do not lower the
/// sum of squares raise the damping; it stops when the damping explodes (no
/// step helps) or the improvement falls under 1e-15 relative.
fn levenberg_marquardt(data: &[(f64, f64)], start: [f64; 3]) -> ([f64; 3], f64) {
    let mut theta = project(start);
    let mut sse = sum_of_squares(data, theta);
    let mut damping = 1e-3;
    for _ in 0..500 {
        // JᵀJ and Jᵀr, with J = ∂X/∂θ and r = observed − model.
        let mut jtj = [[0.0; 3]; 3];
        let mut jtr = [0.0; 3];
        let [sigma, kappa, lambda] = theta;
        for &(n, x) in data {
            let d = 1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0);
            let model = lambda * n / d;
            let grad = [-model * (n - 1.0) / d, -model * n * (n - 1.0) / d, n / d];
            for i in 0..3 {
                jtr[i] += grad[i] * (x - model);
                for j in 0..3 {
                    jtj[i][j] += grad[i] * grad[j];
                }
            }
        }
        let free: [bool; 3] = std::array::from_fn(|j| {
            let blocked =
                (theta[j] <= LOWER[j] && jtr[j] <= 0.0) || (theta[j] >= UPPER[j] && jtr[j] >= 0.0);
            !blocked && jtj[j][j] > 0.0
        });
        let improved = loop {
            if damping > 1e15 {
                return (theta, sse);
            }
            let Some(step) = damped_step(&jtj, &jtr, free, damping) else {
                damping *= 10.0;
                continue;
            };
            let candidate = project(std::array::from_fn(|j| theta[j] + step[j]));
            let candidate_sse = sum_of_squares(data, candidate);
            if candidate_sse < sse {
                let improvement = sse - candidate_sse;
                theta = candidate;
                sse = candidate_sse;
                damping = (damping / 10.0).max(1e-12);
                break improvement;
            }
            damping *= 10.0;
        };
        if improved <= 1e-15 * sse {
            break;
        }
    }
    (theta, sse)
}

/// Solves (Â + μI) y = ĝ with Â = D·JᵀJ·D, ĝ = D·Jᵀr, D = diag(JᵀJ)^(−½)
/// over the free parameters, and returns the step D·y (0 for fixed ones).
fn damped_step(
    jtj: &[[f64; 3]; 3],
    jtr: &[f64; 3],
    free: [bool; 3],
    damping: f64,
) -> Option<[f64; 3]> {
    let d: [f64; 3] = std::array::from_fn(|j| {
        if free[j] {
            jtj[j][j].sqrt().recip()
        } else {
            0.0
        }
    });
    let mut m = [[0.0; 4]; 3];
    for i in 0..3 {
        for j in 0..3 {
            m[i][j] = jtj[i][j] * d[i] * d[j];
        }
        m[i][i] = if free[i] { 1.0 + damping } else { 1.0 };
        m[i][3] = jtr[i] * d[i];
    }
    // Gaussian elimination with partial pivoting on the augmented 3×4 matrix.
    for col in 0..3 {
        let pivot = (col..3).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if !m[pivot][col].is_normal() {
            return None;
        }
        m.swap(col, pivot);
        let pivot_row = m[col];
        for row in &mut m[col + 1..] {
            let factor = row[col] / pivot_row[col];
            for (x, p) in row.iter_mut().zip(pivot_row).skip(col) {
                *x -= factor * p;
            }
        }
    }
    let mut y = [0.0; 3];
    for i in (0..3).rev() {
        let tail: f64 = (i + 1..3).map(|k| m[i][k] * y[k]).sum();
        y[i] = (m[i][3] - tail) / m[i][i];
    }
    let step: [f64; 3] = std::array::from_fn(|j| y[j] * d[j]);
    step.iter().all(|s| s.is_finite()).then_some(step)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(data: &[(f64, f64)]) -> Vec<Point> {
        data.iter().map(|&(n, value)| Point { n, value }).collect()
    }

    #[track_caller]
    fn assert_rel(actual: f64, expected: f64, tolerance: f64) {
        let error = ((actual - expected) / expected).abs();
        assert!(
            error <= tolerance,
            "{actual} is not within {tolerance} of {expected} (relative error {error:.3e})"
        );
    }

    /// A point at each of `ns`, its value `value(n)`.
    fn sampled(ns: &[f64], value: impl Fn(f64) -> f64) -> Vec<Point> {
        ns.iter().map(|&n| Point { n, value: value(n) }).collect()
    }

    /// The same points with each value `v` as 1/v: times as throughputs,
    /// and back.
    fn reciprocals(data: &[Point]) -> Vec<Point> {
        data.iter()
            .map(|p| Point {
                n: p.n,
                value: 1.0 / p.value,
            })
            .collect()
    }

    /// The USL fit of `throughputs` measured at `ns`, one for one.
    fn usl_fit_of(ns: &[f64], throughputs: &[f64]) -> UslFit {
        assert_eq!(ns.len(), throughputs.len());
        let data: Vec<Point> = ns
            .iter()
            .zip(throughputs)
            .map(|(&n, &value)| Point { n, value })
            .collect();
        usl_fit(&data, Measure::Throughput).unwrap()
    }

    /// The fit's σ, κ and λ are `[sigma, kappa, lambda]`, each within the
    /// relative `tolerance`.
    #[track_caller]
    fn assert_usl_parameters(fit: &UslFit, [sigma, kappa, lambda]: [f64; 3], tolerance: f64) {
        assert_rel(fit.sigma, sigma, tolerance);
        assert_rel(fit.kappa, kappa, tolerance);
        assert_rel(fit.lambda, lambda, tolerance);
    }

    /// T(N) = 0.1 + 0.9/N: Amdahl's law with p = 0.9, so S(N) = 1/(0.1 + 0.9/N).
    fn amdahl_times() -> Vec<Point> {
        sampled(&[1.0, 2.0, 4.0, 8.0, 16.0, 32.0], |n| 0.1 + 0.9 / n)
    }

    #[test]
    fn exact_amdahl_times_give_p_and_karp_flatt_at_every_point() {
        let analysis = analyse(&amdahl_times(), Measure::Time).unwrap();
        assert_eq!(analysis.baseline_n, 1.0);
        assert_eq!(analysis.best, 5);
        let first = analysis.points[0];
        assert_eq!((first.speedup, first.efficiency), (1.0, 1.0));
        assert_eq!(first.amdahl_parallel_fraction, None);
        assert_eq!(first.karp_flatt_serial_fraction, None);
        for p in &analysis.points[1..] {
            // N = 4: T = 0.325, S = 1/0.325 = 3.0769..., E = S/4.
            let speedup = 1.0 / (0.1 + 0.9 / p.n);
            assert_rel(p.speedup, speedup, 1e-12);
            assert_rel(p.efficiency, speedup / p.n, 1e-12);
            assert_rel(p.throughput, 1.0 / p.value, 1e-15);
            assert_rel(p.amdahl_parallel_fraction.unwrap(), 0.9, 1e-12);
            assert_rel(p.karp_flatt_serial_fraction.unwrap(), 0.1, 1e-12);
        }
    }

    #[test]
    fn amdahl_fit_recovers_p_and_ceiling() {
        let fit = amdahl_fit(&amdahl_times(), Measure::Time).unwrap();
        assert_rel(fit.parallel_fraction, 0.9, 1e-12);
        assert_rel(fit.ceiling, 10.0, 1e-10);
        assert_rel(fit.r_squared, 1.0, 1e-12);

        // The same system measured as throughput X = 1/T fits the same.
        let throughputs = reciprocals(&amdahl_times());
        let fit = amdahl_fit(&throughputs, Measure::Throughput).unwrap();
        assert_rel(fit.parallel_fraction, 0.9, 1e-12);
    }

    #[test]
    fn amdahl_fit_clamps_p() {
        // Times that grow with N: nothing is parallel.
        let slower = points(&[(1.0, 1.0), (2.0, 1.5), (4.0, 2.0)]);
        let fit = amdahl_fit(&slower, Measure::Time).unwrap();
        assert_eq!(fit.parallel_fraction, 0.0);
        assert_eq!(fit.ceiling, 1.0);
        // Superlinear: T = 1/N² fits with a ≤ 0, so p is clamped to 1.
        let superlinear = points(&[(1.0, 1.0), (2.0, 0.25), (4.0, 0.0625)]);
        let fit = amdahl_fit(&superlinear, Measure::Time).unwrap();
        assert_eq!(fit.parallel_fraction, 1.0);
        assert_eq!(fit.ceiling, f64::INFINITY);
    }

    #[test]
    fn analysis_without_n1_assumes_perfect_scaling_to_the_smallest_n() {
        // Unsorted throughputs from N = 2: X(2) = 10, so one unit is worth 5.
        let data = points(&[(8.0, 30.0), (2.0, 10.0), (4.0, 18.0)]);
        let analysis = analyse(&data, Measure::Throughput).unwrap();
        assert_eq!(analysis.baseline_n, 2.0);
        let ns: Vec<f64> = analysis.points.iter().map(|p| p.n).collect();
        assert_eq!(ns, [2.0, 4.0, 8.0]);
        assert_eq!(analysis.best, 2);
        let [base, four, eight] = analysis.points[..] else {
            unreachable!()
        };
        assert_eq!((base.speedup, base.efficiency), (2.0, 1.0));
        assert_eq!(base.amdahl_parallel_fraction, Some(1.0));
        assert_eq!(base.karp_flatt_serial_fraction, Some(0.0));
        // S(4) = 18/5 = 3.6; p = (1 − 1/3.6)/(1 − 1/4) = 0.96296...
        assert_rel(four.speedup, 3.6, 1e-15);
        assert_rel(four.efficiency, 0.9, 1e-15);
        assert_rel(
            four.amdahl_parallel_fraction.unwrap(),
            (1.0 - 1.0 / 3.6) / 0.75,
            1e-15,
        );
        // S(8) = 6; e = (1/6 − 1/8)/(1 − 1/8) = 1/21.
        assert_rel(eight.speedup, 6.0, 1e-15);
        assert_rel(eight.karp_flatt_serial_fraction.unwrap(), 1.0 / 21.0, 1e-12);
    }

    #[test]
    fn best_time_is_the_shortest_and_ties_go_to_the_smallest_n() {
        let data = points(&[(1.0, 4.0), (2.0, 2.5), (4.0, 2.0), (8.0, 2.0), (16.0, 3.0)]);
        assert_eq!(analyse(&data, Measure::Time).unwrap().best, 2);
    }

    /// σ = 0.05, κ = 0.002, λ = 100: N* = floor(sqrt(0.95/0.002)) = floor(21.79) = 21.
    fn usl_data() -> Vec<Point> {
        let ns = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];
        sampled(&ns, |n| usl([0.05, 0.002, 100.0], n))
    }

    #[test]
    fn usl_fit_recovers_exact_parameters_and_peak() {
        let fit = usl_fit(&usl_data(), Measure::Throughput).unwrap();
        assert_usl_parameters(&fit, [0.05, 0.002, 100.0], 1e-6);
        assert_rel(fit.r_squared, 1.0, 1e-12);
        assert_eq!(fit.peak_n, Some(21.0));
        // X(21) = 2100 / (1 + 0.05·20 + 0.002·21·20) = 2100/2.84.
        assert_rel(fit.peak_throughput.unwrap(), 2100.0 / 2.84, 1e-6);
        assert_eq!(fit.bound, Bound::Coherency);
        assert_rel(fit.predict(10.0), 1000.0 / 1.63, 1e-6);
    }

    #[test]
    fn usl_fit_of_times_fits_their_reciprocals() {
        let fit = usl_fit(&reciprocals(&usl_data()), Measure::Time).unwrap();
        assert_usl_parameters(&fit, [0.05, 0.002, 100.0], 1e-6);
    }

    #[test]
    fn usl_fit_without_n1_and_with_fractional_n() {
        let data = sampled(&[1.5, 3.0, 6.0, 12.0, 24.0], |n| usl([0.1, 0.0005, 7.0], n));
        let fit = usl_fit(&data, Measure::Throughput).unwrap();
        assert_usl_parameters(&fit, [0.1, 0.0005, 7.0], 1e-6);
    }

    #[test]
    fn usl_bounds_hold_and_classify() {
        // Linear scaling: both penalties sit on their lower bound.
        let linear = points(&[(1.0, 3.0), (2.0, 6.0), (4.0, 12.0), (8.0, 24.0)]);
        let fit = usl_fit(&linear, Measure::Throughput).unwrap();
        assert_eq!((fit.sigma, fit.kappa), (0.0, 0.0));
        assert_rel(fit.lambda, 3.0, 1e-9);
        assert_eq!((fit.peak_n, fit.peak_throughput), (None, None));
        assert_eq!(fit.bound, Bound::Linear);

        // Pure contention (Amdahl): κ stays at 0, σ = 0.1.
        let amdahl = sampled(&[1.0, 2.0, 4.0, 8.0, 16.0], |n| usl([0.1, 0.0, 5.0], n));
        let fit = usl_fit(&amdahl, Measure::Throughput).unwrap();
        assert_rel(fit.sigma, 0.1, 1e-6);
        assert!(fit.kappa < 1e-9, "κ = {}", fit.kappa);
        assert_eq!(fit.bound, Bound::Contention);

        // Throughput that falls from the start: σ is held at its upper bound 1
        // and the peak is N = 1 rather than floor(sqrt(0 / κ)) = 0.
        let falling = points(&[(1.0, 10.0), (2.0, 8.0), (4.0, 5.0), (8.0, 3.0)]);
        let fit = usl_fit(&falling, Measure::Throughput).unwrap();
        assert!(fit.sigma <= 1.0 && fit.kappa >= 0.0);
        assert_eq!(fit.peak_n, Some(1.0));
        assert_eq!(fit.bound, Bound::Coherency);

        // Constant throughput is exactly σ = 1, κ = 0.
        let flat = points(&[(1.0, 4.0), (2.0, 4.0), (3.0, 4.0)]);
        let fit = usl_fit(&flat, Measure::Throughput).unwrap();
        assert_rel(fit.sigma, 1.0, 1e-6);
        assert_eq!(fit.r_squared, 1.0);
        assert_eq!(fit.bound, Bound::Contention);
    }

    // Published reference fits. Every reference below fits all three
    // parameters (σ, κ, λ) by unweighted least squares on the throughput, as
    // usl_fit does, so the coefficients compare directly.

    #[test]
    fn usl_matches_r_usl_on_specsdm91() {
        // Gunther, "Guerrilla Capacity Planning" (2007): SPEC SDM91 on a Sun
        // SPARCcenter 2000, dataset `specsdm91` of the R package usl 3.0.3
        // (smoeding/usl, data/specsdm91.rda). Fitted by usl() (nlxb, all three
        // parameters, bounded): tests/summary.Rout.save gives alpha (σ) =
        // 2.773e-2, beta (κ) = 1.044e-4, gamma (λ) = 90.00;
        // tests/peak-scalability.R gives sqrt((1 − σ)/κ) = 96.51956 and
        // tests/limit-scalability.R gives λ/σ = 3245.589.
        let fit = usl_fit_of(
            &[1.0, 18.0, 36.0, 72.0, 108.0, 144.0, 216.0],
            &[64.9, 995.9, 1652.4, 1853.2, 1828.9, 1775.0, 1702.2],
        );
        assert_usl_parameters(&fit, [2.773e-2, 1.044e-4, 90.00], 0.01);
        assert_rel(((1.0 - fit.sigma) / fit.kappa).sqrt(), 96.51956, 0.01);
        assert_rel(fit.lambda / fit.sigma, 3245.589, 0.01);
        assert_eq!(fit.peak_n, Some(96.0));
        assert_eq!(fit.bound, Bound::Coherency);
    }

    #[test]
    fn usl_matches_r_usl_on_raytracer() {
        // Gunther, "Guerrilla Capacity Planning": ray-tracer benchmark on an
        // SGI Origin 2000, the first six rows of dataset `raytracer` of the R
        // package usl (smoeding/usl, data/raytracer.rda). Fitted by usl() on
        // raytracer[1:6, ]: tests/confint.Rout.save gives alpha (σ) = 0.02444,
        // beta (κ) = 0.00163, gamma (λ) = 20.85605.
        let ns = [
            1.0, 4.0, 8.0, 12.0, 16.0, 20.0, 24.0, 28.0, 32.0, 48.0, 64.0,
        ];
        let throughputs = [
            20.0, 78.0, 130.0, 170.0, 190.0, 200.0, 210.0, 230.0, 260.0, 280.0, 310.0,
        ];
        let fit = usl_fit_of(&ns[..6], &throughputs[..6]);
        assert_usl_parameters(&fit, [0.02444, 0.00163, 20.85605], 0.01);

        // All eleven rows: the package vignette (vignettes/usl.Rnw) reports
        // beta = 0, no coherency penalty, so throughput only levels off.
        let fit = usl_fit_of(&ns, &throughputs);
        assert_eq!(fit.kappa, 0.0);
        assert_eq!(fit.peak_n, None);
        assert_eq!(fit.bound, Bound::Contention);
    }

    #[test]
    fn usl_matches_schwartz_cisco_benchmark() {
        // Baron Schwartz, "Practical Scalability Analysis With The Universal
        // Scalability Law" (VividCortex, 2015): the Cisco benchmark and the
        // book's fitted model, as quoted in codahale/usl4j
        // (src/test/java/com/codahale/usl4j/tests/ModelTest.java) and
        // codahale/usl (model_test.go): σ = 0.02671591, κ = 7.690945e-4,
        // λ = 995.6486, N_max = 35, X_max = 12341.
        let throughputs = [
            955.16, 1878.91, 2688.01, 3548.68, 4315.54, 5130.43, 5931.37, 6531.08, 7219.8, 7867.61,
            8278.71, 8646.7, 9047.84, 9426.55, 9645.37, 9897.24, 10097.6, 10240.5, 10532.39,
            10798.52, 11151.43, 11518.63, 11806.0, 12089.37, 12075.41, 12177.29, 12211.41,
            12158.93, 12155.27, 12118.04, 12140.4, 12074.39,
        ];
        let ns: Vec<f64> = (1..=throughputs.len()).map(|n| n as f64).collect();
        let fit = usl_fit_of(&ns, &throughputs);
        assert_usl_parameters(&fit, [0.02671591, 7.690945e-4, 995.6486], 0.01);
        assert_eq!(fit.peak_n, Some(35.0));
        assert_rel(fit.peak_throughput.unwrap(), 12341.0, 0.01);
        // The peak lies past N = 32 and κN < σ there: contention limits the
        // measured range (the references call it contention-constrained too).
        assert_eq!(fit.bound, Bound::Contention);
    }

    #[test]
    fn usl_matches_r_usl_synthetic_coefficients() {
        // smoeding/usl tests/coef.R: throughputs from σ = κ = 0.02, λ = 1
        // rounded to four decimals; usl() gives alpha = beta = 0.02, gamma = 1.00.
        let fit = usl_fit_of(
            &[1.0, 2.0, 4.0, 6.0, 8.0, 10.0],
            &[1.0, 1.8868, 3.0769, 3.5294, 3.5398, 3.3557],
        );
        assert_usl_parameters(&fit, [0.02, 0.02, 1.0], 0.01);
        // sqrt(0.98/0.02) = 7: the peak is inside the measured range.
        assert_eq!(fit.peak_n, Some(7.0));
        assert_eq!(fit.bound, Bound::Coherency);
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let two = points(&[(1.0, 1.0), (2.0, 0.6)]);
        let err = usl_fit(&two, Measure::Time).unwrap_err();
        assert_eq!(
            err,
            ScalingError::TooFewPoints {
                analysis: "a USL fit",
                need: 3,
                got: 2
            }
        );
        assert!(err.to_string().contains("at least 3 points"), "{err}");
        assert!(amdahl_fit(&two, Measure::Time).is_ok());
        assert!(matches!(
            amdahl_fit(&two[..1], Measure::Time),
            Err(ScalingError::TooFewPoints {
                need: 2,
                got: 1,
                ..
            })
        ));
        assert!(matches!(
            analyse(&[], Measure::Time),
            Err(ScalingError::TooFewPoints {
                need: 1,
                got: 0,
                ..
            })
        ));

        for n in [0.5, 0.0, -2.0, f64::NAN, f64::INFINITY] {
            let data = points(&[(1.0, 1.0), (n, 0.5), (4.0, 0.3)]);
            let err = usl_fit(&data, Measure::Time).unwrap_err();
            assert!(matches!(err, ScalingError::InvalidN { .. }), "{err}");
        }
        for value in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let data = points(&[(1.0, 1.0), (2.0, value), (4.0, 0.3)]);
            let err = analyse(&data, Measure::Throughput).unwrap_err();
            assert!(
                matches!(err, ScalingError::InvalidValue { n: 2.0, .. }),
                "{err}"
            );
        }
        // A time so short that its rate overflows.
        let tiny = points(&[(1.0, 1.0), (2.0, 1e-310)]);
        assert!(matches!(
            analyse(&tiny, Measure::Time),
            Err(ScalingError::InvalidValue { .. })
        ));

        let duplicate = points(&[(1.0, 1.0), (4.0, 0.3), (2.0, 0.6), (4.0, 0.35)]);
        let err = usl_fit(&duplicate, Measure::Time).unwrap_err();
        assert_eq!(err, ScalingError::DuplicateN { n: 4.0 });
        assert!(
            err.to_string().contains("N = 4 appears more than once"),
            "{err}"
        );
    }
}
