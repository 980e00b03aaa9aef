//! Built-in CPU workloads: small, fixed computations whose result is known in
//! advance, so a run proves that the work was really done.
//!
//! The engines here take plain settings and return measured wall times; they
//! never print. The binary turns the times into metrics of a `Run`.

pub mod int64;
