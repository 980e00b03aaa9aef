//! `dyno run`: wiring. The flags resolve into exec settings
//! ([`crate::settings::exec`]); the commands are timed with interrupts
//! (Ctrl-C, SIGTERM, SIGHUP) wired to the engine's stop;
//! [`dyno_exec::record`] makes the run, which is printed, exported, saved
//! and judged here.

use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use dyno_exec::{ExecError, Progress, Stop};

use super::interrupt::{Interrupt, Second};
use super::{Context, environment, finish};
use crate::ExitStatus;
use crate::cli::RunArgs;

pub(super) fn run(ctx: &Context, args: RunArgs) -> Result<ExitStatus> {
    let plan = crate::settings::exec(args)?;
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
    let watcher = super::watch::start(plan.watch.clone())?;
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
