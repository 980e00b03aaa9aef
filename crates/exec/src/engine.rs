//! The driver: expands commands and parameters into benchmarks, calibrates
//! the shell, then runs warm-ups and timed runs in rounds (interleaved by
//! default) until each benchmark's stopping rule is met.

use std::time::{Duration, Instant};

use crate::Stop;
use crate::child::{self, Captured, Invocation, Sample, SpawnError, Status};
use crate::params::{self, Assignment, ParamError};
use crate::settings::{Output, Policy, Settings, Shell};

/// Untimed runs of the bare shell before its start-up time is measured.
const SHELL_WARMUP: usize = 3;
/// Timed runs of the bare shell.
const SHELL_RUNS: usize = 50;
/// The padding variable's length is drawn from 0..PAD_MAX bytes.
const PAD_MAX: usize = 4096;

/// One command with one value per parameter: the unit that is timed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Benchmark {
    /// What the output calls it: the `--name` given, or the command.
    pub name: String,
    /// The command after substitution.
    pub command: String,
    /// The parameter values substituted into it.
    pub parameters: Assignment,
    argv: Vec<String>,
    setup: Option<Vec<String>>,
    prepare: Option<Vec<String>>,
    conclude: Option<Vec<String>>,
    cleanup: Option<Vec<String>>,
}

impl Benchmark {
    /// The program that is started: the shell, or the command's first word.
    pub fn program(&self) -> &str {
        &self.argv[0]
    }
}

/// Which rule ended a benchmark's timed runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopRule {
    /// The fixed number of runs was done.
    Runs,
    /// The relative standard error of the mean reached the target.
    TargetRse,
    /// The time budget was spent.
    MaxTime,
    /// The run cap was reached before the target error.
    MaxRuns,
    /// A stop (Ctrl-C) came first.
    Interrupted,
}

impl StopRule {
    /// A short, stable name for the record.
    pub fn as_str(self) -> &'static str {
        match self {
            StopRule::Runs => "runs",
            StopRule::TargetRse => "target_rse",
            StopRule::MaxTime => "max_time",
            StopRule::MaxRuns => "max_runs",
            StopRule::Interrupted => "interrupted",
        }
    }
}

/// A benchmark and what its timed runs measured.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchResult {
    pub benchmark: Benchmark,
    /// Timed runs in order, shell start-up already subtracted.
    pub samples: Vec<Sample>,
    pub stopped_by: StopRule,
}

/// The shell's own start-up cost, subtracted from every timed run.
#[derive(Debug, Clone, PartialEq)]
pub struct ShellStartup {
    pub shell: Shell,
    pub wall: Duration,
    pub user: Duration,
    pub system: Duration,
    /// Each calibration run's wall time, in nanoseconds.
    pub samples_ns: Vec<f64>,
}

/// Everything a measurement produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub results: Vec<BenchResult>,
    pub shell_startup: Option<ShellStartup>,
    /// A stop (Ctrl-C) ended the run early; results cover what ran.
    pub interrupted: bool,
    /// The --conclude of the run the stop cut short was skipped. (The
    /// --cleanup commands still run after a stop.)
    pub skipped_conclude: bool,
    /// --cleanup commands that failed after a stop, as messages.
    pub cleanup_failures: Vec<String>,
    /// dyno's own peak RSS. Linux counts the parent's memory at the moment
    /// of spawning in the child's peak, so no child's figure is below it.
    pub spawner_rss_bytes: Option<u64>,
    /// When the engine started, and how long it took.
    pub started_at: jiff::Timestamp,
    pub duration: Duration,
}

impl Outcome {
    /// Distinct stdouts seen with `--check-output`, each with the benchmarks
    /// that printed it: more than one means the outputs differ.
    pub fn outputs(&self) -> Vec<(Captured, Vec<String>)> {
        let mut groups: Vec<(Captured, Vec<String>)> = Vec::new();
        for r in &self.results {
            for c in r.samples.iter().filter_map(|s| s.stdout.as_ref()) {
                match groups.iter_mut().find(|(g, _)| g.hash == c.hash) {
                    Some((_, names)) => {
                        if !names.contains(&r.benchmark.name) {
                            names.push(r.benchmark.name.clone());
                        }
                    }
                    None => groups.push((c.clone(), vec![r.benchmark.name.clone()])),
                }
            }
        }
        groups
    }
}

/// Progress after each run, for a progress line.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    pub benchmark: &'a str,
    /// Index of the benchmark and how many there are.
    pub index: usize,
    pub count: usize,
    pub warmup: bool,
    pub runs_done: usize,
    pub mean_wall: Option<Duration>,
}

/// Why a measurement could not be done.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("no command to time: give at least one")]
    NoCommands,
    #[error("command {0} is empty: give the command to time (for the shell alone, time 'true')")]
    EmptyCommand(usize),
    #[error(
        "two commands are named {0:?}: give each --name its own text (identical commands without --name are numbered instead)"
    )]
    DuplicateName(String),
    #[error(transparent)]
    Param(#[from] ParamError),
    #[error("cannot split {command:?} into words: {reason} (with --shell none quotes must match)")]
    BadCommand { command: String, reason: String },
    #[error("{command:?}: {source}")]
    Spawn { command: String, source: SpawnError },
    #[error("command {command:?} {status}{hint}")]
    Failed {
        command: String,
        status: Status,
        hint: String,
    },
    #[error("the {which} command {command:?} {status}")]
    Hook {
        which: &'static str,
        command: String,
        status: Status,
    },
}

/// Expands commands and parameters into benchmarks, checking every template.
pub fn benchmarks(settings: &Settings) -> Result<Vec<Benchmark>, ExecError> {
    if settings.commands.is_empty() {
        return Err(ExecError::NoCommands);
    }
    let hooks = &settings.hooks;
    let templates = settings
        .commands
        .iter()
        .flat_map(|c| std::iter::once(&c.template).chain(&c.name))
        .chain(hooks.commands());
    for t in templates.clone() {
        params::check(t, &settings.parameters)?;
    }
    if let Some(i) = settings
        .commands
        .iter()
        .position(|c| c.template.trim().is_empty())
    {
        return Err(ExecError::EmptyCommand(i + 1));
    }
    let names: Vec<&String> = settings
        .commands
        .iter()
        .filter_map(|c| c.name.as_ref())
        .collect();
    if let Some(name) = names
        .iter()
        .enumerate()
        .find_map(|(i, n)| names[..i].contains(n).then_some(*n))
    {
        return Err(ExecError::DuplicateName(name.clone()));
    }
    // A parameter that no command or hook holds makes benchmarks that all
    // time the same thing (a --name alone only relabels them).
    let code: Vec<&String> = settings
        .commands
        .iter()
        .map(|c| &c.template)
        .chain(hooks.commands())
        .collect();
    if let Some(p) = settings
        .parameters
        .iter()
        .find(|p| !code.iter().any(|t| params::uses(t, &p.name)))
    {
        return Err(ParamError::Unused(p.name.clone()).into());
    }
    let combinations = params::combinations(&settings.parameters)?;
    let hook = |t: &Option<String>, a: &Assignment| {
        t.as_ref()
            .map(|t| argv(settings.shell, &params::substitute(t, a)))
            .transpose()
    };
    let mut out = Vec::new();
    for spec in &settings.commands {
        for a in &combinations {
            let command = params::substitute(&spec.template, a);
            out.push(Benchmark {
                name: spec
                    .name
                    .as_ref()
                    .map_or_else(|| command.clone(), |n| params::substitute(n, a)),
                argv: argv(settings.shell, &command)?,
                command,
                parameters: a.clone(),
                setup: hook(&hooks.setup, a)?,
                prepare: hook(&hooks.prepare, a)?,
                conclude: hook(&hooks.conclude, a)?,
                cleanup: hook(&hooks.cleanup, a)?,
            });
        }
    }
    number_repeated_names(&mut out);
    Ok(out)
}

/// Gives the second and later benchmarks of one name a number, "sleep 0.01
/// (2)", so that an A/A test (the same command twice) yields two benchmarks
/// that every report, export and saved metric can tell apart.
fn number_repeated_names(benches: &mut [Benchmark]) {
    let given: Vec<String> = benches.iter().map(|b| b.name.clone()).collect();
    for (i, b) in benches.iter_mut().enumerate() {
        let earlier = given[..i].iter().filter(|n| **n == given[i]).count();
        if earlier > 0 {
            b.name = format!("{} ({})", given[i], earlier + 1);
        }
    }
}

/// The process to start for `command`.
fn argv(shell: Shell, command: &str) -> Result<Vec<String>, ExecError> {
    match shell.program() {
        Some(program) => Ok(vec![
            program.to_owned(),
            "-c".to_owned(),
            command.to_owned(),
        ]),
        None => {
            let words = shell_words::split(command).map_err(|e| ExecError::BadCommand {
                command: command.to_owned(),
                reason: e.to_string(),
            })?;
            if words.is_empty() {
                return Err(ExecError::BadCommand {
                    command: command.to_owned(),
                    reason: "it is empty".to_owned(),
                });
            }
            Ok(words)
        }
    }
}

/// Times every benchmark. `stop` ends the run early; `progress` is called
/// after every run.
pub fn run(
    settings: &Settings,
    stop: &Stop,
    mut progress: impl FnMut(&Progress<'_>),
) -> Result<Outcome, ExecError> {
    let started_at = jiff::Timestamp::now();
    let started = Instant::now();
    let benches = benchmarks(settings)?;
    let mut runner = Runner {
        settings,
        stop,
        rng: fastrand::Rng::with_seed(settings.seed),
        shell: None,
        cleanup_failures: Vec::new(),
    };
    runner.shell = runner.calibrate_shell()?;
    let count = benches.len();
    let mut results: Vec<BenchResult> = benches
        .into_iter()
        .map(|benchmark| BenchResult {
            benchmark,
            samples: Vec::new(),
            stopped_by: StopRule::Interrupted,
        })
        .collect();
    let groups: Vec<Vec<usize>> = if settings.interleave {
        vec![(0..count).collect()]
    } else {
        (0..count).map(|i| vec![i]).collect()
    };
    let mut interrupted = stop.is_triggered();
    for group in groups {
        if interrupted {
            break;
        }
        interrupted = runner.run_group(&group, &mut results, &mut progress)?;
    }
    Ok(Outcome {
        results,
        shell_startup: runner.shell,
        skipped_conclude: interrupted && settings.hooks.conclude.is_some(),
        cleanup_failures: runner.cleanup_failures,
        interrupted,
        spawner_rss_bytes: own_peak_rss(),
        started_at,
        duration: started.elapsed(),
    })
}

struct Runner<'a> {
    settings: &'a Settings,
    stop: &'a Stop,
    rng: fastrand::Rng,
    shell: Option<ShellStartup>,
    /// Cleanups after a stop that failed, as messages.
    cleanup_failures: Vec<String>,
}

impl Runner<'_> {
    /// Setup, warm-ups, rounds of timed runs and cleanup for the benchmarks
    /// in `group`, which take turns. Returns whether a stop came.
    fn run_group(
        &mut self,
        group: &[usize],
        results: &mut [BenchResult],
        progress: &mut impl FnMut(&Progress<'_>),
    ) -> Result<bool, ExecError> {
        for (done, &i) in group.iter().enumerate() {
            if self.hook("setup", &results[i].benchmark.setup)? {
                self.clean_up_after_stop(&group[..done], results);
                return Ok(true);
            }
        }
        if self.timed_rounds(group, results, progress)? {
            self.clean_up_after_stop(group, results);
            return Ok(true);
        }
        for &i in group {
            if self.hook("cleanup", &results[i].benchmark.cleanup)? {
                self.clean_up_after_stop(group, results);
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// After a stop, the cleanup of every benchmark in `group` (those whose
    /// setup ran), so that a Ctrl-C leaves the machine as a finished run
    /// does. The stop that ended the run would kill each cleanup at once,
    /// so they run under a fresh one; a second interrupt still ends dyno.
    /// A failure is recorded, not raised: the partial run is still kept.
    fn clean_up_after_stop(&mut self, group: &[usize], results: &[BenchResult]) {
        let Ok(fresh) = Stop::new() else {
            self.cleanup_failures
                .push("could not set up the cleanup after the stop".to_owned());
            return;
        };
        for &i in group {
            let Some(argv) = &results[i].benchmark.cleanup else {
                continue;
            };
            let command = argv.last().cloned().unwrap_or_default();
            match self.execute_under(argv, &Output::Null, false, &fresh) {
                Ok(sample) if sample.status.success() => {}
                Ok(sample) => self
                    .cleanup_failures
                    .push(format!("{command:?} {}", sample.status)),
                Err(err) => self.cleanup_failures.push(err.to_string()),
            }
        }
    }

    /// Warm-ups and rounds of timed runs. Returns whether a stop came.
    fn timed_rounds(
        &mut self,
        group: &[usize],
        results: &mut [BenchResult],
        progress: &mut impl FnMut(&Progress<'_>),
    ) -> Result<bool, ExecError> {
        let count = results.len();
        for round in 0..self.settings.warmup as usize {
            for &i in group {
                let b = &results[i].benchmark;
                let Some(sample) = self.timed(b)? else {
                    return Ok(true);
                };
                self.judge(b, &sample)?;
                progress(&Progress {
                    benchmark: &b.name,
                    index: i,
                    count,
                    warmup: true,
                    runs_done: round + 1,
                    mean_wall: None,
                });
            }
        }
        let mut active: Vec<usize> = group.to_vec();
        while !active.is_empty() {
            let mut still = Vec::with_capacity(active.len());
            for &i in &active {
                let Some(sample) = self.timed(&results[i].benchmark)? else {
                    return Ok(true);
                };
                self.judge(&results[i].benchmark, &sample)?;
                let r = &mut results[i];
                r.samples.push(sample);
                let walls: Vec<f64> = r.samples.iter().map(|s| s.wall.as_secs_f64()).collect();
                let mean = walls.iter().sum::<f64>() / walls.len() as f64;
                progress(&Progress {
                    benchmark: &r.benchmark.name,
                    index: i,
                    count,
                    warmup: false,
                    runs_done: walls.len(),
                    mean_wall: Some(Duration::from_secs_f64(mean)),
                });
                match stop_rule(&self.settings.policy, &walls) {
                    Some(rule) => r.stopped_by = rule,
                    None => still.push(i),
                }
            }
            active = still;
        }
        Ok(false)
    }

    /// Prepare, one run, conclude. `None` when a stop came.
    fn timed(&mut self, b: &Benchmark) -> Result<Option<Sample>, ExecError> {
        if self.stop.is_triggered() || self.hook("prepare", &b.prepare)? {
            return Ok(None);
        }
        let settings = self.settings;
        let mut sample = self.execute(&b.argv, &settings.output, settings.check_output)?;
        if sample.status == Status::Stopped {
            return Ok(None);
        }
        if let Some(shell) = &self.shell {
            sample.wall = sample.wall.saturating_sub(shell.wall);
            sample.user = sample.user.saturating_sub(shell.user);
            sample.system = sample.system.saturating_sub(shell.system);
        }
        if self.hook("conclude", &b.conclude)? {
            return Ok(None);
        }
        Ok(Some(sample))
    }

    /// A failed run is an error unless failures are ignored.
    fn judge(&self, b: &Benchmark, sample: &Sample) -> Result<(), ExecError> {
        if sample.status.success() || self.settings.ignore_failure {
            return Ok(());
        }
        let shell = self.settings.shell.program().is_some();
        let hint = match sample.status {
            Status::Exited(127) if shell => {
                ": the shell could not find the command (check the spelling and PATH)".to_owned()
            }
            Status::Exited(126) if shell => ": the command is not executable".to_owned(),
            Status::TimedOut => {
                ": give it a longer --timeout, or --ignore-failure to keep timed-out runs"
                    .to_owned()
            }
            _ => ": use --ignore-failure to time it anyway".to_owned(),
        };
        Err(ExecError::Failed {
            command: b.command.clone(),
            status: sample.status,
            hint,
        })
    }

    /// Runs a hook if there is one. Returns whether a stop came.
    fn hook(&mut self, which: &'static str, argv: &Option<Vec<String>>) -> Result<bool, ExecError> {
        let Some(argv) = argv else { return Ok(false) };
        let sample = self.execute(argv, &Output::Null, false)?;
        match sample.status {
            Status::Stopped => Ok(true),
            s if s.success() => Ok(false),
            status => Err(ExecError::Hook {
                which,
                command: argv.last().cloned().unwrap_or_default(),
                status,
            }),
        }
    }

    fn execute(
        &mut self,
        argv: &[String],
        output: &Output,
        capture: bool,
    ) -> Result<Sample, ExecError> {
        let stop = self.stop;
        self.execute_under(argv, output, capture, stop)
    }

    fn execute_under(
        &mut self,
        argv: &[String],
        output: &Output,
        capture: bool,
        stop: &Stop,
    ) -> Result<Sample, ExecError> {
        let s = self.settings;
        let inv = Invocation {
            argv,
            cwd: s.cwd.as_deref(),
            env: &s.env,
            input: s.input.as_deref(),
            output,
            capture,
            timeout: s.timeout,
            pad: self.rng.usize(0..PAD_MAX),
        };
        child::execute(&inv, stop).map_err(|source| ExecError::Spawn {
            command: argv.last().cloned().unwrap_or_default(),
            source,
        })
    }

    /// Measures the shell running an empty command. `None` without a shell
    /// or when a stop came.
    fn calibrate_shell(&mut self) -> Result<Option<ShellStartup>, ExecError> {
        let Some(program) = self.settings.shell.program() else {
            return Ok(None);
        };
        let argv = vec![program.to_owned(), "-c".to_owned(), String::new()];
        let mut samples = Vec::with_capacity(SHELL_RUNS);
        for i in 0..SHELL_WARMUP + SHELL_RUNS {
            let settings = self.settings;
            let sample = self.execute(&argv, &settings.output, false)?;
            match sample.status {
                Status::Stopped => return Ok(None),
                s if !s.success() => {
                    return Err(ExecError::Failed {
                        command: format!("{program} -c ''"),
                        status: s,
                        hint: ": the shell itself does not work".to_owned(),
                    });
                }
                _ => {}
            }
            if i >= SHELL_WARMUP {
                samples.push(sample);
            }
        }
        let mean = |f: fn(&Sample) -> Duration| {
            samples.iter().map(f).sum::<Duration>() / samples.len() as u32
        };
        Ok(Some(ShellStartup {
            shell: self.settings.shell,
            wall: mean(|s| s.wall),
            user: mean(|s| s.user),
            system: mean(|s| s.system),
            samples_ns: samples.iter().map(|s| s.wall.as_nanos() as f64).collect(),
        }))
    }
}

/// This process's peak resident set size (VmHWM), if /proc tells.
fn own_peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The rule that ends a benchmark after these wall times (seconds), if any.
pub fn stop_rule(policy: &Policy, walls: &[f64]) -> Option<StopRule> {
    let n = walls.len();
    match *policy {
        Policy::Fixed { runs } => (n >= runs as usize).then_some(StopRule::Runs),
        Policy::Adaptive {
            min_runs,
            max_runs,
            target_rse,
            max_time,
        } => {
            if n >= max_runs as usize {
                return Some(StopRule::MaxRuns);
            }
            if n < (min_runs as usize).max(2) {
                return None;
            }
            let rse = dyno_stats::Summary::of(walls)
                .map_or(f64::INFINITY, |s| s.relative_standard_error());
            if rse <= target_rse {
                Some(StopRule::TargetRse)
            } else if walls.iter().sum::<f64>() >= max_time.as_secs_f64() {
                Some(StopRule::MaxTime)
            } else {
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Hooks;

    fn settings(commands: &[&str]) -> Settings {
        Settings {
            shell: Shell::None,
            policy: Policy::Fixed { runs: 3 },
            timeout: Some(Duration::from_secs(20)),
            seed: 1,
            ..Settings::new(commands.iter().copied())
        }
    }

    #[test]
    fn fixed_and_adaptive_rules_say_why_they_stopped() {
        let fixed = Policy::Fixed { runs: 3 };
        assert_eq!(stop_rule(&fixed, &[1.0, 1.0]), None);
        assert_eq!(stop_rule(&fixed, &[1.0, 1.0, 1.0]), Some(StopRule::Runs));
        let adaptive = Policy::Adaptive {
            min_runs: 3,
            max_runs: 6,
            target_rse: 0.01,
            max_time: Duration::from_secs(100),
        };
        assert_eq!(stop_rule(&adaptive, &[1.0, 1.0]), None, "min runs first");
        assert_eq!(
            stop_rule(&adaptive, &[1.0, 1.0, 1.0]),
            Some(StopRule::TargetRse)
        );
        let noisy = [1.0, 2.0, 1.0, 2.0, 1.0];
        assert_eq!(stop_rule(&adaptive, &noisy), None);
        assert_eq!(
            stop_rule(&adaptive, &[1.0, 2.0, 1.0, 2.0, 1.0, 2.0]),
            Some(StopRule::MaxRuns)
        );
        let budget = Policy::Adaptive {
            min_runs: 3,
            max_runs: 1000,
            target_rse: 0.01,
            max_time: Duration::from_secs(4),
        };
        assert_eq!(stop_rule(&budget, &[1.0, 2.0]), None);
        assert_eq!(
            stop_rule(&budget, &[1.0, 2.0, 1.0]),
            Some(StopRule::MaxTime)
        );
    }

    #[test]
    fn benchmarks_cross_commands_with_parameters() {
        let mut s = settings(&["echo {x} {n}", "printf {x}"]);
        s.parameters = vec![
            crate::params::list("x", "a,b").unwrap(),
            crate::params::range("n", "1", "2", None).unwrap(),
        ];
        s.commands[1].name = Some("printf-{x}-{n}".into());
        let b = benchmarks(&s).unwrap();
        let names: Vec<&str> = b.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "echo a 1",
                "echo a 2",
                "echo b 1",
                "echo b 2",
                "printf-a-1",
                "printf-a-2",
                "printf-b-1",
                "printf-b-2"
            ]
        );
        assert_eq!(b[1].argv, ["echo", "a", "2"]);
        assert_eq!(
            b[1].parameters,
            vec![("x".into(), "a".into()), ("n".into(), "2".into())]
        );
    }

    #[test]
    fn bad_templates_and_commands_are_refused_before_anything_runs() {
        let s = settings(&["echo {y}"]);
        assert!(matches!(benchmarks(&s), Err(ExecError::Param(_))));
        let s = settings(&["echo 'unterminated"]);
        let err = benchmarks(&s).unwrap_err();
        assert!(matches!(err, ExecError::BadCommand { .. }), "{err}");
        let s = settings(&["  "]);
        assert!(matches!(benchmarks(&s), Err(ExecError::EmptyCommand(1))));
        assert!(matches!(
            benchmarks(&settings(&[])),
            Err(ExecError::NoCommands)
        ));
        let mut s = settings(&["true"]);
        s.hooks.prepare = Some("rm {missing}".into());
        assert!(matches!(benchmarks(&s), Err(ExecError::Param(_))));
    }

    #[test]
    fn repeated_names_are_numbered_and_mistakes_refused() {
        // An A/A test: the same command three times.
        let s = settings(&["sleep 0.01", "sleep 0.01", "true", "sleep 0.01"]);
        let names: Vec<String> = benchmarks(&s)
            .unwrap()
            .into_iter()
            .map(|b| b.name)
            .collect();
        assert_eq!(
            names,
            ["sleep 0.01", "sleep 0.01 (2)", "true", "sleep 0.01 (3)"]
        );
        // The same --name twice is a mistake.
        let mut s = settings(&["true", "sleep 0"]);
        s.commands[0].name = Some("same".into());
        s.commands[1].name = Some("same".into());
        let err = benchmarks(&s).unwrap_err();
        assert!(
            matches!(err, ExecError::DuplicateName(ref n) if n == "same"),
            "{err}"
        );
        // An empty command, with or without a shell.
        let mut s = settings(&["true", ""]);
        s.shell = Shell::Sh;
        assert!(matches!(benchmarks(&s), Err(ExecError::EmptyCommand(2))));
        // A parameter no command holds: two identical benchmarks.
        let mut s = settings(&["echo hi"]);
        s.parameters = vec![crate::params::range("n", "1", "2", None).unwrap()];
        let err = benchmarks(&s).unwrap_err();
        assert!(
            matches!(err, ExecError::Param(ParamError::Unused(ref n)) if n == "n"),
            "{err}"
        );
        // Used in a name only: still the same command.
        s.commands[0].name = Some("hi {n}".into());
        assert!(benchmarks(&s).is_err());
        // Used in a hook only: the commands differ in what precedes them.
        s.hooks.prepare = Some("echo {n}".into());
        assert_eq!(benchmarks(&s).unwrap().len(), 2);
    }

    #[test]
    fn runs_are_interleaved_and_hooks_run_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let log = log.display();
        let mut s = settings(&[
            &format!("sh -c 'echo run-A >> {log}'"),
            &format!("sh -c 'echo run-B >> {log}'"),
        ]);
        s.policy = Policy::Fixed { runs: 2 };
        s.warmup = 1;
        s.hooks = Hooks {
            setup: Some(format!("sh -c 'echo setup >> {log}'")),
            prepare: Some(format!("sh -c 'echo prepare >> {log}'")),
            conclude: None,
            cleanup: Some(format!("sh -c 'echo cleanup >> {log}'")),
        };
        let outcome = run(&s, &Stop::new().unwrap(), |_| {}).unwrap();
        let text = std::fs::read_to_string(dir.path().join("log")).unwrap();
        let runs: Vec<&str> = text.lines().filter(|l| l.starts_with("run")).collect();
        // One warm-up round, then two timed rounds, A and B taking turns.
        assert_eq!(runs, ["run-A", "run-B", "run-A", "run-B", "run-A", "run-B"]);
        assert_eq!(text.lines().filter(|l| *l == "prepare").count(), 6);
        assert_eq!(text.lines().next(), Some("setup"));
        assert_eq!(text.lines().last(), Some("cleanup"));
        assert_eq!(outcome.results.len(), 2);
        assert!(
            outcome
                .results
                .iter()
                .all(|r| r.samples.len() == 2 && r.stopped_by == StopRule::Runs)
        );

        s.interleave = false;
        std::fs::remove_file(dir.path().join("log")).unwrap();
        run(&s, &Stop::new().unwrap(), |_| {}).unwrap();
        let text = std::fs::read_to_string(dir.path().join("log")).unwrap();
        let runs: Vec<&str> = text.lines().filter(|l| l.starts_with("run")).collect();
        assert_eq!(runs, ["run-A", "run-A", "run-A", "run-B", "run-B", "run-B"]);
    }

    #[test]
    fn a_failing_command_is_an_error_unless_ignored() {
        let s = settings(&["false"]);
        let err = run(&s, &Stop::new().unwrap(), |_| {}).unwrap_err();
        assert!(err.to_string().contains("--ignore-failure"), "{err}");
        let mut s = settings(&["false"]);
        s.ignore_failure = true;
        let outcome = run(&s, &Stop::new().unwrap(), |_| {}).unwrap();
        assert_eq!(outcome.results[0].samples.len(), 3);
        assert!(
            outcome.results[0]
                .samples
                .iter()
                .all(|s| s.status == Status::Exited(1))
        );
        let mut s = settings(&["true"]);
        s.hooks.prepare = Some("false".into());
        let err = run(&s, &Stop::new().unwrap(), |_| {}).unwrap_err();
        assert!(err.to_string().contains("prepare"), "{err}");
    }

    #[test]
    fn a_shell_is_calibrated_and_its_start_up_subtracted() {
        let mut s = settings(&["sleep 0.02"]);
        s.shell = Shell::Sh;
        let outcome = run(&s, &Stop::new().unwrap(), |_| {}).unwrap();
        let shell = outcome.shell_startup.unwrap();
        assert_eq!(shell.samples_ns.len(), SHELL_RUNS);
        assert!(shell.wall > Duration::ZERO && shell.wall < Duration::from_millis(100));
        let err = run(
            &settings(&["dyno-no-such-command"]),
            &Stop::new().unwrap(),
            |_| {},
        )
        .unwrap_err();
        assert!(err.to_string().contains("not found"), "{err}");
        let mut s = settings(&["dyno-no-such-command"]);
        s.shell = Shell::Sh;
        let err = run(&s, &Stop::new().unwrap(), |_| {}).unwrap_err();
        assert!(err.to_string().contains("could not find"), "{err}");
    }

    #[test]
    fn check_output_groups_benchmarks_by_what_they_print() {
        let mut s = settings(&["echo same", "printf 'same\\n'", "echo other"]);
        s.check_output = true;
        let outcome = run(&s, &Stop::new().unwrap(), |_| {}).unwrap();
        let groups = outcome.outputs();
        assert_eq!(groups.len(), 2, "{groups:?}");
        assert_eq!(groups[0].1, ["echo same", "printf 'same\\n'"]);
        assert_eq!(groups[1].1, ["echo other"]);
        assert_eq!(groups[1].0.head, b"other\n");
    }

    /// Runs `s`, and stops it as Ctrl-C would once `runs_done` runs are
    /// done.
    fn run_stopped_after(s: &Settings, runs_done: usize) -> Outcome {
        let stop = Stop::new().unwrap();
        run(s, &stop, |p| {
            if p.runs_done == runs_done {
                stop.trigger();
            }
        })
        .unwrap()
    }

    #[test]
    fn a_stop_ends_the_run_with_what_was_measured() {
        let mut s = settings(&["sleep 0.05"]);
        s.policy = Policy::Fixed { runs: 1000 };
        let outcome = run_stopped_after(&s, 3);
        assert!(outcome.interrupted);
        assert_eq!(outcome.results[0].samples.len(), 3);
        assert_eq!(outcome.results[0].stopped_by, StopRule::Interrupted);
    }

    #[test]
    fn the_cleanup_runs_after_a_stop() {
        // The audit's repro: --cleanup 'touch X', then Ctrl-C mid-run.
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("cleaned");
        let mut s = settings(&["sleep 0.05", "sleep 0.01"]);
        s.policy = Policy::Fixed { runs: 1000 };
        s.hooks.cleanup = Some(format!("touch {}", marker.display()));
        s.hooks.conclude = Some("true".into());
        let outcome = run_stopped_after(&s, 2);
        assert!(outcome.interrupted);
        assert!(marker.exists(), "the cleanup did not run after the stop");
        assert!(outcome.cleanup_failures.is_empty());
        assert!(outcome.skipped_conclude);

        // A failing cleanup after a stop is recorded, and the run kept.
        s.hooks.cleanup = Some("false".into());
        let outcome = run_stopped_after(&s, 2);
        // One failure per benchmark of the interrupted group.
        assert_eq!(
            outcome.cleanup_failures.len(),
            2,
            "{:?}",
            outcome.cleanup_failures
        );
    }
}
