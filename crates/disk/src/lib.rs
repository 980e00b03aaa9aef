//! The disk engine behind `dyno disk`: CrystalDiskMark's tests with fio's
//! accuracy, fsync latency and metadata rates.
//!
//! Data flow: the binary resolves flags into a [`target::TargetSpec`] and
//! the tests; [`target::TestFile`] applies the safety rules, creates and
//! fills the file and decides between direct and buffered I/O;
//! [`run::run_block_tests`] (or [`sync`], [`meta`]) runs the passes through
//! an [`engine`] (io_uring, or a pread/pwrite thread pool); [`outcome`]
//! turns the measurements into metrics and [`record`] the whole into a
//! `Run`. Nothing here prints or saves.
//!
//! - [`spec`]: tests, presets and profiles;
//! - [`target`]: the test file and its safety rules;
//! - [`engine`]: one timed pass;
//! - [`run`]: warm-up, passes, pauses, best and median;
//! - [`sync`]: durable-write latency; [`meta`]: create/stat/unlink rates.

mod buffer;
pub mod engine;
pub mod meta;
pub mod outcome;
pub mod record;
pub mod run;
pub mod spec;
pub mod sync;
pub mod target;
pub mod warnings;

pub use engine::{EngineKind, PassStats};
pub use record::{Outcome, Settings};
pub use run::{BlockPlan, Measurement, Passes, Progress, RunError};
pub use spec::{Op, Pattern, Preset, Profile, TestSpec};
pub use target::{Fill, IoMode, TargetError, TargetKind, TargetSpec, TestFile};
pub use warnings::DiskWarning;
