//! The built-in workloads, measured now on 1, 2, … threads: int64
//! arithmetic, the tree database's parallel read and its durable parallel
//! write. Each gives a [`Curve`] of wall times, the machine it ran on and
//! the warnings of noisy or oversubscribed points.

use std::path::PathBuf;
use std::time::Duration;

use dyno_cpu::int64;
use dyno_model::names::{label, scale};
use dyno_model::record::{ScaleRecord, WorkloadSource};
use dyno_model::{Direction, DynoBuild, Environment, Merge, Metric, Unit, Warning};
use dyno_stats::sampled_metric;
use dyno_stats::scaling::Measure;
use dyno_tree::workload;

use crate::{Curve, Measured, fmt_n};

/// Default total iterations of the int64 workload at every N: about one
/// second on one thread (100,000,000 took 0.67 s on the 2-core machine the
/// workload was written on).
pub const DEFAULT_INT64_ITERATIONS: u64 = 150_000_000;

/// Default timed repetitions of each N.
pub const DEFAULT_REPETITIONS: u32 = 3;

/// At least this many tasks, so that every thread count up to a sixteenth of
/// it gets several tasks per thread and finishes within one short task of
/// the others.
const MIN_TASKS: usize = 64;

/// A per-point interval wider than this (relative half-width) is noisy.
const NOISY: f64 = 0.05;

/// Why a workload gave no curve.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// The workload's own check failed (a wrong count, a failed commit):
    /// the measurement ran but its figures cannot be trusted.
    #[error("{0}")]
    CheckFailed(String),
    /// The directory the durable workload was to write in does not exist.
    #[error(
        "--dir {}: no such directory; give an existing directory on the file system to measure",
        .0.display()
    )]
    NoDirectory(PathBuf),
}

/// `once(N)` at every N in `threads`: one warm-up pass, then
/// `repetitions` passes taken in turns, each giving one or more wall times;
/// the points, with the machine's warnings and those of noisy or
/// oversubscribed points. An error from `once` is a failed check. The
/// machine is described (with `build`) after the timed passes.
fn measure(
    name: &str,
    threads: &[usize],
    repetitions: usize,
    build: DynoBuild,
    progress: &dyn Fn(&str),
    mut once: impl FnMut(usize) -> Result<Vec<Duration>, String>,
) -> Result<(Vec<Measured>, Environment, Vec<Warning>), MeasureError> {
    progress(&format!("{name}: warm-up"));
    for &t in threads {
        once(t).map_err(MeasureError::CheckFailed)?;
    }
    let mut walls = vec![Vec::with_capacity(repetitions); threads.len()];
    for rep in 1..=repetitions {
        progress(&format!("{name}: repetition {rep} of {repetitions}"));
        for (i, &t) in threads.iter().enumerate() {
            walls[i].extend(
                once(t)
                    .map_err(MeasureError::CheckFailed)?
                    .iter()
                    .map(|w| w.as_nanos() as f64),
            );
        }
    }
    let env = dyno_env::capture(build);
    let mut warnings = dyno_env::preflight(&env);
    let cpus = dyno_env::available_cpus();
    let over: Vec<String> = threads
        .iter()
        .filter(|&&t| t > cpus)
        .map(ToString::to_string)
        .collect();
    if !over.is_empty() {
        warnings.push(Warning {
            code: "oversubscribed".into(),
            message: format!(
                "N = {} {} the {cpus} CPUs this process may use: {} time-sharing, not more parallel hardware",
                over.join(", "),
                if over.len() == 1 { "exceeds" } else { "exceed" },
                if over.len() == 1 {
                    "that point measures"
                } else {
                    "those points measure"
                },
            ),
        });
    }
    let mut points = Vec::with_capacity(threads.len());
    for (&t, wall) in threads.iter().zip(walls) {
        let metric = sampled_metric(scale::TIME, Unit::Ns, Direction::LowerIsBetter, wall);
        if let Some(u) = &metric.uncertainty {
            let width = (u.high - u.low) / 2.0 / metric.value;
            if width > NOISY {
                warnings.push(Warning {
                    code: "noisy".into(),
                    message: format!(
                        "the time at N = {t} varies by ±{:.1}% between repetitions: the machine is busy or its clock changes; close other work or add --repetitions",
                        width * 100.0
                    ),
                });
            }
        }
        points.push(Measured {
            n: t as f64,
            value: metric.value / 1e9,
            metric,
        });
    }
    Ok((points, env, warnings))
}

/// The int64 workload: `iterations` of integer arithmetic split into tasks
/// over N threads.
pub fn measure_int64(
    threads: &[usize],
    iterations: u64,
    repetitions: usize,
    build: DynoBuild,
    progress: &dyn Fn(&str),
) -> Result<Curve, MeasureError> {
    let max = threads.iter().copied().max().unwrap_or(1);
    let tasks = MIN_TASKS.max(4 * max);
    let (points, environment, mut warnings) =
        measure("int64", threads, repetitions, build, progress, |threads| {
            int64::measure_split(int64::SplitSettings {
                iterations,
                tasks,
                threads,
                repetitions: 1,
            })
            .map(|m| m.wall)
            .map_err(|e| e.to_string())
        })?;
    if iterations < tasks as u64 {
        warnings.push(Warning {
            code: "tiny_workload".into(),
            message: format!(
                "{iterations} iterations are fewer than the {tasks} tasks: some tasks are empty and the times mostly measure thread start-up; give more --iterations"
            ),
        });
    }
    let list: Vec<String> = threads.iter().map(ToString::to_string).collect();
    Ok(Curve {
        points,
        measure: Measure::Time,
        settings: workload_settings(
            "int64",
            threads,
            repetitions,
            WorkloadSource {
                iterations: Some(iterations),
                tasks: Some(tasks as u64),
                ..WorkloadSource::default()
            },
        ),
        description: format!("int64 strong scaling on {} threads", list.join(", ")),
        environment,
        warnings,
        extra: Vec::new(),
    })
}

/// The settings every built-in workload records (strong scaling, one
/// warm-up, repetitions taken in turns, time measured); `own` adds its own.
fn workload_settings(
    name: &str,
    threads: &[usize],
    repetitions: usize,
    own: WorkloadSource,
) -> ScaleRecord {
    ScaleRecord::Workload(WorkloadSource {
        workload: name.to_owned(),
        scaling: "strong".to_owned(),
        threads: threads.iter().map(|&t| t as u64).collect(),
        repetitions: repetitions as u64,
        warmup_repetitions: 1,
        interleaved: true,
        measure: "time".to_owned(),
        ..own
    })
}

/// What the tree workloads record of their shape: tasks, depth, the nodes
/// asked for and the nodes the tree (or all trees) came to, the seed.
fn tree_shape(tasks: usize, depth: u32, nodes_asked: u64, nodes: u64, seed: u64) -> WorkloadSource {
    WorkloadSource {
        tasks: Some(tasks as u64),
        depth: Some(u64::from(depth)),
        nodes_asked: Some(nodes_asked),
        nodes: Some(nodes),
        seed: Some(seed),
        ..WorkloadSource::default()
    }
}

/// The thesis's parallel read on the tree database: `tasks` tasks each
/// count every node of the version they are handed, on N threads, while a
/// writer adds a node before each hand-out; every count is checked.
pub fn measure_tree_read(
    threads: &[usize],
    shape: workload::ReadSettings,
    repetitions: usize,
    build: DynoBuild,
    progress: &dyn Fn(&str),
) -> Result<Curve, MeasureError> {
    progress("tree-read: building the tree");
    let start = workload::ReadTree::build(&shape);
    let nodes = start.nodes();
    let (points, environment, warnings) = measure(
        "tree-read",
        threads,
        repetitions,
        build,
        progress,
        |threads| {
            let outcome =
                workload::parallel_read(&workload::ReadSettings { threads, ..shape }, &start);
            if outcome.wrong > 0 {
                return Err(format!(
                    "tree-read: {} of {} tasks on {threads} threads counted a wrong number of nodes",
                    outcome.wrong, shape.tasks
                ));
            }
            Ok(vec![outcome.wall])
        },
    )?;
    let list: Vec<String> = threads.iter().map(ToString::to_string).collect();
    Ok(Curve {
        points,
        measure: Measure::Time,
        settings: workload_settings(
            "tree-read",
            threads,
            repetitions,
            tree_shape(shape.tasks, shape.depth, shape.nodes, nodes, shape.seed),
        ),
        description: format!(
            "tree-read: {} tasks over {nodes} nodes on {} threads",
            shape.tasks,
            list.join(", ")
        ),
        environment,
        warnings,
        extra: Vec::new(),
    })
}

/// The thesis's parallel write on the tree database, durable: `tasks`
/// tasks each build one tree node by node in a transaction and commit it
/// on N threads; every tree is counted back. Commits per second, fsyncs
/// per commit and retries come beside the times.
pub fn measure_tree_write(
    threads: &[usize],
    shape: workload::WriteSettings,
    repetitions: usize,
    build: DynoBuild,
    progress: &dyn Fn(&str),
) -> Result<Curve, MeasureError> {
    let dir = shape.dir.clone().expect("tree-write is durable");
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        return Err(MeasureError::NoDirectory(parent));
    }
    let parent = parent.canonicalize().unwrap_or(parent);
    let storage = dyno_env::storage(&parent);
    // Per N: (commits/s, fsyncs per commit, retries, log bytes per commit)
    // of each timed pass.
    let mut figures: Vec<(usize, f64, f64, f64, f64)> = Vec::new();
    let mut nodes = 0;
    // The first pass over the thread counts is the warm-up.
    let mut calls = 0;
    let warmup_calls = threads.len();
    let measured = measure(
        "tree-write",
        threads,
        repetitions,
        build,
        progress,
        |threads| {
            let outcome = workload::parallel_write(&workload::WriteSettings {
                threads,
                ..shape.clone()
            })
            .map_err(|e| format!("tree-write: {e}"))?;
            if outcome.correct != shape.tasks {
                return Err(format!(
                    "tree-write: only {} of {} tasks on {threads} threads counted back the tree they wrote",
                    outcome.correct, shape.tasks
                ));
            }
            nodes = outcome.nodes;
            let commits = outcome.log.records.max(1) as f64;
            calls += 1;
            if calls > warmup_calls {
                figures.push((
                    threads,
                    commits / outcome.wall.as_secs_f64(),
                    outcome.log.fsyncs as f64 / commits,
                    outcome.retries as f64,
                    outcome.log.bytes as f64 / commits,
                ));
            }
            Ok(vec![outcome.wall])
        },
    );
    let (points, environment, mut warnings) = measured?;
    if storage.filesystem.as_deref() == Some("tmpfs") {
        warnings.push(Warning {
            code: "tmpfs".into(),
            message: format!(
                "the database is on tmpfs ({}), where fsync does nothing: the times leave out what durability costs on a disk; give --dir on a real file system",
                parent.display()
            ),
        });
    }
    // The mean of each figure over the timed passes, per N.
    type Figures = (usize, f64, f64, f64, f64);
    type Column = (&'static str, Unit, Direction, fn(&Figures) -> f64);
    let columns: [Column; 4] = [
        (
            scale::COMMITS_PER_SEC,
            Unit::OpsPerSec,
            Direction::HigherIsBetter,
            |f| f.1,
        ),
        (
            scale::FSYNCS_PER_COMMIT,
            Unit::Ratio,
            Direction::LowerIsBetter,
            |f| f.2,
        ),
        (scale::RETRIES, Unit::Count, Direction::LowerIsBetter, |f| {
            f.3
        }),
        (
            scale::LOG_BYTES_PER_COMMIT,
            Unit::Bytes,
            Direction::LowerIsBetter,
            |f| f.4,
        ),
    ];
    let mut extra = Vec::new();
    for &t in threads {
        let n = fmt_n(t as f64);
        let mine: Vec<&Figures> = figures.iter().filter(|f| f.0 == t).collect();
        for (name, unit, direction, pick) in columns {
            let mean = mine.iter().map(|f| pick(f)).sum::<f64>() / mine.len().max(1) as f64;
            extra.push(
                Metric::new(name, unit, direction, mean)
                    .diagnostic()
                    .merged(Merge::None)
                    .with_label(label::N, &n),
            );
        }
    }
    let list: Vec<String> = threads.iter().map(ToString::to_string).collect();
    Ok(Curve {
        points,
        measure: Measure::Time,
        settings: workload_settings(
            "tree-write",
            threads,
            repetitions,
            WorkloadSource {
                durable: Some(true),
                dir: Some(parent.display().to_string()),
                filesystem: storage.filesystem,
                ..tree_shape(shape.tasks, shape.depth, shape.nodes, nodes, shape.seed)
            },
        ),
        description: format!(
            "tree-write: {} tasks each committing a tree ({nodes} nodes in all) on {} threads, durable",
            shape.tasks,
            list.join(", ")
        ),
        environment,
        warnings,
        extra,
    })
}
