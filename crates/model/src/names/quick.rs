//! The names of the metrics a `quick` run writes.
//!
//! Its int64 line's figures are its own ([`INT64_1T`] …, all starting with
//! [`INT64_PREFIX`]). Its HTTP, disk and PostgreSQL lines keep the names
//! their engines write ([`super::http`], [`super::disk`], [`super::db`]),
//! each behind its line's name and `_` ([`crate::Metric::with_prefix`]:
//! `http_requests_per_sec`, `disk_iops`, `db_transactions_per_sec`), and so
//! do the figures watching adds over a line (`db_server_cpu_percent`).

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

/// The HTTP line's name: it prefixes the line's metrics (`http_latency_ns`)
/// and its warnings (`http line: …`).
pub const HTTP: &str = "http";
/// The disk line's name: it prefixes the line's metrics (`disk_iops`) and
/// its warnings.
pub const DISK: &str = "disk";
/// The PostgreSQL line's name: it prefixes the line's metrics
/// (`db_transactions_per_sec`) and its warnings.
pub const DB: &str = "db";
