//! `dyno scale`: flag resolution and wiring. The points of one curve come
//! from a saved `dyno run` sweep (fetched from the store here), a CSV or
//! JSON file or a built-in workload; `dyno_scale` measures or
//! reads them and analyses the curve into a `scale` run, which the report
//! renders and the store keeps.

mod saved;

use std::time::Instant;

use anyhow::{Result, bail};
use dyno_scale::file::Columns;
use dyno_scale::saved::Selection;
use dyno_scale::workload::{measure_int64, measure_tree_read, measure_tree_write};
use dyno_scale::{Curve, DEFAULT_INT64_ITERATIONS, DEFAULT_REPETITIONS, Measure, MeasureError};
use dyno_tree::workload;

use super::{Context, build, finish, progress};
use crate::ExitStatus;
use crate::cli::{MeasureArg, ScaleArgs, WorkloadArg};

pub(super) fn run(ctx: &Context, args: ScaleArgs) -> Result<ExitStatus> {
    let started = Instant::now();
    let started_at = jiff::Timestamp::now();
    let mut store = None;
    let curve = match (args.workload, &args.file) {
        (Some(w), _) => {
            let threads = thread_counts(&args.threads)?;
            // Open the store before measuring, so a broken one fails at once.
            store = ctx.store_for(&args.save)?;
            match measure(w, &threads, &args) {
                Ok(curve) => curve,
                Err(MeasureError::CheckFailed(e)) => {
                    eprintln!("dyno: check failed: {e}");
                    return Ok(ExitStatus::ChecksFailed);
                }
                Err(e) => return Err(e.into()),
            }
        }
        (None, Some(path)) => {
            let columns = Columns {
                n: args.n_column.clone(),
                value: args.value_column.clone(),
                measure: args.measure.map(|m| match m {
                    MeasureArg::Time => Measure::Time,
                    MeasureArg::Throughput => Measure::Throughput,
                }),
            };
            dyno_scale::file::read(path, &columns, build())?
        }
        (None, None) => {
            let selection = Selection {
                param: args.param.clone(),
                command: args.command.clone(),
                wheres: args.wheres.clone(),
            };
            saved::curve(ctx, args.run.clone(), &selection)?
        }
    };
    let mut run = dyno_scale::analyse(curve)?;
    run.started_at = started_at;
    run.duration_ns = started.elapsed().as_nanos() as u64;
    // Bad files and sweeps are refused above without creating a store; it
    // is opened here, once there is a result to keep.
    if store.is_none() {
        store = ctx.store_for(&args.save)?;
    }
    finish(run, &args.save, store, dyno_report::scale_report)?;
    Ok(ExitStatus::Success)
}

/// The curve of built-in workload `w` on `threads`, its shape from the
/// flags.
fn measure(w: WorkloadArg, threads: &[usize], args: &ScaleArgs) -> Result<Curve, MeasureError> {
    let repetitions = args.repetitions.unwrap_or(DEFAULT_REPETITIONS) as usize;
    let tasks = args.tasks.map_or(workload::DEFAULT_TASKS, |t| t as usize);
    match w {
        WorkloadArg::Int64 => measure_int64(
            threads,
            args.iterations.unwrap_or(DEFAULT_INT64_ITERATIONS),
            repetitions,
            build(),
            &progress,
        ),
        WorkloadArg::TreeRead => {
            let shape = workload::ReadSettings {
                depth: args.depth.unwrap_or(workload::DEFAULT_DEPTH),
                nodes: args.nodes.unwrap_or(workload::DEFAULT_NODES),
                tasks,
                threads: 1,
                seed: 1,
            };
            measure_tree_read(threads, shape, repetitions, build(), &progress)
        }
        WorkloadArg::TreeWrite => {
            let name = format!(".dyno-tree-write-{}", std::process::id());
            let dir = match &args.dir {
                Some(d) => d.join(name),
                None => std::path::PathBuf::from(name),
            };
            let shape = workload::WriteSettings {
                depth: args.depth.unwrap_or(workload::DEFAULT_WRITE_DEPTH),
                nodes: args.nodes.unwrap_or(workload::DEFAULT_WRITE_NODES),
                tasks,
                threads: 1,
                seed: 1,
                dir: Some(dir),
            };
            measure_tree_write(threads, shape, repetitions, build(), &progress)
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
