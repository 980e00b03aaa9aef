//! `dyno run`: wiring. The flags resolve into exec settings
//! ([`crate::settings::exec`]); the commands are timed with interrupts
//! (Ctrl-C, SIGTERM, SIGHUP) wired to the engine's stop;
//! [`dyno_exec::record`] makes the run, which is printed, exported, saved
//! and judged here.

use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use dyno_exec::{ExecError, Progress, Stop};

use super::interrupt::{Interrupt, Second};
use super::{Context, environment, finish};
use crate::ExitStatus;
use crate::cli::RunArgs;
use crate::settings::ExecPlan;

pub(super) fn run(ctx: &Context, args: RunArgs) -> Result<ExitStatus> {
    let plan = crate::settings::exec(args)?;
    check_paths(&plan)?;
    let watch = super::watch::check(plan.watch.clone())?;
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
    let watcher = super::watch::start(watch)?;
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
    let watched = watcher.stop();
    let mut run = dyno_exec::record(settings, &outcome, &plan.judging, environment);
    // From the first command's start to the last one's end, warm-ups and
    // hooks included; per timed run.
    let window = super::watch::Window {
        from: outcome.started_at.into(),
        length: outcome.duration,
        operations: outcome.results.iter().map(|r| r.samples.len() as u64).sum(),
    };
    super::watch::record(&mut run, &watched, window);
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
        super::say_interrupted(&run, &plan.save);
        return Ok(ExitStatus::Interrupted);
    }
    if let Some(message) = mismatch {
        eprintln!("dyno: {message}");
        return Ok(ExitStatus::ChecksFailed);
    }
    Ok(ExitStatus::Success)
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

fn progress_line(p: &Progress<'_>) {
    let what = if p.warmup { "warm-up" } else { "run" };
    let mean = p.mean_wall.map_or_else(String::new, |m| {
        format!(
            ", mean {}",
            dyno_model::units::duration(m.as_nanos() as f64)
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

/// The files and folders the flags name, checked before anything is timed:
/// `--cwd` is a folder, `--input` reads, the files written (`--output`,
/// the exports) have a folder, and with `--shell none` each command's
/// program is an executable.
fn check_paths(plan: &ExecPlan) -> Result<()> {
    let settings = &plan.settings;
    if let Some(dir) = &settings.cwd
        && !dir.is_dir()
    {
        bail!("--cwd '{}' is not a directory", dir.display());
    }
    if let Some(file) = &settings.input {
        std::fs::File::open(file)
            .with_context(|| format!("cannot read the --input file '{}'", file.display()))?;
    }
    let output = match &settings.output {
        dyno_exec::Output::File(path) => Some(path),
        _ => None,
    };
    for path in [
        output,
        plan.export_hyperfine_json.as_ref(),
        plan.export_csv.as_ref(),
        plan.export_markdown.as_ref(),
    ]
    .into_iter()
    .flatten()
    {
        check_writable(path)?;
    }
    if settings.shell == dyno_exec::Shell::None {
        for b in &dyno_exec::engine::benchmarks(settings)? {
            let program = b.program();
            if !on_path(program, settings.cwd.as_deref()) {
                bail!(
                    "command '{program}' was not found: check the spelling and that it is on PATH (with --shell none, shell builtins and syntax do not work)"
                );
            }
        }
    }
    Ok(())
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
