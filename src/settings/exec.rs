//! `dyno run`'s flags resolved into the exec engine's settings and how its
//! results are judged: templates, parameters, word splitting, the commands
//! on PATH, the reference, the export paths, all checked before anything
//! is timed.

use std::path::{Path, PathBuf};

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

    if names.len() > commands.len() {
        bail!(
            "{} --name values for {} commands: give at most one name per command",
            names.len(),
            commands.len()
        );
    }
    if min_runs > max_runs {
        bail!("--min-runs {min_runs} is above --max-runs {max_runs}: raise --max-runs");
    }
    if let Some(dir) = &cwd
        && !dir.is_dir()
    {
        bail!("--cwd '{}' is not a directory", dir.display());
    }
    if let Some(file) = &input {
        std::fs::File::open(file)
            .with_context(|| format!("cannot read the --input file '{}'", file.display()))?;
    }
    let output = parse_output(&output)?;
    if check_output && matches!(output, Output::Inherit | Output::File(_)) {
        bail!(
            "--check-output reads stdout itself: it cannot be combined with --output inherit or a file"
        );
    }
    for path in [&export_hyperfine_json, &export_csv, &export_markdown]
        .into_iter()
        .flatten()
    {
        check_writable(path)?;
    }
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
            .iter()
            .enumerate()
            .map(|(i, template)| CommandSpec {
                template: template.clone(),
                name: names.get(i).cloned(),
            })
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
    if settings.shell == Shell::None {
        for b in &planned {
            let program = b.program();
            if !on_path(program, settings.cwd.as_deref()) {
                bail!(
                    "command '{program}' was not found: check the spelling and that it is on PATH (with --shell none, shell builtins and syntax do not work)"
                );
            }
        }
    }
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

/// Whether `program` names an executable file, directly or on PATH.
/// A relative path with a slash is taken from `cwd`, as the child will.
fn on_path(program: &str, cwd: Option<&Path>) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = Path::new(program);
        return match cwd {
            Some(dir) if path.is_relative() => executable(&dir.join(path)),
            _ => executable(path),
        };
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| executable(&dir.join(program))))
}

/// `--output`: null, pipe, inherit, or a file path.
fn parse_output(value: &str) -> Result<Output> {
    Ok(match value {
        "null" => Output::Null,
        "pipe" => Output::Pipe,
        "inherit" => Output::Inherit,
        "" => bail!("--output is empty: give null, pipe, inherit or a file name"),
        path => {
            let path = PathBuf::from(path);
            check_writable(&path)?;
            Output::File(path)
        }
    })
}

/// Refuses a path whose folder does not exist, before anything is timed.
fn check_writable(path: &Path) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        bail!(
            "cannot write '{}': the folder '{}' does not exist",
            path.display(),
            dir.display()
        );
    }
    if path.is_dir() {
        bail!("cannot write '{}': it is a folder", path.display());
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
