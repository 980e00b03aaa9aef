//! `dyno run`'s flags resolved into the exec engine's settings and how its
//! results are judged: templates, parameters, word splitting, the commands
//! on PATH, the reference, the export paths, all checked before anything
//! is timed.

use std::path::PathBuf;

use anyhow::{Context as _, Result, bail};
use dyno_exec::{CommandSpec, Hooks, Judging, Output, Parameter, Policy, Settings, Shell};

use crate::cli::{RunArgs, SaveArgs, ShellArg};

/// What `dyno run` was asked to do, resolved from its flags: the engine's
/// settings and how to compare, plus what only the binary does with it.
pub(crate) struct ExecPlan {
    pub settings: Settings,
    pub judging: Judging,
    pub export_hyperfine_json: Option<PathBuf>,
    pub export_csv: Option<PathBuf>,
    pub export_markdown: Option<PathBuf>,
    /// `--watch-*`: what is watched while the commands run.
    pub watch: Option<super::Watch>,
    pub save: SaveArgs,
}

/// Resolves and checks the flags before the store is opened or anything
/// runs: templates, word splitting, the commands on PATH, the reference.
pub(crate) fn exec(args: RunArgs) -> Result<ExecPlan> {
    let RunArgs {
        commands,
        shell,
        no_shell,
        warmup,
        runs,
        min_runs,
        max_runs,
        target_rse,
        max_time,
        setup,
        prepare,
        conclude,
        cleanup,
        cwd,
        env,
        input,
        output,
        timeout,
        ignore_failure,
        scans,
        steps,
        lists,
        names,
        check_output,
        no_interleave,
        reference,
        noise_band,
        seed,
        export_hyperfine_json,
        export_csv,
        export_markdown,
        watch,
        save,
    } = args;
    let watch = super::watch::watch(watch, None, None)?;

    check_counts(names.len(), commands.len(), min_runs, max_runs)?;
    let output = parse_output(&output, check_output)?;
    let parameters = parameters(&scans, &steps, &lists)?;
    let shell = match (no_shell, shell) {
        (true, _) | (false, ShellArg::None) => Shell::None,
        (false, ShellArg::Sh) => Shell::Sh,
        (false, ShellArg::Bash) => Shell::Bash,
    };
    let policy = match runs {
        Some(runs) => Policy::Fixed { runs },
        None => Policy::Adaptive {
            min_runs,
            max_runs,
            target_rse: target_rse / 100.0,
            max_time,
        },
    };
    let settings = Settings {
        commands: commands
            .into_iter()
            .zip(names.into_iter().map(Some).chain(std::iter::repeat(None)))
            .map(|(template, name)| CommandSpec { template, name })
            .collect(),
        parameters,
        shell,
        warmup,
        policy,
        hooks: Hooks {
            setup,
            prepare,
            conclude,
            cleanup,
        },
        cwd,
        env,
        input,
        output,
        timeout,
        ignore_failure,
        check_output,
        interleave: !no_interleave,
        seed: seed.unwrap_or_else(|| fastrand::u64(..)),
    };
    let planned = dyno_exec::engine::benchmarks(&settings)?;
    let reference = reference
        .map(|r| resolve_reference(&r, &planned))
        .transpose()?;
    Ok(ExecPlan {
        settings,
        judging: Judging {
            reference,
            noise_band_percent: noise_band,
        },
        export_hyperfine_json,
        export_csv,
        export_markdown,
        watch,
        save,
    })
}

/// `--output`: null, pipe, inherit, or a file path; `--check-output`
/// needs the output piped.
fn parse_output(value: &str, check_output: bool) -> Result<Output> {
    let output = match value {
        "null" => Output::Null,
        "pipe" => Output::Pipe,
        "inherit" => Output::Inherit,
        "" => bail!("--output is empty: give null, pipe, inherit or a file name"),
        path => Output::File(PathBuf::from(path)),
    };
    if check_output && matches!(output, Output::Inherit | Output::File(_)) {
        bail!(
            "--check-output reads stdout itself: it cannot be combined with --output inherit or a file"
        );
    }
    Ok(output)
}

/// At most one `--name` a command, and `--min-runs` ≤ `--max-runs`.
fn check_counts(names: usize, commands: usize, min_runs: u32, max_runs: u32) -> Result<()> {
    if names > commands {
        bail!("{names} --name values for {commands} commands: give at most one name per command");
    }
    if min_runs > max_runs {
        bail!("--min-runs {min_runs} is above --max-runs {max_runs}: raise --max-runs");
    }
    Ok(())
}

/// The parameters, -P ranges first, then -L lists, each in the order given.
///
/// clap hands each flag's values over flat; every -P took exactly three and
/// every -L two.
fn parameters(scans: &[String], steps: &[String], lists: &[String]) -> Result<Vec<Parameter>> {
    let scans: Vec<&[String]> = scans.chunks_exact(3).collect();
    let lists: Vec<&[String]> = lists.chunks_exact(2).collect();
    if steps.len() > 1 && steps.len() != scans.len() {
        bail!(
            "{} --step values for {} -P ranges: give one --step for all, or one per -P",
            steps.len(),
            scans.len()
        );
    }
    if !steps.is_empty() && scans.is_empty() {
        bail!("--step applies to -P ranges, and there are none");
    }
    let mut out = Vec::new();
    for (i, scan) in scans.iter().enumerate() {
        let step = steps.get(i).or(steps.first()).map(String::as_str);
        out.push(dyno_exec::params::range(
            &scan[0], &scan[1], &scan[2], step,
        )?);
    }
    for list in &lists {
        out.push(dyno_exec::params::list(&list[0], &list[1])?);
    }
    Ok(out)
}

/// `--reference`: a benchmark number from 1, or a name.
fn resolve_reference(given: &str, planned: &[dyno_exec::Benchmark]) -> Result<usize> {
    if let Ok(n) = given.parse::<usize>() {
        if (1..=planned.len()).contains(&n) {
            return Ok(n - 1);
        }
        bail!(
            "--reference {n}: there are {} benchmarks, numbered from 1",
            planned.len()
        );
    }
    planned
        .iter()
        .position(|b| b.name == given || b.command == given)
        .with_context(|| {
            let names: Vec<&str> = planned.iter().map(|b| b.name.as_str()).collect();
            format!(
                "--reference '{given}' names no benchmark; give a number from 1 or one of: {}",
                names.join(", ")
            )
        })
}
