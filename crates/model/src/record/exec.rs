//! The settings record of timed commands (`dyno run`): what the command
//! timer was asked to do ([`ExecSettings`], which the engine in
//! `crates/exec` runs with) and what it planned from it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Record;
use crate::names::{exec, label};
use crate::{Kind, Metric, Run};

/// What a `dyno run` recorded: its settings, each benchmark it planned,
/// and how its comparison was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecRecord {
    #[serde(flatten)]
    pub settings: ExecSettings,
    /// Each benchmark: a command with its parameter values substituted.
    #[serde(default)]
    pub benchmarks: Vec<PlannedBenchmark>,
    /// Ratios within this percentage of 1 are called the same.
    #[serde(default)]
    pub noise_band_percent: f64,
    /// The benchmark the others were compared with, by name.
    #[serde(default)]
    pub reference: Option<String>,
}

impl Record for ExecRecord {
    const KIND: Kind = Kind::Exec;
}

impl ExecRecord {
    /// The benchmarks an exec run planned, read on their own: a run whose
    /// other settings do not read as a whole record (saved by an earlier
    /// dyno, or a test's partial settings) still names them.
    pub fn planned(run: &Run) -> Vec<PlannedBenchmark> {
        #[derive(Default, Deserialize)]
        #[serde(default)]
        struct Plan {
            benchmarks: Vec<PlannedBenchmark>,
        }
        Plan::deserialize(&run.settings)
            .map(|p| p.benchmarks)
            .unwrap_or_default()
    }

    /// The command templates an exec run timed, in order, read on their own
    /// as [`ExecRecord::planned`] reads the plan.
    pub fn templates(run: &Run) -> Vec<String> {
        #[derive(Default, Deserialize)]
        #[serde(default)]
        struct Commands {
            commands: Vec<CommandSpec>,
        }
        Commands::deserialize(&run.settings)
            .map(|c| c.commands.into_iter().map(|c| c.template).collect())
            .unwrap_or_default()
    }
}

/// One benchmark of an exec run, as its metrics give it.
#[derive(Debug, Clone)]
pub struct Bench<'a> {
    pub name: &'a str,
    /// Parameter values, by parameter name.
    pub parameters: BTreeMap<&'a str, &'a str>,
    pub wall: &'a Metric,
    pub user: Option<&'a Metric>,
    pub system: Option<&'a Metric>,
    pub cpu: Option<&'a Metric>,
    pub rss: Option<&'a Metric>,
    pub failed: Option<&'a Metric>,
    /// Comparison with the reference, absent for the reference itself.
    pub ratio: Option<&'a Metric>,
    pub p_value: Option<&'a Metric>,
    pub verdict: Option<&'a Metric>,
    /// Which rule ended its runs, from the run's plan
    /// ([`PlannedBenchmark::stopped_by`]).
    pub stopped_by: Option<String>,
}

impl Bench<'_> {
    /// Each run's exit code; `None` for a run ended by a signal.
    pub fn exit_codes(&self) -> Vec<Option<i64>> {
        self.failed.map_or_else(Vec::new, |m| {
            m.samples
                .iter()
                .map(|&c| (c >= 0.0).then_some(c as i64))
                .collect()
        })
    }
}

/// The benchmarks of an exec run, in the order they were given.
///
/// Each benchmark's metrics are found by its labels and, where labels repeat
/// (runs saved before repeated names were numbered, such as an A/A test of
/// one command twice), by position: the k-th wall time with those labels
/// goes with the k-th metric of each name with them, since a run lists its
/// benchmarks' metrics in benchmark order.
pub fn benches(run: &Run) -> Vec<Bench<'_>> {
    let plan = ExecRecord::planned(run);
    let walls: Vec<&Metric> = run
        .metrics
        .iter()
        .filter(|m| m.name == exec::WALL && m.label(label::COMMAND).is_some())
        .collect();
    walls
        .iter()
        .enumerate()
        .map(|(index, &wall)| {
            let has_labels =
                |m: &Metric| wall.labels.iter().all(|(k, v)| m.labels.get(k) == Some(v));
            let nth = walls[..index].iter().filter(|w| has_labels(w)).count();
            let same = |name: &str| {
                run.metrics
                    .iter()
                    .filter(|m| m.name == name && has_labels(m))
                    .nth(nth)
            };
            let name = wall.label(label::COMMAND).unwrap_or_default();
            Bench {
                name,
                parameters: wall
                    .labels
                    .iter()
                    .filter_map(|(k, v)| Some((k.strip_prefix(label::PARAM_PREFIX)?, v.as_str())))
                    .collect(),
                wall,
                user: same(exec::USER),
                system: same(exec::SYSTEM),
                cpu: same(exec::CPU_PERCENT),
                rss: same(exec::PEAK_RSS),
                failed: same(exec::FAILED_RUNS),
                ratio: same(exec::RATIO_TO_REFERENCE),
                p_value: same(exec::P_VALUE),
                verdict: same(exec::VERDICT),
                stopped_by: plan
                    .iter()
                    .find(|b| b.name == name)
                    .map(|b| b.stopped_by.clone())
                    .filter(|rule| !rule.is_empty()),
            }
        })
        .collect()
}

/// One benchmark of a run: what ran, and how many times.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct PlannedBenchmark {
    pub name: String,
    pub command: String,
    pub parameters: BTreeMap<String, String>,
    /// Timed runs made.
    pub runs: u64,
    /// What ended its runs: `runs`, `target_rse`, `max_time`, `interrupt` …
    pub stopped_by: String,
}

/// One parameter and the values it takes, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Parameter {
    pub name: String,
    pub values: Vec<String>,
}

/// Everything the command timer needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecSettings {
    /// The commands to time, as templates that may hold `{NAME}`.
    pub commands: Vec<CommandSpec>,
    pub parameters: Vec<Parameter>,
    pub shell: Shell,
    /// Untimed runs of each benchmark before its timed ones.
    pub warmup: u32,
    pub policy: Policy,
    pub hooks: Hooks,
    /// Working directory of every command; the current one when absent.
    pub cwd: Option<PathBuf>,
    /// Extra environment variables, `(name, value)`.
    pub env: Vec<(String, String)>,
    /// A file given to every command on stdin; /dev/null when absent.
    pub input: Option<PathBuf>,
    pub output: Output,
    /// Longest a single run may take before its process group is killed.
    #[serde(with = "opt_duration_ns", rename = "timeout_ns")]
    #[schemars(with = "Option<u64>")]
    pub timeout: Option<Duration>,
    /// Keep going when a command exits non-zero (its exit codes are kept).
    pub ignore_failure: bool,
    /// Hash each run's stdout and require all of them to be the same.
    pub check_output: bool,
    /// Run the benchmarks in rounds (A B C A B C …) instead of one after
    /// the other.
    pub interleave: bool,
    /// Seeds the random environment padding, so a run can be replayed.
    pub seed: u64,
}

impl ExecSettings {
    /// Settings for `commands` with the defaults of `dyno run`: under `sh`,
    /// adaptive runs (10 to 1000, 1% target error, 10 s), interleaved,
    /// output discarded, no hooks, no timeout.
    pub fn new<S: Into<String>>(commands: impl IntoIterator<Item = S>) -> Self {
        ExecSettings {
            commands: commands
                .into_iter()
                .map(|c| CommandSpec {
                    template: c.into(),
                    name: None,
                })
                .collect(),
            parameters: Vec::new(),
            shell: Shell::Sh,
            warmup: 0,
            policy: Policy::Adaptive {
                min_runs: 10,
                max_runs: 1000,
                target_rse: 0.01,
                max_time: Duration::from_secs(10),
            },
            hooks: Hooks::default(),
            cwd: None,
            env: Vec::new(),
            input: None,
            output: Output::Null,
            timeout: None,
            ignore_failure: false,
            check_output: false,
            interleave: true,
            seed: 0,
        }
    }
}

/// One command given on the command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CommandSpec {
    pub template: String,
    /// A name to show instead of the command, itself a template.
    pub name: Option<String>,
}

/// How a command line becomes a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Shell {
    /// `sh -c CMD`; the shell's own start-up time is measured and subtracted.
    Sh,
    /// `bash -c CMD`, likewise.
    Bash,
    /// The command is split into words (quotes as in sh) and run directly.
    None,
}

impl Shell {
    /// The shell program, or `None` for direct execution.
    pub fn program(self) -> Option<&'static str> {
        match self {
            Shell::Sh => Some("sh"),
            Shell::Bash => Some("bash"),
            Shell::None => None,
        }
    }
}

/// Where a timed command's stdout goes (stderr follows it, except that it
/// is never captured for `--check-output`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Output {
    /// Discarded by the kernel: /dev/null.
    Null,
    /// Read by dyno through a pipe and discarded, as a terminal would read it.
    Pipe,
    /// Shown, as if the command ran alone.
    Inherit,
    /// Written to this file, truncated at each run (it keeps the last run's).
    File(PathBuf),
}

/// How many timed runs each benchmark gets.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// Exactly this many.
    Fixed { runs: u32 },
    /// At least `min_runs`; then stop as soon as the relative standard error
    /// of the mean is at most `target_rse`, or the timed runs have used
    /// `max_time`, or `max_runs` is reached.
    Adaptive {
        min_runs: u32,
        max_runs: u32,
        target_rse: f64,
        #[serde(with = "duration_ns", rename = "max_time_ns")]
        #[schemars(with = "u64")]
        max_time: Duration,
    },
}

/// Commands around the timed ones, each a template like the commands.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Hooks {
    /// Once per benchmark, before its first run (warm-up included).
    pub setup: Option<String>,
    /// Before every run (e.g. `make clean`).
    pub prepare: Option<String>,
    /// After every run.
    pub conclude: Option<String>,
    /// Once per benchmark, after its last run.
    pub cleanup: Option<String>,
}

impl Hooks {
    /// The hook commands that are set, in the order they run.
    pub fn commands(&self) -> impl Iterator<Item = &String> + Clone {
        [&self.setup, &self.prepare, &self.conclude, &self.cleanup]
            .into_iter()
            .flatten()
    }
}

mod duration_ns {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_nanos().min(u64::MAX as u128) as u64)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_nanos)
    }
}

mod opt_duration_ns {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::duration_ns::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        Option::<u64>::deserialize(d).map(|v| v.map(Duration::from_nanos))
    }
}
