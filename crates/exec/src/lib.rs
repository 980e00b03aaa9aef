//! The command timer behind `dyno run`.
//!
//! Settings in, measurements out: the engine never prints, parses flags or
//! touches the store. Each run is one child process in its own process
//! group, waited for with `wait4` so its CPU time and peak memory are its
//! own; the shell's start-up is measured and subtracted; benchmarks take
//! turns (A B C A B C …) so drift of the machine spreads evenly.
//!
//! - [`settings`]: what to do; [`params`]: parameters and templates.
//! - [`engine`]: the driver and its stopping rules; [`child`]: one timed process.
//! - [`outcome`]: the measurements as the metrics of a `Run`.
//! - [`record`]: the `Run` itself, with its settings record and warnings.

pub mod child;
pub mod engine;
pub mod outcome;
pub mod params;
pub mod record;
pub mod settings;
mod stop;

pub use child::{Sample, SpawnError, Status};
pub use engine::{BenchResult, Benchmark, ExecError, Outcome, Progress, StopRule, run};
pub use params::{ParamError, Parameter};
pub use record::{Judging, record};
pub use settings::{CommandSpec, Hooks, Output, Policy, Settings, Shell};
pub use stop::Stop;
