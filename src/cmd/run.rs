//! `dyno run`: resolve the flags into exec settings, time the commands with
//! interrupts (Ctrl-C, SIGTERM, SIGHUP) wired to the engine's stop, then print, export, save and judge.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use dyno_exec::{
    CommandSpec, ExecError, Hooks, Judging, Output, Parameter, Policy, Progress, Settings, Shell,
    Stop,
};

use super::interrupt::{Interrupt, Second};
use super::{Context, environment, finish};
use crate::ExitStatus;
use crate::cli::{RunArgs, SaveArgs, ShellArg};

pub(super) fn run(ctx: &Context, args: RunArgs) -> Result<ExitStatus> {
    let plan = settings(args)?;
    let settings = &plan.settings;
    let store = ctx.store_for(&plan.save)?;
    let environment = environment();

    // An interrupt (Ctrl-C, SIGTERM, SIGHUP) kills the running command's
    // process group and ends the run; what was measured is printed and
    // saved. A second one exits at once.
    let stop = Stop::new().context("could not set up interrupt handling")?;
    let mut interrupt = Interrupt::install(Second::Exits)?;
    interrupt.wake(&stop.sender()?)?;

    let tty = std::io::stderr().is_terminal();
    // At most ten progress lines a second, so drawing them costs the timed
    // commands nothing measurable.
    let mut drawn = Instant::now();
    let outcome = match dyno_exec::run(settings, &stop, |p| {
        if tty && drawn.elapsed() >= Duration::from_millis(100) {
            drawn = Instant::now();
            progress_line(p);
        }
    }) {
        Ok(outcome) => outcome,
        Err(err @ (ExecError::Failed { .. } | ExecError::Hook { .. })) => {
            if tty {
                eprint!("\r\x1b[2K");
            }
            eprintln!("dyno: {err}");
            return Ok(ExitStatus::ChecksFailed);
        }
        Err(err) => return Err(err.into()),
    };
    if tty {
        eprint!("\r\x1b[2K");
    }
    let run = dyno_exec::record(settings, &outcome, &plan.judging, environment);
    let mismatch = dyno_exec::record::output_mismatch(settings, &outcome);

    // Exports are written before saving, so a full store loses no result.
    if let Some(path) = &plan.export_hyperfine_json {
        let text = serde_json::to_string_pretty(&dyno_report::hyperfine_json(&run))? + "\n";
        write_export(path, text.as_bytes())?;
    }
    if let Some(path) = &plan.export_csv {
        let mut buf = Vec::new();
        dyno_report::hyperfine_csv(&run, &mut buf)?;
        write_export(path, &buf)?;
    }
    if let Some(path) = &plan.export_markdown {
        write_export(path, dyno_report::hyperfine_markdown(&run).as_bytes())?;
    }
    let run = finish(run, &plan.save, store, dyno_report::exec_report)?;
    if outcome.interrupted {
        eprintln!("dyno: interrupted; the partial run {} was kept", run.id);
        return Ok(ExitStatus::Interrupted);
    }
    if let Some(message) = mismatch {
        eprintln!("dyno: {message}");
        return Ok(ExitStatus::ChecksFailed);
    }
    Ok(ExitStatus::Success)
}

/// What `dyno run` was asked to do, resolved from its flags: the engine's
/// settings and how to compare, plus what only the binary does with it.
///
/// (It lives here until the binary's `src/settings.rs` holds every
/// command's flag resolution.)
struct Plan {
    settings: Settings,
    judging: Judging,
    export_hyperfine_json: Option<PathBuf>,
    export_csv: Option<PathBuf>,
    export_markdown: Option<PathBuf>,
    save: SaveArgs,
}

/// Resolves and checks the flags before the store is opened or anything
/// runs: templates, word splitting, the commands on PATH, the reference.
fn settings(args: RunArgs) -> Result<Plan> {
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
        save,
    } = args;

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
    Ok(Plan {
        settings,
        judging: Judging {
            reference,
            noise_band_percent: noise_band,
        },
        export_hyperfine_json,
        export_csv,
        export_markdown,
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

/// Writes an --export-* file. Like hyperfine's exports (which these
/// imitate, and which scripts rerun into the same file), an existing file
/// is replaced, but not silently: stderr names it.
fn write_export(path: &Path, bytes: &[u8]) -> Result<()> {
    let existed = path.exists();
    std::fs::write(path, bytes).with_context(|| format!("could not write '{}'", path.display()))?;
    if existed {
        eprintln!("dyno: replaced the existing '{}'", path.display());
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

fn progress_line(p: &Progress<'_>) {
    let what = if p.warmup { "warm-up" } else { "run" };
    let mean = p.mean_wall.map_or_else(String::new, |m| {
        format!(
            ", mean {}",
            dyno_report::format_duration_ns(m.as_nanos() as f64)
        )
    });
    let name: String = p.benchmark.chars().take(40).collect();
    eprint!(
        "\r\x1b[2K[{}/{}] {name}: {what} {}{mean}",
        p.index + 1,
        p.count,
        p.runs_done
    );
}
