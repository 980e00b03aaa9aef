//! `dyno db`: pgbench's job on a real PostgreSQL server.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use dyno_db::Target;
use dyno_db::init::init;
use dyno_db::record;
use dyno_db::run::Progress;

use super::interrupt::{Interrupt, Second};
use super::segment;
use super::{Context, environment, finish, print};
use crate::ExitStatus;
use crate::cli::{DbArgs, DbCommand, DbInitArgs, DbRunArgs};
use crate::settings::{self, DbPlan};

pub(super) fn run(ctx: &Context, args: DbArgs) -> Result<ExitStatus> {
    match args.command {
        DbCommand::Init(args) => init_tables(args),
        DbCommand::Run(args) => match &args.show_script {
            Some(name) => show_script(name),
            None => run_load(ctx, *args),
        },
    }
}

/// `--show-script NAME`: a built-in script's text, with its name as a
/// comment, to start a `-f` script from.
fn show_script(name: &str) -> Result<ExitStatus> {
    let (full, text) =
        dyno_db::script::builtin(name).map_err(|why| anyhow::anyhow!("--show-script: {why}"))?;
    print(&format!("-- {full}: dyno's built-in, as pgbench's\n{text}"))?;
    Ok(ExitStatus::Success)
}

fn init_tables(args: DbInitArgs) -> Result<ExitStatus> {
    let settings = settings::db_init(&args)?;
    let target = Target::from_env(args.conninfo.as_deref().unwrap_or(""))?;
    let tty = std::io::stderr().is_terminal();
    let started = Instant::now();
    let mut shown = Instant::now();
    let outcome = init(&target, settings, |done, total| {
        if tty && (shown.elapsed().as_millis() >= 200 || done == total) {
            shown = Instant::now();
            eprint!("\r\x1b[2K{}", dyno_db::init::loading_line(done, total));
        }
    });
    if tty {
        eprint!("\r\x1b[2K");
    }
    print(&outcome?.summary(args.scale, &target, started.elapsed()))?;
    Ok(ExitStatus::Success)
}

fn run_load(ctx: &Context, args: DbRunArgs) -> Result<ExitStatus> {
    let env = environment();
    let files = script_files(&args.files)?;
    let target = Target::from_env(args.conninfo.as_deref().unwrap_or(""))?;
    let DbPlan {
        engine: settings,
        whole,
        segment: plan,
        mut save,
        progress,
        mode,
        watch,
        notices,
    } = settings::db_run(args, env.hostname.as_deref(), &files, target)?;
    for notice in &notices {
        eprintln!("{notice}");
    }
    let watch = super::watch::check(watch)?;
    // A segment's store is where the segments meet: never the local
    // fallback, where it would wait alone.
    let mut store = match &plan {
        Some(_) => Some(ctx.open_store()?),
        None => ctx.store_for(&save)?,
    };
    if let settings::Mode::FindMax(search) = mode {
        let outputs = super::capacity::Outputs {
            save,
            store,
            segment: plan.as_ref(),
            watch,
        };
        return find_max(&settings, &whole, &search, env, outputs, progress);
    }
    let interrupt = Interrupt::install(Second::Exits)?;
    let watcher = super::watch::start(watch)?;
    let started = Instant::now();
    let mut progress = ProgressLine::new(progress);
    let mut met = None;
    let outcome = dyno_db::run::run_gated(
        &settings,
        interrupt.flag(),
        |p| progress.show(p),
        || segment::gate(plan.as_ref(), store.as_deref_mut(), &mut met),
    );
    progress.clear();
    let outcome = match outcome {
        Err(dyno_db::run::RunError::Setup(why)) if plan.is_some() && met.is_none() => {
            bail!("{why}; nothing was run")
        }
        other => other?,
    };
    if outcome.interrupted && outcome.transactions == 0 && outcome.failed_total() == 0 {
        eprintln!("dyno: interrupted before any transaction ended; nothing was saved");
        return Ok(ExitStatus::Interrupted);
    }
    let watched = watcher.stop();
    let mut run = record::record(&settings, &whole, &outcome, started.elapsed(), env);
    super::watch::record(&mut run, &watched, window(&outcome, &settings));
    if let (Some(plan), Some(met)) = (&plan, &met) {
        plan.record(&mut run, met, outcome.started_at);
        save.tags.push(plan.tag());
    }
    let run = finish(run, &save, store, dyno_report::db_report)?;
    for path in &outcome.logs {
        eprintln!("dyno: transaction log written to {}", path.display());
    }
    for why in &outcome.log_failures {
        eprintln!("dyno: {why}");
    }
    if outcome.interrupted {
        super::say_interrupted(&run, &save);
        return Ok(ExitStatus::Interrupted);
    }
    if !outcome.lost.is_empty() {
        eprintln!(
            "dyno: the server ended no transaction {} (target_lost): the run fails",
            dyno_load::silence::spells_in_words(&outcome.lost)
        );
        return Ok(ExitStatus::ChecksFailed);
    }
    if !outcome.aborted.is_empty() || outcome.failed_total() > 0 {
        eprintln!(
            "dyno: {} of {} clients stopped on an error and {} transactions failed: see above",
            outcome.aborted.len(),
            settings.clients,
            outcome.failed_total()
        );
        return Ok(ExitStatus::ChecksFailed);
    }
    if !outcome.log_failures.is_empty() {
        // The run is saved; the log asked for is not whole.
        return Ok(ExitStatus::ChecksFailed);
    }
    Ok(ExitStatus::Success)
}

/// `--find-max` on the PostgreSQL engine ([`super::capacity::find_max`]):
/// `settings` is this segment's share of the run, `whole` the run as
/// given; `progress` is `-P`'s interval.
fn find_max(
    settings: &dyno_db::run::RunSettings,
    whole: &dyno_db::record::Whole,
    plan: &dyno_load::capacity::Plan,
    env: dyno_model::Environment,
    outputs: super::capacity::Outputs<'_>,
    progress: Option<Duration>,
) -> Result<ExitStatus> {
    let wiring = super::capacity::Wiring {
        unit: "tps",
        what: "clients",
        clear_line: progress.is_none() && std::io::stderr().is_terminal(),
        window: &|(o, s): &(dyno_db::run::Outcome, dyno_db::run::RunSettings)| window(o, s),
        started_at: |(o, _)| o.started_at,
        report: dyno_report::db_report,
    };
    super::capacity::find_max(
        plan,
        wiring,
        |stop| {
            let mut line = ProgressLine::new(progress);
            Ok(dyno_db::capacity::steps(settings, stop, move |p| {
                line.show(p)
            }))
        },
        |found, length| dyno_db::capacity::record(found, plan, whole, length, env),
        outputs,
    )
}

/// A run's measured window, as the watcher is judged over it: its
/// transactions, ended or failed.
fn window(
    outcome: &dyno_db::run::Outcome,
    settings: &dyno_db::run::RunSettings,
) -> super::watch::Window {
    super::watch::Window {
        from: outcome.started_at + settings.warmup,
        length: outcome.elapsed,
        operations: outcome.transactions + outcome.failed_total(),
    }
}

/// The progress shown while a run goes on: with -P, a line every
/// interval with that interval's figures, as pgbench's; otherwise, on a
/// terminal, one line rewritten every second.
struct ProgressLine {
    every: Option<Duration>,
    tty: bool,
    last: Option<Progress>,
}

impl ProgressLine {
    fn new(every: Option<Duration>) -> ProgressLine {
        ProgressLine {
            every,
            tty: std::io::stderr().is_terminal(),
            last: None,
        }
    }

    fn show(&mut self, p: Progress) {
        let line = p.line_since(self.last.replace(p));
        if self.every.is_some() {
            eprintln!("progress: {line}");
        } else if self.tty {
            eprint!("\r\x1b[2K{line}");
        }
    }

    fn clear(&self) {
        if self.every.is_none() && self.tty {
            eprint!("\r\x1b[2K");
        }
    }
}

/// The texts of the script files (`-f FILE[@WEIGHT]`), in their order.
fn script_files(specs: &[String]) -> Result<Vec<String>> {
    specs
        .iter()
        .map(|spec| {
            let (path, _) = dyno_db::script::weighted(spec).map_err(anyhow::Error::msg)?;
            std::fs::read_to_string(path)
                .with_context(|| format!("could not read the script '{path}'"))
        })
        .collect()
}
