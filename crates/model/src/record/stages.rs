//! A load plan's part of a run's record (`--rate-plan`): the plan as
//! given and each stage's own figures. A request (or transaction) belongs
//! to the stage it was due in, whenever it ended.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The plan and what each of its stages measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct RatePlanRecord {
    /// The plan as given, e.g. `1000@30s,0..5000/60s`.
    pub plan: String,
    pub stages: Vec<StageRecord>,
}

/// One stage's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct StageRecord {
    /// The stage as given, e.g. `1000@30s` or `0..5000/60s`.
    pub stage: String,
    /// Where it starts in the run, and how long it lasts.
    pub start_ns: u64,
    pub duration_ns: u64,
    /// The mean rate the plan asks for over the stage, per second.
    pub requested: f64,
    /// Its requests that ended (answered or failed) over the stage's
    /// length, per second.
    pub achieved: f64,
    /// Its requests that ended, and of them the failed.
    pub ended: u64,
    pub errors: u64,
    /// Its due times no connection took before the run's end.
    pub dropped: u64,
    /// Its requests sent but cut by the run's end (under way at the
    /// deadline, or ended after it): neither ended nor dropped.
    pub unfinished: u64,
    /// Latency counted from each due time (corrected), in nanoseconds.
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    /// How late its sends left against their due times: the 99th
    /// percentile and the largest, in nanoseconds.
    pub send_lag_p99_ns: u64,
    pub send_lag_max_ns: u64,
}
