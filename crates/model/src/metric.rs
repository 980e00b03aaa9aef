//! Named measured values with their unit, direction and uncertainty.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One measured figure of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metric {
    /// Stable, snake_case name (`int64_1t_ns`, `requests_per_sec`). The
    /// name and the labels together are unique within a run.
    pub name: String,
    /// What the figure is of, when a run measures several subjects under the
    /// same metric name: `dyno run` labels each command's `wall_ns` with
    /// `command` and one `param.NAME` per parameter, `dyno quick` each of
    /// its lines' metrics with `part` ([`Metric::of_part`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    pub unit: Unit,
    pub direction: Direction,
    /// The figure itself, in `unit`: for repeated samples, their mean.
    pub value: f64,
    /// Every sample behind `value`, in `unit`, in the order measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<f64>,
    /// The distribution behind `value` when there are too many samples to
    /// keep each one (latencies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<Histogram>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Uncertainty>,
    /// What the figure is to its run, declared by the engine that made it
    /// (see [`Role`]). `None` only in a record written before metrics
    /// declared themselves; reading a [`crate::Run`] fills it in
    /// ([`crate::legacy`]). Read it through [`Metric::role`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// For a [`Role::Reciprocal`] or [`Role::Derived`] metric: the name of
    /// the metric it is a view of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub of: Option<String>,
    /// How the segments' values of this metric become the whole run's
    /// (see [`Merge`]). Read it through [`Metric::merge`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<Merge>,
    /// For [`Merge::Rate`]: the count whose merged total, over the merged
    /// window, is this rate (`responses` for `requests_per_sec`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_of: Option<String>,
    /// What the samples (or the histogram's entries) behind the value are:
    /// repeated runs, or the requests of one run (see [`Samples`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples_are: Option<Samples>,
}

/// What a metric is to its run: whether a comparison judges it, counts it
/// in a score, or only shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The figure the run exists for (a command's wall time, a server's
    /// request rate and latency): compared, judged by `--fail-if-worse`,
    /// counted once in the geometric-mean score.
    Primary,
    /// Explains a primary figure (CPU time beside wall time, connect time
    /// beside latency, the client's own CPU): compared and shown, never a
    /// gate's reason to fail, never in the score.
    Diagnostic,
    /// A primary figure in the reciprocal unit (operations per second of a
    /// time per operation); [`Metric::of`] names it. Shown and compared,
    /// never counted twice.
    Reciprocal,
    /// Computed from another metric of the run (a transfer rate beside the
    /// request rate, an efficiency beside a speedup); [`Metric::of`] names
    /// the one it follows. Shown and compared, never counted twice.
    Derived,
    /// How the run was made or how big it was, not how well the subject
    /// did: counts and bytes that grow with the run's length, the requested
    /// rate, the measured window, per-second series. Shown, never compared.
    Context,
}

impl Role {
    /// The name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Primary => "primary",
            Role::Diagnostic => "diagnostic",
            Role::Reciprocal => "reciprocal",
            Role::Derived => "derived",
            Role::Context => "context",
        }
    }

    /// Whether a comparison of runs sets this metric side by side.
    pub fn is_compared(self) -> bool {
        self != Role::Context
    }
}

/// How the values of one metric in the segments of a run (`--segment I/N`)
/// become the value of the whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Merge {
    /// Added up (counts, bytes).
    Sum,
    /// The merged count ([`Metric::rate_of`]) over the merged window, from
    /// the common start to the last segment's end: never a sum of the
    /// segments' rates, which cover different windows when segments end
    /// apart.
    Rate,
    /// The HDR histograms merged bucket by bucket; every percentile is the
    /// whole run's.
    Histogram,
    /// The largest (the busiest client, the longest lateness).
    Max,
    /// The smallest (the tightest server limit).
    Min,
    /// A measured window: from the common start to the end of the segment
    /// that ended last.
    Window,
    /// A per-second series, added up second by second on the common clock.
    Timeline,
    /// Recomputed by the engine from the merged metrics it is made of (a
    /// per-second percentile, a saving in percent); left out until then.
    Recompute,
    /// Not merged: a merged run does not have it.
    None,
}

/// What the samples behind a metric's value are, which decides what a
/// comparison may conclude from them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Samples {
    /// Each sample is one repetition of the whole measurement (a run of a
    /// command, a repetition of a workload): they vary as repeats vary, so
    /// they can test whether two sides differ.
    Runs,
    /// Each sample (or histogram entry) is one request or operation of a
    /// single run: they say how precisely this run pinned its figure, not
    /// whether a repeat would agree.
    Requests,
    /// One value per second of one run: a series over time, whose seconds
    /// are not independent.
    Seconds,
}

impl Metric {
    /// A count of what happened in a run (requests, errors, transactions
    /// cut at the end): context, since it grows with the run's length,
    /// fewer is better, and a merged run's is the segments' sum.
    pub fn count(name: impl Into<String>, n: u64) -> Self {
        Metric::new(name, Unit::Count, Direction::LowerIsBetter, n as f64)
            .context()
            .merged(Merge::Sum)
    }

    /// A metric with a single value and nothing else, declared by its
    /// unit until the engine says more: a count or a size is context
    /// (it grows with the run), anything else a diagnostic; it merges by
    /// [`Merge::by_unit`]. An engine declares its primary figures with
    /// [`Metric::primary`] and the rest with the other declarations.
    pub fn new(name: impl Into<String>, unit: Unit, direction: Direction, value: f64) -> Self {
        Metric {
            name: name.into(),
            labels: BTreeMap::new(),
            unit,
            direction,
            value,
            samples: Vec::new(),
            histogram: None,
            uncertainty: None,
            role: Some(match unit {
                // Counts and sizes grow with the run's length until an
                // engine says otherwise (a peak size is a diagnostic).
                Unit::Count | Unit::Bytes => Role::Context,
                _ => Role::Diagnostic,
            }),
            of: None,
            merge: Some(Merge::by_unit(unit)),
            rate_of: None,
            samples_are: None,
        }
    }

    /// What the figure is to its run; a record that declared nothing reads
    /// as a diagnostic.
    pub fn role(&self) -> Role {
        self.role.unwrap_or(Role::Diagnostic)
    }

    /// How the metric merges across segments; a record that declared
    /// nothing merges by its unit ([`Merge::by_unit`]).
    pub fn merge(&self) -> Merge {
        self.merge.unwrap_or(Merge::by_unit(self.unit))
    }

    /// The metric as the figure its run exists for.
    pub fn primary(mut self) -> Self {
        self.role = Some(Role::Primary);
        self.of = None;
        self
    }

    /// The metric as one that explains a primary figure.
    pub fn diagnostic(mut self) -> Self {
        self.role = Some(Role::Diagnostic);
        self.of = None;
        self
    }

    /// The metric as a note on how the run was made or how big it was:
    /// shown, never compared.
    pub fn context(mut self) -> Self {
        self.role = Some(Role::Context);
        self.of = None;
        self
    }

    /// The metric as `of` in the reciprocal unit.
    pub fn reciprocal_of(mut self, of: impl Into<String>) -> Self {
        self.role = Some(Role::Reciprocal);
        self.of = Some(of.into());
        self
    }

    /// The metric as one computed from `of`.
    pub fn derived_of(mut self, of: impl Into<String>) -> Self {
        self.role = Some(Role::Derived);
        self.of = Some(of.into());
        self
    }

    /// The metric with merge rule `merge` (for a rate, see
    /// [`Metric::rate_of`]).
    pub fn merged(mut self, merge: Merge) -> Self {
        self.merge = Some(merge);
        self
    }

    /// The metric as the rate of count `count` over the run's window,
    /// merged as the merged count over the merged window.
    pub fn rate_of(mut self, count: impl Into<String>) -> Self {
        self.merge = Some(Merge::Rate);
        self.rate_of = Some(count.into());
        self
    }

    /// The metric as one of `dyno quick`'s parts (`http`, `db`, `disk`):
    /// labelled [`crate::names::label::PART`], its name its engine's. The
    /// metrics it names ([`Metric::of`], [`Metric::rate_of`]) are the ones
    /// of the same name with the same labels, so they are the same part's
    /// (`requests_per_sec{part=http}` is the rate of
    /// `responses{part=http}`).
    pub fn of_part(self, part: &str) -> Self {
        self.with_label(crate::names::label::PART, part)
    }

    /// The `dyno quick` part the metric is of ([`Metric::of_part`]); `None`
    /// for a metric of no part (every metric of a run of another kind).
    pub fn part(&self) -> Option<&str> {
        self.label(crate::names::label::PART)
    }

    /// The metric whose samples are `samples`.
    pub fn samples_are(mut self, samples: Samples) -> Self {
        self.samples_are = Some(samples);
        self
    }

    /// The metric with one more label.
    pub fn with_label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// The value of label `key`, if the metric has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(String::as_str)
    }

    /// The name with its labels, as shown to people: `wall_ns` or
    /// `wall_ns{command=make -j 2}`.
    pub fn display_name(&self) -> String {
        labelled(&self.name, &self.labels)
    }
}

/// `name` with `labels` as people read them: `wall_ns`, or
/// `wall_ns{command=make -j 2}` (labels by name, joined by `, `).
pub fn labelled(name: &str, labels: &BTreeMap<String, String>) -> String {
    if labels.is_empty() {
        return name.to_owned();
    }
    let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{name}{{{}}}", labels.join(", "))
}

/// The unit of a metric's value. Values are stored in base units (ns, bytes)
/// and scaled only for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Unit {
    #[serde(rename = "ns")]
    Ns,
    #[serde(rename = "bytes")]
    Bytes,
    #[serde(rename = "bytes_per_sec")]
    BytesPerSec,
    #[serde(rename = "ops_per_sec")]
    OpsPerSec,
    #[serde(rename = "requests_per_sec")]
    RequestsPerSec,
    /// A scenario's flows (each several requests) per second: never set
    /// beside requests per second.
    #[serde(rename = "flows_per_sec")]
    FlowsPerSec,
    #[serde(rename = "count")]
    Count,
    /// A dimensionless ratio (speedup, efficiency as a fraction).
    #[serde(rename = "ratio")]
    Ratio,
    #[serde(rename = "percent")]
    Percent,
    /// A clock frequency in megahertz (the CPUs' clock during a run).
    #[serde(rename = "mhz")]
    Mhz,
}

impl Unit {
    /// The name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Bytes => "bytes",
            Unit::BytesPerSec => "bytes_per_sec",
            Unit::OpsPerSec => "ops_per_sec",
            Unit::RequestsPerSec => "requests_per_sec",
            Unit::FlowsPerSec => "flows_per_sec",
            Unit::Count => "count",
            Unit::Ratio => "ratio",
            Unit::Percent => "percent",
            Unit::Mhz => "mhz",
        }
    }
}

impl Merge {
    /// The rule for a metric that declares none: counts and sizes add up,
    /// anything else takes the largest segment's value.
    pub fn by_unit(unit: Unit) -> Merge {
        match unit {
            Unit::Count | Unit::Bytes => Merge::Sum,
            _ => Merge::Max,
        }
    }
}

/// Which way is better, so comparisons can say "faster" or "slower" without
/// knowing the metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    HigherIsBetter,
    LowerIsBetter,
}

/// A confidence interval around a metric's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Uncertainty {
    pub method: UncertaintyMethod,
    /// Confidence level of the interval, e.g. 0.95.
    pub confidence: f64,
    pub low: f64,
    pub high: f64,
    /// Number of samples behind the interval.
    pub n: u64,
    /// Sample standard deviation, in the metric's unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stddev: Option<f64>,
}

/// How an interval was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UncertaintyMethod {
    /// Student's t interval of the mean.
    StudentT,
    /// Percentile bootstrap of the mean.
    Bootstrap,
    /// The distribution-free interval of a percentile from the order
    /// statistics of a histogram (ranks nq ∓ z·sqrt(nq(1 − q))).
    OrderStatistic,
    /// Propagated from the intervals of the figures this one is computed
    /// from (the delta method on the log scale, for a geometric mean).
    Delta,
}

/// A latency (or other) distribution: a lossless HDR histogram, plus a
/// summary for readers that do not decode it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Histogram {
    /// How `data` is encoded: `hdr-v2-deflate-base64` is HdrHistogram's V2
    /// compressed encoding in base64, as in the HdrHistogram log format, so
    /// histograms from several runs or machines merge losslessly.
    pub encoding: String,
    pub data: String,
    pub count: u64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub stddev: f64,
    pub percentiles: Vec<Percentile>,
}

/// One percentile of a [`Histogram`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Percentile {
    /// The percentile, 0–100 (99.9 for p99.9).
    pub percentile: f64,
    pub value: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_the_subject_and_show_in_the_display_name() {
        let plain = Metric::new("wall_ns", Unit::Ns, Direction::LowerIsBetter, 1.0);
        assert_eq!(plain.display_name(), "wall_ns");
        assert_eq!(plain.label("command"), None);
        let m = plain
            .with_label("param.N", "4")
            .with_label("command", "make -j 4");
        assert_eq!(m.label("command"), Some("make -j 4"));
        assert_eq!(m.display_name(), "wall_ns{command=make -j 4, param.N=4}");
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(json["labels"]["param.N"], "4");
        let unlabelled = serde_json::to_value(Metric::new(
            "x",
            Unit::Count,
            Direction::HigherIsBetter,
            1.0,
        ))
        .unwrap();
        assert!(
            unlabelled.get("labels").is_none(),
            "empty labels are left out"
        );
    }
}
