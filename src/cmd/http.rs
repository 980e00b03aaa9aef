//! `dyno http`: wiring. The flags resolve into engine settings
//! ([`crate::settings::http`]), the engine runs with a progress line and
//! interrupt handling (Ctrl-C, SIGTERM, SIGHUP), [`dyno_http::record`]
//! makes the run, and this module prints and saves it, writes the latency
//! log, and decides the exit status.

use std::io::{IsTerminal, Write};
use std::time::Instant;

use anyhow::{Context as _, Result, anyhow, bail};
use dyno_http::{Asked, Ending, Outcome, Progress, Settings};
use dyno_model::Run;
use jiff::Timestamp;

use super::interrupt::{Interrupt, Second};
use super::segment;
use super::{Context, environment, finish};
use crate::ExitStatus;
use crate::cli::{HttpArgs, HttpFormat, SaveArgs};
use crate::settings::{self, HttpPlan};

pub(super) fn run(ctx: &Context, args: HttpArgs) -> Result<ExitStatus> {
    let env = environment();
    let (resolved, _server) = resolve(args, &env)?;
    let HttpPlan {
        engine: settings,
        asked,
        segments: plan,
        latency_log,
        mode,
        watch,
        format,
        mut save,
        notices: _,
    } = resolved;
    let watch = super::watch::check(watch)?;
    if let settings::Mode::FindMax(search) = mode {
        // Split over segments, the steps meet in the store.
        let store = match &plan {
            Some(_) => Some(ctx.open_store()?),
            None => ctx.store_for(&save)?,
        };
        let outputs = super::capacity::Outputs {
            save,
            store,
            segment: plan.as_ref(),
            watch,
        };
        return find_max(&settings, &search, env, &asked, outputs);
    }
    // A segment's store is where the segments meet: falling back to the
    // local one would leave it waiting alone.
    let mut store = match &plan {
        Some(_) => Some(ctx.open_store()?),
        None => ctx.store_for(&save)?,
    };
    // Opened before measuring, so a bad path costs no run; never overwritten.
    let mut log_file = latency_log
        .as_ref()
        .map(|path| create_log(path))
        .transpose()?;

    // An interrupt (Ctrl-C, SIGTERM, SIGHUP) ends the run early; what was
    // measured is still printed and saved. A second one exits at once.
    let interrupt = Interrupt::install(Second::Exits)?;

    // Watching starts before the load and ends after it, on a thread of
    // its own.
    let watcher = super::watch::start(watch)?;
    let started_at = Timestamp::now();
    let started = Instant::now();
    let tty = std::io::stderr().is_terminal();
    let mut met = None;
    let outcome = dyno_http::run_gated(
        settings.clone(),
        interrupt.flag(),
        |p| {
            if tty {
                progress_line(&p);
            }
        },
        || segment::gate(plan.as_ref(), store.as_deref_mut(), &mut met),
    )
    .map_err(|e| match e {
        dyno_http::EngineError::Gate(why) => anyhow!("{why}; nothing was run"),
        e => e.into(),
    })?;
    if tty {
        eprint!("\r\x1b[2K");
    }
    if outcome.interrupted && outcome.stats.requests() == 0 {
        interrupted_unmeasured(&outcome, &settings, log_file, latency_log.as_deref());
        return Ok(ExitStatus::Interrupted);
    }
    let watched = watcher.stop();
    let mut run = dyno_http::record(&settings, &outcome, env, &asked);
    super::watch::record(&mut run, &watched, window(&outcome, &settings));
    // The command's own clock: from before the warm-up and any barrier.
    run.started_at = started_at;
    run.duration_ns = started.elapsed().as_nanos() as u64;
    if let (Some(plan), Some(met)) = (&plan, &met) {
        plan.record(&mut run, met, outcome.started_at);
        save.tags.push(plan.tag());
    }
    let store = if outcome.measured_a_server() {
        store
    } else {
        None
    };
    if let (Some(out), Some(path)) = (&mut log_file, &latency_log) {
        // StartTime is when the run's clock started (a segment's common
        // start, after the barrier), not when the process started.
        dyno_report::write_latency_log(out, &run, outcome.started_at, &outcome_timeline(&outcome))
            .with_context(|| format!("could not write the latency log '{}'", path.display()))?;
    }
    let run = finish(run, &save, store, |run| match format {
        HttpFormat::Human => dyno_report::http_report(run),
        HttpFormat::Ab => dyno_report::ab_report(run),
    })?;
    exit_status(&outcome, &settings, &asked, &save, &run)
}

/// Stopped in the warm-up (or before any answer): an empty run would only
/// clutter the store and skew comparisons, so nothing is kept, the
/// latency log included.
fn interrupted_unmeasured(
    outcome: &Outcome,
    settings: &Settings,
    log_file: Option<std::io::BufWriter<std::fs::File>>,
    latency_log: Option<&std::path::Path>,
) {
    if let (Some(out), Some(path)) = (log_file, latency_log) {
        drop(out);
        let _ = std::fs::remove_file(path);
    }
    eprintln!(
        "dyno: interrupted before any request was measured{}; nothing was saved",
        if outcome.elapsed.is_zero() && !settings.schedule.warmup.is_zero() {
            " (still in the warm-up)"
        } else {
            ""
        }
    );
}

/// Reads the files `dyno http`'s flags name, starts the built-in server
/// when no URL is given (the handle keeps it running), and resolves the
/// flags with them ([`settings::http`]); prints the resolution's notices.
pub(super) fn resolve(
    args: HttpArgs,
    env: &dyno_model::Environment,
) -> Result<(HttpPlan, Option<dyno_serve::ServerHandle>)> {
    let cpus = dyno_env::available_cpus();
    let body_file = match (&args.body, &args.body_file) {
        (None, Some(path)) => Some(
            std::fs::read(path)
                .with_context(|| format!("could not read the body file '{}'", path.display()))?,
        ),
        _ => None,
    };
    let url_file = match &args.url_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("could not read the URL file '{}'", path.display()))?,
        ),
        None => None,
    };
    let scenario = match &args.scenario {
        Some(path) => {
            let scenario = dyno_http::scenario::Scenario::load(path, args.url.as_deref())?;
            // Its file and data, hashed into a segment's settings.
            let mut bytes = std::fs::read(&scenario.path).unwrap_or_default();
            if let Some(data) = &scenario.data {
                bytes.extend(std::fs::read(&data.path).unwrap_or_default());
            }
            Some((std::sync::Arc::new(scenario), bytes))
        }
        None => None,
    };
    let server = if settings::loads_builtin_server(&args) {
        Some(builtin_server(settings::builtin_server_threads(
            &args, cpus,
        ))?)
    } else {
        None
    };
    let inputs = settings::HttpInputs {
        cpus,
        body_file,
        url_file,
        scenario,
        builtin_url: server.as_ref().map(|(_, url)| url.clone()),
    };
    let plan = settings::http(args, env, inputs)?;
    // The replayed log, read up to its first request before any store or
    // connection: one that cannot be read, or holds nothing to send,
    // costs nothing.
    if let Some(replay) = &plan.engine.replay {
        dyno_http::replay::Feed::probe(replay, &plan.engine.target).map_err(|why| anyhow!(why))?;
    }
    for notice in &plan.notices {
        eprintln!("{notice}");
    }
    Ok((plan, server.map(|(server, _)| server)))
}

/// Starts the built-in server on a free loopback port with `threads`
/// threads; the handle keeps it running, the URL is its `/hello`.
pub(super) fn builtin_server(threads: usize) -> Result<(dyno_serve::ServerHandle, String)> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .context("could not open a loopback port for the built-in server")?;
    let server = dyno_serve::spawn(listener, threads)?;
    let url = format!("http://{}/hello", server.local_addr());
    Ok((server, url))
}

/// How a measured run ends ([`Outcome::ending`]).
fn exit_status(
    outcome: &Outcome,
    settings: &Settings,
    asked: &Asked,
    save: &SaveArgs,
    run: &Run,
) -> Result<ExitStatus> {
    match outcome.ending(settings.timeout, asked) {
        Ending::Passed => Ok(ExitStatus::Success),
        Ending::Interrupted => {
            super::say_interrupted(run, save);
            Ok(ExitStatus::Interrupted)
        }
        Ending::Failed(why) => {
            eprintln!("dyno: {why}");
            Ok(ExitStatus::ChecksFailed)
        }
        Ending::Broken(why) => bail!(why),
    }
}

/// `--find-max` on the HTTP engine ([`super::capacity::find_max`]): a
/// scenario's search is of flows per second; the progress line shows on a
/// terminal.
fn find_max(
    settings: &Settings,
    plan: &dyno_load::capacity::Plan,
    env: dyno_model::Environment,
    asked: &Asked,
    outputs: super::capacity::Outputs<'_>,
) -> Result<ExitStatus> {
    let tty = std::io::stderr().is_terminal();
    let wiring = super::capacity::Wiring {
        unit: if settings.scenario.is_some() {
            "flows/s"
        } else {
            "req/s"
        },
        what: "connections",
        clear_line: tty,
        window: &|o: &dyno_http::capacity::StepOutcome| window(&o.outcome, &o.settings),
        started_at: |o| o.outcome.started_at,
        report: dyno_report::http_report,
    };
    super::capacity::find_max(
        plan,
        wiring,
        |stop| {
            let progress = move |p: Progress| {
                if tty {
                    progress_line(&p);
                }
            };
            dyno_http::capacity::steps(settings, stop, progress)
        },
        |found, _| dyno_http::capacity::record(found, plan, env, asked),
        outputs,
    )
}

/// A run's measured window, as the watcher is judged over it.
fn window(outcome: &Outcome, settings: &Settings) -> super::watch::Window {
    super::watch::Window {
        from: outcome.started_at + settings.schedule.warmup,
        length: outcome.elapsed,
        operations: outcome.stats.requests(),
    }
}

/// Creates the latency log, never over an existing file; the error says
/// which of the usual causes it was.
fn create_log(path: &std::path::Path) -> Result<std::io::BufWriter<std::fs::File>> {
    use std::io::ErrorKind;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path);
    let e = match file {
        Ok(f) => return Ok(std::io::BufWriter::new(f)),
        Err(e) => e,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.display().to_string(),
        _ => ".".into(),
    };
    let why = match e.kind() {
        ErrorKind::AlreadyExists => {
            "it already exists, and an existing file is never overwritten: remove it or give another name".to_owned()
        }
        ErrorKind::NotFound => format!("the directory '{dir}' does not exist: create it first"),
        ErrorKind::PermissionDenied => format!("no permission to write in '{dir}'"),
        _ => e.to_string(),
    };
    bail!(
        "could not create the latency log '{}': {why}",
        path.display()
    )
}

fn outcome_timeline(outcome: &Outcome) -> Vec<(u64, &hdrhistogram::Histogram<u64>)> {
    outcome
        .timeline
        .iter()
        .enumerate()
        .map(|(at, i)| (at as u64 + 1, &i.latency))
        .collect()
}

fn progress_line(p: &Progress) {
    let phase = if p.warmup { " (warm-up)" } else { "" };
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "\r\x1b[2K{:>6.1}s{phase}  {} responses  {} req/s  {} errors",
        p.elapsed.as_secs_f64(),
        p.responses,
        p.last_second,
        p.errors
    );
    let _ = err.flush();
}
