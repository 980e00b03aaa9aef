//! Change points in a series of runs: where did a figure move, by how
//! much, and is the newest run part of a regression?
//!
//! The method is E-divisive means (Matteson & James, "A Nonparametric
//! Approach for Multiple Change Point Analysis of Multivariate Data",
//! JASA 2014), the one MongoDB's performance CI and Apache Otava build on
//! (Daly et al., ICPE 2020), with the significance of each split taken by
//! a permutation test, as in the original:
//!
//! 1. **Split.** In a stretch of the series, every split point τ (leaving
//!    at least [`Settings::min_segment`] values a side) gets the energy
//!    statistic q̂(τ) = mk/(m+k) · (2/(mk)·Σ|xᵢ−yⱼ| − Σ|xᵢ−xⱼ|/C(m,2) −
//!    Σ|yᵢ−yⱼ|/C(k,2)); the best split is its maximum. The statistic needs
//!    no normality and sees a shift of the mean as well as of the spread.
//! 2. **Test.** The same maximum over random permutations of the stretch
//!    gives the p-value (1 + b)/(1 + R), b of R at least as large: under
//!    the null hypothesis of no change the order is exchangeable, so the
//!    test holds its level exactly, the search for the best τ included.
//!    The stretch splits when p ≤ α, and both halves are searched again.
//! 3. **Prune.** Each change is then judged between its neighbours (the
//!    runs since the previous change and until the next): a change whose
//!    two sides do not differ at α, or whose size is under
//!    [`Settings::min_change`], goes, the weakest first, and its
//!    neighbours are judged again — Otava's "weak change points" step.
//!
//! Under pure noise the first test, and so the whole series, reports a
//! change with probability at most α (measured in the tests below). Otava
//! and `signal-processing-algorithms` use a Student t-test in place of the
//! permutation test of step 2, which is faster but does not account for
//! the choice of the best τ among many: it reports changes in pure noise
//! far more often than its nominal level, hence their default of 0.001.
//!
//! Every statistic is computed in O(n log n) per scan (ranks in Fenwick
//! trees), so a series of thousands of runs with hundreds of permutations
//! takes well under a second; draws come from a generator seeded by the
//! caller, so an analysis repeats exactly.

use dyno_model::Direction;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

use crate::Summary;
use crate::compare::student_t_ratio_interval;

/// The significance level of a split and of the gate, by default: a
/// series of pure noise reports a change in at most 1 run in 100 analyses.
pub const DEFAULT_ALPHA: f64 = 0.01;
/// The smallest relative change reported, by default (5%).
pub const DEFAULT_MIN_CHANGE: f64 = 0.05;
/// The fewest runs on each side of a change, by default.
pub const DEFAULT_MIN_SEGMENT: usize = 4;
/// Permutations of a permutation test, by default: enough to reach
/// p = 0.001, and an α of 0.01 within ±0.003 (its binomial error).
pub const DEFAULT_PERMUTATIONS: usize = 999;
/// The confidence of a change's interval.
pub const CONFIDENCE: f64 = 0.95;
/// The power [`Analysis::detectable`] is stated at.
pub const POWER: f64 = 0.8;

/// How a series is analysed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Significance level of each split, each change kept and the gate.
    pub alpha: f64,
    /// The smallest relative change kept (0.05: 5%), either way.
    pub min_change: f64,
    /// The fewest runs on each side of a change (at least 2).
    pub min_segment: usize,
    /// Permutations per test.
    pub permutations: usize,
    /// The seed of the permutations.
    pub seed: u64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            alpha: DEFAULT_ALPHA,
            min_change: DEFAULT_MIN_CHANGE,
            min_segment: DEFAULT_MIN_SEGMENT,
            permutations: DEFAULT_PERMUTATIONS,
            seed: 0,
        }
    }
}

/// A run of the series between two changes (or an end): values
/// `start..end`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stretch {
    pub start: usize,
    pub end: usize,
    pub mean: f64,
    pub stddev: f64,
}

impl Stretch {
    fn of(values: &[f64], start: usize, end: usize) -> Stretch {
        let s = Summary::of(&values[start..end]).expect("a stretch is never empty");
        Stretch {
            start,
            end,
            mean: s.mean,
            stddev: s.stddev,
        }
    }

    pub fn len(&self) -> usize {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
}

/// A change point: the series moved at `index` (the first run after it).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub index: usize,
    /// The runs since the previous change.
    pub before: Stretch,
    /// The runs until the next change.
    pub after: Stretch,
    /// mean(after) / mean(before).
    pub ratio: f64,
    /// The [`CONFIDENCE`] interval of `ratio` (Student t on the log
    /// scale, Welch's degrees of freedom); `None` when a side has one run.
    pub interval: Option<(f64, f64)>,
    /// The permutation test's p-value between `before` and `after`.
    pub p_value: f64,
}

impl Change {
    /// Whether the change made the figure worse, judged by its direction.
    pub fn is_regression(&self, direction: Direction) -> bool {
        worse(self.ratio, direction)
    }
}

/// What the analysis of a series found.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// The changes, oldest first.
    pub changes: Vec<Change>,
    /// The stretches between them, oldest first (one more than changes).
    pub segments: Vec<Stretch>,
    /// The noise of the series: a robust standard deviation of one run
    /// (from the differences of neighbours, so a step does not inflate
    /// it), relative to the median.
    pub noise: f64,
    /// The smallest relative step a series of this length and noise shows
    /// with [`POWER`] at α, at best (a step in the middle). When it is
    /// above [`Settings::min_change`], a series without changes is too
    /// short to say that none of that size happened.
    pub detectable: f64,
    /// Whether the permutation test can reach α at all with this many
    /// runs: whether a step in the middle, with no noise at all, would be
    /// found. (Ten runs cannot at α = 0.01: too many orders of them look
    /// as extreme as any step.)
    pub can_detect: bool,
}

impl Analysis {
    /// Whether the series is too short or too noisy to rule out a change
    /// of `min_change`: found nothing, and could not have.
    pub fn too_few_runs(&self, min_change: f64) -> bool {
        self.changes.is_empty() && (!self.can_detect || self.detectable > min_change)
    }
}

/// Why a series cannot be analysed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Unjudged {
    #[error(
        "too few runs to judge: {runs}, where a change needs {need} (twice the shortest segment)"
    )]
    TooFewRuns { runs: usize, need: usize },
    #[error("run {0} of the series has no finite value")]
    NotFinite(usize),
    #[error("the values change sign (run {0}): a change is a ratio of means, which needs one sign")]
    MixedSigns(usize),
}

/// Finds the changes in `values`, oldest first.
pub fn analyse(values: &[f64], settings: &Settings) -> Result<Analysis, Unjudged> {
    let min_segment = settings.min_segment.max(2);
    let need = 2 * min_segment;
    if values.len() < need {
        return Err(Unjudged::TooFewRuns {
            runs: values.len(),
            need,
        });
    }
    if let Some(i) = values.iter().position(|v| !v.is_finite()) {
        return Err(Unjudged::NotFinite(i));
    }
    let positive = values[0] > 0.0;
    if let Some(i) = values.iter().position(|v| (*v > 0.0) != positive) {
        return Err(Unjudged::MixedSigns(i));
    }
    // Energy statistics are translation invariant and scale with the
    // values: scaled by the median, the sums stay well conditioned.
    let scale = median(values).abs();
    let scaled: Vec<f64> = values.iter().map(|v| v / scale).collect();
    let tester = Tester {
        settings: Settings {
            min_segment,
            ..*settings
        },
    };
    let mut cuts = Vec::new();
    tester.split(&scaled, 0, values.len(), &mut cuts);
    cuts.sort_unstable();
    tester.prune(&scaled, &mut cuts);
    if let Some(moved) = relocate_last(&scaled, &cuts, min_segment) {
        // Kept only where the step still passes there.
        let last = cuts.len() - 1;
        let from = if last == 0 { 0 } else { cuts[last - 1] };
        let (b, a) = (&scaled[from..moved], &scaled[moved..]);
        let size = (mean(a) / mean(b) - 1.0).abs();
        let p = tester.p_between(&scaled, from, moved, values.len());
        if size >= settings.min_change && p <= settings.alpha {
            cuts[last] = moved;
        }
    }
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(cuts.iter().copied())
        .chain([values.len()])
        .collect();
    let segments: Vec<Stretch> = bounds
        .windows(2)
        .map(|w| Stretch::of(values, w[0], w[1]))
        .collect();
    let changes = segments
        .windows(2)
        .map(|w| {
            let (before, after) = (w[0], w[1]);
            let p_value = tester.p_between(&scaled, before.start, after.start, after.end);
            change(values, before, after, p_value)
        })
        .collect();
    let noise = robust_noise(values);
    Ok(Analysis {
        changes,
        segments,
        noise,
        detectable: detectable(values.len(), noise, settings.alpha),
        // Past 40 runs a clean step's order is far too rare to be chance
        // at any α: not worth a test.
        can_detect: !cuts.is_empty() || values.len() > 40 || tester.can_detect(values.len()),
    })
}

/// Where the last change moves to: where a step of the mean best explains the
/// runs since the one before it (least squares: the split that maximises
/// mk/(m+k)·(mean₁ − mean₂)²), allowing fewer than a segment after it.
/// The split test needs a segment a side, so a step in the last few runs
/// is first found a few runs early (at the edge the test allows); this
/// puts it on the first slower run, where a gate must name it.
fn relocate_last(values: &[f64], cuts: &[usize], min_segment: usize) -> Option<usize> {
    let last = cuts.len().checked_sub(1)?;
    let from = if last == 0 { 0 } else { cuts[last - 1] };
    let stretch = &values[from..];
    let total: f64 = stretch.iter().sum();
    let mut left = 0.0;
    let mut best = (cuts[last], f64::NEG_INFINITY);
    for (i, v) in stretch.iter().enumerate().take(stretch.len() - 1) {
        left += v;
        let (m, k) = (i + 1, stretch.len() - i - 1);
        if m < min_segment {
            continue;
        }
        let (mf, kf) = (m as f64, k as f64);
        let gap = left / mf - (total - left) / kf;
        let between = mf * kf / (mf + kf) * gap * gap;
        if between > best.1 {
            best = (from + m, between);
        }
    }
    (best.0 != cuts[last]).then_some(best.0)
}

/// The change between two neighbouring stretches.
fn change(values: &[f64], before: Stretch, after: Stretch, p_value: f64) -> Change {
    let (b, a) = (
        &values[before.start..before.end],
        &values[after.start..after.end],
    );
    Change {
        index: after.start,
        before,
        after,
        ratio: after.mean / before.mean,
        interval: student_t_ratio_interval(a, b, CONFIDENCE),
        p_value,
    }
}

/// The gate's verdict on the newest run of a series.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The newest run is in no regression that passes the test.
    Pass,
    /// The newest run starts a regression (it is among the runs since
    /// `change.index`, fewer than a segment) or continues one (the series'
    /// last change is a regression, and the newest run is after it).
    Regression { change: Change, starts: bool },
}

/// Judges the newest run of `values` for a CI gate: does it start or
/// continue a regression? The baseline is every run since the series'
/// last change, never one run.
///
/// A regression the newest run continues is the analysis's last change,
/// when it is one. Runs since that change, fewer than a segment, are the
/// start of a new one when the newest `j` of them (for each `j` under
/// the shortest segment, α shared among them) are worse than the
/// baseline before them by at least `min_change`, by a Student t-test
/// (Welch's for two or more; for one run, its distance from the
/// baseline's mean in the baseline's own spread, a prediction interval):
/// one noisy run within the baseline's spread passes.
pub fn gate(
    values: &[f64],
    direction: Direction,
    settings: &Settings,
) -> Result<(Analysis, Verdict), Unjudged> {
    let analysis = analyse(values, settings)?;
    let n = values.len();
    if let Some(last) = analysis.changes.last()
        && last.is_regression(direction)
    {
        let starts = n - last.index < settings.min_segment.max(2);
        let verdict = Verdict::Regression {
            change: last.clone(),
            starts,
        };
        return Ok((analysis, verdict));
    }
    let since = analysis.changes.last().map_or(0, |c| c.index);
    let tails = settings.min_segment.max(2) - 1;
    let alpha = settings.alpha / tails as f64;
    // Of the tails that pass, the surest: the one that best explains
    // where the regression started.
    let mut surest: Option<Change> = None;
    for j in 1..=tails {
        // A baseline of at least two runs, for a spread.
        if n < since + j + 2 {
            break;
        }
        let before = Stretch::of(values, since, n - j);
        let after = Stretch::of(values, n - j, n);
        let p_value = tail_p(&before, &after);
        let c = change(values, before, after, p_value);
        let big = (c.ratio - 1.0).abs() >= settings.min_change;
        if p_value <= alpha
            && big
            && c.is_regression(direction)
            && surest.as_ref().is_none_or(|s| p_value < s.p_value)
        {
            surest = Some(c);
        }
    }
    if let Some(change) = surest {
        let verdict = Verdict::Regression {
            change,
            starts: true,
        };
        return Ok((analysis, verdict));
    }
    Ok((analysis, Verdict::Pass))
}

/// Whether `ratio` (new / old) is worse for a figure of `direction`.
fn worse(ratio: f64, direction: Direction) -> bool {
    match direction {
        Direction::LowerIsBetter => ratio > 1.0,
        Direction::HigherIsBetter => ratio < 1.0,
    }
}

/// The two-sided p-value of `tail` against `base` (two runs or more):
/// Welch's t-test, or for one run the prediction interval's t.
fn tail_p(base: &Stretch, tail: &Stretch) -> f64 {
    let (nb, nt) = (base.len() as f64, tail.len() as f64);
    let (t, df) = if tail.len() == 1 {
        let se = base.stddev * (1.0 + 1.0 / nb).sqrt();
        ((tail.mean - base.mean) / se, nb - 1.0)
    } else {
        let (vb, vt) = (base.stddev.powi(2) / nb, tail.stddev.powi(2) / nt);
        let df = (vb + vt).powi(2) / (vb.powi(2) / (nb - 1.0) + vt.powi(2) / (nt - 1.0));
        ((tail.mean - base.mean) / (vb + vt).sqrt(), df)
    };
    if t.is_nan() {
        // No spread on either side and the same mean.
        return 1.0;
    }
    if t.is_infinite() {
        return 0.0;
    }
    let dist = StudentsT::new(0.0, 1.0, df.max(1.0)).expect("valid degrees of freedom");
    2.0 * (1.0 - dist.cdf(t.abs()))
}

/// The permutation tests of one analysis.
struct Tester {
    settings: Settings,
}

impl Tester {
    /// Splits `values[start..end]` where it changes, recursively, adding
    /// the split points to `cuts`.
    fn split(&self, values: &[f64], start: usize, end: usize, cuts: &mut Vec<usize>) {
        let min = self.settings.min_segment;
        if end - start < 2 * min {
            return;
        }
        let stretch = Scan::new(&values[start..end]);
        let Some((tau, q)) = stretch.best(min, None) else {
            return;
        };
        let mut rng = self.rng(start, end);
        let p = stretch.p_value(q, min, None, self.settings, &mut rng);
        if p <= self.settings.alpha {
            cuts.push(start + tau);
            self.split(values, start, start + tau, cuts);
            self.split(values, start + tau, end, cuts);
        }
    }

    /// Whether a series of `n` runs could show a change at all: a step
    /// in its middle, without noise, is found (split, and kept by the
    /// pruning).
    fn can_detect(&self, n: usize) -> bool {
        let step: Vec<f64> = (0..n).map(|i| if i < n / 2 { 1.0 } else { 2.0 }).collect();
        let mut cuts = Vec::new();
        self.split(&step, 0, n, &mut cuts);
        self.prune(&step, &mut cuts);
        !cuts.is_empty()
    }

    /// Drops weak changes from `cuts` (sorted), the weakest first, until
    /// every change differs from its neighbours at α and by at least the
    /// smallest change.
    fn prune(&self, values: &[f64], cuts: &mut Vec<usize>) {
        loop {
            let bounds: Vec<usize> = std::iter::once(0)
                .chain(cuts.iter().copied())
                .chain([values.len()])
                .collect();
            // (how weak, which): a change too small goes before one not
            // significant; among them, the smallest, then the least sure.
            let weakest = bounds
                .windows(3)
                .enumerate()
                .filter_map(|(i, w)| {
                    let (b, a) = (&values[w[0]..w[1]], &values[w[1]..w[2]]);
                    let ratio = mean(a) / mean(b);
                    let size = (ratio - 1.0).abs();
                    if size < self.settings.min_change {
                        return Some(((0, size), i));
                    }
                    let p = self.fixed_split_p(values, w[0], w[1], w[2]);
                    (p > self.settings.alpha).then_some(((1, -p), i))
                })
                .min_by(|(x, _), (y, _)| x.0.cmp(&y.0).then(x.1.total_cmp(&y.1)));
            match weakest {
                Some((_, i)) => {
                    cuts.remove(i);
                }
                None => return,
            }
        }
    }

    /// The p-value of a change at `cut` between `start` and `end`: the
    /// permutation test's ([`Tester::fixed_split_p`]), or where fewer
    /// runs than a segment follow it (a change at the end of the series),
    /// the Student t-test's of the gate ([`tail_p`]): a permutation test
    /// of two runs among twenty cannot go below 1/190.
    fn p_between(&self, values: &[f64], start: usize, cut: usize, end: usize) -> f64 {
        if end - cut < self.settings.min_segment && cut - start >= 2 {
            tail_p(
                &Stretch::of(values, start, cut),
                &Stretch::of(values, cut, end),
            )
        } else {
            self.fixed_split_p(values, start, cut, end)
        }
    }

    /// The permutation p-value of the energy statistic at the fixed split
    /// `cut` of `values[start..end]`: do the two sides differ?
    fn fixed_split_p(&self, values: &[f64], start: usize, cut: usize, end: usize) -> f64 {
        let stretch = Scan::new(&values[start..end]);
        let tau = cut - start;
        let Some((_, q)) = stretch.best(1, Some(tau)) else {
            return 1.0;
        };
        let mut rng = self.rng(start, end ^ (cut << 32));
        stretch.p_value(q, 1, Some(tau), self.settings, &mut rng)
    }

    /// A generator for the stretch `start..end`, the same whatever order
    /// the stretches are tested in.
    fn rng(&self, start: usize, end: usize) -> fastrand::Rng {
        let mix = (start as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (end as u64);
        fastrand::Rng::with_seed(self.settings.seed ^ mix.rotate_left(17))
    }
}

/// A stretch of values, ready to be scanned for its best split in any
/// order of its elements: each element's rank, its summed distance to all
/// the others, and the sum over all pairs stay the same under a
/// permutation.
struct Scan {
    /// (value, rank among the stretch, summed distance to all others).
    elements: Vec<(f64, usize, f64)>,
    /// Σ|xᵢ − xⱼ| over all pairs i < j.
    total: f64,
}

impl Scan {
    fn new(values: &[f64]) -> Scan {
        let n = values.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
        let mut rank = vec![0; n];
        for (r, &i) in order.iter().enumerate() {
            rank[i] = r;
        }
        // Prefix sums of the sorted values give each one's distance to all.
        let sorted: Vec<f64> = order.iter().map(|&i| values[i]).collect();
        let all: f64 = sorted.iter().sum();
        let mut below = 0.0;
        let mut distance = vec![0.0; n];
        let mut total = 0.0;
        for (r, &x) in sorted.iter().enumerate() {
            let above = all - below - x;
            let d = x * r as f64 - below + above - x * (n - r - 1) as f64;
            distance[order[r]] = d;
            total += x * r as f64 - below;
            below += x;
        }
        let elements = (0..n).map(|i| (values[i], rank[i], distance[i])).collect();
        Scan { elements, total }
    }

    /// The best split (τ, q̂(τ)) with at least `min` values a side, or
    /// only at `at` when given; `None` when there is none.
    fn best(&self, min: usize, at: Option<usize>) -> Option<(usize, f64)> {
        statistic(&self.elements, self.total, min, at)
    }

    /// The permutation p-value of `observed`, the best split's statistic:
    /// (1 + b)/(1 + R) over R permutations, b of them at least as large.
    /// It stops early once p can no longer reach α (its value then is an
    /// estimate above α).
    fn p_value(
        &self,
        observed: f64,
        min: usize,
        at: Option<usize>,
        settings: Settings,
        rng: &mut fastrand::Rng,
    ) -> f64 {
        let r = settings.permutations.max(1);
        let give_up = settings.alpha * (r + 1) as f64 - 1.0;
        let mut shuffled = self.elements.clone();
        let mut b = 0usize;
        for done in 1..=r {
            rng.shuffle(&mut shuffled);
            let q = statistic(&shuffled, self.total, min, at).map_or(f64::NEG_INFINITY, |(_, q)| q);
            // A relative tolerance: the same split of the same values may
            // sum in another order.
            if q >= observed - 1e-12 * observed.abs().max(1.0) {
                b += 1;
            }
            if b as f64 > give_up {
                return (1 + b) as f64 / (1 + done) as f64;
            }
        }
        (1 + b) as f64 / (1 + r) as f64
    }
}

/// Stretches up to this long are searched for their best split against
/// every end of the right-hand side (Matteson & James's q̂(τ, κ), which
/// sees a change that later goes back, a bump, as well as a step);
/// longer ones only against the stretch's end (O(n log n) a scan instead
/// of O(n² log n)), until their splits make them short enough.
pub const WHOLE_SEARCH_MAX: usize = 120;

/// The statistic of `elements` in their order: the best split with at
/// least `min` a side, or the split at `at` only (the right side to the
/// end).
fn statistic(
    elements: &[(f64, usize, f64)],
    total: f64,
    min: usize,
    at: Option<usize>,
) -> Option<(usize, f64)> {
    if at.is_none() && elements.len() <= WHOLE_SEARCH_MAX {
        scan_ends(elements, min)
    } else {
        scan(elements, total, min, at)
    }
}

/// The energy statistic q̂(τ, κ) at a split τ, the left side from the
/// start, the right side to κ: mk/(m+k) times the energy distance of the
/// two sides.
fn energy(m: usize, k: usize, within_left: f64, within_right: f64, cross: f64) -> f64 {
    let (mf, kf) = (m as f64, k as f64);
    let pairs = |c: f64| if c > 1.0 { c * (c - 1.0) / 2.0 } else { 1.0 };
    let distance = 2.0 * cross / (mf * kf) - within_left / pairs(mf) - within_right / pairs(kf);
    mf * kf / (mf + kf) * distance
}

/// The best split τ of `elements` over every end κ of its right side,
/// each side at least `min` long: (τ, max over κ of q̂(τ, κ)).
fn scan_ends(elements: &[(f64, usize, f64)], min: usize) -> Option<(usize, f64)> {
    let n = elements.len();
    let (mut left, mut right) = (Fenwick::new(n), Fenwick::new(n));
    let mut within_left = 0.0;
    let mut best: Option<(usize, f64)> = None;
    for (t, &(x, rank, _)) in elements.iter().enumerate().take(n - 1) {
        within_left += left.distance(x, rank);
        left.add(rank, x);
        let m = t + 1;
        if m < min || n - m < min {
            continue;
        }
        right.clear();
        let (mut cross, mut within_right) = (0.0, 0.0);
        for (j, &(y, r, _)) in elements[m..].iter().enumerate() {
            cross += left.distance(y, r);
            within_right += right.distance(y, r);
            right.add(r, y);
            let k = j + 1;
            if k < min {
                continue;
            }
            let q = energy(m, k, within_left, within_right, cross);
            if best.is_none_or(|(_, b)| q > b) {
                best = Some((m, q));
            }
        }
    }
    best
}

/// The energy statistic's best split of `elements` in their order, the
/// right side to the end.
fn scan(
    elements: &[(f64, usize, f64)],
    total: f64,
    min: usize,
    at: Option<usize>,
) -> Option<(usize, f64)> {
    let n = elements.len();
    let mut left = Fenwick::new(n);
    let (mut within_left, mut cross) = (0.0, 0.0);
    let mut best: Option<(usize, f64)> = None;
    for (t, &(x, rank, to_all)) in elements.iter().enumerate().take(n - 1) {
        let to_left = left.distance(x, rank);
        let to_right = to_all - to_left;
        within_left += to_left;
        cross += to_right - to_left;
        left.add(rank, x);
        let (m, k) = (t + 1, n - t - 1);
        if at.is_some_and(|a| a != m) || m < min || k < min {
            continue;
        }
        let within_right = total - within_left - cross;
        let q = energy(m, k, within_left, within_right, cross);
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((m, q));
        }
    }
    best
}

/// Counts and sums of values by rank, for one side of a split.
struct Fenwick {
    count: Vec<usize>,
    sum: Vec<f64>,
    /// How many values, and their sum, in all.
    total: (usize, f64),
}

impl Fenwick {
    fn new(n: usize) -> Fenwick {
        Fenwick {
            count: vec![0; n + 1],
            sum: vec![0.0; n + 1],
            total: (0, 0.0),
        }
    }

    fn clear(&mut self) {
        self.count.fill(0);
        self.sum.fill(0.0);
        self.total = (0, 0.0);
    }

    /// Σ|x − v| over the values v held, `x` being of rank `rank`.
    fn distance(&self, x: f64, rank: usize) -> f64 {
        let (count_below, sum_below) = self.below(rank);
        let (count, sum) = self.total;
        let (count_above, sum_above) = (count - count_below, sum - sum_below);
        x * count_below as f64 - sum_below + sum_above - x * count_above as f64
    }

    fn add(&mut self, rank: usize, value: f64) {
        self.total.0 += 1;
        self.total.1 += value;
        let mut i = rank + 1;
        while i < self.count.len() {
            self.count[i] += 1;
            self.sum[i] += value;
            i += i & i.wrapping_neg();
        }
    }

    /// How many values of rank below `rank`, and their sum.
    fn below(&self, rank: usize) -> (usize, f64) {
        let (mut i, mut count, mut sum) = (rank, 0, 0.0);
        while i > 0 {
            count += self.count[i];
            sum += self.sum[i];
            i -= i & i.wrapping_neg();
        }
        (count, sum)
    }
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

fn median(values: &[f64]) -> f64 {
    Summary::of(values).map_or(f64::NAN, |s| s.median)
}

/// A robust standard deviation of one value, relative to the median:
/// the median absolute difference of neighbours over 0.6745·√2, which a
/// few steps in the series do not inflate.
fn robust_noise(values: &[f64]) -> f64 {
    let diffs: Vec<f64> = values.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    let sigma = median(&diffs) / (0.6745 * std::f64::consts::SQRT_2);
    sigma / median(values).abs()
}

/// The smallest relative step that `n` runs of relative noise `noise`
/// show at α with [`POWER`] when it falls in the middle: the two-sample
/// z-test's (z₁₋α/₂ + z_power) · noise · √(4/n). The permutation test of
/// the best split needs somewhat more; this is the best case.
fn detectable(n: usize, noise: f64, alpha: f64) -> f64 {
    let normal = Normal::standard();
    let z = normal.inverse_cdf(1.0 - alpha / 2.0) + normal.inverse_cdf(POWER);
    z * noise * (4.0 / n as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` values around `mean` with relative noise `noise` (normal, from
    /// `seed`), the values from `step_at` on multiplied by `1 + step`.
    fn series(n: usize, noise: f64, step_at: usize, step: f64, seed: u64) -> Vec<f64> {
        let mut rng = fastrand::Rng::with_seed(seed);
        let normal = Normal::standard();
        (0..n)
            .map(|i| {
                let u = rng.f64().clamp(1e-12, 1.0 - 1e-12);
                let level = if i >= step_at { 1.0 + step } else { 1.0 };
                100.0 * level * (1.0 + noise * normal.inverse_cdf(u))
            })
            .collect()
    }

    fn quick(alpha: f64, min_change: f64) -> Settings {
        Settings {
            alpha,
            min_change,
            permutations: 199,
            ..Settings::default()
        }
    }

    #[test]
    fn the_energy_scan_agrees_with_the_sums_written_out() {
        let values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0];
        let scan_of = Scan::new(&values);
        for tau in 2..=6 {
            let (x, y) = values.split_at(tau);
            let d = |a: &[f64], b: &[f64]| -> f64 {
                a.iter()
                    .map(|p| b.iter().map(|q| (p - q).abs()).sum::<f64>())
                    .sum()
            };
            let (m, k) = (x.len() as f64, y.len() as f64);
            let energy = 2.0 * d(x, y) / (m * k)
                - d(x, x) / 2.0 / (m * (m - 1.0) / 2.0)
                - d(y, y) / 2.0 / (k * (k - 1.0) / 2.0);
            let expected = m * k / (m + k) * energy;
            let (at, q) = scan_of.best(2, Some(tau)).unwrap();
            assert_eq!(at, tau);
            assert!((q - expected).abs() < 1e-9, "{tau}: {q} vs {expected}");
        }
    }

    #[test]
    fn the_search_over_both_ends_agrees_with_the_sums_written_out() {
        let values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0];
        let d = |a: &[f64], b: &[f64]| -> f64 {
            a.iter()
                .map(|p| b.iter().map(|q| (p - q).abs()).sum::<f64>())
                .sum()
        };
        let mut best = (0, f64::NEG_INFINITY);
        for tau in 2..=8 {
            for kappa in tau + 2..=values.len() {
                let (x, y) = (&values[..tau], &values[tau..kappa]);
                let q = energy(x.len(), y.len(), d(x, x) / 2.0, d(y, y) / 2.0, d(x, y));
                if q > best.1 {
                    best = (tau, q);
                }
            }
        }
        let (at, q) = Scan::new(&values).best(2, None).unwrap();
        assert_eq!(at, best.0);
        assert!((q - best.1).abs() < 1e-9, "{q} vs {}", best.1);
    }

    #[test]
    fn a_bump_that_goes_back_is_two_changes() {
        // 15 runs at 10, 7 at 12, 8 at 9.6: no single split of the whole
        // history separates it well; searching the right side's end does.
        let mut values = series(15, 0.01, usize::MAX, 0.0, 41);
        values.extend(series(7, 0.01, 0, 0.2, 42));
        values.extend(series(8, 0.01, 0, -0.04, 43));
        let a = analyse(&values, &quick(0.01, 0.0)).unwrap();
        let at: Vec<usize> = a.changes.iter().map(|c| c.index).collect();
        assert_eq!(at.len(), 2, "{a:?}");
        assert!(at[0].abs_diff(15) <= 1 && at[1].abs_diff(22) <= 1, "{at:?}");
    }

    #[test]
    fn a_step_of_five_percent_in_two_percent_noise_is_found_at_its_run() {
        let values = series(100, 0.02, 40, 0.05, 7);
        let a = analyse(&values, &Settings::default()).unwrap();
        assert_eq!(a.changes.len(), 1, "{a:?}");
        let c = &a.changes[0];
        assert!(c.index.abs_diff(40) <= 1, "{c:?}");
        let (lo, hi) = c.interval.unwrap();
        assert!(lo < 1.05 && 1.05 < hi, "{c:?}");
        assert!(c.p_value <= DEFAULT_ALPHA);
        assert!(c.is_regression(Direction::LowerIsBetter));
        assert!(!c.is_regression(Direction::HigherIsBetter));
        assert_eq!(a.segments.len(), 2);
        assert_eq!((a.segments[0].end, a.segments[1].start), (c.index, c.index));
        assert!((a.noise - 0.02).abs() < 0.006, "{}", a.noise);
    }

    #[test]
    fn two_steps_are_both_found() {
        let mut values = series(60, 0.01, 20, 0.10, 3);
        for v in &mut values[45..] {
            *v *= 0.85;
        }
        let a = analyse(&values, &Settings::default()).unwrap();
        let at: Vec<usize> = a.changes.iter().map(|c| c.index).collect();
        assert_eq!(at.len(), 2, "{a:?}");
        assert!(at[0].abs_diff(20) <= 1 && at[1].abs_diff(45) <= 1, "{at:?}");
        assert!(a.changes[0].ratio > 1.05 && a.changes[1].ratio < 0.9);
    }

    #[test]
    fn pure_noise_reports_a_change_in_at_most_alpha_of_the_series() {
        // 400 series of 40 runs: the share with any change, and its
        // binomial error, against α = 0.05 (min_change off, so only the
        // test decides).
        let settings = quick(0.05, 0.0);
        let series_count = 400;
        let reported = (0..series_count)
            .filter(|&s| {
                let values = series(40, 0.02, usize::MAX, 0.0, 1000 + s);
                let a = analyse(
                    &values,
                    &Settings {
                        seed: s,
                        ..settings
                    },
                )
                .unwrap();
                !a.changes.is_empty()
            })
            .count();
        let rate = reported as f64 / series_count as f64;
        let error = (0.05 * 0.95 / series_count as f64).sqrt();
        assert!(rate <= 0.05 + 2.0 * error, "{rate}");
    }

    #[test]
    fn a_small_step_needs_many_runs_and_says_so_with_few() {
        // 2% in 2% noise, with changes of 1% and up asked for.
        let settings = quick(0.01, 0.01);
        let many = series(200, 0.02, 100, 0.02, 11);
        let a = analyse(&many, &settings).unwrap();
        assert_eq!(a.changes.len(), 1, "{a:?}");
        assert!(a.changes[0].index.abs_diff(100) <= 5, "{:?}", a.changes);
        // Ten runs cannot show even a clean step at α = 0.01.
        let step: Vec<f64> = (0..10).map(|i| if i < 5 { 1.0 } else { 3.0 }).collect();
        let a = analyse(&step, &settings).unwrap();
        assert!(
            a.changes.is_empty() && !a.can_detect && a.too_few_runs(0.5),
            "{a:?}"
        );
        let step: Vec<f64> = (0..16).map(|i| if i < 8 { 1.0 } else { 3.0 }).collect();
        let a = analyse(&step, &settings).unwrap();
        assert_eq!(a.changes.len(), 1, "{a:?}");
        assert!(a.can_detect);
        let few = series(12, 0.02, 6, 0.02, 11);
        let a = analyse(&few, &settings).unwrap();
        assert!(a.changes.is_empty(), "{a:?}");
        assert!(a.too_few_runs(0.01), "{}", a.detectable);
        assert_eq!(
            analyse(&few[..7], &settings),
            Err(Unjudged::TooFewRuns { runs: 7, need: 8 })
        );
    }

    #[test]
    fn a_change_under_the_smallest_size_is_not_reported() {
        let values = series(100, 0.005, 50, 0.03, 5);
        let found = analyse(&values, &quick(0.01, 0.01)).unwrap();
        assert_eq!(found.changes.len(), 1);
        let a = analyse(&values, &quick(0.01, 0.05)).unwrap();
        assert!(a.changes.is_empty(), "{a:?}");
        assert!(!a.too_few_runs(0.05));
    }

    #[test]
    fn the_analysis_repeats_from_its_seed_and_refuses_bad_series() {
        let values = series(50, 0.03, 25, 0.06, 9);
        let s = quick(0.05, 0.0);
        assert_eq!(analyse(&values, &s), analyse(&values, &s));
        let mut bad = values.clone();
        bad[3] = f64::NAN;
        assert_eq!(analyse(&bad, &s), Err(Unjudged::NotFinite(3)));
        bad[3] = -1.0;
        assert_eq!(analyse(&bad, &s), Err(Unjudged::MixedSigns(3)));
        // All equal: no change, no noise.
        let flat = analyse(&[5.0; 10], &s).unwrap();
        assert!(flat.changes.is_empty() && flat.noise == 0.0);
    }

    #[test]
    fn the_gate_fails_a_slower_newest_run_and_passes_noise() {
        let settings = Settings::default();
        let fast = series(15, 0.01, usize::MAX, 0.0, 21);
        let slow = series(15, 0.01, 0, 0.2, 22);
        // Each run as it lands: the history passes, then every slower one
        // fails: the first ones start the regression, the later continue.
        for n in 8..=15 {
            let (_, v) = gate(&fast[..n], Direction::LowerIsBetter, &settings).unwrap();
            assert_eq!(v, Verdict::Pass, "{n}");
        }
        for k in 1..=15 {
            let values: Vec<f64> = fast.iter().chain(&slow[..k]).copied().collect();
            let (_, v) = gate(&values, Direction::LowerIsBetter, &settings).unwrap();
            let Verdict::Regression { change, starts } = v else {
                panic!("{k}: {v:?}");
            };
            assert_eq!(change.index, 15, "{k}");
            assert_eq!(starts, k < settings.min_segment, "{k}");
            // Faster is no regression for a throughput.
            let (_, v) = gate(&values, Direction::HigherIsBetter, &settings).unwrap();
            assert_eq!(v, Verdict::Pass, "{k}");
        }
        // One run a little off, within the baseline's spread: passes.
        let mut noisy = fast.clone();
        noisy.push(fast.iter().copied().fold(f64::MIN, f64::max) * 1.005);
        let (_, v) = gate(&noisy, Direction::LowerIsBetter, &settings).unwrap();
        assert_eq!(v, Verdict::Pass);
    }

    #[test]
    fn the_gate_passes_a_series_of_pure_noise_nearly_always() {
        let settings = quick(DEFAULT_ALPHA, DEFAULT_MIN_CHANGE);
        let failed = (0..200)
            .filter(|&s| {
                let values = series(30, 0.02, usize::MAX, 0.0, 5000 + s);
                let (_, v) = gate(&values, Direction::LowerIsBetter, &settings).unwrap();
                v != Verdict::Pass
            })
            .count();
        assert!(failed <= 2, "{failed} of 200");
    }
}
/// The false-positive rates the guide quotes, over 1,000 series of pure
/// noise per row (slow in a debug build):
/// `cargo test --release -p dyno-stats -- --ignored --nocapture rates`.
#[cfg(test)]
mod rates {
    use super::*;

    #[test]
    #[ignore]
    fn false_positive_rates_of_pure_noise() {
        let normal = Normal::standard();
        let count = 1000;
        println!("alpha  runs  any change (no min-change)  gate fails (5%)  per series");
        for alpha in [0.01, 0.05] {
            for n in [20usize, 40, 100, 300] {
                let mut rng = fastrand::Rng::with_seed(n as u64);
                let (mut any, mut gated) = (0, 0);
                let started = std::time::Instant::now();
                for seed in 0..count {
                    let values: Vec<f64> = (0..n)
                        .map(|_| {
                            let u = rng.f64().clamp(1e-12, 1.0 - 1e-12);
                            100.0 * (1.0 + 0.02 * normal.inverse_cdf(u))
                        })
                        .collect();
                    let settings = Settings {
                        alpha,
                        seed,
                        ..Settings::default()
                    };
                    let all = Settings {
                        min_change: 0.0,
                        ..settings
                    };
                    any += usize::from(!analyse(&values, &all).unwrap().changes.is_empty());
                    let (_, verdict) = gate(&values, Direction::LowerIsBetter, &settings).unwrap();
                    gated += usize::from(verdict != Verdict::Pass);
                }
                let (any, gated) = (any as f64 / count as f64, gated as f64 / count as f64);
                println!(
                    "{alpha:<5}  {n:>4}  {any:>26.3}  {gated:>15.3}  {:?}",
                    started.elapsed() / count as u32
                );
                let error = (alpha * (1.0 - alpha) / count as f64).sqrt();
                assert!(any <= alpha + 3.0 * error && gated <= alpha + 3.0 * error);
            }
        }
    }
}
