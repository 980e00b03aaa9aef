//! Label keys that views select metrics by.

/// The part of a `dyno quick` run a figure is of (`http`, `db`, `disk`;
/// [`super::quick::HTTP`] …): each part's metrics keep their engine's names
/// (`latency_ns{part=http}` beside `latency_ns{part=db}`).
pub const PART: &str = "part";
/// A latency summary's percentile (`latency_ns{percentile=99}`).
pub const PERCENTILE: &str = "percentile";
/// The second of a timeline series (1-based).
pub const SECOND: &str = "second";
/// A rate plan's stage number (1-based).
pub const STAGE: &str = "stage";
/// A rate plan's stage as written (`0..200/2s`).
pub const PLAN: &str = "plan";
/// A db figure's script, by name (`select-only`, or a `-f` file's).
pub const SCRIPT: &str = "script";
/// The SQLSTATE a db failure or retry count is of (`40001`).
pub const SQLSTATE: &str = "sqlstate";
/// A script command's line number (db's `-r`).
pub const LINE: &str = "line";
/// A command as written: an exec benchmark's, or a db script's (`-r`).
pub const COMMAND: &str = "command";
/// A disk test (`SEQ1M Q8T1`, `files`).
pub const TEST: &str = "test";
/// A disk test's operation (`read`, `write`, `create`).
pub const OP: &str = "op";
/// An http scenario's flow, by name.
pub const FLOW: &str = "flow";
/// An http scenario's step, by name, within its [`FLOW`].
pub const STEP: &str = "step";
/// A replayed request's path template (`/users/{id}`).
pub const ENDPOINT: &str = "endpoint";
/// An http error class a count is of (`reset`, `status`).
pub const CLASS: &str = "class";
/// What an exec benchmark's parameter labels start with: `param.NAME`
/// holds the value of the parameter NAME.
pub const PARAM_PREFIX: &str = "param.";
/// The benchmark an exec comparison is made against, by name.
pub const REFERENCE: &str = "reference";
/// The verdict of a comparison, as a word (`faster`, `too_few_runs`).
pub const VERDICT: &str = "verdict";
/// A scale point's N (`4`, `2.5`).
pub const N: &str = "n";
/// `true` on a scale figure predicted beyond the measured N.
pub const PREDICTED: &str = "predicted";
/// What bounds a scale run's USL fit (`linear`, `superlinear`,
/// `contention`, `coherency`).
pub const BOUND: &str = "bound";
/// The watched source a telemetry figure describes: a process name, a
/// cgroup, an exporter's host and port.
pub const WATCHED: &str = "watched";
/// A CPU mode of a watched machine (`user`, `iowait`).
pub const MODE: &str = "mode";
/// A core of a watched machine, by number.
pub const CORE: &str = "core";
/// A disk or network device of a watched machine (`sda`, `eth0`).
pub const DEVICE: &str = "device";
/// A PostgreSQL wait event (`Lock:transactionid`).
pub const EVENT: &str = "event";
/// A capacity search's objective as written (`p99<=20ms`), on the
/// figures of its answer.
pub const SLO: &str = "slo";
