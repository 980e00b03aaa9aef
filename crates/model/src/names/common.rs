//! Names more than one kind of run writes with the same meaning.

/// The latency of one operation (request, transaction, I/O): the run's
/// primary distribution.
pub const LATENCY: &str = "latency_ns";
/// The open model's latency counted from the actual send, not the due
/// time: what a closed-model tool would have reported.
pub const LATENCY_UNCORRECTED: &str = "latency_uncorrected_ns";
/// The measured window the rates are over.
pub const MEASURED: &str = "measured_ns";
/// Share of the generator's threads the client process kept busy.
pub const CLIENT_CPU_PERCENT: &str = "client_cpu_percent";
/// How long the target answered nothing (`dyno_load::silence`).
pub const TARGET_LOST: &str = "target_lost_ns";

/// Each second's p99 latency, as samples (`dyno_load::timeline`).
pub const TIMELINE_LATENCY_P99: &str = "timeline_latency_p99_ns";
/// Each second's latency histogram, labelled `second`, kept by segments so
/// a merge can recompute the p99 per second.
pub const TIMELINE_LATENCY: &str = "timeline_latency_ns";

/// A rate plan's stage (labels `stage` and `plan`): the rate it reached.
pub const STAGE_RATE: &str = "stage_rate_per_sec";
/// A stage's latency.
pub const STAGE_LATENCY: &str = "stage_latency_ns";
/// A stage's send lag.
pub const STAGE_SEND_LAG: &str = "stage_send_lag_ns";
/// A stage's errors.
pub const STAGE_ERRORS: &str = "stage_errors";
/// A stage's dropped due times.
pub const STAGE_DROPPED_SENDS: &str = "stage_dropped_sends";
/// A stage's operations cut at its end.
pub const STAGE_UNFINISHED: &str = "stage_unfinished";
