//! The names of the metrics an exec run (`dyno run`) writes.
//!
//! Each benchmark's metrics carry the labels [`label::COMMAND`] and one
//! [`label::PARAM_PREFIX`]`NAME` per parameter; the comparison with the
//! reference adds [`label::REFERENCE`] (and the verdict its
//! [`label::VERDICT`]).
//!
//! [`label::COMMAND`]: super::label::COMMAND
//! [`label::PARAM_PREFIX`]: super::label::PARAM_PREFIX
//! [`label::REFERENCE`]: super::label::REFERENCE
//! [`label::VERDICT`]: super::label::VERDICT

/// A benchmark's wall time per run, the shell's start-up subtracted: the
/// run's primary figure, its samples one per timed run.
pub const WALL: &str = "wall_ns";
/// A benchmark's user CPU time per run.
pub const USER: &str = "user_ns";
/// A benchmark's system (kernel) CPU time per run.
pub const SYSTEM: &str = "system_ns";
/// A benchmark's CPU time over its wall time, in percent (a ratio of sums).
pub const CPU_PERCENT: &str = "cpu_percent";
/// A benchmark's peak resident memory, one sample per run.
pub const PEAK_RSS: &str = "peak_rss_bytes";
/// How many of a benchmark's runs failed; its samples are each run's
/// recorded exit code.
pub const FAILED_RUNS: &str = "failed_runs";
/// The shell's own start-up time, measured and subtracted from every run.
pub const SHELL_STARTUP: &str = "shell_startup_ns";
/// A benchmark's mean wall time over the reference's, with its bootstrap
/// interval.
pub const RATIO_TO_REFERENCE: &str = "ratio_to_reference";
/// The Mann–Whitney p-value of a benchmark's times against the reference's.
pub const P_VALUE: &str = "p_value";
/// The comparison's verdict: +1 faster, −1 slower, 0 otherwise (the
/// `verdict` label names which).
pub const VERDICT: &str = "verdict";
