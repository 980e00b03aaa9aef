//! A capacity search's part of a run's record (`dyno http --find-max`):
//! the objective, how the search ran, its answer and every step it took.
//! The run's own figures are those of the step at the answer's rate.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a capacity search was asked and what it found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct CapacityRecord {
    /// The objective as given, e.g. `p99<=20ms,errors<=0.1%`.
    pub slo: String,
    /// The objective as the search read it (absent in runs saved before
    /// it was kept): what the views draw and judge by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objective: Option<Objective>,
    /// The first rate tried, per second.
    pub start: f64,
    /// Whether the start was chosen from a short closed-model probe.
    pub start_probed: bool,
    /// The bracket's relative width the search stops at (0.05: 5%).
    pub precision: f64,
    /// Measured length of each step, and its warm-up (excluded).
    pub step_ns: u64,
    pub step_warmup_ns: u64,
    /// The longest the search may take.
    pub budget_ns: u64,
    pub answer: CapacityAnswer,
    pub steps: Vec<CapacityStep>,
    /// The closed-model variant (`--connections FROM..TO`): steps at a
    /// number of connections instead of a rate, and the USL fit of their
    /// throughput.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<ConnectionSweep>,
    /// The search varied a replay's speed (`--replay --find-max`): its
    /// start, its steps' levels and its answer are multiples of the
    /// recorded traffic's pace, not rates.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub over_speed: bool,
}

/// An objective as the search read it: every target must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Objective {
    pub latency: Vec<LatencyLimit>,
    /// The most failed requests (transactions) allowed, as a fraction of
    /// those measured (0.001 for `errors<=0.1%`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_error_share: Option<f64>,
}

/// One latency target of an objective: the percentile (of the corrected
/// latency) must be at most, or with `strict` below, the limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LatencyLimit {
    pub percentile: f64,
    pub limit_ns: u64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub strict: bool,
}

impl Objective {
    /// The limit at `percentile`, if the objective has one there.
    pub fn limit_at(&self, percentile: f64) -> Option<&LatencyLimit> {
        self.latency
            .iter()
            .find(|l| (l.percentile - percentile).abs() < 1e-9)
    }
}

/// A closed-model sweep of connections.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ConnectionSweep {
    /// The lowest and highest number of connections asked for.
    pub from: u64,
    pub to: u64,
    /// The Universal Scalability Law fitted to the steps' throughput over
    /// their connections (3 steps or more with answers).
    pub usl: Option<UslSummary>,
}

/// A USL fit: X(N) = λN / (1 + σ(N − 1) + κN(N − 1)).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct UslSummary {
    /// Contention.
    pub sigma: f64,
    /// Coherency (crosstalk).
    pub kappa: f64,
    /// Throughput of one connection, per second.
    pub lambda: f64,
    pub r_squared: f64,
    /// Where throughput peaks, and the peak; `None` without coherency.
    pub peak_connections: Option<f64>,
    pub peak_rate: Option<f64>,
}

/// How the search ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CapacityOutcome {
    /// The highest pass and the lowest fail, both confirmed, are within
    /// the precision.
    Found,
    /// The budget ended it first (or the target stopped answering): the
    /// highest pass so far is a lower bound, not a capacity.
    #[default]
    Unfinished,
    /// An interrupt (Ctrl-C) ended it: no capacity is claimed; its steps
    /// are kept as diagnostics.
    Interrupted,
    /// Repeated steps kept disagreeing (a busy machine, or a capacity
    /// that moved): `max_rate` and `above_rate` are the bracket every run
    /// agreed on, and no capacity is claimed.
    Unstable,
    /// No rate down to the floor met the objective.
    NoneMeets,
    /// The client saturated first: no claim about the server.
    ClientBound,
}

/// The search's answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct CapacityAnswer {
    pub outcome: CapacityOutcome,
    /// The highest rate that passed (the max sustainable rate when
    /// `outcome` is `found`).
    pub max_rate: Option<f64>,
    /// The lowest rate that failed.
    pub above_rate: Option<f64>,
    /// `none_meets`: the lowest rate tried.
    pub lowest_rate: Option<f64>,
    /// `client_bound`: the rate the saturated client achieved.
    pub client_bound_at: Option<f64>,
    /// `unstable`: why the search could not judge: `machine_busy` (other
    /// work took the client's CPU) or `capacity_moved`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
}

/// One step of the search.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct CapacityStep {
    /// Why it ran: `bracket`, `bisect`, `confirm pass`, `confirm fail`,
    /// or `sweep` (the closed-model variant).
    pub purpose: String,
    /// The closed-model variant: the step's connections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections: Option<u64>,
    /// A replay's search: the step's multiple of the log's pace (its
    /// `requested` is then the log's rate at that multiple).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
    pub requested: f64,
    pub achieved: f64,
    /// Corrected latency percentiles, in nanoseconds.
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    /// Requests that ended in the step's measured window, and of them
    /// the failed.
    pub requests: u64,
    pub errors: u64,
    /// Sends due in the window, and of them the late or dropped.
    pub sends: u64,
    pub late: u64,
    /// The 99th percentile of the send lag, in nanoseconds.
    pub send_lag_p99_ns: u64,
    /// The client's CPU use, in percent of its threads.
    pub client_cpu_percent: f64,
    /// How long the client's threads waited, runnable, for a CPU (other
    /// work on the machine took it), in percent of their time.
    pub client_wait_percent: f64,
    /// The watched server processes' CPU (`--watch-pid`, `--watch-name`,
    /// `--watch-cgroup`, added up), in percent of one core, over the
    /// step's measured window; absent when none was watched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_percent: Option<f64>,
    /// The watched target machine's CPU busy share (`--watch URL` of a
    /// node_exporter), in percent of all its cores; absent when none was
    /// watched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_cpu_percent: Option<f64>,
    pub passed: bool,
    /// Why it failed, one phrase per reason; empty when it passed.
    pub why: Vec<String>,
    /// The same reasons as stable codes, in the same order: `latency`,
    /// `errors`, `rate` (due requests never sent), `late` (sends late),
    /// `rising` (latency rising within the step), `no_requests`,
    /// `client` (the client saturated). Absent in runs saved before it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed_on: Vec<String>,
}
