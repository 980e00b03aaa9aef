//! The names of the metrics a `capacity` run writes.
//!
//! A capacity search (`--find-max`, `-c FROM..TO`) is an http or db run
//! whose figures are those of its answer's step; the search adds its
//! answer, labelled [`label::SLO`] with the objective so that `compare`
//! matches capacities only at the same target. Its record
//! (`CapacityRecord`) keeps each step, with the codes of why a step failed
//! ([`WHY_LATENCY`] …) and, for a search that kept disagreeing, of the
//! cause ([`CAUSE_MACHINE_BUSY`] …): the search writes them and the
//! reports read them, so they are named here too.
//!
//! [`label::SLO`]: super::label::SLO

/// The highest rate that met the objective, when the search settled: the
/// run's headline.
pub const MAX_SUSTAINABLE_RATE: &str = "max_sustainable_rate";
/// The highest rate that met the objective in a search that did not
/// settle (its budget or an interrupt ended it, or it was unstable): a
/// lower bound, not a capacity.
pub const MAX_PASSING_RATE: &str = "max_passing_rate";
/// The lowest rate that failed the objective, above the highest pass.
pub const FIRST_FAILING_RATE: &str = "first_failing_rate";

/// A step failed: a latency percentile over the objective's limit.
pub const WHY_LATENCY: &str = "latency";
/// A step failed: errors over the objective's share.
pub const WHY_ERRORS: &str = "errors";
/// A step failed: too few of the requests due in it ended in it (the
/// rate was not reached).
pub const WHY_RATE: &str = "rate";
/// A step failed: too many of its sends were late or dropped.
pub const WHY_LATE: &str = "late";
/// A step failed: its latency rose within it (a queue was growing).
pub const WHY_RISING: &str = "rising";
/// A step failed: no request (or transaction) ended in it.
pub const WHY_NO_REQUESTS: &str = "no_requests";
/// A step failed: the client ran out of CPU.
pub const WHY_CLIENT: &str = "client";

/// Repeated steps disagreed because other work took the client's CPU.
pub const CAUSE_MACHINE_BUSY: &str = "machine_busy";
/// Repeated steps disagreed with nothing changed on the client's side:
/// the target's capacity moved.
pub const CAUSE_CAPACITY_MOVED: &str = "capacity_moved";
