//! Saved runs set side by side: `dyno compare`'s engine.
//!
//! Groups of runs (one run each, or all of machine A's against all of
//! machine B's) are compared metric by metric with the first group as the
//! baseline. Metrics are matched by the run's kind, the metric's name and
//! its labels; for each match the candidate / baseline ratio gets an
//! interval, a p-value and a verdict by the same rule [`crate::compare`]
//! applies within one `dyno run` ([`crate::compare::decide`]):
//!
//! - repeated values on each side (a metric's samples when each side is
//!   one run whose samples are repeated runs, or one value per run when a
//!   side has several): the interval of the ratio of means and the
//!   Mann–Whitney U test, through [`crate::compare::compare`] itself;
//! - one run per side with a latency histogram: its percentiles, each with
//!   its within-run (order-statistic) interval, labelled untested: the
//!   requests of one run say how precisely it pinned its percentiles, not
//!   whether a repeat would agree ([`Verdict::WithinRun`]);
//! - one value on each side: the ratio alone, untested.
//!
//! What is compared, and what counts in the score, is what each metric
//! declared where its engine made it ([`dyno_model::Role`],
//! [`dyno_model::Samples`]); no metric name is looked up here.
//!
//! The result is itself a [`Run`] of kind [`Kind::Compare`], so it is saved,
//! shown, exported and drawn like any other; its shape is documented on
//! [`compare_runs`].

mod differences;
pub(crate) use differences::flatten;
mod quantile;

use std::collections::{BTreeMap, HashMap};

use dyno_model::names::compare as names;
use dyno_model::names::label;
use dyno_model::record;
use dyno_model::{
    Direction, Kind, Metric, Role, Run, Samples, Uncertainty, UncertaintyMethod, Unit,
};

use crate::compare::{DEFAULT_RESAMPLES, Verdict, compare, mean_metric};
pub use differences::Difference;
pub use quantile::{Cdf, QuantileComparison, compare_percentile};

/// The percentiles of a latency histogram that are compared.
pub const COMPARED_PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];

/// Seed of the bootstrap when none is given, so that the same runs always
/// compare to the same numbers.
pub const DEFAULT_SEED: u64 = 0x0d1e_5eed;

/// A named set of runs: one side of the comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// How the group is shown: `xeon`, or the run's id when it is one run.
    pub name: String,
    /// How its runs were chosen, as typed: `@tag:xeon`, `01JD…`.
    pub selector: String,
    pub runs: Vec<Run>,
}

/// How differences are judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Relative differences below this are never called (0.02 = 2%).
    pub noise_band: f64,
    /// Significance level of the tests (0.05); intervals are at 1 − alpha.
    pub alpha: f64,
    /// Seeds every bootstrap.
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            noise_band: 0.02,
            alpha: 0.05,
            seed: DEFAULT_SEED,
        }
    }
}

/// Why runs could not be compared.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VersusError {
    #[error(
        "a comparison needs at least two sides, but only {0} was given: name two runs, or two groups such as a=@tag:x b=@tag:y"
    )]
    TooFewGroups(usize),
    #[error("'{0}' selects no runs: check it with `dyno history`")]
    EmptyGroup(String),
    #[error(
        "run {id} is on both sides ('{first}' and '{second}'): a run compared with itself tells nothing; pick different runs"
    )]
    SameRun {
        id: String,
        first: String,
        second: String,
    },
    #[error(
        "run {0} is itself a comparison: compare the runs it compared (its settings list them), or show it with `dyno show`"
    )]
    NestedCompare(String),
    #[error(
        "'{baseline}' ({baseline_kinds}) and '{candidate}' ({candidate_kinds}) have no metric in common: runs of different kinds cannot be compared"
    )]
    NothingInCommon {
        baseline: String,
        baseline_kinds: String,
        candidate: String,
        candidate_kinds: String,
    },
    #[error(
        "run {part} ('{part_side}') is a segment of the merged run {whole} ('{whole_side}'): a whole run compared with its own part tells nothing; compare it with another run or group"
    )]
    PartOfWhole {
        part: String,
        part_side: String,
        whole: String,
        whole_side: String,
    },
    #[error(
        "run {id} ('{side}') is a capacity search that an interrupt stopped after {steps} step(s): it claims no capacity, so it cannot be compared as one; run the search to its end (or compare its steps with `dyno show {id}`)"
    )]
    InterruptedSearch {
        id: String,
        side: String,
        steps: usize,
    },
    #[error("{0}")]
    Options(String),
}

/// One comparable figure of one run.
#[derive(Debug, Clone)]
struct Subject {
    kind: Kind,
    name: String,
    /// The labels shown and matched (with `percentile` for a histogram's).
    labels: BTreeMap<String, String>,
    unit: Unit,
    direction: Direction,
    value: f64,
    samples: Vec<f64>,
    /// What the samples are, as the metric declared.
    samples_are: Option<Samples>,
    /// What the metric is to its run, as it declared.
    role: Role,
    /// The histogram and the percentile this subject reads from it.
    quantile: Option<(std::rc::Rc<Cdf>, f64)>,
}

impl Subject {
    fn display(&self) -> String {
        let mut m = Metric::new(self.name.clone(), self.unit, self.direction, 0.0);
        m.labels = self.labels.clone();
        m.display_name()
    }

    /// The matching key: kind, name, labels and unit (a scenario's flows
    /// per second never meet a URL's requests per second), without
    /// `command` when `loose_command` (parameter values, or a single
    /// command per side, identify the subject instead).
    fn key(&self, loose_command: bool) -> String {
        let mut labels = self.labels.clone();
        let has_params = labels.keys().any(|k| k.starts_with(label::PARAM_PREFIX));
        if has_params || loose_command {
            labels.remove(label::COMMAND);
        }
        let mut m = Metric::new(self.name.clone(), self.unit, self.direction, 0.0);
        m.labels = labels;
        format!("{}/{}/{}", self.kind, m.display_name(), self.unit.as_str())
    }
}

/// Whether `m` is set side by side in a comparison: every metric but those
/// that declared themselves context (how the run was made or how big it
/// was), and only finite values.
fn comparable(m: &Metric) -> bool {
    m.role().is_compared() && m.value.is_finite()
}

/// Labels that say where a figure was found rather than what it is of:
/// the busiest core is compared with the other run's busiest core,
/// whichever core that was.
const WHERE_FOUND: [&str; 1] = ["core"];

/// The comparable figures of `run`: each metric of merit, and for each
/// latency histogram its [`COMPARED_PERCENTILES`] instead of its mean.
fn subjects(run: &Run) -> Vec<Subject> {
    let mut out = Vec::new();
    for m in run.metrics.iter().filter(|m| comparable(m)) {
        let mut labels = m.labels.clone();
        labels.retain(|k, _| !WHERE_FOUND.contains(&k.as_str()));
        let base = Subject {
            kind: run.kind,
            name: m.name.clone(),
            labels,
            unit: m.unit,
            direction: m.direction,
            value: m.value,
            samples: m.samples.clone(),
            samples_are: m.samples_are,
            role: m.role(),
            quantile: None,
        };
        let cdf = m
            .histogram
            .as_ref()
            .and_then(|h| crate::hdr::from_model(h).ok())
            .and_then(|h| Cdf::of(&h));
        match cdf {
            Some(cdf) => {
                let cdf = std::rc::Rc::new(cdf);
                for p in COMPARED_PERCENTILES {
                    let mut s = base.clone();
                    s.labels.insert("percentile".into(), percentile_label(p));
                    s.value = cdf.percentile(p);
                    s.samples.clear();
                    s.quantile = Some((cdf.clone(), p));
                    out.push(s);
                }
            }
            None => out.push(base),
        }
    }
    out
}

/// `99.9` → "99.9", `50.0` → "50".
fn percentile_label(p: f64) -> String {
    let s = format!("{p}");
    s.strip_suffix(".0").map(str::to_owned).unwrap_or(s)
}

/// What one side holds for one matched metric.
#[derive(Debug, Clone)]
enum Evidence {
    /// Several values: one run's kept samples, or one value per run.
    Values { values: Vec<f64>, per_run: bool },
    /// One run's latency histogram, read at a percentile.
    Quantile(std::rc::Rc<Cdf>, f64),
    /// One value.
    Single(f64),
}

impl Evidence {
    fn of(subjects: &[&Subject]) -> Evidence {
        match subjects {
            [one] => match &one.quantile {
                Some((cdf, p)) => Evidence::Quantile(cdf.clone(), *p),
                // Samples of repeated runs test a difference; samples of
                // the requests or seconds of one run do not.
                None if one.samples.len() >= 2
                    && one.samples.iter().all(|x| x.is_finite())
                    && !matches!(one.samples_are, Some(Samples::Requests | Samples::Seconds)) =>
                {
                    Evidence::Values {
                        values: one.samples.clone(),
                        per_run: false,
                    }
                }
                None => Evidence::Single(one.value),
            },
            many => Evidence::Values {
                values: many.iter().map(|s| s.value).collect(),
                per_run: true,
            },
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Evidence::Values { per_run: true, .. } => "runs",
            Evidence::Values { per_run: false, .. } => "samples",
            Evidence::Quantile(..) => "histogram",
            Evidence::Single(_) => "single",
        }
    }

    fn value(&self) -> f64 {
        match self {
            Evidence::Values { values, .. } => values.iter().sum::<f64>() / values.len() as f64,
            Evidence::Quantile(cdf, p) => cdf.percentile(*p),
            Evidence::Single(v) => *v,
        }
    }

    /// The side's value as a metric with its interval.
    fn metric(&self, template: &Subject, options: &Options) -> Metric {
        let mut m = match self {
            Evidence::Values { values, .. } => {
                let mut m = mean_metric(
                    names::VALUE,
                    template.unit,
                    template.direction,
                    values.clone(),
                    options.seed,
                );
                if let Some(u) = &mut m.uncertainty {
                    // Times, rates and sizes are never negative.
                    u.low = u.low.max(0.0);
                }
                m
            }
            Evidence::Quantile(cdf, p) => {
                let mut m = Metric::new(
                    names::VALUE,
                    template.unit,
                    template.direction,
                    cdf.percentile(*p),
                );
                let (low, high) = cdf.percentile_interval(*p, 1.0 - options.alpha);
                m.uncertainty = Some(Uncertainty {
                    method: UncertaintyMethod::OrderStatistic,
                    confidence: 1.0 - options.alpha,
                    low,
                    high,
                    n: cdf.count(),
                    stddev: None,
                });
                m
            }
            Evidence::Single(v) => Metric::new(names::VALUE, template.unit, template.direction, *v),
        };
        m.labels.insert(names::EVIDENCE.into(), self.code().into());
        m
    }
}

/// A candidate's metric against the baseline's.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Outcome {
    ratio: Option<f64>,
    interval: Option<(f64, f64)>,
    /// How `interval` was made.
    method: UncertaintyMethod,
    p_value: Option<f64>,
    verdict: Verdict,
}

fn judge(baseline: &Evidence, candidate: &Evidence, direction: Direction, o: &Options) -> Outcome {
    let (a, b) = (baseline.value(), candidate.value());
    let ratio = (a != 0.0 && (b / a).is_finite()).then(|| b / a);
    let untested = Outcome {
        ratio,
        interval: None,
        method: UncertaintyMethod::OrderStatistic,
        p_value: None,
        verdict: Verdict::Untested,
    };
    if ratio.is_none() {
        return untested;
    }
    match (baseline, candidate) {
        (Evidence::Values { values: va, .. }, Evidence::Values { values: vb, .. }) => {
            match compare(vb, va, direction, o.noise_band, o.alpha, o.seed) {
                Some(c) => Outcome {
                    ratio: Some(c.ratio),
                    interval: (c.low.is_finite() && c.high.is_finite()).then_some((c.low, c.high)),
                    method: c.method,
                    p_value: Some(c.p_value),
                    verdict: c.verdict,
                },
                None => untested,
            }
        }
        (Evidence::Quantile(ca, p), Evidence::Quantile(cb, _)) => {
            match compare_percentile(cb, ca, *p, 1.0 - o.alpha, DEFAULT_RESAMPLES, o.seed) {
                // The interval is the runs' within-run precision; a call
                // needs repeated runs, so none is made and no p-value is
                // given that would read as one.
                Some(q) => Outcome {
                    ratio: Some(q.ratio),
                    interval: Some((q.low, q.high)),
                    method: UncertaintyMethod::OrderStatistic,
                    p_value: None,
                    verdict: Verdict::WithinRun,
                },
                None => untested,
            }
        }
        (Evidence::Single(_), Evidence::Single(_)) => untested,
        // One side has several values and the other one: no test can
        // reach significance with a single value on a side.
        _ => Outcome {
            verdict: Verdict::TooFewRuns,
            ..untested
        },
    }
}

/// The improvement factor of a ratio candidate / baseline: above 1 when the
/// candidate is better, whichever way the metric points.
pub fn improvement(ratio: f64, direction: Direction) -> f64 {
    match direction {
        Direction::HigherIsBetter => ratio,
        Direction::LowerIsBetter => 1.0 / ratio,
    }
}

/// An improvement factor (above 1: the candidate is better) with its
/// interval, when it has one.
type Factor = (f64, Option<(f64, f64)>);

/// One factor for one primary quantity from the factors of its subjects (a
/// latency's tested percentiles): their geometric mean, with the standard
/// error on the log scale taken as the mean of theirs, as if they moved
/// together (they are read from the same runs), which never makes the
/// quantity look surer than its surest part. An interval only when every
/// part has one.
fn combine(parts: &[Factor], alpha: f64) -> Option<Factor> {
    let (mean_ln, k, ses, z) = log_scale(parts, alpha)?;
    let interval = ses.map(|ses| {
        let se = ses.iter().sum::<f64>() / k;
        ((mean_ln - z * se).exp(), (mean_ln + z * se).exp())
    });
    Some((mean_ln.exp(), interval))
}

/// The factors that can be read on the log scale (finite, positive): the
/// mean of their logarithms, how many there are, each one's standard error
/// on the log scale (from its interval, as if normal there) when every one
/// has an interval, and the normal quantile of `alpha` that read them.
fn log_scale(factors: &[Factor], alpha: f64) -> Option<(f64, f64, Option<Vec<f64>>, f64)> {
    use statrs::distribution::{ContinuousCDF, Normal};
    let usable: Vec<&Factor> = factors
        .iter()
        .filter(|(f, _)| f.is_finite() && *f > 0.0)
        .collect();
    if usable.is_empty() {
        return None;
    }
    let k = usable.len() as f64;
    let z = Normal::standard().inverse_cdf(1.0 - alpha / 2.0);
    let mean_ln = usable.iter().map(|(f, _)| f.ln()).sum::<f64>() / k;
    let ses: Vec<f64> = usable
        .iter()
        .filter_map(|(_, i)| *i)
        .filter(|(lo, hi)| *lo > 0.0 && hi.is_finite())
        .map(|(lo, hi)| (hi.ln() - lo.ln()) / (2.0 * z))
        .collect();
    // A factor without an interval has an unknown spread: an interval of
    // the others alone would look more certain than the result is.
    let ses = (ses.len() == usable.len()).then_some(ses);
    Some((mean_ln, k, ses, z))
}

/// Why a primary figure was not tested, for a message.
fn untested_reason(v: Verdict) -> &'static str {
    match v {
        Verdict::WithinRun => "one run a side: its interval is within-run",
        Verdict::TooFewRuns => "too few runs a side",
        _ => "one value a side",
    }
}

/// The geometric mean of improvement factors with its interval: the mean
/// of their logarithms, whose variance is the sum of each factor's (read
/// from its interval, as if normal on the log scale) over k². There is an
/// interval only when every factor has one.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Geomean {
    value: f64,
    interval: Option<(f64, f64)>,
    n: usize,
}

fn geomean(factors: &[Factor], alpha: f64) -> Option<Geomean> {
    let (mean_ln, k, ses, z) = log_scale(factors, alpha)?;
    let interval = ses.map(|ses| {
        let se = ses.iter().map(|se| se * se).sum::<f64>().sqrt() / k;
        ((mean_ln - z * se).exp(), (mean_ln + z * se).exp())
    });
    Some(Geomean {
        value: mean_ln.exp(),
        interval,
        n: k as usize,
    })
}

/// Compares every group with the first (the baseline) and returns the
/// comparison as a [`Run`] of kind [`Kind::Compare`]:
///
/// - `settings`: `baseline` (its name), `groups` (each `name`, `selector`
///   and `runs` ids), `noise`, `alpha`, `seed`, `setting_differences` and
///   `environment_differences` (each `key` and `values`: group → text),
///   `unmatched` (each `group`, `metric` and `partner`, the group where it
///   has no match).
/// - `metrics`: per matched metric and group, `value` labelled `metric`
///   (the original display name), `kind`, `group` and `evidence` (`samples`,
///   `runs`, `histogram` or `single`), in the original unit and direction,
///   with its interval; per matched metric and candidate group, `ratio`
///   (candidate / baseline, unit ratio, the original direction, with its
///   interval) labelled `metric`, `kind`, `group` and `verdict` (a
///   [`Verdict::code`]), and `p_value` where a test was made; per candidate
///   group, `geomean` of the improvement factors (higher is better) and the
///   counts `better`, `worse`, `same` and `untested`. The headline is
///   `geomean`.
/// - `warnings`: settings that differ, the machines' differences, metrics
///   without a partner, and the warnings of the runs compared.
///
/// The environment, start time and duration are the caller's to fill.
pub fn compare_runs(groups: &[Group], options: &Options) -> Result<Run, VersusError> {
    validate(groups, options)?;
    let subjects: Vec<Vec<Vec<Subject>>> = groups
        .iter()
        .map(|g| g.runs.iter().map(subjects).collect())
        .collect();
    let index = Index::of(&subjects);
    let mut comparison = Comparison {
        run: Run::new(
            Kind::Compare,
            groups
                .iter()
                .map(|g| g.name.as_str())
                .collect::<Vec<_>>()
                .join(" vs "),
        ),
        groups,
        options,
        unmatched: Vec::new(),
        shown: vec![Default::default(); groups.len()],
        used_histograms: false,
        untestable: 0,
    };
    for (g, group) in groups.iter().enumerate().skip(1) {
        let tally = comparison.group(g, &index)?;
        comparison.score(group, tally);
    }
    comparison.run.headline = Some(names::GEOMEAN.into());
    comparison.record_and_warn(index.loose_command);
    let mut run = comparison.run;
    warn_sources(&mut run, groups);
    Ok(run)
}

/// Every group's subjects by their matching key.
struct Index<'a> {
    /// The keys in the order first seen.
    order: Vec<String>,
    /// Per group: key → its subjects, one per run.
    by_key: Vec<HashMap<String, Vec<&'a Subject>>>,
    /// Each side timed one command, and they differ: matched regardless.
    loose_command: bool,
}

impl<'a> Index<'a> {
    fn of(subjects: &'a [Vec<Vec<Subject>>]) -> Self {
        let loose_command = single_command_each(subjects);
        let mut order: Vec<String> = Vec::new();
        let mut by_key: Vec<HashMap<String, Vec<&Subject>>> = vec![HashMap::new(); subjects.len()];
        for (g, runs) in subjects.iter().enumerate() {
            for s in runs.iter().flatten() {
                let key = s.key(loose_command);
                if !order.contains(&key) {
                    order.push(key.clone());
                }
                by_key[g].entry(key).or_default().push(s);
            }
        }
        Index {
            order,
            by_key,
            loose_command,
        }
    }
}

/// The comparison being written, with what the warnings will need.
struct Comparison<'a> {
    run: Run,
    groups: &'a [Group],
    options: &'a Options,
    /// (group, metric, partner group) for each metric without a match.
    unmatched: Vec<(String, String, String)>,
    /// Per group: the keys whose value is already in the run.
    shown: Vec<std::collections::HashSet<String>>,
    used_histograms: bool,
    /// Metrics with a baseline of zero: no ratio.
    untestable: usize,
}

/// One candidate group's verdicts, as they add up to its score.
#[derive(Default)]
struct Tally {
    /// Each tested primary quantity's improvement factors.
    factors: Vec<(String, Vec<Factor>)>,
    /// Primary quantities that could not be tested, and why.
    untested_primaries: Vec<(String, Verdict)>,
    /// Better, worse, same, untested.
    counts: [usize; 4],
}

impl Comparison<'_> {
    /// Candidate `g` against the baseline, metric by metric.
    fn group(&mut self, g: usize, index: &Index) -> Result<Tally, VersusError> {
        let (baseline, group) = (&self.groups[0], &self.groups[g]);
        let mut tally = Tally::default();
        let mut matched = 0usize;
        for key in &index.order {
            let (a, b) = match (index.by_key[0].get(key), index.by_key[g].get(key)) {
                (Some(a), Some(b)) => (a, b),
                (Some(a), None) => {
                    self.unmatched.push((
                        baseline.name.clone(),
                        a[0].display(),
                        group.name.clone(),
                    ));
                    continue;
                }
                (None, Some(b)) => {
                    self.unmatched.push((
                        group.name.clone(),
                        b[0].display(),
                        baseline.name.clone(),
                    ));
                    continue;
                }
                (None, None) => continue,
            };
            matched += 1;
            self.pair(g, key, a, b, &mut tally);
        }
        if matched == 0 {
            return Err(VersusError::NothingInCommon {
                baseline: baseline.name.clone(),
                baseline_kinds: kinds(baseline),
                candidate: group.name.clone(),
                candidate_kinds: kinds(group),
            });
        }
        Ok(tally)
    }

    /// One matched metric: each side's value (once per group), the ratio
    /// with its verdict and p-value, and its part of the score.
    fn pair(&mut self, g: usize, key: &str, a: &[&Subject], b: &[&Subject], tally: &mut Tally) {
        let options = self.options;
        let group = &self.groups[g];
        let template = a[0];
        let labels = |m: Metric, group: &str| {
            m.with_label(names::METRIC, template.display())
                .with_label(names::KIND, template.kind.as_str())
                .with_label(names::GROUP, group)
        };
        let (ea, eb) = (Evidence::of(a), Evidence::of(b));
        self.used_histograms |= matches!(ea, Evidence::Quantile(..));
        for (side, e) in [(0, &ea), (g, &eb)] {
            if self.shown[side].insert(key.to_string()) {
                self.run
                    .metrics
                    .push(labels(e.metric(template, options), &self.groups[side].name));
            }
        }
        let outcome = judge(&ea, &eb, template.direction, options);
        let Some(ratio) = outcome.ratio else {
            self.untestable += 1;
            tally.counts[3] += 1;
            return;
        };
        let mut m = Metric::new(names::RATIO, Unit::Ratio, template.direction, ratio)
            .with_label(names::ROLE, template.role.as_str());
        m.uncertainty = outcome.interval.map(|(low, high)| Uncertainty {
            method: outcome.method,
            confidence: 1.0 - options.alpha,
            low,
            high,
            n: match (&ea, &eb) {
                (Evidence::Values { values, .. }, _) => values.len() as u64,
                (Evidence::Quantile(c, _), _) => c.count(),
                _ => 1,
            },
            stddev: None,
        });
        self.run
            .metrics
            .push(labels(m, &group.name).with_label(label::VERDICT, outcome.verdict.code()));
        if let Some(p) = outcome.p_value {
            self.run.metrics.push(labels(
                Metric::new(names::P_VALUE, Unit::Ratio, Direction::LowerIsBetter, p),
                &group.name,
            ));
        }
        tally.counts[match outcome.verdict {
            Verdict::Faster => 0,
            Verdict::Slower => 1,
            Verdict::NoSignificantDifference => 2,
            _ => 3,
        }] += 1;
        if template.role == Role::Primary {
            tally.primary(template, ratio, &outcome);
        }
    }

    /// A candidate's score: the geometric mean of its primary quantities'
    /// improvement factors, or a warning why there is none, and its counts.
    fn score(&mut self, group: &Group, tally: Tally) {
        let options = self.options;
        let Tally {
            factors,
            mut untested_primaries,
            counts,
        } = tally;
        let per_quantity: Vec<Factor> = factors
            .iter()
            .filter_map(|(_, fs)| combine(fs, options.alpha))
            .collect();
        untested_primaries.retain(|(q, _)| !factors.iter().any(|(t, _)| t == q));
        untested_primaries.dedup_by(|a, b| a.0 == b.0);
        if per_quantity.is_empty() {
            let reasons: Vec<String> = untested_primaries
                .iter()
                .map(|(q, v)| format!("{q} ({})", untested_reason(*v)))
                .collect();
            self.run.warn(
                "no_score",
                format!(
                    "{}: no primary figure could be tested, so there is no score{}; compare groups of at least {} runs a side (the same command saved with one --tag per side)",
                    group.name,
                    if reasons.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", reasons.join(", "))
                    },
                    crate::compare::runs_needed_to_test(options.alpha)
                ),
            );
        }
        if let Some(gm) = geomean(&per_quantity, options.alpha) {
            let mut m = Metric::new(
                names::GEOMEAN,
                Unit::Ratio,
                Direction::HigherIsBetter,
                gm.value,
            )
            .with_label(names::GROUP, &group.name)
            .with_label(names::METRICS, gm.n.to_string());
            m.uncertainty = gm.interval.map(|(low, high)| Uncertainty {
                method: UncertaintyMethod::Delta,
                confidence: 1.0 - options.alpha,
                low,
                high,
                n: gm.n as u64,
                stddev: None,
            });
            self.run.metrics.push(m);
        }
        for (name, count) in [names::BETTER, names::WORSE, names::SAME, names::UNTESTED]
            .iter()
            .zip(counts)
        {
            self.run.metrics.push(
                Metric::new(*name, Unit::Count, Direction::HigherIsBetter, count as f64)
                    .with_label(names::GROUP, &group.name),
            );
        }
    }

    /// The record of what was compared, and the warnings about how alike
    /// the sides were.
    fn record_and_warn(&mut self, loose_command: bool) {
        let (groups, options) = (self.groups, self.options);
        let sides: Vec<(&str, Vec<&Run>)> = groups
            .iter()
            .map(|g| (g.name.as_str(), g.runs.iter().collect()))
            .collect();
        let setting_differences = differences::settings(&sides);
        let environment_differences = differences::environment(&sides);
        let recorded = |d: &[Difference]| {
            d.iter()
                .map(|d| record::Difference {
                    key: d.key.clone(),
                    values: d.values.iter().cloned().collect(),
                })
                .collect()
        };
        self.run.set_record(&record::CompareRecord {
            baseline: groups[0].name.clone(),
            groups: groups
                .iter()
                .map(|g| record::CompareGroup {
                    name: g.name.clone(),
                    selector: g.selector.clone(),
                    runs: g.runs.iter().map(|r| r.id.to_string()).collect(),
                })
                .collect(),
            noise: options.noise_band,
            alpha: options.alpha,
            seed: options.seed,
            setting_differences: recorded(&setting_differences),
            environment_differences: recorded(&environment_differences),
            unmatched: self
                .unmatched
                .iter()
                .map(|(group, metric, partner)| record::Unmatched {
                    group: group.clone(),
                    metric: metric.clone(),
                    partner: partner.clone(),
                })
                .collect(),
        });
        self.warn_differences(
            &setting_differences,
            &environment_differences,
            loose_command,
        );
    }

    fn warn_differences(
        &mut self,
        setting_differences: &[Difference],
        environment_differences: &[Difference],
        loose_command: bool,
    ) {
        let run = &mut self.run;
        if !setting_differences.is_empty() {
            let keys: Vec<&str> = setting_differences.iter().map(|d| d.key.as_str()).collect();
            run.warn(
                "settings_differ",
                format!(
                    "the runs were not made alike: {} differ{}",
                    keys.join(", "),
                    if keys.len() == 1 { "s" } else { "" }
                ),
            );
        }
        if !environment_differences.is_empty() {
            let keys: Vec<&str> = environment_differences
                .iter()
                .map(|d| d.key.as_str())
                .collect();
            run.warn(
                "environment_differs",
                format!(
                    "the runs come from different setups ({}): a difference may come from any of them",
                    keys.join(", ")
                ),
            );
        }
        if !self.unmatched.is_empty() {
            run.warn(
                "unmatched_metrics",
                format!(
                    "{} without a partner on the other side, not compared",
                    plural(self.unmatched.len(), "metric")
                ),
            );
        }
        if loose_command {
            run.warn(
                "different_commands",
                "each side timed one command and the commands differ: they are compared with each other",
            );
        }
        if self.used_histograms {
            run.warn(
                "histogram_intervals",
                "percentiles of one run a side are untested: their intervals treat the run's requests as independent and show how precisely each run pinned its percentiles, not how much a repeat would move them; compare groups of at least 4 runs a side for a verdict",
            );
        }
        if self.untestable > 0 {
            run.warn(
                "zero_baseline",
                format!(
                    "{} a baseline of zero: no ratio",
                    plural(self.untestable, "metric has")
                ),
            );
        }
    }
}

impl Tally {
    /// A tested primary metric's improvement factor, under its quantity: a
    /// latency's percentiles are one quantity, scored once. An untested one
    /// is remembered to say why there is no score.
    fn primary(&mut self, template: &Subject, ratio: f64, outcome: &Outcome) {
        let quantity = {
            let mut s = template.clone();
            s.labels.remove(dyno_model::names::label::PERCENTILE);
            s.display()
        };
        if !outcome.verdict.is_tested() {
            self.untested_primaries.push((quantity, outcome.verdict));
            return;
        }
        let f = improvement(ratio, template.direction);
        let fi = outcome.interval.map(|(lo, hi)| {
            let (x, y) = (
                improvement(lo, template.direction),
                improvement(hi, template.direction),
            );
            (x.min(y), x.max(y))
        });
        match self.factors.iter_mut().find(|(q, _)| *q == quantity) {
            Some((_, fs)) => fs.push((f, fi)),
            None => self.factors.push((quantity, vec![(f, fi)])),
        }
    }
}

/// The compared runs' own warnings, once per distinct message: which runs
/// said it. Two runs' messages of one code (each naming its own command)
/// stay apart; messages that differ only in their figures (a load average,
/// a count) are one, their figures given as ranges.
fn warn_sources(run: &mut Run, groups: &[Group]) {
    let mut sources: Vec<(String, Vec<String>, Shape)> = Vec::new();
    for group in groups {
        for r in &group.runs {
            for w in &r.warnings {
                let id = r.id.to_string();
                let shape = Shape::of(&w.message);
                match sources
                    .iter_mut()
                    .find(|(code, _, s)| *code == w.code && s.text == shape.text)
                {
                    Some((_, ids, s)) => {
                        s.widen(&shape);
                        if ids.last() != Some(&id) {
                            ids.push(id);
                        }
                    }
                    None => sources.push((w.code.clone(), vec![id], shape)),
                }
            }
        }
    }
    let total: usize = groups.iter().map(|g| g.runs.len()).sum();
    for (code, ids, message) in sources {
        let ids: Vec<&str> = ids.iter().map(|id| &id[..10]).collect();
        let which = if ids.len() == total && total > 1 {
            format!("all {total} runs")
        } else if ids.len() > 5 {
            format!("{} ({}, …)", plural(ids.len(), "run"), ids[..5].join(", "))
        } else {
            format!("{} ({})", plural(ids.len(), "run"), ids.join(", "))
        };
        run.warn(
            &format!("source_{code}"),
            format!("{which}: {}", message.render()),
        );
    }
}

/// A warning's message as text with its figures taken out: the figures
/// outside quotes (inside them a number names something, as in
/// `'sleep 0.02'`), each kept as the range of the values seen.
#[derive(Debug)]
struct Shape {
    /// The message with each figure as `\0`.
    text: String,
    /// Each figure's lowest and highest value, as written.
    figures: Vec<((f64, String), (f64, String))>,
}

impl Shape {
    fn of(message: &str) -> Shape {
        let (mut text, mut figures) = (String::new(), Vec::new());
        let mut quote = None;
        let mut chars = message.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            let starts_figure = quote.is_none()
                && c.is_ascii_digit()
                && !text.ends_with(|p: char| p.is_alphanumeric() || p == '_');
            if starts_figure {
                let mut end = i + 1;
                while let Some(&(j, d)) = chars.peek() {
                    let decimal =
                        d == '.' && message[j + 1..].starts_with(|n: char| n.is_ascii_digit());
                    if d.is_ascii_digit() || decimal {
                        end = j + d.len_utf8();
                        chars.next();
                    } else {
                        break;
                    }
                }
                let written = message[i..end].to_owned();
                let value = written.parse().unwrap_or(f64::NAN);
                figures.push(((value, written.clone()), (value, written)));
                text.push('\0');
                continue;
            }
            match (quote, c) {
                (None, '\'' | '"' | '`') => quote = Some(c),
                (Some(q), c) if c == q => quote = None,
                _ => {}
            }
            text.push(c);
        }
        Shape { text, figures }
    }

    /// Takes in another message of the same shape.
    fn widen(&mut self, other: &Shape) {
        for (range, (seen, _)) in self.figures.iter_mut().zip(&other.figures) {
            if seen.0 < range.0.0 {
                range.0 = seen.clone();
            }
            if seen.0 > range.1.0 {
                range.1 = seen.clone();
            }
        }
    }

    /// The message, each figure as its value or its range `low–high`.
    fn render(&self) -> String {
        let mut figures = self.figures.iter();
        let mut out = String::new();
        for c in self.text.chars() {
            match (c, if c == '\0' { figures.next() } else { None }) {
                (_, Some((low, high))) if low.1 == high.1 => out.push_str(&low.1),
                (_, Some((low, high))) => {
                    out.push_str(&low.1);
                    out.push('–');
                    out.push_str(&high.1);
                }
                (c, None) => out.push(c),
            }
        }
        out
    }
}

fn validate(groups: &[Group], options: &Options) -> Result<(), VersusError> {
    if groups.len() < 2 {
        return Err(VersusError::TooFewGroups(groups.len()));
    }
    let band_ok = options.noise_band >= 0.0 && options.noise_band < 1.0;
    if !band_ok {
        return Err(VersusError::Options(format!(
            "the noise band must be at least 0% and below 100%, not {}%",
            options.noise_band * 100.0
        )));
    }
    if !(options.alpha > 0.0 && options.alpha < 1.0) {
        return Err(VersusError::Options(format!(
            "the significance level must be between 0 and 1, not {}",
            options.alpha
        )));
    }
    let mut seen: HashMap<dyno_model::RunId, &str> = HashMap::new();
    for g in groups {
        if g.runs.is_empty() {
            return Err(VersusError::EmptyGroup(g.selector.clone()));
        }
        for r in &g.runs {
            if r.kind == Kind::Compare {
                return Err(VersusError::NestedCompare(r.id.to_string()));
            }
            // An interrupted search's figures are a step's, not an answer:
            // set beside a capacity they would read as one.
            if let Some(search) = r.capacity()
                && search.answer.outcome == record::CapacityOutcome::Interrupted
            {
                return Err(VersusError::InterruptedSearch {
                    id: r.id.to_string(),
                    side: g.name.clone(),
                    steps: search.steps.len(),
                });
            }
            if let Some(first) = seen.insert(r.id, &g.name) {
                return Err(VersusError::SameRun {
                    id: r.id.to_string(),
                    first: first.to_owned(),
                    second: g.name.clone(),
                });
            }
        }
    }
    // A merged run lists its segments' runs: none may be on another side.
    for g in groups {
        for whole in &g.runs {
            let parts = whole
                .settings
                .pointer("/group/segments")
                .and_then(serde_json::Value::as_array);
            for id in parts
                .into_iter()
                .flatten()
                .filter_map(|p| p["run_id"].as_str())
            {
                for other in groups.iter().filter(|o| o.name != g.name) {
                    if let Some(part) = other.runs.iter().find(|r| r.id.to_string() == id) {
                        return Err(VersusError::PartOfWhole {
                            part: part.id.to_string(),
                            part_side: other.name.clone(),
                            whole: whole.id.to_string(),
                            whole_side: g.name.clone(),
                        });
                    }
                }
            }
        }
    }
    Ok(())
}

/// Whether every side timed exactly one command without parameters and
/// the commands are not all the same: then they are compared with each
/// other (gzip against zstd), not listed as unmatched.
fn single_command_each(groups: &[Vec<Vec<Subject>>]) -> bool {
    let commands: Vec<Vec<&str>> = groups
        .iter()
        .map(|runs| {
            let mut c: Vec<&str> = runs
                .iter()
                .flatten()
                .filter(|s| !s.labels.keys().any(|k| k.starts_with(label::PARAM_PREFIX)))
                .filter_map(|s| s.labels.get(label::COMMAND).map(String::as_str))
                .collect();
            c.sort_unstable();
            c.dedup();
            c
        })
        .collect();
    commands.iter().all(|c| c.len() == 1) && commands.iter().any(|c| c != &commands[0])
}

/// `1 metric`, `2 metrics`; `1 metric has`, `2 metrics have`.
fn plural(n: usize, noun: &str) -> String {
    match noun.split_once(' ') {
        Some((noun, "has")) if n != 1 => format!("{n} {noun}s have"),
        Some(_) => format!("{n} {noun}"),
        None if n == 1 => format!("{n} {noun}"),
        None => format!("{n} {noun}s"),
    }
}

/// The kinds of a group's runs, for a message: `http`, `disk and exec`.
fn kinds(group: &Group) -> String {
    let mut k: Vec<&str> = group.runs.iter().map(|r| r.kind.as_str()).collect();
    k.sort_unstable();
    k.dedup();
    k.join(" and ")
}

#[cfg(test)]
mod tests;
