//! Built-in CPU workloads: small, fixed computations whose result is known in
//! advance, so a run proves that the work was really done.
//!
//! The engines here take plain settings and return measured wall times; they
//! never print. [`quick`] is `dyno quick`'s int64 line: the times turned
//! into metrics, with the warnings that judge them.

pub mod int64;
pub mod quick;
