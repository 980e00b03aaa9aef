//! What dyno's load drivers share (`dyno http`, `dyno db run`).
//!
//! - [`timer`]: the open model's microsecond-precise timer, one per worker
//!   thread.
//! - [`slo`]: a service-level objective (`--slo 'p99<=20ms,errors<=0.1%'`).
//! - [`trend`]: whether latency rose within a step (a growing queue).
//! - [`search`]: capacity search, a pure state machine: one step's
//!   observation in, the next rate out.
//!
//! Data flow: the binary parses `--slo` and the search flags into
//! [`search::Settings`] and [`slo::Slo`]; an engine (`dyno_http::capacity`)
//! runs the steps the search asks for and hands back what each measured;
//! the search's [`search::Answer`] and steps go into the run's record.
//! Nothing here prints.

pub mod search;
pub mod slo;
pub mod timer;
pub mod trend;

pub use slo::Slo;
pub use timer::{Timer, sleep_until_wall};
