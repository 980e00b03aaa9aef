//! The names of the metrics a comparison (`dyno compare`) writes; its
//! metrics carry the labels [`GROUP`], [`METRIC`] and [`KIND`] (and
//! [`super::label::VERDICT`] on a ratio).

/// A side's figure for one compared metric (labels `group`, `metric`,
/// `kind`, `evidence`).
pub const VALUE: &str = "value";
/// Candidate ÷ baseline of one compared metric, with its interval.
pub const RATIO: &str = "ratio";
/// The test's p-value of one compared metric.
pub const P_VALUE: &str = "p_value";
/// A candidate's score: the geometric mean of its improvement factors.
pub const GEOMEAN: &str = "geomean";
/// A candidate's metrics judged better.
pub const BETTER: &str = "better";
/// A candidate's metrics judged worse.
pub const WORSE: &str = "worse";
/// A candidate's metrics with no significant difference.
pub const SAME: &str = "same";
/// A candidate's metrics that could not be tested.
pub const UNTESTED: &str = "untested";

/// Label: the group (side) a figure is of.
pub const GROUP: &str = "group";
/// Label: the compared metric, as `dyno show` names it.
pub const METRIC: &str = "metric";
/// Label: the kind of run the compared metric is of.
pub const KIND: &str = "kind";
/// Label: what a side's value rests on (samples, runs, histogram, single).
pub const EVIDENCE: &str = "evidence";
/// Label: the compared metric's role (primary, diagnostic, …).
pub const ROLE: &str = "role";
/// Label of [`GEOMEAN`]: how many quantities it combines.
pub const METRICS: &str = "metrics";
