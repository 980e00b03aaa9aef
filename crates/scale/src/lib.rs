//! The scaling engine behind `dyno scale`.
//!
//! Data flow: the binary resolves flags and gathers the points of one
//! curve over N, as a [`Curve`], from one of three sources:
//! - [`workload`]: a built-in workload measured now on 1, 2, … threads
//!   (int64 arithmetic, the tree database's parallel read and durable write);
//! - [`file`](mod@file): the text of a CSV or JSON file of (N, time) or (N, throughput);
//! - [`saved`]: a saved `dyno run` sweep, which the binary fetches from the
//!   store and hands in.
//!
//! [`analyse`] then fits Amdahl's law and the USL with the pure functions of
//! `dyno_stats::scaling` and returns the `scale` Run: per-point figures, the
//! fits, warnings. The binary labels, prints and saves it. Nothing here
//! prints, parses flags or touches the store; progress notes go to a
//! callback the binary gives.
//!
//! Points are refused below two (a speedup needs a baseline and one more N);
//! the USL needs three and is skipped with a warning at two, so a dual-core
//! machine's default sweep (1 and 2 threads) still gives speedup and Amdahl.

mod analyse;
mod curve;
pub mod file;
pub mod saved;
pub mod workload;

pub(crate) use analyse::fmt_n;
pub use analyse::{AnalyseError, analyse};
pub use curve::{Curve, Measured};
pub use dyno_stats::scaling::Measure;
pub use workload::{DEFAULT_INT64_ITERATIONS, DEFAULT_REPETITIONS, MeasureError};
