//! The names of the metrics a `quick` run writes.
//!
//! Its int64 line's figures are its own ([`INT64_1T`] …, all starting with
//! [`INT64_PREFIX`]), and carry no part: no engine shares their names. Its
//! HTTP, disk and PostgreSQL lines keep the names their engines write
//! ([`super::http`], [`super::disk`], [`super::db`]), each labelled with
//! its line's name as [`super::label::PART`] ([`crate::Metric::of_part`]:
//! `requests_per_sec{part=http}`, `iops{part=disk, …}`,
//! `transactions_per_sec{part=db}`), and so do the figures watching adds
//! over a line (`server_cpu_percent{part=db, …}`). A view reads a line's
//! figure by name and part ([`crate::Run::metric_of`]): `latency_ns` is in
//! the http and the db line both. Runs saved when the lines' names carried
//! a prefix (`http_requests_per_sec`) read as today's
//! ([`crate::legacy`]).

/// What every int64 figure's name starts with.
pub const INT64_PREFIX: &str = "int64_";
/// The int64 loop's wall time on one thread, every repetition as samples:
/// the run's headline.
pub const INT64_1T: &str = "int64_1t_ns";
/// Loop iterations per second on one thread: the reciprocal of
/// [`INT64_1T`].
pub const INT64_1T_OPS_PER_SEC: &str = "int64_1t_ops_per_sec";
/// The wall time of one copy of the loop on each of N threads at once.
pub const INT64_NT: &str = "int64_nt_ns";
/// Loop iterations per second over the N threads together: the reciprocal
/// of [`INT64_NT`].
pub const INT64_NT_OPS_PER_SEC: &str = "int64_nt_ops_per_sec";
/// The N threads' throughput over one thread's, per interleaved pair of
/// repetitions.
pub const INT64_SPEEDUP: &str = "int64_speedup";
/// [`INT64_SPEEDUP`] over N, in percent.
pub const INT64_EFFICIENCY_PERCENT: &str = "int64_efficiency_percent";
/// The Amdahl parallel fraction that explains the mean speedup; absent
/// with more threads than CPUs.
pub const INT64_AMDAHL_PARALLEL_FRACTION: &str = "int64_amdahl_parallel_fraction";

/// The HTTP line's name: the [`super::label::PART`] of the line's metrics
/// (`latency_ns{part=http}`) and the start of its warnings (`http line: …`).
pub const HTTP: &str = "http";
/// The disk line's name: the [`super::label::PART`] of the line's metrics
/// (`iops{part=disk, …}`) and the start of its warnings.
pub const DISK: &str = "disk";
/// The PostgreSQL line's name: the [`super::label::PART`] of the line's
/// metrics (`transactions_per_sec{part=db}`) and the start of its warnings.
pub const DB: &str = "db";
