//! The names of the metrics a `scale` run writes.
//!
//! Per-point figures carry the label [`label::N`]; a figure outside the
//! measured range of N is labelled [`label::PREDICTED`] `true`.
//!
//! [`label::N`]: super::label::N
//! [`label::PREDICTED`]: super::label::PREDICTED

/// The measured time at one N (a curve of times).
pub const TIME: &str = "time_ns";
/// The measured throughput at one N (a curve of rates), work per second.
pub const THROUGHPUT: &str = "throughput";
/// The speedup at one N over the baseline.
pub const SPEEDUP: &str = "speedup";
/// The speedup at one N over N: its parallel efficiency.
pub const EFFICIENCY: &str = "efficiency";
/// The parallel fraction Amdahl's law gives for one point's speedup.
pub const AMDAHL_PARALLEL_FRACTION: &str = "amdahl_parallel_fraction";
/// The Karp–Flatt experimentally determined serial fraction at one N.
pub const KARP_FLATT_SERIAL_FRACTION: &str = "karp_flatt_serial_fraction";
/// The highest measured speedup, labelled with its N: the run's headline.
pub const BEST_SPEEDUP: &str = "best_speedup";
/// The parallel fraction of the Amdahl fit over all points.
pub const AMDAHL_FIT_PARALLEL_FRACTION: &str = "amdahl_fit_parallel_fraction";
/// The speedup the Amdahl fit tends to as N grows without bound.
pub const AMDAHL_FIT_CEILING: &str = "amdahl_fit_ceiling";
/// The share of the variance the Amdahl fit explains (R²).
pub const AMDAHL_FIT_R_SQUARED: &str = "amdahl_fit_r_squared";
/// The USL's contention coefficient σ.
pub const USL_SIGMA: &str = "usl_sigma";
/// The USL's coherency coefficient κ.
pub const USL_KAPPA: &str = "usl_kappa";
/// The USL's λ: the throughput of one unit.
pub const USL_LAMBDA: &str = "usl_lambda";
/// The share of the variance the USL fit explains (R²).
pub const USL_R_SQUARED: &str = "usl_r_squared";
/// What bounds the scaling by the USL fit (0 linear, 1 contention, 2
/// coherency), named by the `bound` label.
pub const USL_BOUND: &str = "usl_bound";
/// The N at which the USL fit peaks.
pub const USL_PEAK_N: &str = "usl_peak_n";
/// The throughput at the USL fit's peak.
pub const USL_PEAK_THROUGHPUT: &str = "usl_peak_throughput";
/// The speedup at the USL fit's peak.
pub const USL_PEAK_SPEEDUP: &str = "usl_peak_speedup";
/// The time at the USL fit's peak (curves of times only).
pub const USL_PEAK_TIME: &str = "usl_peak_time_ns";

/// The tree-write workload's commits per second at one N (this and the
/// three below are means over the timed passes, labelled with their N).
pub const COMMITS_PER_SEC: &str = "commits_per_sec";
/// The tree-write workload's fsyncs per commit at one N.
pub const FSYNCS_PER_COMMIT: &str = "fsyncs_per_commit";
/// The tree-write workload's retried transactions per timed pass at one N.
pub const RETRIES: &str = "retries";
/// The tree-write workload's log bytes written per commit at one N.
pub const LOG_BYTES_PER_COMMIT: &str = "log_bytes_per_commit";

/// The [`USL_BOUND`] label's word when the fit is linear.
pub const BOUND_LINEAR: &str = "linear";
/// The [`USL_BOUND`] label's word when the points scale super-linearly (σ
/// and κ pinned at 0).
pub const BOUND_SUPERLINEAR: &str = "superlinear";
/// The [`USL_BOUND`] label's word when contention (σ) bounds the scaling.
pub const BOUND_CONTENTION: &str = "contention";
/// The [`USL_BOUND`] label's word when coherency (κ) bounds the scaling.
pub const BOUND_COHERENCY: &str = "coherency";

/// What every parallel-fraction estimate's name ends with (Amdahl's, its
/// fit's, quick's int64 line's): shown as a percentage.
pub const PARALLEL_FRACTION_SUFFIX: &str = "parallel_fraction";
/// What every fit's goodness-of-fit name ends with (USL's, Amdahl's).
pub const R_SQUARED_SUFFIX: &str = "r_squared";
