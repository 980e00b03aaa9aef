//! What dyno's load drivers share (`dyno http`, `dyno db run`).
//!
//! - [`timer`]: the open model's microsecond-precise timer, one per worker
//!   thread.
//! - [`pool`]: the worker pool both drivers run on: threads, the start
//!   gate and clock, the cut-off, the per-second timeline, progress
//!   counters, client CPU.
//! - [`judge`]: what a run's own figures say about it, for every protocol:
//!   a saturated client, a rate not reached.
//! - [`plan`]: load plans (`--rate-plan`): stages and ramps, the
//!   expected arrivals by a time and when the k-th is due.
//! - [`stages`]: each stage's own figures under a load plan.
//! - [`slo`]: a service-level objective (`--slo 'p99<=20ms,errors<=0.1%'`).
//! - [`timeline`]: the per-second timeline's metrics (rate, p99, and a
//!   segment's per-second histograms), alike for every protocol.
//! - [`trend`]: whether latency rose within a step (a growing queue).
//! - [`search`]: capacity search, a pure state machine: one step's
//!   observation in, the next rate out.
//! - [`sweep`]: the closed-model walk, a pure state machine beside it:
//!   steps at a number of connections, the best passing throughput and
//!   the USL fit.
//! - [`silence`]: whether the target went away: spells with no answer
//!   while the client kept asking (`target_lost`).
//! - [`shard`]: what one process measured of a step, and the step's
//!   whole observation merged from every process of a split search.
//! - [`capacity`]: running a search on an engine: one plan whose axis is
//!   a rate or a concurrency, one loop over the steps for both, and the
//!   run's record of it.
//!
//! Data flow: the binary parses `--slo` and the search flags into a
//! [`capacity::Plan`]; an engine (`dyno_http::capacity`,
//! `dyno_db::capacity`) implements [`capacity::Engine`], running each
//! step [`capacity::drive`] asks for and reporting what it measured as a
//! [`shard::Shard`]; the answer and the steps go into the run's record
//! ([`capacity::record`], [`capacity::conclude`]).
//! Nothing here prints.

pub mod capacity;
pub mod judge;
pub mod plan;
pub mod pool;
pub mod search;
pub mod shard;
pub mod silence;
pub mod slo;
pub mod stages;
pub mod sweep;
pub mod timeline;
pub mod timer;
pub mod trend;

pub use slo::Slo;
pub use timer::{Timer, sleep_until_wall};
