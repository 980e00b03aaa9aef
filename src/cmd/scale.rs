//! `dyno scale`: gather (N, time) or (N, throughput) points from a saved
//! `dyno run` sweep, a CSV or JSON file, or a built-in workload measured now;
//! analyse them with the pure functions of `dyno_stats::scaling`; and turn
//! the analysis into the metrics of a `scale` run, which the report renders
//! and the store keeps.
//!
//! Points are refused below two (a speedup needs a baseline and one more N);
//! the USL needs three and is skipped with a warning at two, so a dual-core
//! machine's default sweep (1 and 2 threads) still gives speedup and Amdahl.

mod file;
mod saved;

use std::time::Instant;

use anyhow::{Context, Result, bail};
use dyno_cpu::int64;
use dyno_model::{Direction, Environment, Kind, Merge, Metric, Run, Samples, Unit, Warning};
use dyno_stats::sampled_metric;
use dyno_stats::scaling::{
    self, AmdahlFit, Analysis, Bound, Measure, Point, USL_MIN_POINTS, USL_RECOMMENDED_POINTS,
    UslFit,
};
use dyno_store::Store;
use dyno_tree::workload;
use serde_json::json;

use super::{build, environment, finish, open_store, progress, store_for};
use crate::ExitStatus;
use crate::cli::{MeasureArg, ScaleArgs, WorkloadArg};

/// Default total iterations of the int64 workload at every N: about one
/// second on one thread (100,000,000 took 0.67 s on the 2-core machine the
/// workload was written on).
pub const DEFAULT_INT64_ITERATIONS: u64 = 150_000_000;

/// Default timed repetitions of each N.
const DEFAULT_REPETITIONS: u32 = 3;

/// Efficiency above this is super-linear beyond noise (5% over N).
const SUPERLINEAR_EFFICIENCY: f64 = 1.05;

/// At least this many tasks, so that every thread count up to a sixteenth of
/// it gets several tasks per thread and finishes within one short task of
/// the others.
const MIN_TASKS: usize = 64;

/// A per-point interval wider than this (relative half-width) is noisy.
const NOISY: f64 = 0.05;

/// A USL penalty term smaller than this at the largest N is indistinguishable
/// from zero.
const NEGLIGIBLE_PENALTY: f64 = 1e-6;

/// A USL fit explaining less than this share of the variance is poor.
const POOR_FIT: f64 = 0.9;

/// One point before the analysis: N, its value in the analysis' units
/// (seconds, or work per second), and the metric that records it (`time_ns`
/// or `throughput`, with its samples when there are any; the `n` label is
/// added later).
#[derive(Debug, Clone)]
pub struct Measured {
    pub n: f64,
    pub value: f64,
    pub metric: Metric,
}

impl Measured {
    /// A time in seconds, recorded in nanoseconds.
    pub fn time(n: f64, seconds: f64) -> Self {
        Measured {
            n,
            value: seconds,
            metric: Metric::new("time_ns", Unit::Ns, Direction::LowerIsBetter, seconds * 1e9),
        }
    }

    /// A throughput in work per second.
    pub fn throughput(n: f64, per_sec: f64) -> Self {
        Measured {
            n,
            value: per_sec,
            metric: Metric::new(
                "throughput",
                Unit::OpsPerSec,
                Direction::HigherIsBetter,
                per_sec,
            ),
        }
    }
}

/// The points of one curve and where they came from.
#[derive(Debug)]
pub struct Curve {
    pub points: Vec<Measured>,
    pub measure: Measure,
    /// The source, as the run's settings record it.
    pub settings: serde_json::Value,
    pub description: String,
    pub environment: Environment,
    pub warnings: Vec<Warning>,
    /// Figures measured beside the points, labelled with their N.
    pub extra: Vec<Metric>,
}

pub fn run(args: ScaleArgs) -> Result<ExitStatus> {
    let ScaleArgs {
        run,
        last,
        param,
        command,
        wheres,
        file,
        n_column,
        value_column,
        measure,
        workload,
        threads,
        iterations,
        tasks,
        depth,
        nodes,
        dir,
        repetitions,
        save,
    } = args;
    let started = Instant::now();
    let started_at = jiff::Timestamp::now();
    let mut store = None;
    let curve = match (workload, file) {
        (Some(w), _) => {
            let threads = thread_counts(&threads)?;
            let repetitions = repetitions.unwrap_or(DEFAULT_REPETITIONS) as usize;
            // Open the store before measuring, so a broken one fails at once.
            store = store_for(&save)?;
            let measured = match w {
                WorkloadArg::Int64 => measure_int64(
                    &threads,
                    iterations.unwrap_or(DEFAULT_INT64_ITERATIONS),
                    repetitions,
                ),
                WorkloadArg::TreeRead => {
                    let shape = workload::ReadSettings {
                        depth: depth.unwrap_or(workload::DEFAULT_DEPTH),
                        nodes: nodes.unwrap_or(workload::DEFAULT_NODES),
                        tasks: tasks.map_or(workload::DEFAULT_TASKS, |t| t as usize),
                        threads: 1,
                        seed: 1,
                    };
                    measure_tree_read(&threads, shape, repetitions)
                }
                WorkloadArg::TreeWrite => {
                    let dir = match dir {
                        Some(d) => d.join(format!(".dyno-tree-write-{}", std::process::id())),
                        None => std::path::PathBuf::from(format!(
                            ".dyno-tree-write-{}",
                            std::process::id()
                        )),
                    };
                    let shape = workload::WriteSettings {
                        depth: depth.unwrap_or(workload::DEFAULT_WRITE_DEPTH),
                        nodes: nodes.unwrap_or(workload::DEFAULT_WRITE_NODES),
                        tasks: tasks.map_or(workload::DEFAULT_TASKS, |t| t as usize),
                        threads: 1,
                        seed: 1,
                        dir: Some(dir),
                    };
                    measure_tree_write(&threads, shape, repetitions)?
                }
            };
            match measured {
                Ok(curve) => curve,
                Err(e) => {
                    eprintln!("dyno: check failed: {e}");
                    return Ok(ExitStatus::ChecksFailed);
                }
            }
        }
        (None, Some(path)) => {
            let columns = file::Columns {
                n: n_column,
                value: value_column,
                measure: measure.map(|m| match m {
                    MeasureArg::Time => Measure::Time,
                    MeasureArg::Throughput => Measure::Throughput,
                }),
            };
            file::read(&path, &columns)?
        }
        (None, None) => {
            let selection = saved::Selection {
                param,
                command,
                wheres,
            };
            from_saved(run, last, &selection)?
        }
    };
    if curve.points.len() < 2 {
        bail!(
            "a scaling analysis needs at least 2 values of N, but there is {}: measure more (3 for the USL fit, 6 or more recommended)",
            curve.points.len()
        );
    }
    let mut run = analyse(curve)?;
    run.started_at = started_at;
    run.duration_ns = started.elapsed().as_nanos() as u64;
    // Bad files and sweeps are refused above without creating a store; it
    // is opened here, once there is a result to keep.
    if store.is_none() {
        store = store_for(&save)?;
    }
    finish(run, &save, store, dyno_report::scale_report)?;
    Ok(ExitStatus::Success)
}

/// The curve of a saved sweep: RUN_ID, or the latest exec run with --last.
fn from_saved(id: Option<String>, last: bool, selection: &saved::Selection) -> Result<Curve> {
    let source = match id {
        Some(id) => open_store()?
            .get(&id)
            .with_context(|| format!("cannot analyse run '{id}'"))?,
        // The "input" group leaves --last as the only other way here.
        None => {
            debug_assert!(last);
            saved::last_exec(&open_store()?)?
        }
    };
    let mut curve = saved::curve(&source, selection)?;
    // The figures were measured on the source run's machine.
    curve.environment = Environment {
        dyno: build(),
        ..source.environment.clone()
    };
    Ok(curve)
}

/// `--threads`, or 1, 2, … up to the CPUs this process may use.
fn thread_counts(given: &[u32]) -> Result<Vec<usize>> {
    let cpus = dyno_env::available_cpus();
    let threads: Vec<usize> = if given.is_empty() {
        (1..=cpus).collect()
    } else {
        given.iter().map(|&t| t as usize).collect()
    };
    for (i, t) in threads.iter().enumerate() {
        if threads[..i].contains(t) {
            bail!("--threads lists {t} twice: give each thread count once");
        }
    }
    if threads.len() < 2 {
        let why = if given.is_empty() {
            format!("this process may use only {cpus} CPU, so the default is 1 thread alone")
        } else {
            "--threads gave one".to_owned()
        };
        bail!(
            "a scaling analysis needs at least 2 values of N, but {why}: give --threads 1,2,4 (more threads than CPUs measure time-sharing)"
        );
    }
    Ok(threads)
}

/// `once(N)` at every N in `threads`: one warm-up pass, then
/// `repetitions` passes taken in turns, each giving one or more wall times;
/// the points, with the machine's warnings and those of noisy or
/// oversubscribed points. An error from `once` is a failed check.
fn measure(
    name: &str,
    threads: &[usize],
    repetitions: usize,
    mut once: impl FnMut(usize) -> Result<Vec<std::time::Duration>, String>,
) -> Result<(Vec<Measured>, Environment, Vec<Warning>), String> {
    progress(&format!("{name}: warm-up"));
    for &t in threads {
        once(t)?;
    }
    let mut walls = vec![Vec::with_capacity(repetitions); threads.len()];
    for rep in 1..=repetitions {
        progress(&format!("{name}: repetition {rep} of {repetitions}"));
        for (i, &t) in threads.iter().enumerate() {
            walls[i].extend(once(t)?.iter().map(|w| w.as_nanos() as f64));
        }
    }
    let env = environment();
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
        let metric = sampled_metric("time_ns", Unit::Ns, Direction::LowerIsBetter, wall);
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

fn measure_int64(threads: &[usize], iterations: u64, repetitions: usize) -> Result<Curve, String> {
    let max = threads.iter().copied().max().unwrap_or(1);
    let tasks = MIN_TASKS.max(4 * max);
    let (points, environment, mut warnings) = measure("int64", threads, repetitions, |threads| {
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
            json!({ "iterations": iterations, "tasks": tasks }),
        ),
        description: format!("int64 strong scaling on {} threads", list.join(", ")),
        environment,
        warnings,
        extra: Vec::new(),
    })
}

/// The settings every built-in workload records (strong scaling, one
/// warm-up, repetitions taken in turns, time measured), with its own.
fn workload_settings(
    name: &str,
    threads: &[usize],
    repetitions: usize,
    own: serde_json::Value,
) -> serde_json::Value {
    let mut settings = json!({
        "source": "workload",
        "workload": name,
        "scaling": "strong",
        "threads": threads,
        "repetitions": repetitions,
        "warmup_repetitions": 1,
        "interleaved": true,
        "measure": "time",
    });
    if let (Some(all), serde_json::Value::Object(own)) = (settings.as_object_mut(), own) {
        all.extend(own);
    }
    settings
}

/// What the tree workloads record of their shape: tasks, depth, the nodes
/// asked for and the nodes the tree (or all trees) came to, the seed.
fn tree_shape(
    tasks: usize,
    depth: u32,
    nodes_asked: u64,
    nodes: u64,
    seed: u64,
) -> serde_json::Map<String, serde_json::Value> {
    serde_json::Map::from_iter([
        ("tasks".to_owned(), json!(tasks)),
        ("depth".to_owned(), json!(depth)),
        ("nodes_asked".to_owned(), json!(nodes_asked)),
        ("nodes".to_owned(), json!(nodes)),
        ("seed".to_owned(), json!(seed)),
    ])
}

/// The thesis's parallel read on the tree database: `tasks` tasks each
/// count every node of the version they are handed, on N threads, while a
/// writer adds a node before each hand-out; every count is checked.
fn measure_tree_read(
    threads: &[usize],
    shape: workload::ReadSettings,
    repetitions: usize,
) -> Result<Curve, String> {
    progress("tree-read: building the tree");
    let start = workload::ReadTree::build(&shape);
    let nodes = start.nodes();
    let (points, environment, warnings) = measure("tree-read", threads, repetitions, |threads| {
        let outcome = workload::parallel_read(&workload::ReadSettings { threads, ..shape }, &start);
        if outcome.wrong > 0 {
            return Err(format!(
                "tree-read: {} of {} tasks on {threads} threads counted a wrong number of nodes",
                outcome.wrong, shape.tasks
            ));
        }
        Ok(vec![outcome.wall])
    })?;
    let list: Vec<String> = threads.iter().map(ToString::to_string).collect();
    Ok(Curve {
        points,
        measure: Measure::Time,
        settings: workload_settings(
            "tree-read",
            threads,
            repetitions,
            tree_shape(shape.tasks, shape.depth, shape.nodes, nodes, shape.seed).into(),
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
fn measure_tree_write(
    threads: &[usize],
    shape: workload::WriteSettings,
    repetitions: usize,
) -> Result<Result<Curve, String>> {
    let dir = shape.dir.clone().expect("tree-write is durable");
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    if !parent.is_dir() {
        bail!(
            "--dir {}: no such directory; give an existing directory on the file system to measure",
            parent.display()
        );
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
    let measured = measure("tree-write", threads, repetitions, |threads| {
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
    });
    let (points, environment, mut warnings) = match measured {
        Ok(m) => m,
        Err(e) => return Ok(Err(e)),
    };
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
            "commits_per_sec",
            Unit::OpsPerSec,
            Direction::HigherIsBetter,
            |f| f.1,
        ),
        (
            "fsyncs_per_commit",
            Unit::Ratio,
            Direction::LowerIsBetter,
            |f| f.2,
        ),
        ("retries", Unit::Count, Direction::LowerIsBetter, |f| f.3),
        (
            "log_bytes_per_commit",
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
                    .with_label("n", &n),
            );
        }
    }
    let list: Vec<String> = threads.iter().map(ToString::to_string).collect();
    Ok(Ok(Curve {
        points,
        measure: Measure::Time,
        settings: workload_settings("tree-write", threads, repetitions, {
            let mut own = tree_shape(shape.tasks, shape.depth, shape.nodes, nodes, shape.seed);
            own.insert("durable".into(), json!(true));
            own.insert("dir".into(), json!(parent.display().to_string()));
            own.insert("filesystem".into(), json!(storage.filesystem));
            own.into()
        }),
        description: format!(
            "tree-write: {} tasks each committing a tree ({nodes} nodes in all) on {} threads, durable",
            shape.tasks,
            list.join(", ")
        ),
        environment,
        warnings,
        extra,
    }))
}

/// The scale run of a curve: per-point figures, the fits, warnings.
fn analyse(curve: Curve) -> Result<Run> {
    let Curve {
        mut points,
        measure,
        settings,
        description,
        environment,
        warnings,
        extra,
    } = curve;
    points.sort_by(|a, b| a.n.total_cmp(&b.n));
    let plain: Vec<Point> = points
        .iter()
        .map(|p| Point {
            n: p.n,
            value: p.value,
        })
        .collect();
    let analysis = scaling::analyse(&plain, measure)?;
    let amdahl = scaling::amdahl_fit(&plain, measure)?;
    let usl = if plain.len() >= USL_MIN_POINTS {
        Some(scaling::usl_fit(&plain, measure)?)
    } else {
        None
    };

    let mut run = Run::new(Kind::Scale, description);
    run.environment = environment;
    run.settings = settings;
    run.warnings = warnings;
    run.metrics = metrics(&points, &analysis, &amdahl, usl.as_ref(), measure);
    run.metrics.extend(extra);
    run.headline = Some("best_speedup".into());

    let count = plain.len();
    if count < USL_MIN_POINTS {
        run.warn(
            "too_few_points",
            format!(
                "only {count} values of N: the USL (three parameters) needs at least {USL_MIN_POINTS}, so it was not fitted, and the Amdahl fit passes exactly through both points; measure {USL_RECOMMENDED_POINTS} or more"
            ),
        );
    } else if count < USL_RECOMMENDED_POINTS {
        run.warn(
            "few_points",
            format!(
                "the fits rest on {count} values of N ({USL_RECOMMENDED_POINTS} or more recommended): treat σ, κ and the peak as rough; measure more values of N"
            ),
        );
    }
    if analysis.baseline_n != 1.0 {
        run.warn(
            "no_baseline_at_1",
            format!(
                "there is no point at N = 1: speedups are relative to N = {}, assuming perfect scaling up to it, which overstates every speedup if that is not so",
                fmt_n(analysis.baseline_n)
            ),
        );
    }
    let above: Vec<String> = analysis
        .points
        .iter()
        .filter(|p| p.efficiency > SUPERLINEAR_EFFICIENCY)
        .map(|p| format!("N = {} ({:.0}%)", fmt_n(p.n), 100.0 * p.efficiency))
        .collect();
    if !above.is_empty() {
        run.warn(
            "superlinear",
            format!(
                "super-linear scaling: efficiency above 100% at {}. More units did more than their share, which usually means cache effects (the working set fits in the caches of more cores or nodes), a slowed baseline or noise; Amdahl and the USL assume speedup ≤ N and cannot describe it (their σ = κ = 0 is a floor, not linear scaling)",
                above.join(", ")
            ),
        );
    }
    if let Some(fit) = &usl
        && fit.r_squared < POOR_FIT
    {
        run.warn(
            "poor_fit",
            format!(
                "the USL explains the points poorly (R² = {:.3}): they may be noisy or follow another law; read σ, κ and the peak with care",
                fit.r_squared
            ),
        );
    }
    Ok(run)
}

/// How N is written in labels: `4`, `2.5`.
pub fn fmt_n(n: f64) -> String {
    format!("{n}")
}

/// The metrics of a scale run (names and labels are the contract the report
/// and the JSON readers rely on). Nothing non-finite is ever emitted: a
/// figure that is infinite or undefined is left out.
fn metrics(
    points: &[Measured],
    analysis: &Analysis,
    amdahl: &AmdahlFit,
    usl: Option<&UslFit>,
    measure: Measure,
) -> Vec<Metric> {
    use Direction::{HigherIsBetter as Higher, LowerIsBetter as Lower};
    let mut out = Vec::new();
    // A scale run is never split into segments: nothing merges.
    let mut push = |m: Metric| {
        if m.value.is_finite() && m.samples.iter().all(|s| s.is_finite()) {
            out.push(m.merged(Merge::None));
        }
    };
    // The fits and their predictions explain the measured points: shown
    // and compared as diagnostics, never a score's figure.
    let ratio = |name: &str, direction, value| {
        Metric::new(name, Unit::Ratio, direction, value).diagnostic()
    };
    for (measured, p) in points.iter().zip(&analysis.points) {
        let n = fmt_n(p.n);
        // The measured time (or throughput) at each N is what the run
        // exists for; its samples are the repetitions.
        let mut point = measured.metric.clone().primary().with_label("n", &n);
        if !point.samples.is_empty() {
            point = point.samples_are(Samples::Runs);
        }
        let measured_name = point.name.clone();
        push(point);
        // Speedup and efficiency are the same points seen against N = 1.
        push(
            ratio("speedup", Higher, p.speedup)
                .derived_of(&measured_name)
                .with_label("n", &n),
        );
        push(
            ratio("efficiency", Higher, p.efficiency)
                .derived_of("speedup")
                .with_label("n", &n),
        );
        if let Some(f) = p.amdahl_parallel_fraction {
            push(
                ratio("amdahl_parallel_fraction", Higher, f)
                    .derived_of("speedup")
                    .with_label("n", &n),
            );
        }
        if let Some(e) = p.karp_flatt_serial_fraction {
            push(
                ratio("karp_flatt_serial_fraction", Lower, e)
                    .derived_of("speedup")
                    .with_label("n", &n),
            );
        }
    }
    let best = &analysis.points[analysis.best];
    push(
        ratio("best_speedup", Higher, best.speedup)
            .derived_of("speedup")
            .with_label("n", fmt_n(best.n)),
    );

    push(ratio(
        "amdahl_fit_parallel_fraction",
        Higher,
        amdahl.parallel_fraction,
    ));
    // The ceiling is the limit as N grows without bound: always a prediction,
    // and infinite (left out) when p = 1.
    push(ratio("amdahl_fit_ceiling", Higher, amdahl.ceiling).with_label("predicted", "true"));
    if points.len() >= USL_MIN_POINTS {
        // Through two points the fit is exact: its R² says nothing.
        push(ratio("amdahl_fit_r_squared", Higher, amdahl.r_squared));
    }

    if let Some(fit) = usl {
        let lowest = analysis.points[0].n;
        let highest = analysis.points[analysis.points.len() - 1].n;
        // Speedups are relative to the rate of one unit at the baseline.
        let unit_rate = analysis.points[0].throughput / analysis.baseline_n;
        push(ratio("usl_sigma", Lower, fit.sigma));
        push(ratio("usl_kappa", Lower, fit.kappa));
        push(Metric::new("usl_lambda", Unit::OpsPerSec, Higher, fit.lambda).diagnostic());
        push(ratio("usl_r_squared", Higher, fit.r_squared));
        // Super-linear points pin σ = κ = 0: that is not "almost linear".
        let superlinear = analysis
            .points
            .iter()
            .any(|p| p.efficiency > SUPERLINEAR_EFFICIENCY);
        let (code, name) = match fit.bound {
            Bound::Linear if superlinear => (0.0, "superlinear"),
            Bound::Linear => (0.0, "linear"),
            Bound::Contention => (1.0, "contention"),
            Bound::Coherency => (2.0, "coherency"),
        };
        push(
            Metric::new("usl_bound", Unit::Count, Lower, code)
                .context()
                .with_label("bound", name),
        );
        // A κ whose penalty over the measured range is below a millionth is
        // the fit's rounding noise (an exact Amdahl curve gives κ ≈ 1e-17),
        // and its "peak" would lie millions of N away: report none.
        let negligible = fit.kappa * highest * (highest - 1.0) < NEGLIGIBLE_PENALTY;
        if let (Some(peak), Some(x), false) = (fit.peak_n, fit.peak_throughput, negligible) {
            let label = |m: Metric| {
                if peak < lowest || peak > highest {
                    m.with_label("predicted", "true")
                } else {
                    m
                }
            };
            push(label(Metric::new("usl_peak_n", Unit::Count, Higher, peak)));
            push(label(Metric::new(
                "usl_peak_throughput",
                Unit::OpsPerSec,
                Higher,
                x,
            )));
            push(label(ratio("usl_peak_speedup", Higher, x / unit_rate)));
            if measure == Measure::Time {
                push(label(Metric::new(
                    "usl_peak_time_ns",
                    Unit::Ns,
                    Lower,
                    1e9 / x,
                )));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amdahl_curve(ns: &[f64]) -> Curve {
        Curve {
            points: ns
                .iter()
                .map(|&n| Measured::time(n, 0.1 + 0.9 / n))
                .collect(),
            measure: Measure::Time,
            settings: json!({"source": "file"}),
            description: "test".into(),
            environment: Environment::default(),
            warnings: Vec::new(),
            extra: Vec::new(),
        }
    }

    fn value(run: &Run, name: &str, n: Option<&str>) -> Option<f64> {
        run.metrics
            .iter()
            .find(|m| m.name == name && m.label("n") == n)
            .map(|m| m.value)
    }

    #[test]
    fn an_amdahl_curve_gives_its_p_at_every_point_and_in_the_fit() {
        let ns: Vec<f64> = (1..=8).map(f64::from).collect();
        let run = analyse(amdahl_curve(&ns)).unwrap();
        assert_eq!(run.kind, Kind::Scale);
        for n in 2..=8 {
            let p = value(&run, "amdahl_parallel_fraction", Some(&n.to_string())).unwrap();
            assert!((p - 0.9).abs() < 1e-9, "N = {n}: {p}");
            let e = value(&run, "karp_flatt_serial_fraction", Some(&n.to_string())).unwrap();
            assert!((e - 0.1).abs() < 1e-9, "N = {n}: {e}");
        }
        assert_eq!(value(&run, "amdahl_parallel_fraction", Some("1")), None);
        assert!((value(&run, "amdahl_fit_parallel_fraction", None).unwrap() - 0.9).abs() < 1e-9);
        assert!((value(&run, "amdahl_fit_ceiling", None).unwrap() - 10.0).abs() < 1e-6);
        let t8 = value(&run, "time_ns", Some("8")).unwrap();
        assert!((t8 - (0.1 + 0.9 / 8.0) * 1e9).abs() < 1.0);
        let best = run.headline_metric().unwrap();
        assert_eq!(best.label("n"), Some("8"));
        assert!((best.value - 1.0 / (0.1 + 0.9 / 8.0)).abs() < 1e-9);
        for name in ["usl_sigma", "usl_kappa", "usl_lambda", "usl_r_squared"] {
            assert!(value(&run, name, None).unwrap().is_finite(), "{name}");
        }
        assert!(run.metrics.iter().all(|m| m.value.is_finite()));
        assert!(run.warnings.is_empty(), "{:?}", run.warnings);
    }

    #[test]
    fn a_perfect_curve_leaves_out_the_infinite_ceiling() {
        let mut curve = amdahl_curve(&[1.0, 2.0, 4.0]);
        for p in &mut curve.points {
            *p = Measured::time(p.n, 1.0 / p.n);
        }
        let run = analyse(curve).unwrap();
        assert_eq!(value(&run, "amdahl_fit_parallel_fraction", None), Some(1.0));
        assert_eq!(value(&run, "amdahl_fit_ceiling", None), None);
        assert!(run.metrics.iter().all(|m| m.value.is_finite()));
        assert!(run.warnings.iter().any(|w| w.code == "few_points"));
    }

    #[test]
    fn two_points_skip_the_usl_and_say_so() {
        let run = analyse(amdahl_curve(&[1.0, 2.0])).unwrap();
        assert!(value(&run, "speedup", Some("2")).is_some());
        assert!(value(&run, "amdahl_fit_parallel_fraction", None).is_some());
        assert_eq!(value(&run, "amdahl_fit_r_squared", None), None);
        assert_eq!(value(&run, "usl_sigma", None), None);
        assert!(run.warnings.iter().any(|w| w.code == "too_few_points"));
    }

    #[test]
    fn a_peak_beyond_the_measured_range_is_labelled_predicted() {
        // X(N) = N / (1 + 0.02(N − 1) + 0.001 N(N − 1)): the peak is at 31.
        let usl = |n: f64| n / (1.0 + 0.02 * (n - 1.0) + 0.001 * n * (n - 1.0));
        let mut curve = amdahl_curve(&[1.0]);
        curve.measure = Measure::Throughput;
        curve.points = [1.0, 2.0, 4.0, 8.0, 12.0, 16.0]
            .iter()
            .map(|&n| Measured::throughput(n, 1000.0 * usl(n)))
            .collect();
        let run = analyse(curve).unwrap();
        let peak = run.metric("usl_peak_n").unwrap();
        assert_eq!(peak.value, 31.0);
        assert_eq!(peak.label("predicted"), Some("true"));
        // Over N ≤ 16 the contention penalty (0.3) still exceeds the
        // coherency penalty (0.24), and the peak lies beyond: contention.
        assert_eq!(
            run.metric("usl_bound").unwrap().label("bound"),
            Some("contention")
        );
        assert!(run.metric("usl_peak_time_ns").is_none());
        let x = run.metric("usl_peak_throughput").unwrap().value;
        assert!((x / (1000.0 * usl(31.0)) - 1.0).abs() < 1e-3, "{x}");
    }

    #[test]
    fn without_n1_the_baseline_is_named() {
        let run = analyse(amdahl_curve(&[2.0, 4.0, 8.0])).unwrap();
        assert!(run.warnings.iter().any(|w| w.code == "no_baseline_at_1"));
        assert_eq!(value(&run, "speedup", Some("2")), Some(2.0));
    }

    #[test]
    fn thread_lists_are_checked() {
        assert!(
            thread_counts(&[1, 2, 1])
                .unwrap_err()
                .to_string()
                .contains("twice")
        );
        assert!(
            thread_counts(&[4])
                .unwrap_err()
                .to_string()
                .contains("at least 2")
        );
        assert_eq!(thread_counts(&[1, 3]).unwrap(), [1, 3]);
    }
}
