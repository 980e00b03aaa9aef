//! The Run record: the one contract between dyno's engines, its store and its
//! exporters.
//!
//! Every measurement, of every kind, becomes a [`Run`]: what was asked for
//! ([`Run::settings`]), where it ran ([`Environment`]), what was measured
//! ([`Metric`]) and what makes the numbers less trustworthy ([`Warning`]).
//! These are plain serde types with no I/O; the JSON form is versioned by
//! [`SCHEMA_VERSION`] and described by `schema/run.schema.json` at the root of
//! the repository.

mod environment;
mod metric;
mod run;
pub mod size;

pub use environment::{Cache, Cpu, DynoBuild, Environment, Limits, Memory, Network};
pub use metric::{Direction, Histogram, Metric, Percentile, Uncertainty, UncertaintyMethod, Unit};
pub use run::{Kind, ParseKindError, ParseRunIdError, Run, RunId, SCHEMA_VERSION, Warning};
