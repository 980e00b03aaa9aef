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
    /// `command` and one `param.NAME` per parameter.
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
}

impl Metric {
    /// A metric with a single value and nothing else.
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
        }
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
        if self.labels.is_empty() {
            return self.name.clone();
        }
        let labels: Vec<String> = self
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("{}{{{}}}", self.name, labels.join(", "))
    }
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
    #[serde(rename = "count")]
    Count,
    /// A dimensionless ratio (speedup, efficiency as a fraction).
    #[serde(rename = "ratio")]
    Ratio,
    #[serde(rename = "percent")]
    Percent,
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
            Unit::Count => "count",
            Unit::Ratio => "ratio",
            Unit::Percent => "percent",
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
